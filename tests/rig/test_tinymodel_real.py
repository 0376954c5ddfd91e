"""The tiny model on the real llama-server: it loads, answers to max_tokens, and speculative
decoding runs on it (an n-gram drafter, and itself as the drafter with a planted acceptance)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from pytest_mtpsweep.rig import server
from pytest_mtpsweep.rig.net import free_port

TOKENS = 48


@contextmanager
def serving(server_bin: Path, model: Path, log: Path, *args: str) -> Iterator[str]:
    spec = server.LaunchSpec(
        server_bin=server_bin,
        argv_tail=("-m", str(model), "--ctx-size", "1024", "--parallel", "1", *args),
        host="127.0.0.1", port=free_port(), alias="tiny", log_path=log, ready_timeout_s=120,
    )  # fmt: skip
    proc = server.start(spec)
    try:
        yield spec.base_url
    finally:
        server.stop(proc)


def chat(base_url: str, prompt: str) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": TOKENS, "temperature": 0, "seed": 42, "cache_prompt": False,
    }  # fmt: skip
    reply: dict[str, Any] = httpx.post(
        f"{base_url}/v1/chat/completions", json=body, timeout=120
    ).json()
    return reply


def counts(reply: dict[str, Any]) -> tuple[int, str, int, int]:
    t = reply["timings"]
    return (
        int(reply["usage"]["completion_tokens"]),
        str(reply["choices"][0]["finish_reason"]),
        int(t.get("draft_n", 0)),
        int(t.get("draft_n_accepted", 0)),
    )


def run(server_bin: Path, model: Path, log: Path, args: Sequence[str]) -> tuple[int, str, int, int]:
    with serving(server_bin, model, log, *args) as url:
        return counts(chat(url, "Write a short story about a lighthouse keeper."))


def test_it_answers_to_max_tokens_with_and_without_a_drafter(
    tmp_path: Path, server_bin: Path, machinery_model: Path
) -> None:
    m = machinery_model
    plain = run(server_bin, m, tmp_path / "plain.log", ())
    assert plain == (TOKENS, "length", 0, 0)  # no end-of-turn token ever wins
    ngram = run(server_bin, m, tmp_path / "ngram.log", ("--spec-type", "ngram-simple"))
    assert ngram[:2] == (TOKENS, "length")
    # itself as the drafter, accepting at a planted rate: drafts made, some (not all) accepted
    synth = ("--spec-type", "draft-simple", "-md", str(m), "--spec-draft-n-max", "3",
             "--spec-synth-rates", "0.9,0.6,0.3")  # fmt: skip
    planted = run(server_bin, m, tmp_path / "synth.log", synth)
    assert planted[:2] == (TOKENS, "length")
    assert planted[2] > 0 and 0 < planted[3] < planted[2], planted
    assert "synthetic acceptance" in (tmp_path / "synth.log").read_text()
