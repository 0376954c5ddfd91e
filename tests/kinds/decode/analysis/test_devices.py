"""Pairs stay on their device; the per-device contrast of a distributed run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pytest_mtpsweep.kinds.decode.analysis.devices import (
    per_device_table,
    render,
    terminal_lines,
    unit_of,
)
from pytest_mtpsweep.kinds.decode.analysis.pairing import cell_means, pair_cells
from pytest_mtpsweep.report.model import section_markdown


def _records(rows: list[tuple[str, int, str, str, float]]) -> pd.DataFrame:
    """(treatment, cycle, prompt, device, rate) -> the columns pairing reads."""
    return pd.DataFrame(
        [
            {
                "run_id": "r",
                "treatment": t,
                "subset": "prose",
                "prompt_id": p,
                "cycle": c,
                "device": d,
                "worker": "",
                "rate_primary": rate,
                "rate_interval": rate,
            }
            for t, c, p, d, rate in rows
        ]
    )


def test_a_treatment_never_pairs_with_a_baseline_on_another_device() -> None:
    # cycle 1 of the treatment on device 0, cycle 1 of the baseline on device 1 (as if a
    # scheduler had split a pair): no pair, two gaps
    recs = _records([("b", 1, "p1", "0", 20.0), ("a", 1, "p1", "1", 10.0)])
    pairs, gaps = pair_cells(cell_means(recs), ["b"], "a")
    assert pairs.empty
    assert len(gaps) == 4  # two endpoints x (treatment only, baseline only)


def test_without_a_device_column_pairing_is_as_before() -> None:
    recs = _records([("b", 1, "p1", "", 20.0), ("a", 1, "p1", "", 10.0)]).drop(columns=["device"])
    pairs, gaps = pair_cells(cell_means(recs), ["b"], "a")
    assert len(pairs) == 2 and gaps.empty
    assert np.allclose(pairs["log_ratio"], math.log(2.0))


def test_a_missing_device_value_is_one_device_not_a_dropped_record() -> None:
    # a frame built by hand (or an older writer) with device None: groupby would drop the rows
    recs = _records([("b", 1, "p1", "", 20.0), ("a", 1, "p1", "", 10.0)])
    recs["device"] = None
    pairs, gaps = pair_cells(cell_means(recs), ["b"], "a")
    assert len(pairs) == 2 and gaps.empty


def test_per_device_contrast() -> None:
    rows = []
    for p in ("p1", "p2", "p3"):
        rows += [("a", 1, p, "0", 10.0), ("b", 1, p, "0", 11.0)]  # +10 % on device 0
        rows += [("a", 3, p, "1", 10.0), ("b", 3, p, "1", 9.0)]  # -10 % on device 1
    pairs, _ = pair_cells(cell_means(_records(rows)), ["b"], "a")
    table = per_device_table(pairs, ["b"])
    primary = table[table["endpoint"] == "primary"].set_index("device")
    assert math.isclose(primary.loc["0", "change_pct"], 10.0, rel_tol=1e-9)
    assert math.isclose(primary.loc["1", "change_pct"], -10.0, rel_tol=1e-9)
    assert list(primary["prompts"]) == [3, 3] and list(primary["cycles"]) == [1, 1]
    assert terminal_lines(table, "primary") == [
        "per device (primary, a heterogeneity check): b: 0 +10.0% (3 prompts), 1 -10.0% (3 prompts)"
    ]
    section = render(table, "primary")
    assert section is not None and section.title == "Per device (primary): a heterogeneity check"
    text = section_markdown(section)
    assert "| b | 0 | 1 | 3 | 3 | +10.00% |" in text and "| b | 1 |" in text


def test_one_device_has_no_table() -> None:
    rows = [("a", 1, "p1", "", 10.0), ("b", 1, "p1", "", 11.0)]
    pairs, _ = pair_cells(cell_means(_records(rows)), ["b"], "a")
    assert per_device_table(pairs, ["b"]).empty
    assert render(per_device_table(pairs, ["b"]), "primary") is None


def test_a_worker_stands_for_its_device_when_none_is_pinned() -> None:
    recs = pd.DataFrame({"device": ["0", "", ""], "worker": ["gw0", "gw1", ""]})
    assert list(unit_of(recs)) == ["0", "gw1", ""]
