"""Does this llama-server build honour per-request speculative parameters?

Request-level interleaving (several treatments in one server session, told apart per request)
would need it. Build 11434 does not: its request parser reads no `speculative.*` field, and
the drafted and accepted counts do not respond to them. This test keeps that fact honest: if a
later build honours them, it fails, and the mechanism can be built.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from pytest_mtpsweep.rig import server
from pytest_mtpsweep.rig.net import free_port

pytestmark = pytest.mark.server


def draft_counts(base_url: str, extra: Mapping[str, object]) -> tuple[int, int]:
    body = {
        "messages": [{"role": "user", "content": "Write a short story about a lighthouse keeper."}],
        "max_tokens": 24,
        "temperature": 0,
        "seed": 42,
        "cache_prompt": False,
        **extra,
    }
    t = httpx.post(f"{base_url}/v1/chat/completions", json=body, timeout=600).json()["timings"]
    return int(t.get("draft_n", 0)), int(t.get("draft_n_accepted", 0))


def test_this_build_ignores_per_request_speculative_parameters(
    tmp_path: Path, server_bin: Path, machinery_model: Path
) -> None:
    spec = server.LaunchSpec(
        server_bin=server_bin,
        argv_tail=("-m", str(machinery_model), "-md", str(machinery_model), "--ctx-size", "1024",
                   "--parallel", "1", "--spec-type", "draft-simple", "--spec-draft-n-max", "6"),
        host="127.0.0.1",
        port=free_port(),
        alias="m",
        log_path=tmp_path / "server.log",
        ready_timeout_s=300,
    )  # fmt: skip
    proc = server.start(spec)
    try:
        default = draft_counts(spec.base_url, {})
        assert default[0] > 0, "the server drafted nothing: the check below would prove nothing"
        for extra in ({"speculative.n_max": 1}, {"speculative.p_min": 0.99}):
            assert draft_counts(spec.base_url, extra) == default, (
                f"{extra} changed the drafting: this build honours per-request speculative "
                "parameters, so request-level interleaving can now be built"
            )
    finally:
        server.stop(proc)
