"""The conversation loop and the budget, driven by scripted replies and verdicts (the loop is
pure: the chat and the checker are passed in; the end-to-end tests run the real ones)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.chat import ChatReply
from pytest_mtpsweep.kinds.authoring.run.budget import TEMPLATE_TOKENS, Budget, turn_bound
from pytest_mtpsweep.kinds.authoring.run.repairloop import Messages, Settings, converse
from pytest_mtpsweep.kinds.authoring.sandbox import Check

SETTINGS = Settings(max_turns=3, max_tokens=100, extract="fenced:python", feedback_chars=300)
CODE = "```python\nx = 1\n```"


def replies(*items: ChatReply) -> Callable[[Messages], ChatReply]:
    queue = list(items)
    return lambda messages: queue.pop(0)


def verdicts(*items: str) -> Callable[[str], Check]:
    queue = list(items)
    return lambda artefact: Check(queue.pop(0), 1, 0.1, None, "E   assert 1 == 2\n")


def ok(content: str = CODE, p: int = 50, c: int = 20) -> ChatReply:
    return ChatReply(True, content=content, prompt_tokens=p, completion_tokens=c, http_status=200)


def talk(send: Callable[[Messages], ChatReply], judge: Callable[[str], Check],
         budget: Budget | None = None, s: Settings = SETTINGS) -> tuple[Any, list[dict[str, Any]]]:  # fmt: skip
    turns: list[dict[str, Any]] = []
    end = converse([{"role": "user", "content": "write x"}], s, send, judge,
                   budget or Budget(None), turns.append)  # fmt: skip
    return end, turns


def test_green_at_once_and_after_feedback() -> None:
    end, turns = talk(replies(ok()), verdicts("pass"))
    assert end.outcome == records.FIRST_ATTEMPT_GREEN and end.green_turn == 1 and len(turns) == 1
    end, turns = talk(replies(ok(), ok(p=90)), verdicts("fail", "pass"))
    assert end.outcome == records.GREEN_AFTER_K and end.green_turn == 2
    assert end.prompt_tokens == 140 and end.completion_tokens == 40
    feedback = end.messages[2]
    assert feedback["role"] == "user" and feedback["content"].startswith("check: ")
    assert "assert 1 == 2" in feedback["content"]
    assert turns[0]["verdict"] == "fail" and turns[0]["error_first_line"] == "assert 1 == 2"


def test_exhausted_and_the_last_failure_is_not_fed_back() -> None:
    end, turns = talk(replies(ok(), ok(), ok()), verdicts("fail", "fail", "fail"))
    assert end.outcome == records.EXHAUSTED and end.turns_used == 3
    assert [m["role"] for m in end.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert turns[-1]["feedback_chars"] is None


def test_no_artefact_tells_the_model_and_is_not_checked() -> None:
    end, turns = talk(replies(ok("no code"), ok()), verdicts("pass"))
    assert end.outcome == records.GREEN_AFTER_K
    assert turns[0]["verdict"] == records.VERDICT_NO_ARTEFACT and turns[0]["exit_code"] is None
    assert "no ```python code block" in end.messages[2]["content"]


def test_an_api_failure_ends_the_cell_with_its_status() -> None:
    bad = ChatReply(
        False, http_status=500, error="HTTP 500 (after 4 retries)", retried=("500",) * 4
    )
    end, turns = talk(replies(bad), verdicts())
    assert end.outcome == records.API_FAILURE and end.api_status == 500
    assert end.prompt_tokens == 0 and end.api_retries == 4
    assert turns[0]["verdict"] == records.VERDICT_NOT_CHECKED


def test_a_checker_error_ends_the_cell() -> None:
    end, _ = talk(replies(ok()), verdicts(records.VERDICT_CHECKER_ERROR))
    assert end.outcome == records.CHECKER_ERROR


def test_the_budget_stops_before_a_turn_that_could_exceed_it() -> None:
    first = turn_bound([{"role": "user", "content": "write x"}], 100)
    budget = Budget(first + 10)  # room for the first turn, not for a second
    end, turns = talk(replies(ok(), ok()), verdicts("fail", "pass"), budget)
    assert end.outcome == records.BUDGET_STOPPED and len(turns) == 1
    assert budget.refused is not None and budget.spent == 70 <= budget.limit  # type: ignore[operator]
    assert not budget.allows(1)  # once refused, the run is out of budget


@given(st.integers(0, 5000), st.integers(0, 500), st.integers(1, 2000), st.text(max_size=300))
def test_the_bound_covers_the_next_prompt(
    prompt: int, completion: int, max_tokens: int, note: str
) -> None:
    new = [{"role": "user", "content": note}]
    bound = turn_bound([], max_tokens, (prompt, completion), new)
    # a byte-level tokenizer: never more tokens than bytes, plus the template's own
    assert bound >= prompt + completion + len(note.encode()) + max_tokens + TEMPLATE_TOKENS


def no_usage(content: str = CODE) -> ChatReply:
    return ChatReply(True, content=content, http_status=200)


def test_a_reply_without_usage_is_unknown_and_charged_its_bound() -> None:
    budget = Budget(None)
    end, turns = talk(replies(no_usage(), ok()), verdicts("fail", "pass"), budget)
    first_bound = turn_bound([{"role": "user", "content": "write x"}], SETTINGS.max_tokens)
    assert turns[0]["tokens_unknown"] is True and turns[0]["budget_tokens"] == first_bound
    assert turns[0]["prompt_tokens"] is None and turns[1]["tokens_unknown"] is False
    assert end.tokens_unknown_turns == 1
    assert budget.spent == first_bound + turns[1]["budget_tokens"] and budget.spent > 70


def test_a_malformed_reply_is_an_api_failure_charged_its_bound() -> None:
    bad = ChatReply(False, http_status=200, error="malformed response: usage.prompt_tokens is -1")
    budget = Budget(None)
    end, turns = talk(replies(bad), verdicts(), budget)
    assert end.outcome == records.API_FAILURE and end.api_error == bad.error
    assert budget.spent == turns[0]["budget_tokens"] > 0 and end.tokens_unknown_turns == 1


def test_a_refused_request_costs_nothing_it_did_not_report() -> None:
    budget = Budget(None)
    end, turns = talk(
        replies(ChatReply(False, http_status=500, error="HTTP 500")), verdicts(), budget
    )
    assert budget.spent == 0 and turns[0]["budget_tokens"] == 0 and end.tokens_unknown_turns == 0


@given(st.lists(st.sampled_from(["ok", "none", "bad", "refused"]), min_size=3, max_size=3))
def test_spending_never_shrinks_and_never_undercuts_a_known_turn(kinds: list[str]) -> None:
    made = {"ok": ok(), "none": no_usage(),
            "bad": ChatReply(False, http_status=200, error="malformed response: usage"),
            "refused": ChatReply(False, http_status=429, error="HTTP 429")}  # fmt: skip
    budget = Budget(None)
    _, turns = talk(replies(*[made[k] for k in kinds]), verdicts("fail", "fail", "fail"), budget)
    charged = [t["budget_tokens"] for t in turns]
    assert all(c >= 0 for c in charged) and budget.spent == sum(charged)
    for t, c in zip(turns, charged, strict=True):
        if t["prompt_tokens"] is not None and t["completion_tokens"] is not None:
            assert c == t["prompt_tokens"] + t["completion_tokens"]
