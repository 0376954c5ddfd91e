"""What the analysis reads of the host rule: re-runs, kept attempts, the swap for the
sensitivity analysis, and the Limitations bullet."""

from __future__ import annotations

import pandas as pd

from pytest_mtpsweep.kinds.decode.analysis import hosteffect as hostrule
from pytest_mtpsweep.kinds.decode.analysis.runvalues import (
    HostRuleEffect,
    QuarantinedSession,
    RecordFile,
    RunData,
)
from pytest_mtpsweep.ladder.values import HostRule
from pytest_mtpsweep.protocol.hostrule import plan_entry
from pytest_mtpsweep.report.model import section_markdown
from pytest_mtpsweep.state.plandoc import PlanDoc, host_json

REASON = "host spoiled: the server took 5000 major page faults (over major_faults 1000)"


def run(plan_rule: dict[str, object] | None = None) -> RunData:
    rule = plan_rule if plan_rule is not None else host_json(plan_entry(HostRule(), None))
    plan = PlanDoc.from_json({"host_rule": rule})
    return RunData(
        run_dir="r",
        run_id="R",
        plan=plan,
        record_files=(
            RecordFile("R", "01_a_c1", ("a1",)),
            RecordFile("R", "02_b_c1", ("rerun-1", "rerun-2")),
        ),
        sessions=(
            {"session": "01_a_c1", "rerun": False},
            {"session": "02_b_c1", "rerun": True, "host_rule": {"not_available": {}}},
        ),
        quarantined=(
            QuarantinedSession(
                "R", "02_b_c1", 2, REASON, ("first-1", "first-2"), {"session": "02_b_c1"}
            ),
            QuarantinedSession("R", "03_b_c2", 1, "partial census: 0 of 1 measurements usable"),
        ),
    )


def test_the_effect_names_each_re_run_and_its_reason() -> None:
    e = hostrule.effect([run()])
    assert e.recorded and e.why_not == ""
    assert e.rerun == (("02_b_c1", REASON),)  # the partial census is not the host's
    assert e.kept == ()
    assert e.thresholds["major_faults"] == 1000


def test_the_swap_puts_the_spoiled_attempt_in_place_of_its_re_run() -> None:
    swapped = hostrule.with_originals([run()])
    assert swapped is not None
    (only,) = swapped
    lines = {f.session: f.lines for f in only.record_files}
    assert lines == {"01_a_c1": ("a1",), "02_b_c1": ("first-1", "first-2")}
    facts = {s["session"]: s for s in only.sessions}
    assert "rerun" not in facts["02_b_c1"]  # the first attempt's facts, not the re-run's
    assert [q.session for q in only.quarantined] == ["03_b_c2"]


def test_nothing_to_swap_without_a_host_re_run() -> None:
    plain = run()
    bare = RunData(plain.run_dir, plain.run_id, plain.plan, plain.record_files, plain.sessions)
    assert hostrule.with_originals([bare]) is None


def test_the_bullet_says_kept_attempts_and_an_unapplied_rule() -> None:
    kept = HostRuleEffect(
        recorded=True,
        thresholds={"cpu_noise_pct": 10.0, "major_faults": 1000},
        kept=(("02_b_c1", REASON + " (kept: it was the one re-run)"),),
        not_available=(("memory_stall_pct", "not available: no Linux PSI here (x)"),),
    )
    text = str(hostrule.limitation(kept))
    assert text.startswith("**Host rule** (cpu_noise_pct > 10, major_faults > 1000): 1 session")
    assert "kept and are averaged in, flagged host_spoiled (02_b_c1: the server took 5000" in text
    assert text.endswith(
        "not applied for want of the witness: memory_stall_pct, no Linux PSI here (x)."
    )
    off = hostrule.effect(
        [run(host_json(plan_entry(HostRule(), "not applied: MTPSWEEP_HOST_RULE=off")))]
    )
    assert str(hostrule.limitation(off)).startswith(
        "**Host rule:** not applied: MTPSWEEP_HOST_RULE=off: sessions the host spoiled"
    )
    assert hostrule.limitation(HostRuleEffect()) is None  # a run from before the rule


def test_the_section_shows_both_intervals() -> None:
    row = {"treatment": "b", "subset": "prose", "endpoint": "primary", "pct_change": 5.0,
           "ci_low": 1.0, "ci_high": 9.0, "decision": "faster"}  # fmt: skip
    e = HostRuleEffect(
        recorded=True,
        rerun=(("02_b_c1", REASON),),
        with_originals=pd.DataFrame([{**row, "pct_change": -2.0, "decision": "inconclusive"}]),
    )
    section = hostrule.section(e, pd.DataFrame([row]))
    assert section is not None and section.title == "Host rule"
    table = section_markdown(section)
    assert "| b | prose | primary | +5.00% [+1.00, +9.00] faster | -2.00% [+1.00, +9.00] " in table
    assert hostrule.section(HostRuleEffect(recorded=True), pd.DataFrame([row])) is None
