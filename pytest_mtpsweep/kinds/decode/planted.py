"""What llama-server's synthetic acceptance plants, exactly: the truth a calibration run is
checked against (`experiments/ladders/mechanism-cpu.toml`).

Build 11434 (`common/speculative.cpp`, `tools/server/server-context.cpp`):
`--spec-synth-rates r1,…,rk` takes k = the drafter's n_max values, each in [0, 1], non-increasing.
They are *unconditional*: the server turns them into conditional ones, q_i = r_i / r_(i-1)
(r_0 = 1), and at each verify step accepts drafted position i with probability q_i given
that position i-1 was accepted, from a generator seeded by the request's seed. So
P(at least i accepted) = r_i, and a step whose draft holds d tokens yields
1 + a tokens with E[1 + a] = 1 + r_1 + … + r_d: with full drafts (d = k)

    E[L] = 1 + Σ_{i ≤ k} r_i      (tokens per verify step; the server logs it as
                                    "synthetic acceptance: … mean length")

`--spec-synth-len L` plants the geometric curve r_i = p^i with Σ p^i = L - 1 (found by the
server's bisection; `synth_len_rates` here). Acceptance ignores what was drafted, so any
drafter type plants the same curve per step; a drafted end-of-generation token is never
accepted.

A record's counters are not per step: its first token comes from the prompt pass (no draft),
and near `max_tokens` the server drafts at most `remaining - 1` tokens (`get_n_draft_max`),
the last token being a plain step. So a record's tokens per step,
`(predicted_n - 1) / (predicted_n - 1 - draft_n_accepted)`, sits below E[L] at short
answers. `record_truth` gives the exact distribution of a record's accepted count for a
drafter that always drafts in full (draft-simple with p-min 0, the model as its own drafter),
from which a check derives its tolerance. The harness sends one seed with every request, so
the records of one arm and one answer length replay one stream: they are one draw, not many.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...kindapi import LadderError

# The longest answer record_truth takes: its table is tokens x tokens.
MAX_TOKENS = 8192
# --spec-draft-n-max's default in build 11434 (common/common.h), for --spec-synth-len.
DEFAULT_N_MAX = 3


def check_rates(rates: Sequence[float], where: str) -> tuple[float, ...]:
    """The server's own rule for a curve, refused in one sentence naming `where`."""
    out = tuple(float(r) for r in rates)
    if not out:
        raise LadderError(f"{where}: the planted curve is empty; give n_max rates")
    for i, r in enumerate(out):
        if not (math.isfinite(r) and 0.0 <= r <= 1.0):
            raise LadderError(f"{where}: rate {i + 1} is {r}; each rate must be within [0, 1]")
        if i and r > out[i - 1]:
            raise LadderError(
                f"{where}: rate {i + 1} ({r}) exceeds rate {i} ({out[i - 1]}); the rates are "
                "unconditional per position and must not increase"
            )
    return out


def mean_length(rates: Sequence[float]) -> float:
    """E[L] of a full draft: 1 + the sum of the unconditional rates."""
    return 1.0 + float(sum(rates))


def synth_len_rates(length: float, n_max: int) -> tuple[float, ...]:
    """The curve `--spec-synth-len` plants: r_i = p^i, Σ p^i = length - 1, as the server
    bisects it (32 halvings)."""
    if not (math.isfinite(length) and 1.0 <= length <= n_max + 1):
        raise LadderError(f"--spec-synth-len {length} must be within [1, {n_max + 1}]")
    if length == n_max + 1:
        return (1.0,) * n_max
    lo, hi = 0.0, 1.0
    for _ in range(32):
        mid = 0.5 * (lo + hi)
        total = sum(mid ** (j + 1) for j in range(n_max))
        lo, hi = (mid, hi) if total < length - 1.0 else (lo, mid)
    p = 0.5 * (lo + hi) if length > 1.0 else 0.0
    return tuple(p ** (i + 1) for i in range(n_max))


def _flag(args: Sequence[str], *names: str) -> str | None:
    for i, a in enumerate(args[:-1]):
        if a in names:
            return args[i + 1]
    return None


def planted_rates(args: Sequence[str], where: str = "treatment") -> tuple[float, ...] | None:
    """The curve a treatment's server arguments plant, or None where they plant none."""
    rates = _flag(args, "--spec-synth-rates")
    if rates is not None:
        try:
            values = [float(x) for x in rates.split(",")]
        except ValueError:
            raise LadderError(
                f"{where}: --spec-synth-rates {rates!r} is not comma-separated numbers; "
                "write e.g. 0.9,0.6,0.3"
            ) from None
        return check_rates(values, where)
    length = _flag(args, "--spec-synth-len")
    if length is None:
        return None
    n_max = _flag(args, "--spec-draft-n-max", "--draft-max", "--draft-n")
    return synth_len_rates(float(length), int(n_max) if n_max else DEFAULT_N_MAX)


@dataclass(frozen=True)
class RecordTruth:
    """What one record of `tokens` generated tokens holds in expectation, under a planted curve
    and full drafts: its accepted count's distribution and its drafted count's mean."""

    tokens: int
    accepted_pmf: tuple[float, ...]  # P(draft_n_accepted = a), a = 0 … tokens - 1
    drafted_mean: float

    @property
    def accepted_mean(self) -> float:
        return float(np.dot(np.arange(len(self.accepted_pmf)), self.accepted_pmf))

    @property
    def accepted_var(self) -> float:
        a = np.arange(len(self.accepted_pmf))
        return float(np.dot(a * a, self.accepted_pmf)) - self.accepted_mean**2

    @property
    def steps_mean(self) -> float:
        """E[predicted_n - 1 - draft_n_accepted]: the decode steps after the prompt's token."""
        return self.tokens - 1 - self.accepted_mean

    @property
    def tokens_per_step(self) -> float:
        """(predicted_n - 1) / E[steps]: the record's tokens per step, as the tool reads it
        (the first token is the prompt pass's), at the planted law's mean accepted count."""
        return (self.tokens - 1) / self.steps_mean if self.steps_mean > 0 else 1.0


def _step_pmf(rates: Sequence[float], d: int) -> np.ndarray:
    """P(a = j), j = 0 … d, at a step drafting d tokens: P(a >= i) = r_i."""
    tail = np.array([1.0, *rates[:d], 0.0])
    out: np.ndarray = tail[:-1] - tail[1:]
    return out


def record_truth(rates: Sequence[float], tokens: int) -> RecordTruth:
    """The exact law of a record's counters: the first token from the prompt pass, then steps
    drafting min(k, remaining - 1) tokens each (none for the last token), until `tokens`."""
    curve = check_rates(rates, "record_truth")
    if not 1 <= tokens <= MAX_TOKENS:
        raise LadderError(f"record_truth: tokens {tokens} must be within 1 … {MAX_TOKENS}")
    k = len(curve)
    steps = [_step_pmf(curve, d) for d in range(k + 1)]
    # at[g, s]: the probability of having generated g tokens in s steps after the first
    at = np.zeros((tokens + 1, tokens + 1))
    at[1, 0] = 1.0
    drafted = 0.0
    for g in range(1, tokens):
        here = at[g]
        d = min(k, tokens - g - 1)
        drafted += d * float(here.sum())
        for a, p in enumerate(steps[d]):
            if p > 0.0:
                at[g + 1 + a, 1:] += p * here[:-1]
    # tokens - 1 = steps + accepted, so the step count's law is the accepted count's
    by_steps = at[tokens]
    pmf = np.zeros(tokens)
    for s in range(tokens):
        pmf[tokens - 1 - s] = by_steps[s]
    return RecordTruth(
        tokens=tokens, accepted_pmf=tuple(float(x) for x in pmf), drafted_mean=drafted
    )
