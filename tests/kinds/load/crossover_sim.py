"""Synthetic load records with a known crossing, shared by the test and bench/crossover_coverage.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

LEVELS = (1.0, 2.0, 4.0, 8.0)


def frames(
    rng: np.random.Generator, *, intercept: float, slope: float, prompts: int = 12,
    cycles: int = 2, requests_per_prompt: int = 2, levels: Sequence[float] = LEVELS,
    prompt_sd: float = 0.08, noise_sd: float = 0.15,
) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """requests, levels frames as the load analysis reads them: true log gain at level L is
    intercept + slope * log2(L) (+ a prompt's own effect, + per-request noise)."""
    import pandas as pd

    effect = rng.normal(0.0, prompt_sd, prompts)
    rows = []
    for cycle in range(1, cycles + 1):
        for level in levels:
            label = f"c{level:g}"
            for p in range(prompts):
                for r in range(requests_per_prompt):
                    slot = p * requests_per_prompt + r
                    g = intercept + slope * math.log2(level) + effect[p] + rng.normal(0, noise_sd)
                    base = 100.0 * math.exp(rng.normal(0, 0.05))
                    for t, v in (("b", base), ("t", base * math.exp(-g))):
                        rows.append(dict(treatment=t, level=label, cycle=cycle, request=slot,
                                         prompt_id=f"p{p}", valid=True, e2e_ms=v))  # fmt: skip
    blocks = [dict(treatment=t, level=f"c{lv:g}", cycle=c, valid=True, mode="closed",
                   level_value=lv, output_tok_s=1.0) for t in ("b", "t") for lv in levels
              for c in range(1, cycles + 1)]  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(blocks)


def labels(levels: Sequence[float] = LEVELS) -> list[str]:
    return [f"c{lv:g}" for lv in levels]
