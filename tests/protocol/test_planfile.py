"""Whether a --resume invocation is the same run as the one it resumes."""

from __future__ import annotations

from typing import Any

from pytest_mtpsweep.protocol.planfile import differences

PLAN: dict[str, Any] = {
    "run_id": "R1",
    "ladder": "cpu-demo",
    "created_at": "T0",
    "treatments": [{"key": "none", "args": []}],
    "prompts": [{"id": "prose_01", "subset": "prose"}],
    "sessions": [{"session": "01_none_c1", "selected": True}],
    "keyed": {"max_tokens": 128, "seed": 42},
}


def test_same_run_despite_times_and_selection() -> None:
    later = PLAN | {"created_at": "T9", "sessions": [{"session": "01_none_c1", "selected": False}]}
    assert differences(PLAN, later) == []


def test_each_difference_is_named() -> None:
    changed = PLAN | {"keyed": {"max_tokens": 64, "seed": 42}, "ladder": "other"}
    assert differences(PLAN, changed) == ["keyed.max_tokens", "ladder"]
    assert differences(PLAN, PLAN | {"keyed": {"max_tokens": 128}}) == ["keyed.seed"]
