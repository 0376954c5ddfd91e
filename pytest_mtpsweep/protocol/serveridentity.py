"""Identity witnesses: is the server that runs the one the treatment asked for?"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MemoryStep:
    """One treatment's declared memory step over the baseline, and what the sessions showed."""

    treatment: str
    expected_min_mib: float
    baseline_mib: float | None
    treatment_mib: float | None
    observed_mib: float | None
    verdict: str  # "confirmed", "flagged" or "unknown"
    basis: str  # "gpu" or "rss"


def argv_contains(argv: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether `needle` appears in `argv` as one contiguous run of arguments."""
    n = len(needle)
    return n == 0 or any(list(argv[i : i + n]) == list(needle) for i in range(len(argv) - n + 1))


def startup_error(
    argv: Sequence[str] | None, treatment_args: Sequence[str], n_ctx: Any, ctx_size: int
) -> str | None:
    """Why a freshly started server may not be measured, or None when its witnesses agree.

    `argv` None: the server's argv cannot be known (an attached server without a flags file).
    """
    if argv is not None and not argv_contains(argv, treatment_args):
        return (
            f"the running server's argv lacks the treatment flags {list(treatment_args)}; "
            "check the launcher or the ladder."
        )
    if n_ctx is not None and n_ctx != ctx_size:
        return (
            f"the server serves n_ctx {n_ctx}, not the requested {ctx_size}; "
            "use --parallel 1 in server.args or set ctx_size to what each slot gets."
        )
    return None


def session_memory_mib(info: Mapping[str, Any]) -> tuple[float | None, str]:
    """Memory after load: GPU memory in use where NVML saw a GPU, else the server's RSS."""
    gpu = info.get("gpu_used_mib_after_load")
    if isinstance(gpu, int | float):
        return float(gpu), "gpu"
    rss = info.get("rss_after_load_bytes")
    return (float(rss) / 2**20 if isinstance(rss, int | float) else None), "rss"


def memory_steps(
    sessions: Sequence[Mapping[str, Any]], declared: Mapping[str, float], baseline: str
) -> list[MemoryStep]:
    """Compare the median memory after load of each declared treatment with the baseline's."""
    by: dict[str, list[float]] = {}
    basis = "rss"
    for info in sessions:
        mib, basis = session_memory_mib(info)
        if mib is not None:
            by.setdefault(str(info.get("treatment")), []).append(mib)
    base = statistics.median(by[baseline]) if by.get(baseline) else None
    out: list[MemoryStep] = []
    for treatment, step in declared.items():
        mine = statistics.median(by[treatment]) if by.get(treatment) else None
        observed = mine - base if mine is not None and base is not None else None
        verdict = (
            "unknown" if observed is None else ("confirmed" if observed >= step else "flagged")
        )
        out.append(MemoryStep(treatment, step, base, mine, observed, verdict, basis))
    return out


def describe(step: MemoryStep) -> str:
    """One line for the terminal and the run directory."""
    if step.observed_mib is None:
        return f"memory step {step.treatment}: unknown (no memory reading for it or the baseline)"
    return (
        f"memory step {step.treatment}: {step.verdict}, {step.observed_mib:+.0f} MiB over the "
        f"baseline ({step.basis}), expected at least {step.expected_min_mib:+.0f} MiB"
    )
