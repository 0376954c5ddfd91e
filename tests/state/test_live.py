"""A live session's reads for its kind: the server's `/metrics`, parsed, within a bound."""

from __future__ import annotations

from typing import Any, cast

import httpx

from pytest_mtpsweep.rig.bounds import ReadBound
from pytest_mtpsweep.state.live import LiveSession

PAGE = 'x_total{engine="0"} 3\nx_total{engine="1"} 4\n# HELP y a gauge\ny 1.5\n'
BOUND = ReadBound(2.0, 1000)


def live_on(handler: Any) -> tuple[LiveSession, httpx.Client]:
    """A session whose server is `handler` (only what `metrics` reads is real)."""
    http = httpx.Client(transport=httpx.MockTransport(handler))
    none = cast(Any, None)
    live = LiveSession(none, None, none, none, http, none, base_url="http://server")
    return live, http


def test_metrics_sums_each_metric_over_its_label_sets_and_sends_the_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text=PAGE)

    live, http = live_on(handler)
    assert live.metrics(http, {"Authorization": "Bearer k"}, BOUND) == {"x_total": 7.0, "y": 1.5}
    assert str(seen[0].url) == "http://server/metrics"
    assert seen[0].headers["authorization"] == "Bearer k"


def test_metrics_is_none_without_a_whole_200_answer() -> None:
    live, http = live_on(lambda request: httpx.Response(404, text=PAGE))
    assert live.metrics(http, {}, BOUND) is None
    live, http = live_on(lambda request: httpx.Response(200, text="y 1\n" * 1000))
    assert live.metrics(http, {}, BOUND) is None  # past the bound's bytes: cut, not read on

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    live, http = live_on(refused)
    assert live.metrics(http, {}, BOUND) is None
