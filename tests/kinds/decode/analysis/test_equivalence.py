"""Content equivalence at temperature 0: per-pair verdicts, self-identity, truncation."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from pytest_mtpsweep.kinds.decode.analysis.equivalence import (
    DIFFERS,
    DIFFERS_WITHIN_CAP,
    IDENTICAL,
    IDENTICAL_TO_CAP,
    content_equivalence,
    describe,
)
from pytest_mtpsweep.kinds.decode.analysis.frame import parse_records
from pytest_mtpsweep.kinds.decode.analysis.runvalues import RecordFile
from tests.strategies import Design, make_records

DESIGN = Design(treatments=("none", "gate"), prompts={"prose": ("prose_01", "prose_02")})


def frame(edit: dict[tuple[str, int, str], dict[str, Any]]) -> pd.DataFrame:
    """A parsed run where every answer is the same text unless `edit` changes it."""
    recs = make_records(DESIGN, lambda *a: 10.0)
    for r in recs:
        r.update(edit.get((r["treatment"], r["cycle"], r["prompt_id"]), {}))
    files = [RecordFile("run-1", "all", tuple(json.dumps(r) for r in recs))]
    return parse_records(files, session_facts={}, plan_keyed={})[0]


def verdicts(eq: Any) -> dict[tuple[str, int], str]:
    return {(p, c): v for p, c, v in eq.pairs[["prompt_id", "cycle", "verdict"]].itertuples(False)}


def test_identical_answers_are_identical_everywhere() -> None:
    eq = content_equivalence(frame({}), "none")
    assert set(verdicts(eq).values()) == {IDENTICAL} and len(eq.pairs) == 4
    assert describe(eq) == [
        "none (prose): identical to its own c1 in all 2 prompts (same char counts)",
        "gate (prose): identical to none in all 4 (prompt, cycle) cells; identical to its own "
        "c1 in all 2 prompts (same char counts)",
    ]


def test_a_difference_names_the_prompt_and_the_cycles() -> None:
    other = {"content_sha256": "f" * 64, "content_chars": 380}
    eq = content_equivalence(
        frame({("gate", 1, "prose_02"): other, ("gate", 2, "prose_02"): other}), "none"
    )
    assert verdicts(eq) == {
        ("prose_01", 1): IDENTICAL,
        ("prose_01", 2): IDENTICAL,
        ("prose_02", 1): DIFFERS,
        ("prose_02", 2): DIFFERS,
    }
    line = describe(eq)[1]
    assert "differs from none in 2 of 4 (prompt, cycle) cells: prose_02 (c1, c2)" in line
    assert line.endswith("identical to its own c1 in all 2 prompts (same char counts)")


def test_a_treatment_unlike_itself_across_cycles_is_said_so() -> None:
    edit = {"content_sha256": "e" * 64, "content_chars": 380}
    eq = content_equivalence(frame({("gate", 2, "prose_01"): edit}), "none")
    selves = eq.self_identity.set_index(["treatment", "prompt_id"])["verdict"]
    assert selves[("gate", "prose_01")] == DIFFERS and selves[("gate", "prose_02")] == IDENTICAL
    assert describe(eq)[1].endswith(
        "differs from its own c1 in 1 of 2 prompts: prose_01 (chars 400,380)"
    )


@pytest.mark.parametrize(
    ("treatment_edit", "verdict", "truncated"),
    [
        ({"finish_reason": "length"}, IDENTICAL_TO_CAP, "both"),
        ({"finish_reason": "length", "content_sha256": "d" * 64}, DIFFERS_WITHIN_CAP, "both"),
        ({"finish_reason": "length", "completion_tokens": 99}, DIFFERS, "both"),
        ({"finish_reason": "stop"}, IDENTICAL, "baseline"),
    ],
)
def test_truncated_pairs_are_compared_up_to_the_cap(
    treatment_edit: dict[str, Any], verdict: str, truncated: str
) -> None:
    base = {"finish_reason": "length"}
    eq = content_equivalence(
        frame({("none", 1, "prose_01"): base, ("gate", 1, "prose_01"): treatment_edit}), "none"
    )
    row = eq.pairs.set_index(["prompt_id", "cycle"]).loc[("prose_01", 1)]
    assert (row["verdict"], row["truncated"]) == (verdict, truncated)


def test_invalid_answers_and_unpaired_prompts_are_left_out() -> None:
    eq = content_equivalence(
        frame(
            {
                ("none", 1, "prose_01"): {"valid": False},
                ("gate", 2, "prose_02"): {"content_sha256": None},
            }
        ),
        "none",
    )
    assert sorted(verdicts(eq)) == [("prose_01", 2), ("prose_02", 1)]


def test_the_summary_follows_the_ladders_order_not_the_alphabet() -> None:
    design = Design(treatments=("none", "zz", "aa"), prompts={"prose": ("prose_01",)})
    recs = make_records(design, lambda *a: 10.0)
    files = [RecordFile("run-1", "all", tuple(json.dumps(r) for r in recs))]
    records = parse_records(files, session_facts={}, plan_keyed={})[0]
    assert list(
        dict.fromkeys(content_equivalence(records, "none", ("zz", "aa")).summary["treatment"])
    ) == ["none", "zz", "aa"]
    unordered = content_equivalence(records, "none").summary["treatment"]
    assert list(dict.fromkeys(unordered)) == ["none", "aa", "zz"]
