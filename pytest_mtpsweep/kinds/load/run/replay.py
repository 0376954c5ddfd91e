"""A trace replay's requests (pure): each record of the trace's window one request, at the
trace's time scaled, of real text from the ladder's prompt set, the same bytes for every
treatment and cycle, so the requests pair by slot (the record's place in the window).

The text of a request is *real*, never random tokens from hashes: a whole prompt of the set
(its *task*, by one seeded order of whole permutations, so each prompt ends as many requests
as another, ±1) after a *context* of text taken from the set to the trace's input length. Why
a whole prompt last: it is a task the model can do, so its answer, and a drafter's acceptance
on it, are what real content gives; cutting a prompt to a length would leave a fragment the
model can only guess at. Why context before it: the trace's input length is met (within the
characters-per-token estimate, which the records let the report check against the tokens the
server counted), and a Mooncake trace's shared prefixes are kept: the context is the text of
the record's hash ids in order, one passage of `block_tokens` (scaled) per id, each drawn from
a place in the prompt set seeded by (seed, id), so records that share leading hash ids share a
leading text, as the trace's users shared a prefix. A record without hash ids (Azure's) gets a
context of its own, seeded by its line. The prompt is the cluster of the analysis, as in every
load ladder: requests ending in the same task are not independent of each other.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ....kindapi.ladder import Prompt
from ..loadgen.arrivals import prompt_order
from ..loadgen.level import OpenLoop
from ..loadgen.payload import LoadPrompt
from ..trace import Trace, TraceSettings

SEPARATOR = "\n\n"  # between the prompts of the corpus, and before the task
NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class ReplayRequest:
    """One slot of the replay: its record, its intended time, what it sends."""

    index: int  # the slot: its place in the window, the same in every treatment and cycle
    line: int  # the record's line in the trace file
    at_ns: int  # the intended send, ns from the block's start (the trace's time, scaled)
    input_tokens: int  # the trace's input length (unscaled)
    output_tokens: int  # the trace's output length
    max_tokens: int  # the output length, capped by the ladder's max_tokens
    target_chars: int  # input x input_scale x chars_per_token: what the text is cut to meet
    task: str  # the id of the whole prompt that ends the text
    subset: str
    text: str
    sha256: str


@dataclass(frozen=True)
class Replay:
    """Every request of the replay, and what it was made from."""

    settings: TraceSettings
    trace: Trace
    requests: tuple[ReplayRequest, ...]
    corpus_chars: int  # the prompt set's text, once round: a longer context repeats it
    block_chars: int  # one hash id's passage

    def __len__(self) -> int:
        return len(self.requests)

    def prompts(self) -> tuple[LoadPrompt, ...]:
        """What the load client sends, slot by slot: the task's id (what the records name and
        the analysis clusters by), the text, the request's own max_tokens."""
        return tuple(LoadPrompt(r.task, r.text, r.max_tokens) for r in self.requests)

    def open_loop(self, max_in_flight: int) -> OpenLoop:
        """The block's load: the trace's scaled times, open loop (past `max_in_flight` requests
        in flight a send waits, and its lag is recorded)."""
        n = len(self.requests)
        span_s = self.requests[-1].at_ns / 1e9 if n else 0.0
        rate = n / span_s if span_s > 0 else float(n)  # said, not used: the times are given
        times = tuple(r.at_ns for r in self.requests)
        return OpenLoop(rate, n, 0, max_in_flight, arrivals=times)

    def request_fields(self, index: int) -> dict[str, Any]:
        """What a request line adds in a replay (records.TRACE_FIELDS)."""
        r = self.requests[index]
        return {
            "trace_line": r.line,
            "trace_input_tokens": r.input_tokens,
            "trace_output_tokens": r.output_tokens,
            "request_max_tokens": r.max_tokens,
            "fill_chars": len(r.text),
            "fill_sha256": r.sha256,
        }

    def plan_entry(self) -> dict[str, Any]:
        """plan.json's `load.trace`: the settings, the file's identity, every slot's record,
        time, task and max_tokens (the bytes are in each request line's fill_sha256)."""
        t = self.trace
        return {
            **self.settings.plan_entry(),
            "sha256": t.sha256,
            "bytes": t.size,
            "records": len(self.requests),
            "span_ms": round(t.span_ms, 3),
            "first_line": t.records[0].line,
            "last_line": t.records[-1].line,
            "corpus_chars": self.corpus_chars,
            "block_chars": self.block_chars,
            "lines": [r.line for r in self.requests],
            "arrivals_ms": [round(r.at_ns / NS_PER_MS, 3) for r in self.requests],
            "tasks": [r.task for r in self.requests],
            "max_tokens": [r.max_tokens for r in self.requests],
        }

    def prereg_lines(self, prompt_set: str) -> list[str]:
        s, t = self.settings, self.trace
        shared = (
            f"; records that share leading hash ids share leading text (a passage of "
            f"{self.block_chars} characters per id, seeded by the id)"
            if any(r.hash_ids for r in t.records)
            else ""
        )
        return [
            f"- Trace replay: {len(self.requests)} records of {s.given} ({s.format}, lines "
            f"{t.records[0].line}-{t.records[-1].line}, sha256 {t.sha256[:16]}), one block per "
            f"session at the trace's times x time_scale {s.time_scale:g} (span "
            f"{t.span_ms * s.time_scale / 1000:,.1f} s), open loop after its warm-up; latency "
            "from each request's intended time.",
            f"- Content: each request is a whole prompt of {prompt_set} (one seeded order) after "
            f"real text from the set to the trace's input length x input_scale "
            f"{s.input_scale:g} at {s.chars_per_token:g} characters per token{shared}; the same "
            "bytes in every treatment and cycle, so requests pair by slot; max_tokens the "
            "trace's output length, capped by the ladder's.",
        ]


def build(
    trace: Trace, s: TraceSettings, prompts: Sequence[Prompt], seed: int, max_tokens: int
) -> Replay:
    """Every request of the replay, from the seed alone: the same for every treatment."""
    if not prompts:
        raise ValueError("the prompt set is empty; give at least one prompt")
    corpus = _corpus(prompts, seed)
    block = max(round(s.block_tokens * s.input_scale * s.chars_per_token), 1)
    blocks: dict[int, str] = {}
    order = prompt_order(len(trace.records), len(prompts), seed)
    out = []
    for i, (r, k) in enumerate(zip(trace.records, order, strict=True)):
        task = prompts[k]
        target = max(round(r.input_tokens * s.input_scale * s.chars_per_token), 1)
        room = target - len(task.text) - len(SEPARATOR)
        context = ""
        if room > 0:
            for h in r.hash_ids:
                if h not in blocks:
                    blocks[h] = passage(corpus, f"{seed}:block:{h}", block)
            context = " ".join(blocks[h] for h in r.hash_ids)
            if len(context) < room:  # hash ids short of the length: a tail of its own
                tail = passage(corpus, f"{seed}:line:{r.line}", room - len(context))
                context = f"{context} {tail}" if context else tail
            context = _cut(context, room)
        text = f"{context}{SEPARATOR}{task.text}" if context else task.text
        out.append(
            ReplayRequest(
                i,
                r.line,
                round(r.time_ms * s.time_scale * NS_PER_MS),
                r.input_tokens,
                r.output_tokens,
                min(r.output_tokens, max_tokens),
                target,
                task.id,
                task.subset,
                text,
                hashlib.sha256(text.encode()).hexdigest(),
            )
        )
    return Replay(s, trace, tuple(out), len(corpus), block)


def _corpus(prompts: Sequence[Prompt], seed: int) -> str:
    """The prompt set's texts, in one seeded order, as one text the contexts are taken from."""
    order = prompt_order(len(prompts), len(prompts), seed)
    return SEPARATOR.join(prompts[i].text for i in order) + SEPARATOR


def passage(corpus: str, key: str, chars: int) -> str:
    """About `chars` characters of the corpus from a place seeded by `key`, read round its end,
    starting at a word and ending before one (never cut inside a word unless it is longer)."""
    start = random.Random(key).randrange(len(corpus))
    while start < len(corpus) and not corpus[start - 1].isspace():
        start += 1  # the start of the next word (the corpus ends in whitespace)
    start %= len(corpus)
    whole, part = divmod(start + chars + 64, len(corpus))
    ring = corpus * (whole + (1 if part else 0))
    return _cut(ring[start : start + chars + 64], chars).strip()


def _cut(text: str, chars: int) -> str:
    """`text` to at most `chars` characters, at the last whitespace within them when there is
    one in their second half."""
    if len(text) <= chars:
        return text
    head = text[:chars]
    space = max(head.rfind(" "), head.rfind("\n"))
    return head[:space].rstrip() if space > chars // 2 else head
