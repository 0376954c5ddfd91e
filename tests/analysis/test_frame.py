"""Parsing record lines: malformed records are set aside with a reason, never made into rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_mtpsweep.analysis.frame import parse_records
from pytest_mtpsweep.analysis.model import RecordFile
from tests.strategies import Design, make_record

DESIGN = Design()


def record(**overrides: Any) -> dict[str, Any]:
    r = make_record(
        DESIGN,
        treatment="none",
        cycle=1,
        ordinal=1,
        prompt_id="prose_01",
        subset="prose",
        rate=10.0,
    )
    r.update(overrides)
    return r


def parse(*records: dict[str, Any]) -> tuple[Any, Any]:
    lines = tuple(json.dumps(r) for r in records)
    return parse_records(
        [RecordFile("run-1", "01_none_c1", lines)], session_facts={}, plan_keyed={}
    )


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("treatment", 7, "malformed field: treatment is 7, not a name"),
        ("treatment", "", "malformed field: treatment is '', not a name"),
        ("prompt_id", ["prose_01"], "malformed field: prompt_id is ['prose_01'], not a name"),
        ("subset", 1.5, "malformed field: subset is 1.5, not a name"),
        ("valid", "yes", "malformed field: valid is 'yes', not true or false"),
        ("cycle", "one", "missing or malformed field: cycle"),
        ("treatment", None, "missing or malformed field: treatment"),
    ],
)
def test_a_malformed_name_is_excluded_with_its_reason(field: str, value: Any, reason: str) -> None:
    records, excluded = parse(record(), record(**{field: value}))
    assert list(records["treatment"]) == ["none"]  # no phantom row
    assert list(excluded["reason"]) == [reason]


def test_content_and_draft_fields_reach_the_frame() -> None:
    records, _ = parse(record(draft_n=40, draft_n_accepted=30, content_sha256="a" * 64))
    row = records.iloc[0]
    assert (row["draft_n"], row["draft_n_accepted"]) == (40, 30)
    assert (row["content_sha256"], row["content_chars"]) == ("a" * 64, 400)
    missing, _ = parse(record())
    assert missing["draft_n"].isna().all()
