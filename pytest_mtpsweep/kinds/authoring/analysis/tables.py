"""The subject x cohort table and the census of cells, as the users tabulated them."""

from __future__ import annotations

import pandas as pd

from .. import records

TABLE_COLUMNS: tuple[str, ...] = (
    "subject",
    "cohort",
    "cells",
    "informative",
    "first_attempt_green",
    "green_after_k",
    "never_green",
    "api_failure",
    "checker_error",
    "budget_stopped",
    "no_outcome",
    "green_rate",
    "first_attempt_rate",
    "mean_prompt_tokens",
    "mean_completion_tokens",
)
CENSUS_COLUMNS: tuple[str, ...] = (
    "subject",
    "cohort",
    "task",
    "repeat",
    "cell",
    "class",
    "why",
    "tokens_known",
)


def cohort_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per subject x cohort: how often green (first attempt / after k / never), what it cost.

    Rates and mean tokens are over informative cells only; the other classes are counted.
    """
    rows = []
    for (subject, cohort), g in cells.groupby(["subject", "cohort"], sort=False):
        info = g[g["informative"]]
        count = g[records.OUTCOME].value_counts()
        rows.append(
            {
                "subject": subject,
                "cohort": cohort,
                "cells": len(g),
                "informative": len(info),
                "first_attempt_green": int(count.get(records.FIRST_ATTEMPT_GREEN, 0)),
                "green_after_k": int(count.get(records.GREEN_AFTER_K, 0)),
                "never_green": int(count.get(records.EXHAUSTED, 0)),
                "api_failure": int(count.get(records.API_FAILURE, 0)),
                "checker_error": int(count.get(records.CHECKER_ERROR, 0)),
                "budget_stopped": int(count.get(records.BUDGET_STOPPED, 0)),
                "no_outcome": int(g[records.OUTCOME].isna().sum()),
                "green_rate": info["green"].mean() if len(info) else float("nan"),
                "first_attempt_rate": info["first"].mean() if len(info) else float("nan"),
                "mean_prompt_tokens": (
                    info[records.PROMPT_TOKENS].mean() if len(info) else float("nan")
                ),
                "mean_completion_tokens": (
                    info[records.COMPLETION_TOKENS].mean() if len(info) else float("nan")
                ),
            }
        )
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def census(cells: pd.DataFrame) -> pd.DataFrame:
    """Every cell: informative, or which kind of not, and why (by name, as the users did)."""
    out = cells[["subject", "cohort", "task", "repeat", "cell"]].copy()
    out["class"] = (
        cells[records.OUTCOME].where(~cells["informative"], "informative").fillna("no outcome")
    )
    why = cells["api_error"].fillna(cells["checker_error"]).fillna(cells["reason"])
    out["why"] = why.where(~cells["informative"], "").fillna("")
    out["tokens_known"] = cells["tokens_known"]  # False: a turn came back without usage
    return out.reset_index(drop=True)[list(CENSUS_COLUMNS)]
