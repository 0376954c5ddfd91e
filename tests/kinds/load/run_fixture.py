"""A small load run directory on disk, as the load kind writes one, for the analysis and its
report.html: plan.json and records/ from `synthetic.lines`, with strings a server, a model or
a ladder could write that look like markup, one failed request and one block over the client's
lag bound (no server: the analysis runs on records)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.kinds.load.synthetic import gains, lines

# a prompt id and a server's error that try to end the page's scripts or add an attribute
HOSTILE_PROMPT = '<script>alert(1)</script>"onmouseover=alert(2) x="'
HOSTILE_SERVER = '"onmouseover=alert(3) </td><img src=x onerror=alert(4)> \u2028 end'
HOSTILE_LADDER = "load<b>x</b>"
# a value the page must never show: it is in plan.json and in a record, not in a chosen field
SECRET = "sk-load-html-5b1f0e"
LAG_FLAG = "client lag p99 12.50 ms exceeds the bound 10 ms: test"


def plan(cycles: int) -> dict[str, Any]:
    return {
        "run_id": "20260101T000000Z-1",
        "ladder": HOSTILE_LADDER,
        "kind": "load",
        "question": f"Does ngram's gain hold from 1 to 4 in flight? {HOSTILE_SERVER}",
        "scope": "A synthetic run: six prompts, two levels.",
        "analysis": {"baseline": "none", "endpoint": "e2e"},
        "treatments": [
            {"key": "none", "args": []},
            {"key": "ngram", "args": ["--spec-type", "ngram-simple"], "api_key": SECRET},
        ],
        "load": {
            "levels": [
                {"mode": "closed", "value": 1.0, "label": "conc1"},
                {"mode": "closed", "value": 4.0, "label": "conc4"},
            ],
            "requests": 6,
            "warmup_requests": None,
            "slo": None,
            "lag_bound_ms": 10.0,
            "endpoint": "e2e",
            "block_order": {
                f"c{c}": ["conc1", "conc4"] if c % 2 else ["conc4", "conc1"]
                for c in range(1, cycles + 1)
            },
        },
    }


def write_run(root: Path, *, lagged: bool = True, cycles: int = 2) -> Path:
    """A run directory under `root`: ngram 25 % faster at conc1, 10 % at conc4."""
    run = root / "run"
    (run / "records").mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps(plan(cycles)), encoding="utf-8")
    records = lines(gains({"conc1": 1.25, "conc4": 1.1}), cycles=cycles)
    for r in records:
        r |= {"run_id": "20260101T000000Z-1", "ladder": HOSTILE_LADDER, "api_key": SECRET}
        if r["record"] == "request":
            r |= {"lane": r["request"] % 4, "finish_reason": "length", "http_status": 200,
                  "reason": None, "client_lag_max_ms": 0.4}  # fmt: skip
            if r["prompt_id"] == "p0":
                r["prompt_id"] = HOSTILE_PROMPT
    failed = next(r for r in records if r["record"] == "request" and r["treatment"] == "ngram")
    failed |= {"valid": False, "reason": HOSTILE_SERVER, "http_status": 500,
               "finish_reason": HOSTILE_SERVER, "e2e_ms": None, "ttft_ms": None}  # fmt: skip
    if lagged:
        block = next(r for r in records if r["record"] == "level" and r["level"] == "conc4")
        block |= {"lag_flag": LAG_FLAG, "client_lag_ms": {"p99": 12.5}}
    by_session: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_session.setdefault(str(r["session"]), []).append(r)
    for session, mine in by_session.items():
        text = "".join(json.dumps(r) + "\n" for r in mine)
        (run / "records" / f"{session}.jsonl").write_text(text, encoding="utf-8")
    return run
