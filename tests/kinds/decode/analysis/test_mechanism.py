"""The drafting mechanism per treatment and subset from decode records (issue 49)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pytest_mtpsweep.kinds.decode.analysis.mechanism import (
    MECHANISM_COLUMNS,
    drafter_of,
    mechanism_table,
    sweep_cells,
)


def _records() -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for p in range(6):
        for c in (1, 2):
            base = {"prompt_id": f"p{p}", "subset": "prose", "cycle": c, "valid": True,
                    "mechanism_invalid": None}  # fmt: skip
            rows.append({**base, "treatment": "none", "predicted_n": 41, "predicted_ms": 400.0,
                         "draft_n": None, "draft_n_accepted": None})  # fmt: skip
            # 41 tokens: the first from the prompt, then 20 steps of 2, 25 ms each against a
            # 10 ms plain step: costs more
            rows.append({**base, "treatment": "ngram", "predicted_n": 41, "predicted_ms": 500.0,
                         "draft_n": 60, "draft_n_accepted": 20})  # fmt: skip
            rows.append({**base, "treatment": "idle", "predicted_n": 41, "predicted_ms": 400.0,
                         "draft_n": 0, "draft_n_accepted": 0})  # fmt: skip
    rows.append({**rows[1], "draft_n": None, "draft_n_accepted": None,
                 "mechanism_invalid": "timings.draft_n_accepted 5 is more than draft_n 2"})  # fmt: skip
    return pd.DataFrame(rows)


def test_each_drafting_arm_gets_its_tokens_per_step_and_sentence() -> None:
    t = mechanism_table(_records(), "none", {"ngram": "ngram-simple", "idle": "ngram-simple"},
                        boot=100, seed=1)  # fmt: skip
    assert list(t.columns) == list(MECHANISM_COLUMNS)
    ngram = t[t["treatment"] == "ngram"].iloc[0]
    assert ngram["mean_len"] == pytest.approx(2.0)
    assert ngram["k_bar"] == pytest.approx(3.0)
    assert ngram["step_ratio"] == pytest.approx(2.5)
    assert ngram["verdict"] == "costs"
    assert ngram["sentence"].startswith("prose: 2.00 tokens per step [")
    assert ngram["sentence"].endswith(
        "against a break-even of 2.50: drafting costs more than it saves"
    )
    assert ngram["invalid"] == 1 and "more than draft_n" in ngram["invalid_reason"]
    idle = t[t["treatment"] == "idle"].iloc[0]
    assert idle["verdict"] == "drafted no tokens" and idle["sentence"] == "prose: drafted no tokens"


def test_no_drafting_arm_is_an_empty_table() -> None:
    plain = _records()
    plain = plain[plain["treatment"] == "none"]
    assert mechanism_table(plain, "none", {}, boot=50, seed=1).empty


def test_the_drafter_is_read_from_the_server_arguments() -> None:
    assert (
        drafter_of(["--spec-type", "draft-simple", "-md", "q.gguf", "--spec-draft-n-max", "3"])
        == "draft-simple q.gguf"
    )
    assert drafter_of(["--spec-type=ngram-simple"]) == "ngram-simple"
    assert drafter_of(["-c", "4096"]) == ""


def test_the_sweeps_column_reads_each_arm_against_its_break_even() -> None:
    t = mechanism_table(_records(), "none", {"ngram": "ngram-simple", "idle": "ngram-simple"},
                        boot=100, seed=1)  # fmt: skip
    cells = sweep_cells(t)
    assert cells[("prose", "idle")] == "drafted no tokens"
    said = cells[("prose", "ngram")]
    assert said.startswith("E[L] 2.00 [") and "break-even 2.50" in said


def test_the_picture_draws_each_drafting_arm_and_nothing_without_one() -> None:
    pytest.importorskip("matplotlib", reason="the plots extra draws the pictures")
    from pytest_mtpsweep.kinds.decode.report.whysection import figure_png, mechanism_figure

    t = mechanism_table(_records(), "none", {"ngram": "ngram-simple", "idle": "ngram-simple"},
                        boot=100, seed=1)  # fmt: skip
    rows = t.to_dict(orient="records")
    fig = mechanism_figure(rows)
    assert fig is not None
    # one point for ngram (idle drafted nothing: not drawn), its break-even marked
    assert [tx.get_text() for tx in fig.axes[0].get_legend().get_texts()] == ["ngram / prose"]
    assert (figure_png(rows) or b"")[:4] == b"\x89PNG"
    assert mechanism_figure([r for r in rows if r["treatment"] == "idle"]) is None


def test_an_arm_a_look_dropped_keeps_its_cycles_and_the_others_keep_theirs() -> None:
    recs = _records()
    # "short" ran cycle 1 only (a look dropped it): 41 tokens, 30 accepted of 40, 15 ms a step
    short = recs[(recs["treatment"] == "ngram") & (recs["cycle"] == 1)].assign(
        treatment="short", draft_n=40, draft_n_accepted=30, predicted_ms=150.0
    )
    t = mechanism_table(pd.concat([recs, short]), "none",
                        {"ngram": "ngram-simple", "short": "ngram-simple"}, boot=100, seed=1)  # fmt: skip
    by = {r["treatment"]: r for r in t.to_dict(orient="records")}
    assert (by["ngram"]["n_prompts"], by["ngram"]["cycles"], by["ngram"]["records"]) == (6, 2, 12)
    assert (by["short"]["n_prompts"], by["short"]["cycles"], by["short"]["records"]) == (6, 1, 6)
    assert by["ngram"]["mean_len"] == pytest.approx(2.0)
    assert by["short"]["mean_len"] == pytest.approx(4.0)  # 40 decoded in 10 steps
    assert by["short"]["step_ratio"] == pytest.approx(1.5)
    assert by["ngram"]["fitted"] and by["short"]["fitted"]  # one drafter, two k-bars: a line


def test_report_md_and_the_junit_property_carry_the_same_sentence(tmp_path: Path) -> None:
    from pytest_mtpsweep.base.constants import BOOT
    from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, load_and_analyse
    from pytest_mtpsweep.kinds.decode.analysis.verdicts import headline
    from tests.strategies import Design, make_records, noisy, write_run

    design = Design(
        prompts={"prose": tuple(f"prose_{i}" for i in range(6)),
                 "structured": tuple(f"structured_{i}" for i in range(6))},
        cycles=3,
    )  # fmt: skip
    timed = []
    for r in make_records(design, noisy(design, {"ngram": 1.2}, sd=0.02)):
        if r["treatment"] == "none":  # 40 tokens after the first at 10 ms
            timed.append({**r, "predicted_n": 41, "predicted_ms": 400.0 + r["cycle"]})
        elif r["subset"] == "structured":  # 20 steps of 2 tokens at 15 ms: saves
            timed.append({**r, "predicted_n": 41, "predicted_ms": 300.0 + r["cycle"],
                          "draft_n": 60, "draft_n_accepted": 20})  # fmt: skip
        else:  # 36 steps of 1.11 tokens at 15 ms: costs
            timed.append({**r, "predicted_n": 41, "predicted_ms": 540.0 + r["cycle"],
                          "draft_n": 108, "draft_n_accepted": 4})  # fmt: skip
    result = load_and_analyse([write_run(tmp_path, design, timed)], AnalyseOptions(boot=BOOT.min))
    said = {(r["treatment"], r["subset"]): r["sentence"]
            for r in result.mechanism.to_dict(orient="records")}  # fmt: skip
    assert said[("ngram", "structured")].endswith("drafting saves more than it costs")
    assert said[("ngram", "prose")].endswith("drafting costs more than it saves")
    props = headline(result)
    for (treatment, subset), sentence in said.items():
        assert sentence in result.report_md
        key = f"mtpsweep.{treatment}:{subset}"
        assert key not in props or props[key].endswith(f"; {sentence}")
    assert props["mtpsweep.ngram:prose"].endswith(said[("ngram", "prose")])
