"""Hypothesis strategies and the synthetic run builder the analysis tests share.

A synthetic run follows the real layout (plan.json, records/, sessions/, quarantine/) and the
real counterbalanced order: odd cycles run treatments in ladder order, even cycles reversed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.decode.analysis.frame import RECORD_COLUMNS
from pytest_mtpsweep.kinds.decode.analysis.runvalues import RecordFile, RunData
from pytest_mtpsweep.state.plandoc import PlanDoc

KEYED: dict[str, Any] = {
    "model_id": "tiny-model",
    "ctx_size": 4096,
    "seed": 42,
    "max_tokens": 256,
    "temperature": 0.0,
    "server_build": "b1234",
    "placement": "cpu",
    "prompt_set_digest": "sha256:abc",
}
RateFn = Callable[[str, int, int, str, int], float]


@dataclass(frozen=True)
class Design:
    """A synthetic experiment: which treatments, prompts and cycles, and the true rates."""

    treatments: tuple[str, ...] = ("none", "ngram")
    prompts: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: {
            "prose": ("prose_01", "prose_02", "prose_03"),
            "structured": ("structured_01", "structured_02", "structured_03"),
        }
    )
    cycles: int = 2
    repeats: int = 1
    run_id: str = "run-1"
    ladder: str = "demo"

    def sessions(self) -> list[tuple[int, str, int]]:
        """(ordinal, treatment, cycle) in counterbalanced run order."""
        out: list[tuple[int, str, int]] = []
        for cycle in range(1, self.cycles + 1):
            order = self.treatments if cycle % 2 == 1 else tuple(reversed(self.treatments))
            for t in order:
                out.append((len(out) + 1, t, cycle))
        return out


def session_name(ordinal: int, treatment: str, cycle: int) -> str:
    return f"{ordinal:02d}_{treatment}_c{cycle}"


def make_record(
    design: Design,
    *,
    treatment: str,
    cycle: int,
    ordinal: int,
    prompt_id: str,
    subset: str,
    rate: float | None,
    interval_rate: float | None = None,
    repeat: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """One record line as the plugin writes it; `interval_rate` defaults to `rate`."""
    record: dict[str, Any] = {
        "run_id": design.run_id,
        "ladder": design.ladder,
        "treatment": treatment,
        "cycle": cycle,
        "ordinal": ordinal,
        "session": session_name(ordinal, treatment, cycle),
        "prompt_id": prompt_id,
        "subset": subset,
        "repeat": repeat,
        "valid": True,
        "reason": None,
        "decode_rate_tps_primary": rate,
        "decode_rate_tps_interval": rate if interval_rate is None else interval_rate,
        "interval_basis": "server_timings",
        "ttft_s": 0.1,
        "e2e_s": 2.0,
        "prompt_tokens": 30,
        "completion_tokens": 120,
        "draft_n": None,
        "draft_n_accepted": None,
        "finish_reason": "stop",
        "content_chars": 400,
        "content_sha256": "0" * 64,
        "reasoning_chars": 0,
        "chunks": 121,
        "anomalies": {},
        "server_alias": f"tiny-{treatment}",
        "http_status": 200,
        "started_at": "2026-01-01T00:00:00Z",
        **KEYED,
    }
    record.update(overrides)
    return record


def make_records(
    design: Design, rate: RateFn, interval: RateFn | None = None
) -> list[dict[str, Any]]:
    """Every record of a complete run; rate(treatment, cycle, ordinal, prompt, repeat)."""
    out = []
    for ordinal, treatment, cycle in design.sessions():
        for subset, prompts in design.prompts.items():
            for prompt in prompts:
                for repeat in range(1, design.repeats + 1):
                    args = (treatment, cycle, ordinal, prompt, repeat)
                    out.append(
                        make_record(
                            design,
                            treatment=treatment,
                            cycle=cycle,
                            ordinal=ordinal,
                            prompt_id=prompt,
                            subset=subset,
                            repeat=repeat,
                            rate=rate(*args),
                            interval_rate=interval(*args) if interval else None,
                        )
                    )
    return out


def make_plan(
    design: Design,
    *,
    baseline: str = "none",
    selected: Iterable[str] | None = None,
    analysis: Mapping[str, Any] | None = None,
    keyed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    chosen = set(design.treatments if selected is None else selected)
    return {
        "run_id": design.run_id,
        "ladder": design.ladder,
        "created_at": "2026-01-01T00:00:00Z",
        "keyed": dict(KEYED if keyed is None else keyed),
        "analysis": {
            "margin_pct": 1.0,
            "tiebreak_pp": 1.0,
            "primary_endpoint": "primary",
            "baseline": baseline,
            **(analysis or {}),
        },
        "sessions": [
            {
                "ordinal": o,
                "treatment": t,
                "cycle": c,
                "session": session_name(o, t, c),
                "selected": t in chosen,
            }
            for o, t, c in design.sessions()
        ],
    }


def by_session(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        out.setdefault(str(r["session"]), []).append(r)
    return out


def run_data(
    design: Design,
    records: Sequence[Mapping[str, Any]],
    *,
    plan: Mapping[str, Any] | None = None,
) -> RunData:
    """The same run held in memory, for property tests that skip the filesystem."""
    files = tuple(
        RecordFile(design.run_id, name, tuple(json.dumps(r) for r in rows))
        for name, rows in sorted(by_session(records).items())
    )
    return RunData(
        run_dir=f"/synthetic/{design.run_id}",
        run_id=design.run_id,
        plan=PlanDoc.from_json(plan if plan is not None else make_plan(design)),
        record_files=files,
        sessions=(),
    )


def write_run(
    root: Path,
    design: Design,
    records: Sequence[Mapping[str, Any]],
    *,
    plan: Mapping[str, Any] | None = None,
    session_facts: Mapping[str, Mapping[str, Any]] | None = None,
    quarantine: Mapping[str, tuple[Sequence[Mapping[str, Any]], str]] | None = None,
    extra_lines: Mapping[str, Sequence[str]] | None = None,
) -> Path:
    """Write a run directory under root/runs/<ladder>/<run_id> and return its path."""
    run = root / "runs" / design.ladder / design.run_id
    (run / "records").mkdir(parents=True)
    (run / "sessions").mkdir()
    (run / "plan.json").write_text(json.dumps(plan if plan is not None else make_plan(design)))
    grouped = by_session(records)
    for name in sorted(set(grouped) | set(extra_lines or {})):
        lines = [json.dumps(r) for r in grouped.get(name, [])]
        lines += list((extra_lines or {}).get(name, []))
        (run / "records" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    for name, facts in (session_facts or {}).items():
        (run / "sessions" / f"{name}.json").write_text(json.dumps({"session": name, **facts}))
    for name, (rows, reason) in (quarantine or {}).items():
        qdir = run / "quarantine" / name
        qdir.mkdir(parents=True)
        (qdir / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (qdir / "session.json").write_text(json.dumps({"session": name}))
        (qdir / "reason.txt").write_text(reason + "\n")
    return run


def noisy(
    design: Design,
    effects: Mapping[str, float],
    *,
    sd: float = 0.03,
    seed: int = 0,
) -> RateFn:
    """A rate function: prompt base rate × treatment effect × log-normal noise (seeded)."""
    rng = np.random.default_rng(seed)
    prompts = [p for ps in design.prompts.values() for p in ps]
    base = {p: float(rng.uniform(20.0, 80.0)) for p in prompts}
    noise = {
        (t, c, p, r): float(rng.normal(0.0, sd))
        for _, t, c in design.sessions()
        for p in prompts
        for r in range(1, design.repeats + 1)
    }

    def rate(treatment: str, cycle: int, ordinal: int, prompt: str, repeat: int) -> float:
        del ordinal
        return (
            base[prompt]
            * effects.get(treatment, 1.0)
            * math.exp(noise[(treatment, cycle, prompt, repeat)])
        )

    return rate


# --- strategies ---------------------------------------------------------------------------

positive_rates = st.floats(min_value=1.0, max_value=500.0, allow_nan=False, allow_infinity=False)
effects = st.floats(min_value=0.5, max_value=2.0, allow_nan=False, allow_infinity=False)
scales = st.floats(min_value=0.01, max_value=100.0, allow_nan=False, allow_infinity=False)


@st.composite
def designs(draw: st.DrawFn, *, max_prompts: int = 5, max_treatments: int = 3) -> Design:
    """Two cycles, baseline `none` plus 1-2 treatments, 2..max_prompts prompts per subset."""
    n_treat = draw(st.integers(min_value=2, max_value=max_treatments))
    n_prose = draw(st.integers(min_value=2, max_value=max_prompts))
    n_struct = draw(st.integers(min_value=2, max_value=max_prompts))
    treatments = ("none", *(f"t{i}" for i in range(1, n_treat)))
    prompts = {
        "prose": tuple(f"prose_{i:02d}" for i in range(1, n_prose + 1)),
        "structured": tuple(f"structured_{i:02d}" for i in range(1, n_struct + 1)),
    }
    return Design(treatments=treatments, prompts=prompts)


@st.composite
def noisy_rates(draw: st.DrawFn, design: Design) -> dict[tuple[str, int, str], float]:
    """An arbitrary positive rate for every (treatment, cycle, prompt) cell."""
    cells = [
        (t, c, p)
        for _, t, c in design.sessions()
        for prompts in design.prompts.values()
        for p in prompts
    ]
    values = draw(st.lists(positive_rates, min_size=len(cells), max_size=len(cells)))
    return dict(zip(cells, values, strict=True))


@st.composite
def sign_flip_samples(draw: st.DrawFn) -> list[float]:
    """1..10 cluster values, including exact ties and zeros that stress tie handling."""
    pool = st.one_of(
        st.sampled_from([0.0, 0.1, -0.1, 0.25, -0.5]),
        st.floats(min_value=-1.0, max_value=1.0, allow_nan=False).map(lambda x: round(x, 3)),
    )
    return draw(st.lists(pool, min_size=1, max_size=10))


def log_ratio(pct: float) -> float:
    return math.log1p(pct / 100.0)


# --- replicated simulations ----------------------------------------------------------------

PROMPT_SHAPES: dict[str, Callable[[np.random.Generator, tuple[int, ...]], Any]] = {
    "normal": lambda rng, size: rng.standard_normal(size),
    # Centred exponential: sd 1, skewness 2.
    "skewed": lambda rng, size: rng.exponential(1.0, size) - 1.0,
    # Student t with 3 df scaled to sd 1: heavy tails, kurtosis unbounded.
    "heavy": lambda rng, size: rng.standard_t(3.0, size) / math.sqrt(3.0),
}


@dataclass(frozen=True)
class Scenario:
    """One simulated experiment: per-prompt effects of a shape around a true mean log ratio.

    Log ratio of prompt p in cycle c = effect + prompt_sd·a_p + b_c + e_pc, with b_c the
    session-pair offset (sd session_sd·√2: treatment and baseline sessions each sd session_sd)
    and e_pc the cell noise (sd noise_sd·√2: each rate carries noise_sd); a trend adds
    trend·position to a treatment's log rate.
    """

    prompts: int = 8
    cycles: int = 2
    shape: str = "normal"
    prompt_sd: float = 0.10
    noise_sd: float = 0.05
    session_sd: float = 0.0
    effect: float = 0.0
    trend: float = 0.0
    subsets: tuple[str, ...] = ("prose", "structured")
    # One treatment session per replication (its cycle drawn at random) that the host spoiled:
    # every prompt's log rate in it lowered by this much (0: none).
    spoil: float = 0.0
    # The cell noise's shape (a PROMPT_SHAPES name, sd 1): "heavy" is t(3), the held-out
    # stop-rule simulation's (issue 43).
    noise_shape: str = "normal"


def replication_records(
    scenario: Scenario, replications: int, seed: int
) -> tuple[pd.DataFrame, list[str]]:
    """A records frame (the analysis' own layout) holding `replications` independent copies.

    Copy r is treatment `r0001`..., each against one noise-free baseline `none`: a contrast's
    distribution is then exactly that of a noisy treatment against a noisy baseline (all the
    noise sits in the log ratio), and copies stay independent although they share a baseline,
    so one `compute_contrasts` call measures many replications. Only the primary endpoint is
    filled. Prompts run in a fresh random order in every session (`position`).
    """
    rng = np.random.default_rng(seed)
    s = scenario
    names = [f"{sub}_{i:02d}" for sub in s.subsets for i in range(1, s.prompts + 1)]
    subsets = [sub for sub in s.subsets for _ in range(s.prompts)]
    n_p, n_r, n_c = len(names), replications, s.cycles
    base = 50.0 * np.exp(0.3 * rng.standard_normal(n_p))
    a = s.prompt_sd * PROMPT_SHAPES[s.shape](rng, (n_r, n_p, 1))
    b = s.session_sd * math.sqrt(2.0) * rng.standard_normal((n_r, 1, n_c))
    e = s.noise_sd * math.sqrt(2.0) * PROMPT_SHAPES[s.noise_shape](rng, (n_r, n_p, n_c))
    order = rng.permuted(np.tile(np.arange(n_p), (n_r + 1, n_c, 1)), axis=-1)
    position = np.argsort(order, axis=-1).transpose(0, 2, 1)  # (sessions, prompts, cycles)
    log_t = np.log(base)[None, :, None] + s.effect + a + b + e + s.trend * position[1:]
    if s.spoil:
        hit = rng.integers(0, n_c, size=n_r)
        log_t[np.arange(n_r), :, hit] -= s.spoil
    rates = np.concatenate([np.broadcast_to(base[None, :, None], (1, n_p, n_c)), np.exp(log_t)])
    treatments = ["none", *(f"r{i:04d}" for i in range(1, n_r + 1))]
    grid = np.meshgrid(np.arange(n_r + 1), np.arange(n_p), np.arange(n_c), indexing="ij")
    t_idx, p_idx, c_idx = (g.ravel() for g in grid)
    frame = pd.DataFrame(
        {
            "run_id": "sim",
            "treatment": np.array(treatments, dtype=object)[t_idx],
            "cycle": c_idx + 1,
            "prompt_id": np.array(names, dtype=object)[p_idx],
            "subset": np.array(subsets, dtype=object)[p_idx],
            "position": position.ravel(),
            "rate_primary": rates.ravel(),
            "rate_interval": np.nan,
        }
    )
    frame["session"] = frame["treatment"] + "_c" + frame["cycle"].astype(str)
    defaults = {"ordinal": -1, "repeat": 1, "valid": True, "completion_tokens": -1, "device": ""}
    for column in RECORD_COLUMNS:
        if column not in frame:
            frame[column] = defaults.get(column)
    return frame[list(RECORD_COLUMNS)], treatments[1:]
