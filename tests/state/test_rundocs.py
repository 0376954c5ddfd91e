"""The run's documents as typed values: written and read back unchanged (hypothesis), a run of
the previous release's format (tests/data/run-format0, written by main before documents had a
format) read and analysed, and a later format refused in one line naming both versions."""

from __future__ import annotations

import json
import re
import shutil
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep._version import __version__
from pytest_mtpsweep.base import schema
from pytest_mtpsweep.base.errors import RunReadError
from pytest_mtpsweep.ladder.values import BOUNDS, MAX_CYCLES
from pytest_mtpsweep.state.plandoc import (
    PLAN_FIELDS,
    AnalysisPlan,
    HostRulePlan,
    PlanDoc,
    PlannedSession,
    StopDesign,
    SweepAxis,
    SweepPlan,
    Treatment,
)
from pytest_mtpsweep.state.rundir import RunDir
from pytest_mtpsweep.state.rundocs import (
    FORMAT,
    DroppedArm,
    Look,
    LookCell,
    SessionDoc,
    StopDoc,
)
from pytest_mtpsweep.state.runread import RunReader

FORMAT0 = Path(__file__).resolve().parent.parent / "data" / "run-format0"

names = st.text(string.ascii_letters + string.digits + "_-:.", min_size=1, max_size=12)
texts = st.text(max_size=20)
counts = st.integers(min_value=0, max_value=10_000)
cycles = st.integers(min_value=1, max_value=MAX_CYCLES)  # as a ladder bounds them
levels = st.floats(min_value=0.5, max_value=0.999)
# what a kind may put in its part of plan.json: JSON values under names the protocol leaves it
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
kind_names = names.filter(lambda n: n not in PLAN_FIELDS)


@st.composite
def stop_designs(draw: st.DrawFn) -> StopDesign:
    looks = tuple(sorted(draw(st.sets(st.integers(1, 40), min_size=1, max_size=5))))
    n = len(looks)
    return StopDesign(
        draw(st.sampled_from(["decided", "width"])),
        looks,
        draw(st.sampled_from(["pocock", "obrien-fleming"])),
        tuple(draw(st.lists(levels, min_size=n, max_size=n))),
        tuple(draw(st.lists(levels, min_size=n, max_size=n))),
        draw(st.none() | st.floats(0.5, 50.0)),
        tuple(draw(st.lists(names, max_size=3))),
    )


plans = st.builds(
    PlanDoc,
    run_id=names,
    ladder=names,
    kind=st.sampled_from(["", "decode", "load", "authoring"]),
    question=texts,
    scope=texts,
    created_at=texts,
    invocation=st.lists(texts, max_size=4).map(tuple),
    harness_version=names,
    server_bin=st.none() | texts,
    model_path=st.none() | texts,
    models=st.none() | st.dictionaries(names, texts, max_size=2),
    note=texts,
    keyed=st.dictionaries(names, json_values, max_size=3),
    preregistration_sha256=texts,
    analysis=st.builds(
        AnalysisPlan,
        names,
        texts,
        texts,
        st.dictionaries(
            names.filter(
                lambda n: (
                    n not in ("baseline", "curtailment_sentence", "multiplicity")
                    and f"analysis.{n}" not in BOUNDS
                )  # the bounded ones: see the test below
            ),
            json_values,
            max_size=3,
        ),
    ),
    treatments=st.lists(
        st.builds(Treatment, names, st.lists(texts, max_size=3).map(tuple)), max_size=3
    ).map(tuple),
    sweep=st.none()
    | st.builds(
        SweepPlan,
        texts,
        st.lists(
            st.builds(SweepAxis, names, st.lists(names, max_size=3).map(tuple)), max_size=2
        ).map(tuple),
        st.lists(texts, max_size=2).map(tuple),
        st.sampled_from(["high", "low"]),
        st.lists(names, max_size=3).map(tuple),
    ),
    stop=st.none() | stop_designs(),
    host_rule=st.none()
    | st.builds(
        HostRulePlan,
        st.booleans(),
        st.booleans(),
        texts,
        st.dictionaries(
            names.filter(lambda n: n not in ("enabled", "applied", "why")),
            st.integers(0, 10**9) | st.floats(0, 100),
            max_size=3,
        ),
    ),
    sessions=st.lists(
        st.builds(PlannedSession, counts, names, cycles, names, st.booleans(), counts), max_size=4
    ).map(tuple),
    kind_fields=st.dictionaries(kind_names, json_values, max_size=3),
)


@given(plans)
def test_a_plan_reads_back_as_it_was_written(plan: PlanDoc) -> None:
    written = json.loads(json.dumps(plan.to_json()))  # through JSON, as the writer does
    assert written["format"] == FORMAT
    assert PlanDoc.from_json(written) == plan


looks = st.builds(
    Look,
    cycles,
    cycles,
    texts,
    st.booleans(),
    texts,
    st.lists(st.builds(LookCell, names, names, st.none() | st.floats(0, 100)), max_size=3).map(
        tuple
    ),
)


@given(
    st.builds(
        StopDoc,
        st.just(FORMAT),
        st.lists(looks, max_size=3).map(tuple),
        st.none() | cycles,
        st.none()
        | st.lists(st.builds(DroppedArm, names, cycles, cycles, texts), max_size=8).map(tuple),
    )
)
def test_a_stop_document_reads_back_as_it_was_written(doc: StopDoc) -> None:
    written = json.loads(json.dumps(doc.to_json()))
    assert "design" not in written  # the design's one home is plan.json
    assert StopDoc.from_json(written) == doc


@given(
    session=names,
    info=st.fixed_dictionaries(
        {"run_id": names, "ordinal": counts, "treatment": names, "cycle": cycles},
        optional={"complete": st.booleans(), "host_spoiled": texts, "load_s": st.floats(0, 9)},
    ),
)
def test_a_session_file_reads_back_as_the_writer_wrote_it(
    tmp_path_factory: pytest.TempPathFactory, session: str, info: dict[str, Any]
) -> None:
    run = RunDir.create(tmp_path_factory.mktemp("run") / "r")
    run.write_session(session, info)
    read = RunReader(run.path).sessions()
    (doc,) = read.documents
    assert (doc.session, doc.format, doc.run_id, doc.ordinal, doc.treatment, doc.cycle) == (
        session,
        FORMAT,
        info["run_id"],
        info["ordinal"],
        info["treatment"],
        info["cycle"],
    )
    assert doc.complete == info.get("complete", True)
    assert doc.host_spoiled == info.get("host_spoiled", "")
    assert doc.facts == {"session": session, "format": FORMAT, **info}


def test_the_previous_releases_run_is_read_as_it_was_written() -> None:
    read = RunReader(FORMAT0)
    raw = json.loads((FORMAT0 / schema.PLAN_FILE).read_text())
    assert "format" not in raw  # written before documents carried one
    plan = read.plan
    assert plan.format == 0 and plan.kind == "decode" and plan.treatment_keys == ("a", "b")
    assert plan.to_json() == {**raw, "format": FORMAT}  # every field kept: a lossless map
    assert plan.stop is not None and plan.stop.looks == (2, 4, 6)
    stop_raw = json.loads((FORMAT0 / schema.STOP_FILE).read_text())
    assert set(stop_raw) == {"design", "looks", "stopped_at"}  # format 0 repeated the design
    stop = read.stop
    assert stop.format == 0 and [e.look for e in stop.looks] == [1, 2] and stop.stopped_at is None
    sessions = read.sessions()
    assert sessions.unreadable == () and len(sessions.documents) == 12
    assert {d.format for d in sessions.documents} == {0}


def test_the_previous_releases_run_is_analysed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_mtpsweep.cli.main import main

    run = tmp_path / "run"
    shutil.copytree(FORMAT0, run)
    status = main(["analyse", str(run), "--boot", "1000"])
    out = capsys.readouterr()
    assert status == 0, out.err
    report = (run / "analysis" / "report.md").read_text()
    assert "stub" in report and "after cycle" in report  # the ladder, and the stop rule's look


def _later(tmp_path: Path, file: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(FORMAT0, run)
    doc = json.loads((run / file).read_text())
    (run / file).write_text(json.dumps({**doc, "format": FORMAT + 1}))
    return run


def test_a_later_format_is_refused_in_one_line_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_mtpsweep.cli.main import main

    run = _later(tmp_path, schema.PLAN_FILE)
    assert main(["analyse", str(run), "--boot", "1000"]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert f"is run-document format {FORMAT + 1}" in err
    assert f"pytest-mtpsweep {__version__} reads format {FORMAT} at most" in err
    assert "analyse it with pytest-mtpsweep 0.2.0 or later" in err  # the version that wrote it
    assert not (run / "analysis").exists()


def test_a_later_stop_document_or_session_file_is_refused_too(tmp_path: Path) -> None:
    run = _later(tmp_path, schema.STOP_FILE)
    with pytest.raises(RunReadError, match=f"stop.json is run-document format {FORMAT + 1}"):
        _ = RunReader(run).stop
    name = "01_a_c1"
    session = run / schema.session_file(name)
    session.write_text(json.dumps({**json.loads(session.read_text()), "format": FORMAT + 1}))
    read = RunReader(run).sessions()
    assert len(read.documents) == 11
    (why,) = read.unreadable
    assert why.startswith(f"sessions/{name}.json is run-document format {FORMAT + 1}")


@pytest.mark.parametrize("value", ["1", -1, True, 1.5])
def test_a_format_that_is_no_format_is_refused(value: object) -> None:
    with pytest.raises(RunReadError, match=r"`format` is .*, not a format number"):
        PlanDoc.from_json({"run_id": "r", "format": value})


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("treatments", "a b", "`treatments` is 'a b', not a list of objects"),
        ("sessions", [{"session": "s", "cycle": "one"}], "`sessions[0].cycle` is 'one'"),
        ("analysis", [], "`analysis` is [], not an object"),
        ("stop", {"looks": [2]}, "`stop.rule` is None"),
    ],
)
def test_a_field_of_the_wrong_type_is_named(field: str, value: object, said: str) -> None:
    with pytest.raises(RunReadError, match=r"^plan.json: ") as got:
        PlanDoc.from_json({"run_id": "r", field: value})
    assert said in str(got.value) and str(got.value).endswith("restore it from the run")


def test_a_session_document_keeps_what_the_kind_wrote() -> None:
    doc = SessionDoc.from_json("01_a_c1", {"cycle": 1, "shakedown": {"summary": "ok"}}, "x")
    assert doc.facts["shakedown"] == {"summary": "ok"} and doc.format == 0


def _plan_with(tmp_path: Path, edit: Any) -> Path:
    """A run whose plan.json is a real one, edited by hand."""
    plan = PlanDoc(
        run_id="r1",
        analysis=AnalysisPlan("a", kind_settings={"margin_pct": 5.0, "tiebreak_pp": 1.0}),
        stop=StopDesign("decided", (4, 6), "pocock", (0.9, 0.95), (0.8, 0.9)),
        host_rule=HostRulePlan(thresholds={"cpu_noise_pct": 20.0}),
        sessions=(PlannedSession(1, "a", 1, "01_a_c1"),),
    )
    doc = plan.to_json()
    edit(doc)
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps(doc))
    return tmp_path


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["analysis"].update(margin_pct=1e308), "analysis.margin_pct"),
        (lambda d: d["analysis"].update(margin_pct=0), "analysis.margin_pct"),
        (lambda d: d["analysis"].update(tiebreak_pp=-1), "analysis.tiebreak_pp"),
        (lambda d: d["stop"].update(looks=[4, 10**18]), "stop.looks"),
        (lambda d: d["stop"].update(looks=[6, 4]), "stop.looks"),
        (lambda d: d["stop"].update(width_pct=1e308, rule="width"), "stop.width_pct"),
        (lambda d: d["stop"].update(cells=["a:b"] * 10_000), "stop.cells"),
        (lambda d: d["host_rule"].update(cpu_noise_pct=1e9), "host_rule.cpu_noise_pct"),
        (lambda d: d["sessions"][0].update(cycle=10**18), "sessions[0].cycle"),
        (lambda d: d["sessions"][0].update(ordinal=-1), "sessions[0].ordinal"),
    ],
)
def test_a_plan_value_the_tool_could_not_have_written_is_refused_naming_it(
    tmp_path: Path, edit: Any, field: str
) -> None:
    # issue 50: a margin of 1e308 made a +86 % cell "equivalent"; 10**18 looks were printed
    run = _plan_with(tmp_path, edit)
    with pytest.raises(RunReadError, match=rf"`{re.escape(field)}` is .*restore it") as got:
        _ = RunReader(run).plan
    assert "\n" not in str(got.value) and str(run / schema.PLAN_FILE) in str(got.value)


def test_the_plan_reader_takes_what_the_ladder_takes(tmp_path: Path) -> None:
    top = BOUNDS["analysis.margin_pct"].high
    run = _plan_with(tmp_path, lambda d: d["analysis"].update(margin_pct=top))
    assert RunReader(run).plan.analysis.kind_settings["margin_pct"] == top


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["looks"][0].update(after_cycle=10**18), "looks[0].after_cycle"),
        (lambda d: d.update(stopped_at=-3), "stopped_at"),
        (lambda d: d["looks"][0]["cells"][0].update(half_width_pct=10**400), "half_width_pct"),
    ],
)
def test_a_stop_document_value_out_of_bounds_is_refused(edit: Any, field: str) -> None:
    doc = StopDoc(looks=(Look(1, 4, cells=(LookCell("a:b", "faster", 2.0),)),)).to_json()
    edit(doc)
    with pytest.raises(RunReadError, match=rf"{re.escape(field)}` is"):
        StopDoc.from_json(doc)


def test_a_sweeps_arm_values_are_its_axis_values_a_grids_joined() -> None:
    one = SweepPlan("draft", (SweepAxis("--draft-max", ("2", "4")),), (), "high", ("a", "b"))
    assert one.arm_values == ("2", "4")
    axes = (SweepAxis("-x", ("1", "2")), SweepAxis("-y", ("a", "b")))
    grid = SweepPlan("grid", axes, (), "low", ("p", "q", "r", "s"))
    assert grid.arm_values == ("1/a", "1/b", "2/a", "2/b")
    assert SweepPlan("none", (), (), "high", ("a", "b")).arm_values == ("", "")
