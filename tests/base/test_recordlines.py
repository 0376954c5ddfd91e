"""Record lines read by one rule in every kind: a line that is no JSON object or holds a
wrong-typed field is named by file and line, in the analysis and the report, and the rest is
analysed; `mtpsweep analyse` of a damaged run of each kind ends without a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base import recordlines as rl
from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records

TORN = "not JSON: the file's last line, cut short (a run killed mid-write)"


def test_each_line_is_a_record_or_named_with_its_reason() -> None:
    types: rl.Types = {"n": rl.INT, "x": rl.NUMBER, "name": rl.NAME, "on": rl.BOOL,
                       "xs": rl.NUMBERS, "o.p": rl.NUMBER, "kind": ("a", "b")}  # fmt: skip
    lines = [
        json.dumps({"n": 3, "x": 1.5, "name": "a", "on": True, "xs": [1, 2.5], "o": {"p": 2}}),
        "",
        json.dumps({"n": 3.0, "x": None}),  # an integral float is an integer; null is allowed
        json.dumps({"n": "3"}),
        json.dumps({"x": True}),  # JSON's true is no number
        json.dumps({"name": " "}),
        json.dumps({"xs": [1, "2"]}),
        json.dumps({"o": {"p": "fast"}}),
        json.dumps({"kind": "c"}),
        json.dumps({"n": 1}),
        "garbage {",
        "[1, 2]",
        '{"n": 4, "x": 1',
    ]
    read, bad = rl.read_lines(lines, "records/s.jsonl", lambda _: types, required=("n",))
    assert [line.line for line in read] == [1, 3, 10]
    assert [str(b) for b in bad] == [
        "records/s.jsonl:4: malformed field: n is '3', not an integer",
        "records/s.jsonl:5: missing or malformed field: n",
        "records/s.jsonl:6: missing or malformed field: n",
        "records/s.jsonl:7: missing or malformed field: n",
        "records/s.jsonl:8: missing or malformed field: n",
        "records/s.jsonl:9: missing or malformed field: n",
        "records/s.jsonl:11: not JSON",
        "records/s.jsonl:12: not a JSON object",
        f"records/s.jsonl:13: {TORN}",
    ]
    _, typed = rl.read_lines(lines[4:9], "f", lambda _: types)  # nothing required
    assert [b.why for b in typed] == [
        "malformed field: x is True, not a number",
        "malformed field: name is ' ', not a name",
        "malformed field: xs is [1, '2'], not a list of numbers",
        "malformed field: o.p is 'fast', not a number",
        "malformed field: kind is 'c', not one of 'a', 'b'",
    ]
    long = rl.check({"x": "y" * 500}, {"x": rl.NUMBER})
    assert long is not None and len(long) < 100  # a hostile value is shown cut short


def _decode(root: Path) -> tuple[Path, str, str]:
    from tests.strategies import Design, make_records, write_run

    design = Design()
    run = write_run(root, design, make_records(design, lambda t, c, o, p, r: 10.0 + c))
    return run, schema.RECORDS_DIR, "decode_rate_tps_primary"


def _load(root: Path) -> tuple[Path, str, str]:
    from tests.kinds.load.run_fixture import write_run

    return write_run(root, lagged=False), schema.RECORDS_DIR, "e2e_ms"


def _authoring(root: Path) -> tuple[Path, str, str]:
    from tests.kinds.authoring.analysis.test_repeats import _three_repeats

    cells, turns = _three_repeats(copies=False)
    run = root / "run"
    for folder, lines in ((records.CELLS_DIR, cells), (records.TURNS_DIR, turns)):
        (run / folder).mkdir(parents=True)
        text = "".join(json.dumps(r) + "\n" for r in lines)
        (run / folder / "01_s_c1.jsonl").write_text(text)
    (run / schema.PLAN_FILE).write_text(json.dumps({"kind": "authoring",
                                                    "baseline_cohort": "a"}))  # fmt: skip
    return run, records.CELLS_DIR, "turns_used"


def _damage(run: Path, folder: str, field: str, value: Any = "fast") -> list[str]:
    """A wrong-typed field on line 2 and a garbage line 4 of the first file, its last line
    torn; what the report must name."""
    path = sorted((run / folder).glob("*.jsonl"))[0]
    lines = path.read_text().splitlines()
    second = json.loads(lines[1])
    second[field] = value
    lines[1] = json.dumps(second)
    lines.insert(3, "garbage {")
    path.write_text("\n".join(lines)[:-25])  # the last record cut short, no newline
    name = f"{folder}/{path.name}"
    return [
        f"{name}:2: malformed field: {field} is {value!r}, not ",
        f"{name}:4: not JSON",
        f"{name}:{len(lines)}: {TORN}",
    ]


# the documented exit status: an authoring cell whose record is unreadable is missing from
# every table, so `mtpsweep analyse` says so and exits 2 (docs/authoring.md); the others 0
@pytest.mark.parametrize(
    ("make", "status"),
    [(_decode, 0), (_load, 0), (_authoring, 2)],
    ids=["decode", "load", "authoring"],
)
def test_a_damaged_run_of_each_kind_is_analysed_with_its_bad_lines_named(
    tmp_path: Path, make: Callable[[Path], tuple[Path, str, str]], status: int
) -> None:
    run, folder, field = make(tmp_path)
    named = _damage(run, folder, field)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "analyse", str(run), "--boot", "1000"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "unreadable" in (done.stdout + done.stderr).lower()
    report = (run / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
    limits = report.split("## Limitations", 1)[1]
    for where in named:
        assert where in limits, where
    assert "3 line(s) could not be read" in limits
    html = (run / schema.ANALYSIS_DIR / "report.html").read_text()
    assert named[1] in html  # report.html (`mtpsweep view`) shows the same Limitations


# A finite value no run writes, each kind: a rate of 1e308, a negative latency, more tokens
# than any ladder's max_tokens, a count past any run's; named as the wrong type is.
ABSURD = [
    (_decode, "decode_rate_tps_primary", 1e308, 0),
    (_load, "e2e_ms", -5.0, 0),
    (_load, "output_tokens", (1 << 20) + 1, 0),  # the ladder's max_tokens cap, + 1
    (_authoring, "turns_used", 10**12, 2),
]


@pytest.mark.parametrize(
    ("make", "field", "value", "status"), ABSURD, ids=[f"{f}={v}" for _, f, v, _ in ABSURD]
)
def test_a_finite_value_no_run_writes_is_an_unreadable_line(
    tmp_path: Path, make: Callable[[Path], tuple[Path, str, str]], field: str, value: Any,
    status: int,
) -> None:  # fmt: skip
    run, folder, _ = make(tmp_path)
    named = _damage(run, folder, field, value)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "analyse", str(run), "--boot", "1000"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == status, done.stderr
    limits = (run / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text().split("## Limitations")[1]
    assert named[0] in limits and "3 line(s) could not be read" in limits, limits


def test_the_bounded_types_refuse_what_lies_outside_and_state_the_ladders_caps() -> None:
    from pytest_mtpsweep.ladder.load import MAX_TOKENS_CAP
    from pytest_mtpsweep.ladder.values import MAX_CTX_SIZE

    assert (rl.MAX_TOKENS, rl.MAX_CONTEXT_TOKENS) == (MAX_TOKENS_CAP, MAX_CTX_SIZE)
    for kind, (low, high, integral) in rl.RANGES.items():
        assert rl.check({"x": low}, {"x": kind}) is None
        assert rl.check({"x": high}, {"x": kind}) is None
        for out in (low - 1, high + 1, high * 2 + 1e300):
            assert rl.check({"x": out}, {"x": kind}) == (
                f"malformed field: x is {out!r}, not {kind}"
            )
        if integral:
            assert rl.check({"x": 1.5}, {"x": kind}) is not None
    assert rl.check({"x": [1.0, -2.0]}, {"x": rl.MS_LIST}) is not None
    assert rl.check({"x": [1.0, 2.0]}, {"x": rl.MS_LIST}) is None


def _analyse_json(run: Path) -> dict[str, Any]:
    from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run

    analyse_run([run], AnalyseOptions(boot=1000))
    doc: dict[str, Any] = json.loads((run / "analysis" / "contrasts.json").read_text())
    return doc


def test_the_decode_analysis_keeps_the_rest_and_lists_the_lines(tmp_path: Path) -> None:
    run, folder, field = _decode(tmp_path)
    whole = _analyse_json(run)
    named = _damage(run, folder, field)
    doc = _analyse_json(run)
    assert [u.rsplit(": ", 1)[0] for u in doc["limits"]["unreadable"]] == [
        n.rsplit(": ", 1)[0] for n in named
    ]
    n = {(r["treatment"], r["subset"]): r["n_pairs"] for r in doc["contrasts"]}
    before = {(r["treatment"], r["subset"]): r["n_pairs"] for r in whole["contrasts"]}
    assert sum(n.values()) == sum(before.values()) - 4  # two records gone: their pairs only


def test_a_run_with_no_readable_record_is_one_sentence(tmp_path: Path) -> None:
    run, _, _ = _load(tmp_path)
    for path in (run / "records").glob("*.jsonl"):
        path.write_text("garbage\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "analyse", str(run)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no level line" in done.stderr and "records/01_none_c1.jsonl:1: not JSON" in done.stderr


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"x": NaN}', "holds NaN"),
        ('{"x": 1e400}', "a number past any float"),
        ('{"x": ' + "[" * 200 + "]" * 200 + "}", "nests deeper than"),
    ],
)
def test_a_line_no_run_wrote_is_named_never_parsed_as_a_record(line: str, why: str) -> None:
    # issue 50: NaN and 1e400 (inf) were read as numbers, a deep line as a record
    read, bad = rl.read_lines([line, '{"x": 1}'], "records/a.jsonl")
    assert [r.record for r in read] == [{"x": 1}]
    (u,) = bad
    assert str(u).startswith(f"records/a.jsonl:1: {rl.NO_RECORD}: it ") and why in u.why
    assert u.unparsed


def test_a_record_file_is_read_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(rl, "MAX_RECORD_LINE_BYTES", 100)
    path = tmp_path / "a.jsonl"
    path.write_text('{"x": "' + "y" * 200 + '"}\n{"x": 1}\n')
    read, bad = rl.read_file(path, "records/a.jsonl")
    assert [r.record for r in read] == [{"x": 1}]
    assert [str(u) for u in bad] == [
        f"records/a.jsonl:1: {rl.NO_RECORD}: 209 bytes long, over the 100 a record line takes"
    ]
    os.mkfifo(tmp_path / "f.jsonl")  # opened as a file it would block the read
    read, bad = rl.read_file(tmp_path / "f.jsonl", "records/f.jsonl")
    assert read == [] and [str(u) for u in bad] == [
        f"records/f.jsonl:1: {rl.NO_RECORD}: the file is a FIFO, not a regular file"
    ]
