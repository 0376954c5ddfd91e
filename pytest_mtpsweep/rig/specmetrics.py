"""Speculative-decoding counters from a server's Prometheus `/metrics` (vLLM's `spec_decode`
token totals), read before and after each request, outside its timed interval.

The text format is parsed here by hand: a sample line is `name{label="v",...} value [ts]`; the
few lines wanted do not justify a dependency. Counters of every label set (engine, model) are
summed: the harness sends one request at a time, so a delta is that request's, unless another
client used the server meanwhile or the server updated a counter late. `moved_between` in the
record shows either: what the counters gained between two of the harness's requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
DRAFTED = "vllm:spec_decode_num_draft_tokens_total"
METRICS_PATH = "/metrics"


@dataclass(frozen=True)
class SpecCounters:
    """The server's running totals of draft tokens proposed and accepted."""

    drafted: int
    accepted: int


def parse_samples(text: str) -> dict[str, float]:
    """Prometheus text -> metric name -> the sum of its samples over every label set."""
    out: dict[str, float] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, rest = _split_name(line)
        fields = rest.split()
        if not name or not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isfinite(value):
            out[name] = out.get(name, 0.0) + value
    return out


def _split_name(line: str) -> tuple[str, str]:
    """(metric name, what follows its label set), honouring quotes inside the labels."""
    brace = line.find("{")
    space = min((i for i in (line.find(" "), line.find("\t")) if i >= 0), default=-1)
    if brace < 0 or (0 <= space < brace):
        return (line[:space], line[space:]) if space >= 0 else (line, "")
    quoted, escaped = False, False
    for i in range(brace + 1, len(line)):
        c = line[i]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == "}" and not quoted:
            return line[:brace], line[i + 1 :]
    return "", ""


def spec_counters(text: str) -> SpecCounters | None:
    """The spec-decode totals in a `/metrics` page; None when it has neither counter."""
    samples = parse_samples(text)
    if ACCEPTED not in samples and DRAFTED not in samples:
        return None
    return SpecCounters(int(samples.get(DRAFTED, 0.0)), int(samples.get(ACCEPTED, 0.0)))


@dataclass(frozen=True)
class RequestCounts:
    """One request's share of the counters, and what moved since the harness's last request."""

    draft_n: int
    draft_n_accepted: int
    moved_between: int | None  # None for a session's first metered request


def request_counts(
    before: SpecCounters, after: SpecCounters, previous: SpecCounters | None
) -> RequestCounts:
    moved = None
    if previous is not None:
        moved = (before.drafted - previous.drafted) + (before.accepted - previous.accepted)
    return RequestCounts(after.drafted - before.drafted, after.accepted - before.accepted, moved)
