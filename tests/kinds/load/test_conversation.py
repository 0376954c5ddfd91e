"""`[conversation]`: its fields read and bounded (each refusal one line naming its bound, through
the one validation lint and the run share), the shared system prefix, and the schedule of a
block's conversations (deterministic given the seed, the same for every treatment)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.kinds.load.conversation import (
    CHARS_PER_TOKEN,
    FOLLOW_UPS,
    GUIDANCE,
    MAX_PREFIX_TOKENS,
    ConversationSettings,
    schedule,
    system_prefix,
)
from pytest_mtpsweep.kinds.load.ladder import settings
from pytest_mtpsweep.kinds.load.loadgen.payload import LoadPrompt
from pytest_mtpsweep.kinds.load.run.loadrun import prepare
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest
from tests.kinds.load.test_ladder import ladder_file
from tests.kinds.load.test_ladder_bounds import run_limited, write_ladder

TALK = "concurrency = [1, 2]\n[conversation]\n{fields}"


def talk(tmp_path: Path, fields: str, extra: str = "", size: str = "") -> Path:
    """A load ladder with `[conversation]` `fields` (and top-level `extra` before it)."""
    return ladder_file(tmp_path, extra + "\n" + TALK.format(fields=fields), size=size)


def test_a_conversation_ladder_is_read_with_its_defaults(tmp_path: Path) -> None:
    s = settings(load_ladder(talk(tmp_path, "turns = 4")))
    c = s.conversation
    assert c == ConversationSettings(turns=4, conversations=8, think_time_s=0.0,
                                     system_prefix_tokens=0)  # fmt: skip
    assert s.requests == 32 and s.duration_s is None  # a block: conversations x turns
    assert s.cache_prompt is True  # on by default: the point of a conversation
    entry = s.plan_entry()["conversation"]
    assert entry["turns"] == 4 and entry["system_prefix_chars"] == 0
    off = settings(load_ladder(talk(tmp_path, "turns = 2", extra="cache_prompt = false")))
    assert off.cache_prompt is False  # a control run may turn it off
    plain = settings(load_ladder(ladder_file(tmp_path, "concurrency = [1]")))
    assert plain.conversation is None and plain.cache_prompt is False
    assert "conversation" not in plain.plan_entry()  # a plain ladder's plan as before


# fields, extra top-level fields, what the one line must say
HOSTILE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "no turns": ("conversations = 4", "", ("missing required field conversation.'turns'",)),
    "turns 0": ("turns = 0", "", ("conversation.turns is 0", "1 to 64 turns")),
    "turns 10**9": ("turns = 1000000000", "", ("conversation.turns is 1000000000", "1 to 64")),
    "turns a string": ('turns = "4"', "", ("conversation.'turns' is '4'", "must be a int")),
    "turns true": ("turns = true", "", ("conversation.'turns' is True",)),
    "conversations 0": ("turns = 2\nconversations = 0", "",
                        ("conversation.conversations is 0", "1 to 100,000")),
    "conversations 10**12": ("turns = 2\nconversations = 1000000000000", "",
                             ("conversations is 1000000000000", "1 to 100,000")),
    "conversations x turns past 10**6": ("turns = 64\nconversations = 100000", "",
                                         ("6,400,000 requests", "at most 1,000,000")),
    "think time negative": ("turns = 2\nthink_time_s = -1", "",
                            ("think_time_s is -1", "0 to 600 seconds")),
    "think time 1e300": ("turns = 2\nthink_time_s = 1e300", "", ("think_time_s is 1e+300",)),
    "think time nan": ("turns = 2\nthink_time_s = nan", "", ("think_time_s' is nan", "finite")),
    "think time inf": ("turns = 2\nthink_time_s = inf", "", ("think_time_s' is inf",)),
    "prefix negative": ("turns = 2\nsystem_prefix_tokens = -5", "",
                        ("system_prefix_tokens is -5", "0 to 32,768 tokens")),
    "prefix 10**9": ("turns = 2\nsystem_prefix_tokens = 1000000000", "",
                     ("system_prefix_tokens is 1000000000", "0 to 32,768")),
    "prefix past the context": ("turns = 2\nsystem_prefix_tokens = 5000", "",
                                ("at least 5,", "over server.ctx_size = 4096")),
    "turns x max_tokens past the context": ("turns = 64", "max_tokens = 256",
                                            ("turns 64 x (max_tokens 256", "ctx_size = 4096")),
    "unknown field": ("turns = 2\nsessions = 3", "", ("unknown field conversation.'sessions'",)),
    "a rate level": ("turns = 2", "rate = [1.0]", ("runs closed loop", "remove rate")),
    "a capacity search": ("turns = 2", "[slo]\ne2e_ms = 100\n[capacity]\nhigh = 4",
                          ("remove capacity",)),
    "more in flight than conversations": ("turns = 2\nconversations = 1", "",
                                          ("conc2 holds more conversations in flight",
                                           "conversation.conversations = 1")),
    "think time past the level timeout": (
        "turns = 3\nconversations = 100\nthink_time_s = 600", "level_timeout_s = 1000",
        ("waits 120,000 s of think time", "level_timeout_s = 1000")),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE))
def test_each_hostile_value_is_refused_in_one_line_naming_its_bound(
    tmp_path: Path, case: str
) -> None:
    fields, extra, says = HOSTILE[case]
    if "[slo]" in extra:  # a table must follow the top-level fields
        path = ladder_file(tmp_path, f"[conversation]\n{fields}\n{extra}", size="")
    else:
        path = talk(tmp_path, fields, extra)
    with pytest.raises(LadderError) as err:
        load_ladder(path)
    message = str(err.value)
    assert "\n" not in message and all(s in message for s in says), message


@pytest.mark.parametrize(
    ("size", "flags", "says"),
    [
        ("requests = 4", {}, "'requests' cannot size it"),
        ("duration_s = 30", {}, "'duration_s' cannot size it"),
        ("", {"command_line.requests": 3}, "--load-requests cannot size it"),
        ("", {"command_line.duration_s": 5.0}, "--load-duration cannot size it"),
    ],
)
def test_a_conversation_block_is_sized_by_its_conversations_only(
    tmp_path: Path, size: str, flags: dict[str, object], says: str
) -> None:
    with pytest.raises(LadderError, match=says):
        load_ladder(talk(tmp_path, "turns = 2", size=size), flags)


def test_lint_refuses_hostile_conversations_before_any_work(tmp_path: Path) -> None:
    """The same bounds through `mtpsweep lint`, under the address-space limit: nothing is drawn
    or built for a refused ladder."""
    cases = {
        "turns": ("concurrency = [1]\n[conversation]\nturns = 100000", "1 to 64 turns"),
        "product": ("concurrency = [1]\n[conversation]\nturns = 64\nconversations = 99999",
                    "at most 1,000,000"),
        "prefix": ("concurrency = [1]\n[conversation]\nturns = 1\n"
                   f"system_prefix_tokens = {MAX_PREFIX_TOKENS}", "over server.ctx_size"),
    }  # fmt: skip
    paths = {k: write_ladder(tmp_path, k, fields) for k, (fields, _) in cases.items()}
    done = run_limited(
        ["-m", "pytest_mtpsweep.cli.main", "lint", *map(str, paths.values())], tmp_path
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    for k, (_, says) in cases.items():
        line = next(x for x in out.splitlines() if x.startswith(f"{paths[k]}:"))
        assert says in line, line


def test_the_system_prefix_is_real_text_of_about_its_length_and_the_same_every_time() -> None:
    text = system_prefix(512)
    assert text == system_prefix(512) and system_prefix(0) == ""
    assert abs(len(text) / CHARS_PER_TOKEN - 512) < 512 * 0.05
    body = text.splitlines()[1:]
    assert all(line.split(". ", 1)[1] in GUIDANCE for line in body)  # sentences, not noise
    assert system_prefix(2048).startswith(text)  # a longer prefix extends a shorter one
    c = ConversationSettings(turns=2, system_prefix_tokens=512)
    assert c.plan_entry()["system_prefix_sha256"] == ConversationSettings(
        turns=5, conversations=3, system_prefix_tokens=512
    ).plan_entry()["system_prefix_sha256"]  # fmt: skip


PROMPTS = [LoadPrompt(f"p{i}", f"Edit text number {i}.") for i in range(5)]


def test_a_conversation_works_on_one_prompt_then_follow_ups() -> None:
    c = ConversationSettings(turns=3, conversations=7)
    turns = schedule(PROMPTS, c, seed=1)
    assert len(turns) == 21
    texts = {p.id: p.text for p in PROMPTS}
    for n in range(7):
        mine = turns[n * 3 : (n + 1) * 3]
        assert len({t.id for t in mine}) == 1  # the conversation's prompt: one cluster
        assert mine[0].text == texts[mine[0].id]
        assert all(t.text in FOLLOW_UPS for t in mine[1:])
    firsts = [turns[n * 3].id for n in range(5)]
    assert sorted(firsts) == sorted(p.id for p in PROMPTS)  # a whole permutation first


@given(seed=st.integers(0, 2**31 - 1), turns=st.integers(1, 6), n=st.integers(1, 20))
def test_the_schedule_is_a_function_of_the_seed(seed: int, turns: int, n: int) -> None:
    c = ConversationSettings(turns=turns, conversations=n)
    assert schedule(PROMPTS, c, seed) == schedule(list(PROMPTS), c, seed)


def test_another_seed_draws_another_schedule() -> None:
    c = ConversationSettings(turns=3, conversations=10)
    assert schedule(PROMPTS, c, 1) != schedule(PROMPTS, c, 2)


def test_the_longest_conversation_must_fit_the_context(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts" / "canonical"
    prompts.mkdir(parents=True)
    (prompts / "prose_01.txt").write_text("Rewrite this: " + "word " * 3000)
    ladder = load_ladder(talk(tmp_path, "turns = 2\nconversations = 2"))
    with pytest.raises(LadderError, match=r"conversation 1's last turn may hold about 5,"):
        prepare(
            ladder,
            ladder.kind_settings,
            RunRequest(
                ladder=str(ladder.path),
                search_dirs=(),
                cwd=tmp_path,
                invocation=(),
                prompts_dir=prompts,
            ),
        )
    (prompts / "prose_01.txt").write_text("Rewrite this: word word.")
    run = prepare(
        ladder,
        ladder.kind_settings,
        RunRequest(
            ladder=str(ladder.path),
            search_dirs=(),
            cwd=tmp_path,
            invocation=(),
            prompts_dir=prompts,
        ),
    )
    assert [t.id for t in run.scheduled] == ["prose_01"] * 4
    assert run.plan_fields()["load"]["conversation"]["conversations"] == 2
