"""`[stop]`: the sequential design's fields, checked whole before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.ladder.stop import early_look_warning
from pytest_mtpsweep.ladder.values import StopRule
from pytest_mtpsweep.protocol.loader import load_ladder
from tests.ladder.test_load import LADDERS, MINIMAL, write


def test_the_demo_stops_when_decided_within_six_cycles() -> None:
    lad = load_ladder(LADDERS / "cpu-demo.toml")
    assert lad.stop == StopRule(
        "decided", min_cycles=4, max_cycles=6, spending="pocock",
        cells=("ngram-simple:structured",),
    )  # fmt: skip
    assert lad.cycles == 6
    assert load_ladder(LADDERS / "cpu-demo-fixed.toml").stop is None


def test_cycles_are_the_maximum_and_an_override_moves_it(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    path.write_text(MINIMAL.replace('baseline = "a"', 'baseline = "a"\ncycles = 8') + (
        '[stop]\nrule = "width"\nwidth_pct = 5\n'
    ))  # fmt: skip
    lad = load_ladder(path)
    # The first look defaults to the session level's 4 cycles (issue 43).
    assert (lad.cycles, lad.stop) == (8, StopRule("width", 4, 8, "pocock", 5.0))
    assert load_ladder(path, {"cycles": 4}).cycles == 4
    assert load_ladder(write(tmp_path, MINIMAL + '[stop]\nrule = "decided"\n')).cycles == 8


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('rule = "soon"', r"stop\.rule is 'soon'; use one of decided, width"),
        ('rule = "decided"\nspending = "linear"', r"stop\.spending is 'linear'; use one of"),
        (
            'rule = "decided"\nmin_cycles = 3',
            r"stop\.min_cycles 3 must be even, from 2 to the "
            r"most cycles the rule may run \(8\).*; fix stop\.min_cycles\.$",
        ),
        ('rule = "decided"\nmax_cycles = 7', r"\[stop\], stop\.max_cycles 7 must be even, from 4"),
        (
            'rule = "decided"\nmin_cycles = 6\nmax_cycles = 4',
            r"stop\.min_cycles 6 and stop\.max_cycles 4 must be even, with 2 <= min_cycles <= ",
        ),
        (
            'rule = "decided"\nmax_cycles = 1000',
            r"stop\.max_cycles 1000 must be even, from 4 to 64",
        ),
        (
            'rule = "decided"\nmin_cycles = 3\nallow_early_looks = true',
            r"min_cycles 3 must be even",
        ),
        ('rule = "decided"\nmin_cycles = 2', r"stop\.min_cycles 2 looks before the 4 cycles"),
        ('rule = "decided"\nmax_cycles = 2', r"may run 2 cycles, fewer than the 4 .* set cycles"),
        ('rule = "decided"\nallow_early_looks = 1', r"allow_early_looks"),
        ('rule = "width"', r"add width_pct"),
        ('rule = "decided"\nwidth_pct = 5', r"drop width_pct"),
        ('rule = "width"\nwidth_pct = -1', r"0 < W <= 1000"),
        ('rule = "width"\nwidth_pct = 1e300', r"0 < W <= 1000"),
        ('rule = "decided"\nlooks = 3', r"unknown field stop\.'looks'"),
        ("min_cycles = 2", r"missing required field stop\.'rule'"),
        ('rule = "decided"\ncells = []', r"stop\.cells has 0 entries; list 1 to 256"),
        ('rule = "decided"\ncells = ["b"]', r"stop\.cells entry 'b' is not a headline cell"),
        ('rule = "decided"\ncells = ["a:prose"]', r"other than the baseline \(b\)"),
        ('rule = "decided"\ncells = [3]', r"stop\.cells entry 3 is not a headline cell"),
        ('rule = "decided"\ncells = ["b:prose", "b:prose"]', r"names 'b:prose' twice"),
        ('rule = "decided"\ncells = "b:prose"', r"stop\.'cells' is 'b:prose' but must be a list"),
    ],
)
def test_a_bad_stop_table_is_refused_in_one_line(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(LadderError, match=message) as info:
        load_ladder(write(tmp_path, MINIMAL + "[stop]\n" + table + "\n"))
    assert "\n" not in str(info.value)


def test_cycles_and_max_cycles_must_agree(tmp_path: Path) -> None:
    text = MINIMAL.replace('baseline = "a"', 'baseline = "a"\ncycles = 4')
    with pytest.raises(LadderError, match=r"cycles is 4 and stop\.max_cycles is 6"):
        load_ladder(write(tmp_path, text + '[stop]\nrule = "decided"\nmax_cycles = 6\n'))


def test_fixed_cycles_are_bounded(tmp_path: Path) -> None:
    text = MINIMAL.replace('baseline = "a"', 'baseline = "a"\ncycles = 100000000')
    with pytest.raises(LadderError, match="cycles is 100000000; use at most 64"):
        load_ladder(write(tmp_path, text))


def test_cells_name_what_the_rule_waits_for(tmp_path: Path) -> None:
    lad = load_ladder(write(tmp_path, MINIMAL + '[stop]\nrule = "decided"\ncells = ["b:prose"]\n'))
    assert lad.stop is not None and lad.stop.cells == ("b:prose",)


def test_an_odd_cycles_override_names_cycles_not_stop_fields_never_set(tmp_path: Path) -> None:
    # `--cycles 5` on a [stop] ladder that sets neither min_cycles nor max_cycles
    path = write(tmp_path, MINIMAL + '[stop]\nrule = "decided"\n')
    with pytest.raises(LadderError) as info:
        load_ladder(path, {"cycles": 5}, "--cycles 5")
    assert str(info.value) == (
        f"{path} (with --cycles 5 from the command line): with [stop], cycles 5 must be even, "
        "from 4 to 64: the rule looks after each counterbalanced cycle pair and cycles are the "
        "most it may run; fix cycles."
    )
    assert "min_cycles" not in str(info.value) and "max_cycles" not in str(info.value)


def test_a_kind_that_cannot_look_takes_no_stop_table(tmp_path: Path) -> None:
    ladder = Path(__file__).resolve().parents[2] / "experiments" / "ladders" / "authoring-cpu.toml"
    path = tmp_path / "authoring-cpu.toml"
    path.write_text(ladder.read_text() + '\n[stop]\nrule = "decided"\nmax_cycles = 3\n')
    with pytest.raises(LadderError) as info:
        load_ladder(path)
    assert str(info.value) == (
        f"{path}: authoring takes no [stop] (the kind cannot look at its results between "
        "cycles); remove [stop] and set the cycles to run."
    )


def test_an_early_first_look_needs_its_opt_in_and_lint_says_so(tmp_path: Path) -> None:
    # Issue 43, finding 3: the default first look was at 2 cycles, where the interval resamples
    # prompts only; with 5 % session offsets a null was called in 38.7 % of simulated runs.
    lad = load_ladder(write(tmp_path, MINIMAL + '[stop]\nrule = "decided"\n'))
    assert lad.stop is not None and lad.stop.min_cycles == 4
    assert early_look_warning(lad.stop) is None
    text = '[stop]\nrule = "decided"\nmin_cycles = 2\nallow_early_looks = true\n'
    lad = load_ladder(write(tmp_path, MINIMAL + text))
    assert lad.stop is not None and (lad.stop.min_cycles, lad.stop.allow_early_looks) == (2, True)
    warning = early_look_warning(lad.stop)
    assert warning is not None and "\n" not in warning
    assert warning.startswith("stop.allow_early_looks: the first look comes after cycle 2")
    assert "speaks for its sessions only" in warning  # one treatment: nothing to borrow
    # Issue 48: with arms to borrow from, lint says what the early looks may claim and on what;
    # a sweep borrows from 1 df, a contrast table from 3
    assert "speaks for its sessions only" in (early_look_warning(lad.stop, arms=3) or "")
    assert "borrows the session level" in (early_look_warning(lad.stop, arms=3, sweep=True) or "")
    borrowed = early_look_warning(lad.stop, arms=6)
    assert borrowed is not None and "borrows the session level from the run's 6 arms" in borrowed
    assert "5 df at the first look" in borrowed and "arms' sessions vary alike" in borrowed


def test_cycles_below_the_first_look_name_cycles_not_min_cycles(tmp_path: Path) -> None:
    # --cycles 2 on a [stop] ladder that never set min_cycles: the refusal names what was set.
    path = write(tmp_path, MINIMAL + '[stop]\nrule = "decided"\n')
    with pytest.raises(LadderError, match=r"may run 2 cycles.*set cycles \(or --cycles\) to 4"):
        load_ladder(path, {"cycles": 2})
