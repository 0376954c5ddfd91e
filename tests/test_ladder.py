"""Ladder loading, validation and the counterbalanced run plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.ladder import LadderError, find_ladder, load_ladder, run_order_key, run_plan

REPO = Path(__file__).resolve().parent.parent
LADDERS = REPO / "experiments" / "ladders"

MINIMAL = """
question = "Is B faster than A?"
baseline = "a"
[model]
path = "m.gguf"
id = "m"
[server]
port = 0
[[treatments]]
key = "a"
[[treatments]]
key = "b"
args = ["--spec-type", "ngram-simple"]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "l.toml"
    p.write_text(text)
    return p


class TestShippedLadders:
    @pytest.mark.parametrize("name", ["cpu-demo", "lowerarm", "lowerarm-cpu"])
    def test_loads(self, name: str) -> None:
        lad = load_ladder(LADDERS / f"{name}.toml")
        assert lad.name == name
        assert lad.baseline == lad.treatments[0].key == "none"
        assert lad.cycles == 2 and lad.seed == 42 and lad.temperature == 0.0

    def test_cpu_demo_is_the_demo(self) -> None:
        lad = load_ladder(LADDERS / "cpu-demo.toml")
        assert [t.key for t in lad.treatments] == ["none", "ngram-simple", "ngram-mod"]
        assert lad.max_tokens == 128 and lad.model == "embedded:gemma3-270m"

    def test_lowerarm_gates(self) -> None:
        lad = load_ladder(LADDERS / "lowerarm.toml")
        assert lad.ctx_size == 65536 and lad.max_tokens == 256 and lad.model == ""
        assert lad.treatment("gate_0.10").args == (
            "--spec-type",
            "draft-mtp",
            "--spec-draft-n-max",
            "6",
            "--spec-draft-p-min",
            "0.10",
        )

    def test_lowerarm_cpu_drafts_with_its_own_model(self) -> None:
        lad = load_ladder(LADDERS / "lowerarm-cpu.toml")
        args = lad.treatment("gate_0.25").args
        assert args[args.index("-md") + 1] == "{model}"
        assert "draft-simple" in args and "0.25" in args


class TestValidation:
    def test_minimal_defaults(self, tmp_path: Path) -> None:
        lad = load_ladder(write(tmp_path, MINIMAL))
        assert lad.name == "l" and lad.port == 0 and lad.host == "127.0.0.1"
        assert lad.treatment("b").args == ("--spec-type", "ngram-simple")

    @pytest.mark.parametrize(
        ("edit", "needle"),
        [
            (
                lambda s: s.replace('question = "Is B faster than A?"', ""),
                "missing required field 'question'",
            ),
            (lambda s: s.replace('baseline = "a"', 'baseline = "z"'), "field 'baseline' is 'z'"),
            (lambda s: "bogus = 1\n" + s, "unknown field 'bogus'"),
            (lambda s: s + "\nbogus = 1\n", "unknown field treatments[1].'bogus'"),
            (lambda s: s.replace("port = 0", 'port = "80"'), "field server.'port'"),
            (lambda s: s.replace("port = 0", "port = 70000"), "server.port is 70000"),
            (lambda s: s.replace('key = "b"', 'key = "a"'), "appear twice"),
            (lambda s: s.replace('key = "b"', 'key = "b c"'), "letters, digits"),
            (
                lambda s: s.replace('args = ["--spec-type", "ngram-simple"]', "args = [1]"),
                "list of strings",
            ),
            (lambda s: "cycles = 0\n" + s, "cycles is 0"),
            (lambda s: "cycles = true\n" + s, "must be a int"),
            (lambda s: s + "\n[[treatments]\n", "not valid TOML"),
        ],
    )
    def test_errors_name_file_field_and_fix(self, tmp_path: Path, edit, needle: str) -> None:  # type: ignore[no-untyped-def]
        path = write(tmp_path, edit(MINIMAL))
        with pytest.raises(LadderError) as info:
            load_ladder(path)
        msg = str(info.value)
        assert str(path) in msg and needle in msg
        assert "\n" not in msg.strip()

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(LadderError, match="not found"):
            load_ladder(tmp_path / "nope.toml")


class TestFindLadder:
    def test_by_name(self) -> None:
        assert find_ladder("cpu-demo", [LADDERS]) == (LADDERS / "cpu-demo.toml").resolve()

    def test_by_path(self, tmp_path: Path) -> None:
        p = write(tmp_path, MINIMAL)
        assert find_ladder(str(p), []) == p.resolve()

    def test_unknown_lists_available(self) -> None:
        with pytest.raises(LadderError, match="available: cpu-demo, lowerarm, lowerarm-cpu"):
            find_ladder("nope", [LADDERS])


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
