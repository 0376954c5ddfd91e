"""What an attached server says about itself: its served models and context, its ready path."""

from __future__ import annotations

from pytest_mtpsweep.rig.endpoint import Endpoint, served_context, served_models

VLLM = {"/v1/models": {"data": [{"id": "q", "max_model_len": 32768}, {"id": "other"}]}}
LLAMA = {
    "/v1/models": {"data": [{"id": "q"}]},
    "/props": {"default_generation_settings": {"n_ctx": 4096}},
}


def test_served_context_from_props_else_the_models_list() -> None:
    assert served_context(LLAMA, "q") == (4096, "/props")
    assert served_context(VLLM, "q") == (32768, "/v1/models")
    assert served_context(VLLM, "other") == (None, None)
    assert served_context({}, "q") == (None, None)
    assert served_models(VLLM) == ["q", "other"]


def test_ready_url_is_a_path_or_a_whole_url() -> None:
    ep = Endpoint("http://h:1")
    assert ep.ready_paths == ("/v1/models", "/health")
    assert Endpoint("http://h:1", ready_url="/ping").ready_paths == ("/ping",)
    assert ep.url("/metrics") == "http://h:1/metrics"
    assert ep.url("http://other:2/ready") == "http://other:2/ready"
