"""The load ladder: the demo loads, its cases and block order, its entry point, and each
rule's one-line error."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.kinds.load.ladder import Level, settings
from pytest_mtpsweep.kinds.load.run.cases import load_cases
from pytest_mtpsweep.kinds.load.run.loadrun import declared_slots, prepare
from pytest_mtpsweep.ladder import run_plan
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "experiments" / "ladders" / "load-cpu.toml"
BASE = """
kind = "load"
question = "q?"
baseline = "a"
{size}
{extra}
[model]
id = "m"
[server]
[[treatments]]
key = "a"
base_url = "http://127.0.0.1:9"
[[treatments]]
key = "b"
base_url = "{url}"
"""


def ladder_file(
    tmp_path: Path, extra: str, url: str = "http://127.0.0.1:10", size: str = "requests = 4"
) -> Path:
    """A load ladder on two attached treatments; `size` says how long each block runs."""
    path = tmp_path / "ladders" / "x.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(BASE.format(extra=extra, url=url, size=size))
    return path


def test_the_shipped_kind_is_registered_in_pyproject() -> None:
    doc = tomllib.loads((REPO / "pyproject.toml").read_text())
    kinds = doc["project"]["entry-points"]["pytest_mtpsweep.kinds"]
    assert kinds["load"] == "pytest_mtpsweep.kinds.load:KIND"


def test_the_demo_runs_each_cycle_pair_up_then_down() -> None:
    ladder = load_ladder(DEMO)
    s = settings(ladder)
    assert [lv.label for lv in s.levels] == ["conc1", "conc2", "conc4"]
    assert declared_slots(ladder.server_args) == 4 >= max(lv.value for lv in s.levels)
    cases = load_cases(run_plan(ladder.treatment_keys, ladder.cycles), s)
    assert [c.id for c in cases] == [
        "c1-none-conc1", "c1-none-conc2", "c1-none-conc4",
        "c1-ngram-conc1", "c1-ngram-conc2", "c1-ngram-conc4",
        "c2-ngram-conc4", "c2-ngram-conc2", "c2-ngram-conc1",
        "c2-none-conc4", "c2-none-conc2", "c2-none-conc1",
    ]  # fmt: skip
    # over a cycle pair every level's block positions sum to L - 1
    for label in ("conc1", "conc2", "conc4"):
        for t in ladder.treatment_keys:
            assert sum(c.position for c in cases if c.id.endswith(f"{t}-{label}")) == 2


def test_every_treatment_is_sent_the_same_schedule() -> None:
    ladder = load_ladder(DEMO)
    run = prepare(
        ladder,
        ladder.kind_settings,
        RunRequest(ladder=str(DEMO), search_dirs=(), cwd=REPO, invocation=()),
    )
    plan = run.plan_fields()["load"]
    assert len(plan["prompt_order"]) == 16 and sorted(set(plan["prompt_order"])) == sorted(
        p["id"] for p in plan["prompts"]
    )  # the 16 requests of a level: each structured prompt twice
    assert plan["block_order"] == {"c1": ["conc1", "conc2", "conc4"],
                                   "c2": ["conc4", "conc2", "conc1"]}  # fmt: skip
    lines = "\n".join(run.prereg_lines(run.registration(ladder.prereg)))
    assert "odd cycles run the levels lowest first" in lines and "Multiplicity: 1 contrast" in lines


def test_levels_mix_closed_and_open_loop(tmp_path: Path) -> None:
    s = settings(load_ladder(ladder_file(tmp_path, "concurrency = [1, 8]\nrate = [0.5, 2.5]")))
    assert s.levels == (Level("closed", 1), Level("closed", 8), Level("open", 0.5),
                        Level("open", 2.5))  # fmt: skip
    assert [lv.label for lv in s.levels] == ["conc1", "conc8", "rate0.5", "rate2.5"]
    assert s.block_order(2)[0].label == "rate2.5"
    assert set(s.modes()) == {"closed", "open"}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("", "a load ladder needs levels"),
        ("concurrency = [4, 2]", "lowest first, e.g. [2, 4]"),
        ("concurrency = [2, 2]", "once each"),
        ("concurrency = [0, 2]", "list positive whole numbers"),
        ("concurrency = [1.5]", "list positive whole numbers"),
        ("rate = [-1.0]", "list positive requests/s"),
        ("concurrency = [1]\nendpoint = \"tok\"", "use one of ttft, itl, e2e"),
        ("concurrency = [1]\n[slo]\nttft_ms = -5", "slo.ttft_ms is -5"),
        ("concurrency = [1]\n[slo]\np99 = 5", "unknown field slo.'p99'"),
        ("concurrency = [1]\n[preregistration]\nprimary_contrasts = [\"b vs c\"]",
         "is not 'TREATMENT vs BASELINE'"),
    ],
)  # fmt: skip
def test_each_rule_is_one_line(tmp_path: Path, extra: str, says: str) -> None:
    with pytest.raises(LadderError) as info:
        load_ladder(ladder_file(tmp_path, extra))
    assert says in str(info.value) and "\n" not in str(info.value)


def test_a_server_off_loopback_is_loaded_only_when_allowed(tmp_path: Path) -> None:
    far = "http://192.0.2.7:8000"
    with pytest.raises(LadderError, match="set allow_remote = true only for a server you may"):
        load_ladder(ladder_file(tmp_path, "concurrency = [1]", far))
    assert settings(load_ladder(ladder_file(tmp_path, "concurrency = [1]\nallow_remote = true",
                                            far))).allow_remote  # fmt: skip


def test_the_declared_slots_are_read_from_argv() -> None:
    assert declared_slots(["--parallel", "4", "--kv-unified"]) == 4
    assert declared_slots(["-np", "2"]) == 2
    assert declared_slots(["--ctx-size", "4096"]) is None


@given(st.lists(st.integers(1, 64), min_size=1, max_size=6, unique=True), st.integers(1, 3))
def test_over_every_cycle_pair_each_levels_places_sum_to_l_minus_1(
    values: list[int], pairs: int
) -> None:
    from pytest_mtpsweep.kinds.load.ladder import LoadSettings

    levels = tuple(Level("closed", float(v)) for v in sorted(values))
    s = LoadSettings("canonical", "both", levels, 4, None, None, False, 60.0, 1.0, "e2e", 8, False)
    plan = run_plan(("a", "b"), 2 * pairs)
    cases = load_cases(plan, s)
    for slot in plan:  # every treatment of a cycle runs the same order
        assert [c.level for c in cases if c.slot == slot] == list(s.block_order(slot.cycle))
    for level in levels:
        for t in ("a", "b"):
            for pair in range(pairs):
                places = [c.position for c in cases if c.level == level and c.slot.treatment == t
                          and (c.slot.cycle - 1) // 2 == pair]  # fmt: skip
                assert sum(places) == len(levels) - 1


def test_the_test_file_shown_is_the_shipped_one() -> None:
    from tests.test_docs import fenced, without_docstring

    (shown,) = fenced(REPO / "docs" / "load.md", "python")
    assert shown == without_docstring(REPO / "experiments" / "test_load.py")


@pytest.mark.parametrize(
    ("size", "says"),
    [
        ("requests = 4\nduration_s = 30", "fields 'requests' and 'duration_s' are both given"),
        ("requests = 0", "field 'requests' is 0"),
        ("duration_s = 0", "field 'duration_s' is 0; use more than 0 and at most 3600"),
        ("duration_s = -2.5", "field 'duration_s' is -2.5; use more than 0"),
        ("duration_s = 3600.5\nlevel_timeout_s = 7200", "field 'duration_s' is 3600.5"),
        ("duration_s = true", "field 'duration_s' is True but must be a int or float"),
        ("duration_s = 700", "'duration_s' is 700 but 'level_timeout_s' is 600"),
        ("duration_s = 0.01\nrate = [0.001]", "level rate0.001 schedules no request within"),
    ],
)  # fmt: skip
def test_a_block_is_sized_by_requests_or_by_duration_s_not_both(
    tmp_path: Path, size: str, says: str
) -> None:
    with pytest.raises(LadderError) as info:
        load_ladder(ladder_file(tmp_path, "" if "rate" in size else "concurrency = [1]", size=size))
    assert says in str(info.value) and "\n" not in str(info.value)


def test_a_ladder_with_neither_runs_16_requests_a_block(tmp_path: Path) -> None:
    s = settings(load_ladder(ladder_file(tmp_path, "concurrency = [1]", size="")))
    assert (s.requests, s.duration_s) == (16, None)


def test_a_timed_ladder_reads_its_duration_and_cycles_a_long_prompt_order(tmp_path: Path) -> None:
    s = settings(load_ladder(ladder_file(tmp_path, "concurrency = [1]", size="duration_s = 30")))
    assert (s.requests, s.duration_s, s.per_block) == (None, 30.0, "30 s")
    assert s.order_length(7) == 7 * 147 >= 1024 and s.order_length(7) % 7 == 0
    assert s.plan_entry()["duration_s"] == 30.0 and s.plan_entry()["requests"] is None
    counted = settings(load_ladder(ladder_file(tmp_path, "concurrency = [1]")))
    assert (counted.requests, counted.duration_s, counted.per_block) == (4, None, "4 requests")
    assert counted.order_length(7) == 4


@pytest.mark.parametrize(
    ("size", "flags", "expect"),
    [
        ("requests = 4", {"command_line.duration_s": 2.0}, (None, 2.0)),
        ("duration_s = 30", {"command_line.requests": 3}, (3, None)),
        ("duration_s = 30", {"command_line.duration_s": 5.0}, (None, 5.0)),
    ],
)
def test_either_option_replaces_the_ladders_block_size(
    tmp_path: Path, size: str, flags: dict[str, float], expect: tuple[int | None, float | None]
) -> None:
    s = settings(load_ladder(ladder_file(tmp_path, "concurrency = [1]", size=size), flags))
    assert (s.requests, s.duration_s) == expect


def test_both_options_at_once_are_refused_by_their_flags(tmp_path: Path) -> None:
    from pytest_mtpsweep.interface import registry
    from pytest_mtpsweep.wishes.options import describe_overrides

    flags = {"command_line.requests": 3, "command_line.duration_s": 2.0}
    said = describe_overrides(flags, registry.options())
    with pytest.raises(LadderError) as info:
        load_ladder(ladder_file(tmp_path, "concurrency = [1]"), flags, said)
    text = str(info.value)
    assert "--load-requests 3 --load-duration 2.0 from the command line" in text
    assert "--load-requests and --load-duration are both given; give one" in text
    with pytest.raises(LadderError, match=r"'duration_s' is 0\.0; use more than 0"):
        load_ladder(ladder_file(tmp_path, "concurrency = [1]"), {"command_line.duration_s": 0.0})
