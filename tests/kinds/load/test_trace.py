"""`[trace]`: the two formats read from the shipped excerpts, and every malformation of a hostile
trace refused in one line naming the file, its line and the field (in-process here; through
`mtpsweep lint` and a pytest run in test_trace_refusals.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.kinds.load import trace
from pytest_mtpsweep.kinds.load.trace import TraceSettings

REPO = Path(__file__).resolve().parents[3]
TRACES = REPO / "experiments" / "traces"
MOONCAKE = TRACES / "mooncake-conversation-300.jsonl"
AZURE = TRACES / "azure-code-2023-300.csv"
GOOD = {"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [0, 1]}
HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
ROW = "2023-11-16 18:17:03.9799600,4808,10"


def settings(path: Path, fmt: str, **kw: object) -> TraceSettings:
    return TraceSettings(path=path, given=path.name, format=fmt, **kw)  # type: ignore[arg-type]


def mooncake(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def azure(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("".join(f"{x}\r\n" for x in lines))
    return path


def refused(path: Path, fmt: str, **kw: object) -> str:
    with pytest.raises(LadderError) as info:
        trace.load(settings(path, fmt, **kw), "x.toml")
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"x.toml: trace {path.name}"), text
    return text


def test_the_shipped_mooncake_excerpt_reads_whole() -> None:
    t = trace.load(settings(MOONCAKE, "mooncake"), "x")
    assert len(t.records) == 300 and t.records[0].line == 1 and t.records[-1].line == 300
    first = t.records[0]
    assert (first.time_ms, first.input_tokens, first.output_tokens) == (0.0, 6758, 500)
    assert first.hash_ids[:3] == (0, 1, 2) and len(first.hash_ids) == 14  # ceil(6758 / 512)
    times = [r.time_ms for r in t.records]
    assert times == sorted(times) and times[-1] == 102000.0
    assert t.sha256 == hashlib.sha256(MOONCAKE.read_bytes()).hexdigest()


def test_the_shipped_azure_excerpt_reads_whole_with_its_datetimes() -> None:
    t = trace.load(settings(AZURE, "azure"), "x")
    assert len(t.records) == 300 and t.records[0].line == 2  # line 1 is the header
    a, b, c = t.records[:3]
    assert (a.input_tokens, a.output_tokens, a.hash_ids) == (4808, 10, ())
    # 18:17:03.9799600, .0319600, .0781490: times from the window's first record, in ms
    assert a.time_ms == 0.0
    assert b.time_ms == pytest.approx(52.0, abs=1e-3)
    assert c.time_ms == pytest.approx(98.189, abs=1e-3)


def test_a_window_starts_at_its_record_and_counts_from_it() -> None:
    t = trace.load(settings(MOONCAKE, "mooncake", start=27, limit=8), "x")
    assert [r.line for r in t.records] == list(range(27, 35))
    assert t.records[0].time_ms == 0.0 and t.records[3].time_ms == 9000.0 - 5999.0


def test_a_small_step_back_in_time_is_sent_with_the_record_before(tmp_path: Path) -> None:
    path = mooncake(tmp_path, GOOD, GOOD | {"timestamp": 10}, GOOD | {"timestamp": 9.5})
    t = trace.load(settings(path, "mooncake"), "x")
    assert [r.time_ms for r in t.records] == [0.0, 10.0, 10.0]


def test_blank_lines_are_no_records(tmp_path: Path) -> None:
    path = mooncake(tmp_path, GOOD, "", "   ", GOOD | {"timestamp": 5})
    assert [r.line for r in trace.load(settings(path, "mooncake"), "x").records] == [1, 4]


MOONCAKE_CASES: dict[str, tuple[list[Any], str]] = {
    "not JSON": (["{oops"], "t.jsonl:1: not JSON"),
    "not an object": ([[1, 2]], "t.jsonl:1: not a JSON object"),
    "a number too long": (['{"timestamp": ' + "9" * 5000 + "}"], "t.jsonl:1: JSON that cannot"),
    "missing input_length": ([GOOD, {"timestamp": 1, "output_length": 3}],
                             "t.jsonl:2: missing field 'input_length'"),
    "a string for a time": ([GOOD | {"timestamp": "soon"}],
                            "t.jsonl:1: field 'timestamp' is text of 4 character(s), not a number"),
    "true for a time": ([GOOD | {"timestamp": True}], "field 'timestamp' is true or false, not a number"),
    "a negative time": ([GOOD | {"timestamp": -3}], "t.jsonl:1: field 'timestamp' is below 0"),
    "time going back": ([GOOD | {"timestamp": 500}, GOOD | {"timestamp": 400}],
                        "t.jsonl:2: field 'timestamp' goes back 100.000 ms"),
    "a negative input": ([GOOD, GOOD | {"input_length": -5}],
                         "t.jsonl:2: field 'input_length' is outside 1 to 1,048,576"),
    "no output": ([GOOD | {"output_length": 0}], "t.jsonl:1: field 'output_length' is outside 1 to"),
    "an absurd input": ([GOOD | {"input_length": 10**9}],
                        "field 'input_length' is outside 1 to 1,048,576, the tokens"),
    "a fraction of a token": ([GOOD | {"input_length": 1.5}],
                              "field 'input_length' is a number, not a whole number"),
    "a string length": ([GOOD | {"output_length": "ten"}], "field 'output_length' is text of 3 character(s)"),
    "hash ids not a list": ([GOOD | {"hash_ids": 7}], "t.jsonl:1: field 'hash_ids' is a number, not a list"),
    "a negative hash id": ([GOOD | {"hash_ids": [0, -1]}], "field 'hash_ids' is a list of 2, not a list of ids"),
    "too many hash ids": ([GOOD | {"hash_ids": list(range(trace.MAX_HASH_IDS + 1))}],
                          "field 'hash_ids' has 2,049 ids"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MOONCAKE_CASES))
def test_a_hostile_mooncake_trace_is_refused_naming_line_and_field(
    tmp_path: Path, case: str
) -> None:
    lines, says = MOONCAKE_CASES[case]
    assert says in refused(mooncake(tmp_path, *lines), "mooncake")


AZURE_CASES: dict[str, tuple[list[str], str]] = {
    "a missing column": ([ "TIMESTAMP,ContextTokens", "2023-11-16 18:17:03.9,10"],
                         "t.csv:1: missing column 'GeneratedTokens' in the header"),
    "a short row": ([HEADER, ROW, "2023-11-16 18:17:04.0,12"],
                    "t.csv:3: field 'GeneratedTokens' is missing"),
    "a time that is no time": ([HEADER, "yesterday,10,3"],
                               "t.csv:2: field 'TIMESTAMP' is text of 9 character(s), not a time"),
    "a time with a zone": ([HEADER, "2023-11-16 18:17:03.97+01:00,10,3"],
                           "field 'TIMESTAMP' is text of 28 character(s), not a time"),
    "a non-numeric length": ([HEADER, ROW, "2023-11-16 18:17:04.0,many,3"],
                             "t.csv:3: field 'ContextTokens' is text of 4 character(s), not a whole number"),
    "a negative length": ([HEADER, "2023-11-16 18:17:04.0,10,-2"],
                          "t.csv:2: field 'GeneratedTokens' is outside 1 to"),
    "time going back": ([HEADER, "2023-11-16 18:17:04.5,10,3", "2023-11-16 18:17:04.0,10,3"],
                        "t.csv:3: field 'TIMESTAMP' goes back 500.000 ms"),
    "only a header": ([HEADER], "the trace has 0 record(s), none from trace.start = 1"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(AZURE_CASES))
def test_a_hostile_azure_trace_is_refused_naming_line_and_field(tmp_path: Path, case: str) -> None:
    lines, says = AZURE_CASES[case]
    assert says in refused(azure(tmp_path, *lines), "azure")


SECRET = "root:$6$Xq9sEcReT:20228:0:99999:7:::"


@pytest.mark.parametrize("fmt", ["mooncake", "azure"])
@pytest.mark.parametrize(
    "text",
    [
        f"{SECRET}\nuser:x:1000\n",  # a password file's first line
        "TIMESTAMP,ContextTokens,GeneratedTokens\n" + f"{SECRET},1,2\n",
        '{"timestamp": "' + SECRET + '", "input_length": 1, "output_length": 1}\n',
        '{"timestamp": 1, "input_length": "' + SECRET + '", "output_length": 1}\n',
        '{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": "' + SECRET + '"}\n',
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9," + SECRET + ",3\n",
        '{"timestamp": -20228, "input_length": 1, "output_length": 1}\n',
        '{"timestamp": 1, "input_length": 99999999, "output_length": 1}\n',
    ],
)
def test_no_byte_of_a_file_the_trace_path_names_reaches_the_error(
    tmp_path: Path, fmt: str, text: str
) -> None:
    # a ladder in a pull request may point trace.path at any readable file: its error names
    # the file, the line and what was expected, never what the file holds
    path = tmp_path / "t.txt"
    path.write_text(text)
    said = refused(path, fmt)
    assert ":1:" in said or ":2:" in said
    for secret in ("root", "$6$", "Xq9sEcReT", "20228", "99999", "user:x"):
        assert secret not in said.replace(str(tmp_path), ""), said


def test_an_empty_csv_is_refused(tmp_path: Path) -> None:
    assert "the file is empty" in refused(azure(tmp_path), "azure")


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(LadderError, match=r"trace.path 'gone.jsonl' .* cannot be read"):
        trace.load(settings(tmp_path / "gone.jsonl", "mooncake"), "x.toml")


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with path.open("wb") as f:
        f.truncate(trace.MAX_TRACE_BYTES + 1)  # sparse: nothing is written
    assert f"is {trace.MAX_TRACE_BYTES + 1:,} bytes, over the" in refused(path, "mooncake")


def test_an_oversized_line_is_refused_naming_it(tmp_path: Path) -> None:
    path = mooncake(tmp_path, GOOD, "x" * (trace.MAX_LINE_BYTES + 1))
    assert "t.jsonl:2: the line is 1,048,577 characters" in refused(path, "mooncake")


def test_text_that_is_not_utf8_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\n")
    assert "t.jsonl:2: not UTF-8" in refused(path, "mooncake")


def test_a_window_past_the_bound_needs_a_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trace, "MAX_RECORDS", 3)
    path = mooncake(tmp_path, *(GOOD for _ in range(5)))
    assert "t.jsonl:4: the window from record 1 holds more than 3 records" in refused(
        path, "mooncake"
    )
    assert len(trace.load(settings(path, "mooncake", limit=3), "x").records) == 3


def test_a_start_past_the_records_is_refused(tmp_path: Path) -> None:
    path = mooncake(tmp_path, GOOD, GOOD)
    assert "has 2 record(s), none from trace.start = 5" in refused(path, "mooncake", start=5)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"format": "burstgpt"}, "field trace.format is 'burstgpt'; use one of mooncake, azure"),
        ({"time_scale": 0}, "field trace.time_scale is 0; use a factor from 0.0001 to 10000"),
        ({"input_scale": 50}, "field trace.input_scale is 50; use a factor from 0.0001 to 10"),
        ({"start": 0}, "field trace.start is 0"),
        ({"limit": 100_001}, "field trace.limit is 100001; use 1 to 100,000"),
        ({"chars_per_token": 0.5}, "field trace.chars_per_token is 0.5"),
        ({"block_tokens": 0}, "field trace.block_tokens is 0"),
        ({"speed": 2}, "unknown field trace.'speed'"),
    ],
)
def test_the_table_is_checked_field_by_field(table: dict[str, object], says: str) -> None:
    raw = {"path": "t.jsonl", "format": "mooncake", **table}
    with pytest.raises(LadderError, match=None) as info:
        trace.parse(raw, Path("/l/ladders/x.toml"), "x.toml")
    assert says in str(info.value), info.value


def test_the_path_is_relative_to_the_ladder_file() -> None:
    s = trace.parse({"path": "../traces/t.jsonl", "format": "azure"}, Path("/l/ladders/x.toml"),
                    "x")  # fmt: skip
    assert s is not None and s.path == Path("/l/traces/t.jsonl") and s.given == "../traces/t.jsonl"
    assert (s.time_scale, s.input_scale, s.start, s.limit) == (1.0, 1.0, 1, None)
