"""The counterbalanced run plan: ABC CBA, every slot once, selection never reorders."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.ladder import run_order_key, run_plan

keys = st.lists(
    st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True), min_size=1, max_size=6, unique=True
)


class TestRunPlan:
    def test_abc_cba(self) -> None:
        plan = run_plan(["a", "b", "c"], 2)
        assert [(s.ordinal, s.treatment, s.cycle) for s in plan] == [
            (1, "a", 1),
            (2, "b", 1),
            (3, "c", 1),
            (4, "c", 2),
            (5, "b", 2),
            (6, "a", 2),
        ]
        assert plan[0].name == "01_a_c1" and plan[3].id == "c2-c"

    @given(keys, st.integers(1, 3))
    def test_each_cycle_pair_is_symmetric(self, treatments: list[str], pairs: int) -> None:
        plan = run_plan(treatments, 2 * pairs)
        k = len(treatments)
        for p in range(pairs):
            block = plan[2 * p * k : (2 * p + 2) * k]
            first = block[0].ordinal
            for key in treatments:
                a, b = (s.ordinal - first for s in block if s.treatment == key)
                # positions mirror around the pair's centre, so linear drift cancels per treatment
                assert a + b == 2 * k - 1

    @given(keys, st.integers(1, 5))
    def test_every_slot_once_and_ordinals_dense(self, treatments: list[str], cycles: int) -> None:
        plan = run_plan(treatments, cycles)
        assert [s.ordinal for s in plan] == list(range(1, len(treatments) * cycles + 1))
        assert {(s.treatment, s.cycle) for s in plan} == {
            (t, c) for t in treatments for c in range(1, cycles + 1)
        }

    @given(keys, st.integers(1, 4), st.data())
    def test_selection_never_reorders(
        self, treatments: list[str], cycles: int, data: st.DataObject
    ) -> None:
        plan = run_plan(treatments, cycles)
        cells = [(s, p) for s in plan for p in range(3)]
        keep = data.draw(st.lists(st.booleans(), min_size=len(cells), max_size=len(cells)))
        selected = [c for c, k in zip(cells, keep, strict=True) if k]
        # whatever order collection and -k leave the survivors in, run order is restored
        shuffled = data.draw(st.permutations(selected))
        assert sorted(shuffled, key=lambda c: run_order_key(c[0], c[1])) == selected
