"""What an attached server says about itself: its served models and context, its ready path."""

from __future__ import annotations

import pytest

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


def test_a_refused_key_names_its_variable_and_probes_carry_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_mtpsweep.base.errors import ServerError
    from pytest_mtpsweep.preflight.endpoints import AttachedTarget, check_endpoint
    from tests.stub_openai_server import Script, serve

    with serve(Script(reply=lambda m: "x", key="right")) as url:
        ep = Endpoint(url, "MTPSWEEP_TEST_KEY")
        monkeypatch.setenv("MTPSWEEP_TEST_KEY", "right")
        assert ep.probe() is None  # the probe carried the key: an endpoint that demands it answers
        monkeypatch.setenv("MTPSWEEP_TEST_KEY", "expired")
        why = ep.probe()
        assert why is not None and why.startswith("HTTP 401")
        item = check_endpoint(AttachedTarget("a", ep, "stub-model"))
        assert item.verdict == "fail" and "MTPSWEEP_TEST_KEY" in (item.fix or "")
        assert "Start the server" not in (item.fix or "")
        with pytest.raises(ServerError, match="refused the key in MTPSWEEP_TEST_KEY"):
            ep.wait_ready(30)
        assert "api_key_env" in (Endpoint(url).refused_key(Endpoint(url).probe()) or "")
