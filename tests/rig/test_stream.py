"""Reducing a streamed chat completion to a measurement: rates, TTFT, validity, anomalies."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pytest_mtpsweep.base.schema import Measurement
from pytest_mtpsweep.rig.client import RequestSpec, request_body, stream_chat
from pytest_mtpsweep.rig.stream import RawStream, reduce_stream

ALIAS = "m-none"
MS = 1_000_000  # ns per ms


def ev(
    delta: dict[str, Any] | None = None, finish: str | None = None, model: str = ALIAS, **extra: Any
) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return "data: " + json.dumps({"model": model, "choices": choices, **extra})


# Five content tokens, then the end-of-generation token: counted in usage, carried by no content
# event, it arrives with the finish event (as llama-server streams a generation that stops).
USAGE = {"completion_tokens": 6, "prompt_tokens": 12, "total_tokens": 18}
TIMINGS = {
    "predicted_n": 6,
    "predicted_ms": 50.0,
    "prompt_ms": 3.0,
    "cache_n": 0,
    "draft_n": 4,
    "draft_n_accepted": 3,
}


def normal(**kw: Any) -> tuple[list[str], list[int]]:
    lines = [
        ev({"role": "assistant", "content": None}),
        "",
        *[x for i in range(5) for x in (ev({"content": f"t{i} "}), "")],
        ev({}, finish="stop"),
        "",
        ev(None, usage=kw.get("usage", USAGE), timings=kw.get("timings", TIMINGS)),
        "",
        "data: [DONE]",
        "",
    ]
    # t_send = 0; role at 5 ms; content every 10 ms from 20 ms; then the tail
    stamps = [
        5 * MS,
        5 * MS,
        *[t for i in range(5) for t in ((20 + 10 * i) * MS,) * 2],
        70 * MS,
        70 * MS,
        71 * MS,
        71 * MS,
        72 * MS,
        72 * MS,
    ]
    return lines, stamps


def reduce(lines: list[str], stamps: list[int], **kw: Any) -> Measurement:
    args: dict[str, Any] = {"t_send": 0, "t_end": 80 * MS, "status": 200, "error": None}
    args.update(kw)
    alias = args.pop("expected_alias", ALIAS)
    stall_s = args.pop("stall_s", None)
    return reduce_stream(RawStream(lines, stamps, **args), expected_alias=alias, stall_s=stall_s)


class TestRates:
    def test_primary_is_tokens_minus_one_over_first_to_last_content(self) -> None:
        m = reduce(*normal())
        assert m.valid and m.reason is None
        assert m.decode_rate_tps_primary == pytest.approx(5 / 0.050)  # first content to finish
        assert m.decode_rate_tps_interval == pytest.approx(5 / 0.050)  # the server agrees
        assert m.interval_basis == "server_timings"
        assert m.ttft_s == pytest.approx(0.020)
        assert m.e2e_s == pytest.approx(0.080)

    def test_a_generation_cut_at_the_cap_ends_at_its_last_content_event(self) -> None:
        lines, stamps = normal(usage={**USAGE, "completion_tokens": 5})
        lines[12] = ev({}, finish="length")
        m = reduce(lines, stamps)
        assert m.finish_reason == "length"
        assert m.decode_rate_tps_primary == pytest.approx(4 / 0.040)  # no stop token to wait for

    def test_tokens_come_from_usage_not_events(self) -> None:
        m = reduce(*normal(usage={**USAGE, "completion_tokens": 9}))
        assert m.decode_rate_tps_primary == pytest.approx(8 / 0.050)
        assert m.content_chunks == 5 and m.completion_tokens == 9

    def test_inter_chunk_basis_without_server_timings(self) -> None:
        lines, stamps = normal(timings=None)
        lines[-4] = ev(None, usage=USAGE)
        m = reduce(lines, stamps)
        assert m.interval_basis == "inter_chunk"
        assert m.decode_rate_tps_interval == pytest.approx(4 / 0.040)

    def test_counts_and_digest(self) -> None:
        m = reduce(*normal())
        assert m.content_chars == len("t0 t1 t2 t3 t4 ")
        assert m.chunks == 8 and m.draft_n == 4 and m.draft_n_accepted == 3
        assert m.finish_reason == "stop" and m.server_alias == ALIAS
        assert len(m.content_sha256) == 64


class TestValidity:
    def test_wrong_alias_is_a_wrong_server(self) -> None:
        m = reduce(*normal(), expected_alias="m-other")
        assert not m.valid and "wrong server answered" in (m.reason or "")

    def test_missing_usage(self) -> None:
        lines, stamps = normal()
        lines[-4] = ev(None)
        m = reduce(lines, stamps)
        assert not m.valid and "no usage" in (m.reason or "")

    def test_missing_finish_reason(self) -> None:
        lines, stamps = normal()
        lines[12] = ev({})
        m = reduce(lines, stamps)
        assert not m.valid and "finish_reason" in (m.reason or "")

    def test_http_error(self) -> None:
        m = reduce([], [], status=400, error="HTTP 400: 'bad'")
        assert not m.valid and m.http_status == 400 and "HTTP 400" in (m.reason or "")

    def test_unknown_delta_field_is_named(self) -> None:
        lines, stamps = normal()
        lines[4] = ev({"content": "t1 ", "secret_plan": "x"})
        m = reduce(lines, stamps)
        assert not m.valid and m.unrecognised_delta_fields == ("secret_plan",)
        assert m.anomalies["unrecognised_delta_fields"] == 1

    def test_a_stream_cut_short_does_not_blame_include_usage(self) -> None:
        lines, stamps = normal()
        m = reduce(lines[:8], stamps[:8])  # a server gone after four tokens, no error seen
        assert not m.valid
        assert m.reason == (
            "the stream ended early (no finish_reason, no [DONE]): the server stopped answering "
            "or died mid-answer"
        )


class TestStall:
    def test_the_longest_silence_from_the_first_token_is_recorded(self) -> None:
        m = reduce(*normal(), stall_s=10.0)
        assert m.valid and m.max_gap_s == pytest.approx(0.010)  # content every 10 ms

    def test_a_silence_beyond_the_threshold_makes_it_invalid(self) -> None:
        lines, stamps = normal()
        late = 25_000 * MS  # the server fell silent for 25 s after the third token
        stamps = stamps[:6] + [t + late for t in stamps[6:]]
        m = reduce(lines, stamps, t_end=80 * MS + late, stall_s=10.0)
        assert m.max_gap_s == pytest.approx(25.010)
        # (the server's 50 ms of decode is ruled out by the 25 s it took to arrive, too)
        assert not m.valid and (m.reason or "").startswith(
            "stalled: 25.0 s without an event mid-answer (stall threshold 10 s); "
        )
        # its rate alone would have passed for a plausible, slow measurement
        assert m.decode_rate_tps_primary == pytest.approx(5 / 25.050)

    def test_waiting_for_the_first_token_is_not_a_stall(self) -> None:
        lines, stamps = normal()
        slow = [t + 30_000 * MS for t in stamps]  # 30 s of prompt processing first
        m = reduce(lines, slow, t_end=80 * MS + 30_000 * MS, stall_s=10.0)
        assert m.valid and m.ttft_s == pytest.approx(30.020)


class TestAnomalies:
    def test_reasoning_counts_for_ttft(self) -> None:
        lines, stamps = normal()
        lines[0] = ev({"role": "assistant", "reasoning_content": "hmm"})
        m = reduce(lines, stamps)
        assert m.reasoning_chars == 3 and m.ttft_s == pytest.approx(0.005)
        assert m.anomalies["reasoning_events"] == 1

    def test_keepalive_and_missing_done(self) -> None:
        lines, stamps = normal()
        lines[1] = ": keep-alive"
        m = reduce(lines[:-2], stamps[:-2])
        assert m.anomalies == {"keepalive": 1, "missing_done": 1}

    def test_bad_json_and_non_data_lines(self) -> None:
        lines, stamps = normal()
        lines[1], lines[3] = "data: {oops", "event: ping"
        m = reduce(lines, stamps)
        assert m.anomalies["bad_json"] == 1 and m.anomalies["non_data_line"] == 1


class TestRequest:
    def test_body_pins_sampling_and_disables_prompt_cache(self) -> None:
        body = request_body("hi", RequestSpec(ALIAS, 16, 42, 0.0))
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert body["cache_prompt"] is False and body["seed"] == 42 and body["max_tokens"] == 16
        assert body["model"] == ALIAS and body["temperature"] == 0.0

    def test_transport_failure_is_an_invalid_measurement(self) -> None:
        # Stub transport: a real server cannot be made to refuse a connection on demand.
        def refuse(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("refused", request=request)

        with httpx.Client(transport=httpx.MockTransport(refuse)) as client:
            m = stream_chat(client, "http://127.0.0.1:9", "hi", RequestSpec(ALIAS, 16, 42, 0.0))
        assert not m.valid and "transport error" in (m.reason or "") and m.http_status is None
