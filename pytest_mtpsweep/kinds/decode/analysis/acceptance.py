"""Draft acceptance: how many tokens each treatment drafted, and how many were accepted.

A pure function over the records frame (`frame.parse_records`); the server reports
`draft_n` / `draft_n_accepted` in its timings only when a drafter ran, so a treatment without
speculation has no row of drafted tokens (its counts are missing, not zero).
"""

from __future__ import annotations

import math

import pandas as pd

from ....kindapi import SUBSETS

COLUMNS = (
    "treatment",
    "subset",
    "records",
    "with_draft",
    "draft_n",
    "draft_n_accepted",
    "acceptance_pct",
)


def _row(treatment: str, subset: str, frame: pd.DataFrame) -> tuple[object, ...]:
    # counts that cannot be (`mechanism_invalid`) are no reading of the drafter
    drafted = frame[frame["draft_n"].notna() & frame["mechanism_invalid"].isna()]
    n = int(drafted["draft_n"].sum()) if len(drafted) else 0
    acc = int(drafted["draft_n_accepted"].fillna(0).sum()) if len(drafted) else 0
    pct = 100.0 * acc / n if n > 0 else math.nan
    return (treatment, subset, len(frame), len(drafted), n, acc, pct)


def draft_acceptance(records: pd.DataFrame) -> pd.DataFrame:
    """Per treatment and subset (and pooled): drafted and accepted tokens, acceptance %.

    Only valid records count; a treatment none of whose records carries `draft_n` gets
    `with_draft` 0 and a NaN rate.
    """
    valid = records[records["valid"]]
    rows = []
    for treatment in dict.fromkeys(valid.sort_values("ordinal")["treatment"]):
        mine = valid[valid["treatment"] == treatment]
        subsets = sorted(set(mine["subset"]))
        for subset in subsets:
            rows.append(_row(str(treatment), subset, mine[mine["subset"] == subset]))
        if len(subsets) > 1:
            rows.append(_row(str(treatment), SUBSETS.pooled, mine))
    return pd.DataFrame(rows, columns=list(COLUMNS))
