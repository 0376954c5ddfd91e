"""Whether a --resume invocation is the same run as the one it resumes."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_mtpsweep.protocol import planfile
from pytest_mtpsweep.state.plandoc import PlanDoc

PLAN: dict[str, Any] = {
    "run_id": "R1",
    "ladder": "drafters-cpu",
    "created_at": "T0",
    "treatments": [{"key": "none", "args": []}],
    "prompts": [{"id": "prose_01", "subset": "prose"}],
    "sessions": [{"session": "01_none_c1", "selected": True}],
    "keyed": {"max_tokens": 128, "seed": 42},
}


def differences(before: dict[str, Any], now: dict[str, Any], **how: Any) -> list[str]:
    """`planfile.differences` of two plan.json documents as the reader parses them."""
    return planfile.differences(PlanDoc.from_json(before), PlanDoc.from_json(now), **how)


def test_same_run_despite_times_and_selection() -> None:
    later = PLAN | {"created_at": "T9", "sessions": [{"session": "01_none_c1", "selected": False}]}
    assert differences(PLAN, later) == []


def test_each_difference_is_named() -> None:
    changed = PLAN | {"keyed": {"max_tokens": 64, "seed": 42}, "ladder": "other"}
    assert differences(PLAN, changed) == ["keyed.max_tokens", "ladder"]
    assert differences(PLAN, PLAN | {"keyed": {"max_tokens": 128}}) == ["keyed.seed"]


def test_the_kinds_own_fields_count_only_when_it_names_them() -> None:
    other = PLAN | {"prompts": [{"id": "prose_02", "subset": "prose"}]}
    assert differences(PLAN, other) == []
    assert differences(PLAN, other, kind_fields=("prompts",)) == ["prompts"]


def test_a_plan_written_before_plans_named_their_kind_is_the_default_kind() -> None:
    now = PLAN | {"kind": "decode"}
    assert differences(PLAN, now, default_kind="decode") == []
    assert differences(PLAN, now, default_kind="authoring") == ["kind"]


def test_a_kinds_analysis_settings_join_the_analysis_block() -> None:
    from pathlib import Path

    from pytest_mtpsweep.ladder import run_plan
    from pytest_mtpsweep.protocol.loader import load_ladder
    from pytest_mtpsweep.protocol.planfile import plan_document

    lad = load_ladder(Path(__file__).parents[2] / "experiments" / "ladders" / "drafters-cpu.toml")
    doc = plan_document(
        run_id="R1", ladder=lad, created_at="T0", invocation=["pytest"], version="0",
        server={}, keyed={}, prereg_sha256="", reg=lad.prereg,
        kind_fields={"analysis": {"margin_pct": 2.5}, "repeats": 1},
        plan=run_plan(lad.treatment_keys, 1), planned={},
    )  # fmt: skip
    assert list(doc.to_json()["analysis"]) == [
        "baseline", "margin_pct", "curtailment_sentence", "multiplicity",
    ]  # fmt: skip
    assert doc.analysis.kind_settings == {"margin_pct": 2.5} and doc.kind_fields == {"repeats": 1}
    assert PlanDoc.from_json(doc.to_json()) == doc


def test_the_host_rule_is_part_of_the_runs_identity() -> None:
    from pytest_mtpsweep.ladder.values import HostRule
    from pytest_mtpsweep.protocol.hostrule import plan_entry
    from pytest_mtpsweep.state.plandoc import host_json

    def to_json(rule: HostRule, off: str | None) -> dict[str, Any]:
        return host_json(plan_entry(rule, off))

    on = PLAN | {"host_rule": to_json(HostRule(), None)}
    assert differences(on, on | {"created_at": "T9"}) == []
    looser = PLAN | {"host_rule": to_json(HostRule(major_faults=5000), None)}
    assert differences(on, looser) == ["host_rule"]
    off = PLAN | {"host_rule": to_json(HostRule(), "not applied: MTPSWEEP_HOST_RULE=off")}
    assert differences(on, off) == ["host_rule"]  # resuming with the rule turned off: refused


def test_a_kind_field_named_like_the_protocols_is_refused() -> None:
    from pathlib import Path

    from pytest_mtpsweep.base.errors import KindError
    from pytest_mtpsweep.ladder import run_plan
    from pytest_mtpsweep.protocol.loader import load_ladder
    from pytest_mtpsweep.protocol.planfile import plan_document

    lad = load_ladder(Path(__file__).parents[2] / "experiments" / "ladders" / "drafters-cpu.toml")
    with pytest.raises(KindError, match=r"plan_fields\(\) names sessions, which plan.json holds"):
        plan_document(
            run_id="R1", ladder=lad, created_at="T0", invocation=["pytest"], version="0",
            server={}, keyed={}, prereg_sha256="", reg=lad.prereg,
            kind_fields={"sessions": []}, plan=run_plan(lad.treatment_keys, 1), planned={},
        )  # fmt: skip
