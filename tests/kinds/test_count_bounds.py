"""The counts a decode or authoring ladder multiplies its cases by (repeats, turns, resamples)
are bounded by the ladder's one validation, in one line that states the bound; the largest
count each allows still loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.protocol.loader import load_ladder
from tests.kinds.authoring.test_ladder import ladder as authoring_ladder

REPO = Path(__file__).resolve().parents[2]
DECODE = REPO / "experiments" / "ladders" / "drafters-cpu.toml"


@pytest.mark.parametrize(
    ("value", "ok"), [(10**9, False), (101, False), (0, False), (100, True), (1, True)]
)
def test_decode_repeats_run_1_to_100_times(value: int, ok: bool) -> None:
    if ok:
        assert load_ladder(DECODE, {"repeats": value}).kind_fields["repeats"] == value
        return
    with pytest.raises(LadderError) as info:
        load_ladder(DECODE, {"repeats": value})
    said = str(info.value)
    assert f"field 'repeats' is {value}; use 1 to 100." in said and "\n" not in said


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("repeats = 1000000000", "repeats is 1000000000; use 1 to 100"),
        ("max_turns = 1000000000", "max_turns is 1000000000; use 1 to 100 turns"),
        ("token_budget = 9000000000000000000", "token_budget is 9000000000000000000; use a "
         "positive number of tokens up to 1e+12"),
        ("feedback_chars = 1000000000", "feedback_chars is 1000000000; use 80 to 1000000"),
        ("[contrast]\nresamples = 1000000000000", "contrast.resamples is 1000000000000; use "
         "1000 to 100000"),
    ],
)  # fmt: skip
def test_an_authoring_count_past_its_bound_is_one_line(
    tmp_path: Path, extra: str, says: str
) -> None:
    with pytest.raises(LadderError) as info:
        load_ladder(authoring_ladder(tmp_path, extra))
    assert says in str(info.value) and "\n" not in str(info.value)


def test_an_authoring_ladder_at_its_bounds_loads(tmp_path: Path) -> None:
    extra = (
        "repeats = 100\nmax_turns = 100\nfeedback_chars = 1000000\n[contrast]\nresamples = 100000"
    )
    assert load_ladder(authoring_ladder(tmp_path, extra)).kind == "authoring"
