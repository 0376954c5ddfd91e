"""`[sweep]`: arms generated along a setting, bounded, refused in one line; the Williams order."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.ladder.runplan import WILLIAMS, ladder_plan, run_plan, williams_row
from pytest_mtpsweep.protocol.loader import load_ladder
from tests.ladder.test_load import write

BASE = """
question = "Where does the gain start?"
baseline = "none"
cycles = 4
[model]
path = "m.gguf"
id = "m"
[server]
port = 0
[[treatments]]
key = "none"
"""
SWEEP = """[sweep]
flag = "--spec-ngram-simple-size-n"
values = [2, 4, 8]
args = ["--spec-type", "ngram-simple"]
from = "low"
"""


def test_a_sweep_generates_its_arms_after_the_declared_baseline(tmp_path: Path) -> None:
    lad = load_ladder(write(tmp_path, BASE + SWEEP))
    assert lad.treatment_keys == ("none", "size_n_2", "size_n_4", "size_n_8")
    assert lad.treatment("size_n_4").args == (
        "--spec-type",
        "ngram-simple",
        "--spec-ngram-simple-size-n",
        "4",
    )
    assert lad.baseline == "none"
    assert lad.sweep is not None and lad.sweep.start == "low"
    assert lad.sweep.value_of("size_n_8") == "8"


def test_floats_keep_two_decimals_and_a_grid_crosses_two_settings(tmp_path: Path) -> None:
    grid = """[sweep]
flag = "--spec-draft-n-max"
values = [4, 6]
from = "high"
grid_flag = "--spec-draft-p-min"
grid_values = [0.1, 0.25, 0.5]
"""
    lad = load_ladder(write(tmp_path, BASE + grid))
    assert lad.treatment_keys[1:3] == ("n_max_4_p_min_0.10", "n_max_4_p_min_0.25")
    assert lad.treatment("n_max_6_p_min_0.50").args[-2:] == ("--spec-draft-p-min", "0.50")
    assert len(lad.treatments) == 7


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (("values = [2, 4, 8]", "values = [8, 4, 2]"), "from low to high"),
        (("values = [2, 4, 8]", "values = [2]"), "at least 2"),
        (("values = [2, 4, 8]", f"values = {list(range(1, 14))}"), "13 arms"),
        (('from = "low"', 'from = "middle"'), "sweep.from"),
        (("values = [2, 4, 8]", 'values = [2, "--x"]'), "sweep.values"),
        (('flag = "--spec-ngram-simple-size-n"', 'flag = "size-n"'), "sweep.flag"),
        (
            (
                'args = ["--spec-type", "ngram-simple"]',
                'args = ["--spec-ngram-simple-size-n", "3"]',
            ),
            "also set",
        ),
        # round six (issue 50): what lint let through reached the server or the file system
        (("values = [2, 4, 8]", "values = [2, nan]"), "finite numbers"),
        (("values = [2, 4, 8]", "values = [2, inf]"), "finite numbers"),
        (("values = [2, 4, 8]", 'values = ["a", "' + "x" * 300 + '"]'), "300 characters"),
        (("values = [2, 4, 8]", 'values = ["a b", "c"]'), "holds 'a b'"),
        (('flag = "--spec-ngram-simple-size-n"', 'flag = "--ctx-size"'), "harness sets"),
        (('flag = "--spec-ngram-simple-size-n"', 'flag = "-m"'), "harness sets"),
        (('flag = "--spec-ngram-simple-size-n"', 'flag = "--port"'), "harness sets"),
        (('args = ["--spec-type", "ngram-simple"]', 'args = ["--alias", "x"]'), "harness sets"),
    ],
)
def test_a_bad_sweep_is_refused_in_one_line(
    tmp_path: Path, edit: tuple[str, str], says: str
) -> None:
    with pytest.raises(LadderError, match=says) as err:
        load_ladder(write(tmp_path, BASE + SWEEP.replace(*edit)))
    assert "\n" not in str(err.value)


def test_a_declared_key_may_not_clash_with_an_arm(tmp_path: Path) -> None:
    clash = BASE + '[[treatments]]\nkey = "size_n_4"\n' + SWEEP
    with pytest.raises(LadderError, match="also a \\[sweep\\] arm"):
        load_ladder(write(tmp_path, clash))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 12])
def test_mirrored_williams_balances_neighbours_and_each_pair(n: int) -> None:
    keys = [f"k{i}" for i in range(n)]
    plan = run_plan(keys, 2 * n, WILLIAMS)
    follows: Counter[tuple[str, str]] = Counter()
    for cycle in range(1, 2 * n + 1):
        order = [s.treatment for s in plan if s.cycle == cycle]
        assert sorted(order) == sorted(keys)
        follows.update(pairwise(order))
        if cycle % 2 == 0:  # a pair's mean positions are equal: a linear drift cancels
            before = [s.treatment for s in plan if s.cycle == cycle - 1]
            assert order == before[::-1]
    assert len(follows) == n * (n - 1) and set(follows.values()) == {2}
    assert williams_row(keys, 0)[0] == "k0"


def test_a_sweep_runs_the_williams_order(tmp_path: Path) -> None:
    lad = load_ladder(write(tmp_path, BASE + SWEEP))
    assert ladder_plan(lad) == run_plan(lad.treatment_keys, 4, WILLIAMS)


def test_the_shipped_sweep_ladders_load_with_their_arms() -> None:
    from tests.ladder.test_load import LADDERS

    demo = load_ladder(LADDERS / "sweep-demo.toml")
    assert demo.treatment_keys == ("none", "size_n_4", "size_n_12", "size_n_24")
    assert demo.stop is not None and demo.stop.min_cycles == 2
    gpu = load_ladder(LADDERS / "lowerarm-sweep.toml")
    assert gpu.treatment_keys[1:] == tuple(
        f"gate_{v}" for v in ("0.05", "0.10", "0.25", "0.50", "0.75", "0.90")
    )
    assert gpu.treatment("gate_0.25").args == (
        "--spec-type", "draft-mtp", "--spec-draft-n-max", "6", "--spec-draft-p-min", "0.25",
    )  # fmt: skip
    assert gpu.treatment("gate_0.25").memory_step_mib == 256.0
