"""A shipped sweep ladder's error rates by simulation through the run's own path: the ladder
file (its arms, `[stop]` design, margin, deciding cells), its plan in run order (the mirrored
Williams sessions, whose places carry the drift), the run's `SweepLooks` asking the decode
kind's look (`sweeplook.look_on`) on decode-shaped records at each look, the sessions of a
dropped arm never run, and at each look the report the analysis would publish there
(`analyse_sweep` at that look's repeated level, its drops recomputed by `replay_drops`).

Only the server is simulated: a session's log rate on prompt p = base_p + mu_s[arm] +
prompt_sd·u_psa + the session's offset (sd `session_sd`, the baseline's `baseline_factor`
times that; one session serves every subset) + drift·(the session's place in the run) + cell
noise, u and the noise t3. Used by bench/sweep_run_path.py and its fast test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pytest_mtpsweep.interface.kind import SweepLookAt, SweepVerdict
from pytest_mtpsweep.kinds.decode.analysis.sweep import SweepResult, analyse_sweep
from pytest_mtpsweep.kinds.decode.analysis.sweepdrops import look_on, replay_drops
from pytest_mtpsweep.ladder import Ladder
from pytest_mtpsweep.ladder.runplan import ladder_plan
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.protocol.looks import design_of
from pytest_mtpsweep.protocol.planfile import sweep_plan
from pytest_mtpsweep.protocol.sweeplooks import SweepLooks
from pytest_mtpsweep.state.plandoc import AnalysisPlan, PlanDoc

LADDERS = Path(__file__).resolve().parent.parent / "experiments" / "ladders"
SUBSETS = ("prose", "structured")


@dataclass(frozen=True)
class Truth:
    """Each arm's true change in percent per subset (the baseline's 0 left out), and the noise."""

    changes: Mapping[str, Sequence[float]]
    session_sd: float = 0.03
    baseline_factor: float = 1.5
    prompt_sd: float = 0.03
    noise_sd: float = 0.03
    drift_per_session: float = 0.0005
    prompts: int = 8


@dataclass(frozen=True)
class Judged:
    """One look's report against the truth."""

    false_faster: bool
    false_slower: bool
    best_in: bool  # every true best of every subset is in its best set


@dataclass(frozen=True)
class RunOutcome:
    looks: tuple[Judged, ...]
    best_dropped: bool  # a unique true best left the run at a look
    sessions: int
    grid: int


def ladder(name: str) -> Ladder:
    """A shipped ladder, as the run loads it."""
    return load_ladder(LADDERS / f"{name}.toml")


def plan_doc(lad: Ladder) -> PlanDoc:
    """The parts of plan.json the looks and the analysis read."""
    design = design_of(lad)
    assert lad.sweep is not None and design is not None
    settings = {"margin_pct": lad.analysis.margin_pct, "primary_endpoint": "primary"}
    return PlanDoc(
        analysis=AnalysisPlan(lad.baseline, kind_settings=settings),
        sweep=sweep_plan(lad.sweep),
        stop=design.document(),
    )


def _mu(lad: Ladder, truth: Truth) -> dict[str, dict[str, float]]:
    arms = lad.treatment_keys
    out = {}
    for subset in SUBSETS:
        changes = list(truth.changes[subset])
        along = [a for a in arms if a != lad.baseline]
        assert len(changes) == len(along), f"{len(along)} arms, {len(changes)} changes"
        out[subset] = {lad.baseline: 0.0} | {
            a: math.log1p(c / 100.0) for a, c in zip(along, changes, strict=True)
        }
    return out


def _draw(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    return np.asarray(rng.standard_t(3, size=size) / math.sqrt(3.0))


def _session(
    rng: np.random.Generator,
    arm: str,
    cycle: int,
    place: int,
    lad: Ladder,
    truth: Truth,
    mu: Mapping[str, Mapping[str, float]],
    prompt: Mapping[str, tuple[np.ndarray, np.ndarray]],
) -> list[dict[str, object]]:
    sd = truth.session_sd * (truth.baseline_factor if arm == lad.baseline else 1.0)
    offset = sd * float(rng.standard_normal()) + truth.drift_per_session * place
    rows: list[dict[str, object]] = []
    for subset in SUBSETS:
        base, response = prompt[subset]
        k = lad.treatment_keys.index(arm)
        noise = truth.noise_sd * _draw(rng, (truth.prompts,))
        logs = base + mu[subset][arm] + truth.prompt_sd * response[:, k] + offset + noise
        for p, y in enumerate(logs):
            rate = float(math.exp(float(y)))
            rows.append(
                {
                    "run_id": "sim", "treatment": arm, "subset": subset, "cycle": cycle,
                    "prompt_id": f"{subset}_{p:02d}", "device": "", "rate_primary": rate,
                    "rate_interval": rate,
                }
            )  # fmt: skip
    return rows


def _judge(result: SweepResult | None, mu: Mapping[str, Mapping[str, float]]) -> Judged:
    assert result is not None
    ff = fs = False
    held = True
    for s in result.subsets:
        truth = mu[s.subset]
        if s.faster is None or s.slower is None or s.best is None:
            continue  # no answer: no claim
        ff |= any(truth[a] <= 0 for a in s.faster.effective)
        fs |= any(truth[a] >= 0 for a in s.slower.effective)
        top = max(truth.values())
        held &= all(a in s.best.best for a, m in truth.items() if m == top)
    return Judged(ff, fs, held)


def replicate(lad: Ladder, plan: PlanDoc, truth: Truth, seed: int, boot: int) -> RunOutcome:
    """One run of the ladder's plan with its looks; the report judged at every look taken."""
    rng = np.random.default_rng(seed)
    mu = _mu(lad, truth)
    k = len(lad.treatment_keys)
    prompt = {
        s: (3.5 + 0.3 * rng.standard_normal(truth.prompts), _draw(rng, (truth.prompts, k)))
        for s in SUBSETS
    }
    assert plan.stop is not None
    looks_at = plan.stop.looks
    rows: list[dict[str, object]] = []
    frame = pd.DataFrame()

    def ask(at: SweepLookAt) -> SweepVerdict:
        return look_on(frame, plan, None, at, boot, seed)

    looks = SweepLooks.for_ladder(lad, ask)
    judged: list[Judged] = []
    sessions = 0
    for place, slot in enumerate(ladder_plan(lad)):
        if slot.cycle > looks_at[-1]:
            break
        if slot.treatment not in looks.active:
            continue  # the schedule skips a dropped arm's later sessions
        rows += _session(rng, slot.treatment, slot.cycle, place, lad, truth, mu, prompt)
        sessions += 1
        last_of_cycle = place + 1 == len(ladder_plan(lad)) or (
            ladder_plan(lad)[place + 1].cycle != slot.cycle
        )
        if not (last_of_cycle and slot.cycle in looks_at):
            continue
        frame = pd.DataFrame(rows)
        n = looks_at.index(slot.cycle)
        conf = plan.stop.confidence[n]
        dropped = replay_drops(frame, plan, None, boot, seed)
        result = analyse_sweep(frame, plan, subsets=SUBSETS, baseline=lad.baseline,
                               endpoint="primary", boot=boot, seed=seed, dropped=dropped,
                               alpha=1.0 - conf)  # fmt: skip
        judged.append(_judge(result, mu))
        if n == len(looks_at) - 1:
            break
        settled, _ = looks.look(n + 1, slot.cycle, 1.0 - conf)
        if settled:
            break
    winners = {s: {a for a, m in mu[s].items() if m == max(mu[s].values())} for s in SUBSETS}
    gone = {d.arm for d in looks.dropped}
    deciding = looks.subsets or SUBSETS
    best_dropped = any(len(winners[s]) == 1 and winners[s] & gone for s in deciding)
    return RunOutcome(tuple(judged), best_dropped, sessions, k * looks_at[-1])


@dataclass(frozen=True)
class PathRates:
    false_faster: float
    false_slower: float
    best_in: float
    best_dropped: float
    sessions: float
    grid: int
    reps: int


def path_rates(name: str, truth: Truth, reps: int, boot: int, seed: int) -> PathRates:
    """A shipped ladder's rates over `reps` simulated runs (at any look taken)."""
    lad = ladder(name)
    plan = plan_doc(lad)
    got = [replicate(lad, plan, truth, seed + r, boot) for r in range(reps)]
    return PathRates(
        float(np.mean([any(j.false_faster for j in g.looks) for g in got])),
        float(np.mean([any(j.false_slower for j in g.looks) for g in got])),
        float(np.mean([all(j.best_in for j in g.looks) for g in got])),
        float(np.mean([g.best_dropped for g in got])),
        float(np.mean([g.sessions for g in got])),
        got[0].grid,
        reps,
    )
