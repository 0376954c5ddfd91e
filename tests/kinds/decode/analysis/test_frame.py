"""Parsing record lines: malformed records are set aside with a reason, never made into rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_mtpsweep.base import recordlines as rl
from pytest_mtpsweep.kinds.decode.analysis.frame import parse_records
from pytest_mtpsweep.kinds.decode.analysis.runvalues import RecordFile
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
        ("cycle", "one", f"malformed field: cycle is 'one', not {rl.COUNT}"),
        ("treatment", None, "missing or malformed field: treatment"),
        # a value of the wrong type is set aside by the same rule, never coerced to a NaN
        (
            "decode_rate_tps_primary",
            "fast",
            f"malformed field: decode_rate_tps_primary is 'fast', not {rl.RATE}",
        ),
        # and a finite value no run writes, by the bounds recordlines states
        (
            "decode_rate_tps_primary",
            1e308,
            f"malformed field: decode_rate_tps_primary is 1e+308, not {rl.RATE}",
        ),
        (
            "completion_tokens",
            (1 << 20) + 1,
            f"malformed field: completion_tokens is 1048577, not {rl.TOKENS}",
        ),
        ("predicted_ms", -1.0, f"malformed field: predicted_ms is -1.0, not {rl.MS}"),
        ("completion_tokens", [3], f"malformed field: completion_tokens is [3], not {rl.TOKENS}"),
        ("reason", {"x": 1}, "malformed field: reason is {'x': 1}, not a string"),
    ],
)
def test_a_malformed_name_is_excluded_with_its_reason(field: str, value: Any, reason: str) -> None:
    records, excluded = parse(record(), record(**{field: value}))
    assert list(records["treatment"]) == ["none"]  # no phantom row
    assert list(excluded["reason"]) == [reason]
    assert list(excluded["where"]) == [f"records/01_none_c1.jsonl:2: {reason}"]


def test_a_line_that_is_no_record_is_named_by_file_and_line() -> None:
    lines = (json.dumps(record()), "garbage {", "[1, 2]", json.dumps(record())[:-9])
    records, excluded = parse_records(
        [RecordFile("run-1", "01_none_c1", lines)], session_facts={}, plan_keyed={}
    )
    assert len(records) == 1 and set(excluded["reason"]) == {"unparseable line"}
    assert list(excluded["where"]) == [
        "records/01_none_c1.jsonl:2: not JSON",
        "records/01_none_c1.jsonl:3: not a JSON object",
        "records/01_none_c1.jsonl:4: not JSON: the file's last line, cut short (a run killed "
        "mid-write)",
    ]


def test_content_and_draft_fields_reach_the_frame() -> None:
    records, _ = parse(record(draft_n=40, draft_n_accepted=30, content_sha256="a" * 64))
    row = records.iloc[0]
    assert (row["draft_n"], row["draft_n_accepted"]) == (40, 30)
    assert (row["content_sha256"], row["content_chars"]) == ("a" * 64, 400)
    missing, _ = parse(record())
    assert missing["draft_n"].isna().all()
