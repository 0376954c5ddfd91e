"""request_seeds: one seed per measurement, shared by the treatments of a cell (issue 49: a
planted acceptance seeded by the request was one draw per run with the ladder's one seed)."""

from __future__ import annotations

from pytest_mtpsweep.kinds.decode.run.cases import DecodeCase, measurement_seed
from pytest_mtpsweep.ladder import SessionSlot
from pytest_mtpsweep.ladder.prompts import Prompt


def _case(treatment: str, cycle: int, prompt: str, repeat: int = 1) -> DecodeCase:
    return DecodeCase(SessionSlot(1, treatment, cycle), Prompt(prompt, "prose", "text"), 0, repeat)


def test_a_cells_treatments_share_its_seed_and_cells_differ() -> None:
    a, b = _case("none", 1, "prose_01"), _case("ngram", 1, "prose_01")
    assert measurement_seed(42, a) == measurement_seed(42, b)  # the pair stays paired
    seeds = {
        measurement_seed(42, _case("none", c, p, r))
        for c in (1, 2, 3)
        for p in ("prose_01", "prose_02")
        for r in (1, 2)
    }
    assert len(seeds) == 12  # every cell its own draw
    assert measurement_seed(7, a) != measurement_seed(42, a)
    assert all(0 <= s < 2**31 - 1 for s in seeds)
