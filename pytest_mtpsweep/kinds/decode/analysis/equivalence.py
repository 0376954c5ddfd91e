"""Content equivalence: at temperature 0 speculative decoding should not change the output.

Pure functions over the records frame (`frame.parse_records`): which prompts a treatment
answers differently from the baseline in the same cycle, and whether each treatment answers
itself identically across cycles. A difference is a correctness flag, not a rate problem.

Truncated pairs are compared too: two answers cut by the token cap at the same token count
are "identical up to the cap" or "differ within the cap"; nothing is claimed beyond the cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

IDENTICAL = "identical"
DIFFERS = "differs"
IDENTICAL_TO_CAP = "identical up to the cap"
DIFFERS_WITHIN_CAP = "differs within the cap"
DIFFERENT = (DIFFERS, DIFFERS_WITHIN_CAP)

PAIR_COLUMNS = (
    "treatment",
    "baseline",
    "subset",
    "prompt_id",
    "run_id",
    "cycle",
    "verdict",
    "truncated",
    "chars",
    "baseline_chars",
)
SELF_COLUMNS = ("treatment", "subset", "prompt_id", "run_id", "cycles", "verdict", "chars")
SUMMARY_COLUMNS = (
    "treatment",
    "subset",
    "cells",
    "differ",
    "identical_to_cap",
    "differ_within_cap",
    "differing_prompts",
    "self_prompts",
    "self_identical",
    "self_differing_prompts",
)
NEEDED = (
    "run_id",
    "treatment",
    "cycle",
    "prompt_id",
    "subset",
    "valid",
    "repeat",
    "content_sha256",
    "content_chars",
    "finish_reason",
    "completion_tokens",
)


@dataclass(frozen=True)
class Equivalence:
    """Per-pair verdicts, per-treatment self-identity across cycles, and their summary."""

    baseline: str
    pairs: pd.DataFrame  # one row per (treatment, prompt, cycle) with a baseline partner
    self_identity: pd.DataFrame  # one row per (treatment, prompt) seen in two cycles or more
    summary: pd.DataFrame  # one row per (treatment, subset)


def _answers(records: pd.DataFrame) -> pd.DataFrame:
    """One answer per (run, treatment, cycle, prompt): the first valid repeat with a digest."""
    missing = [c for c in NEEDED if c not in records.columns]
    if missing:
        raise ValueError(f"records lack column(s) {', '.join(missing)}")
    ok = records[records["valid"] & records["content_sha256"].notna()]
    ok = ok.sort_values(["run_id", "treatment", "cycle", "prompt_id", "repeat"])
    return ok.drop_duplicates(["run_id", "treatment", "cycle", "prompt_id"]).reset_index(drop=True)


def _truncated(row: pd.Series) -> bool:
    return bool(row["finish_reason"] == "length")


def pair_verdict(a: pd.Series, b: pd.Series) -> tuple[str, str]:
    """(verdict, which side was truncated) for two answers to one prompt."""
    same = a["content_sha256"] == b["content_sha256"]
    cut_a, cut_b = _truncated(a), _truncated(b)
    if cut_a and cut_b:
        if a["completion_tokens"] == b["completion_tokens"]:
            return (IDENTICAL_TO_CAP if same else DIFFERS_WITHIN_CAP), "both"
        return DIFFERS, "both"
    side = "first" if cut_a else ("second" if cut_b else "")
    return (IDENTICAL if same else DIFFERS), side


def _pairs(answers: pd.DataFrame, baseline: str) -> pd.DataFrame:
    # Pooled runs share cycle numbers, so the same cycle means the same run's cycle.
    base = answers[answers["treatment"] == baseline].set_index(["run_id", "cycle", "prompt_id"])
    rows = []
    for _, a in answers[answers["treatment"] != baseline].iterrows():
        key = (a["run_id"], a["cycle"], a["prompt_id"])
        if key not in base.index:
            continue
        b = base.loc[key]
        verdict, cut = pair_verdict(a, b)
        truncated = {"first": "treatment", "second": "baseline"}.get(cut, cut)
        rows.append(
            (
                a["treatment"],
                baseline,
                a["subset"],
                a["prompt_id"],
                a["run_id"],
                int(a["cycle"]),
                verdict,
                truncated,
                a["content_chars"],
                b["content_chars"],
            )
        )
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))


def _self_identity(answers: pd.DataFrame) -> pd.DataFrame:
    rows = []
    keys = ["treatment", "prompt_id", "run_id"]
    for (treatment, prompt, run), group in answers.groupby(keys, sort=True):
        if len(group) < 2:
            continue
        group = group.sort_values("cycle")
        first = group.iloc[0]
        verdicts = [pair_verdict(first, other)[0] for _, other in group.iloc[1:].iterrows()]
        worst = next((v for v in verdicts if v in DIFFERENT), verdicts[0])
        cycles = ",".join(f"c{c}" for c in group["cycle"])
        chars = ",".join(str(c) for c in group["content_chars"])
        rows.append((treatment, first["subset"], prompt, run, cycles, worst, chars))
    return pd.DataFrame(rows, columns=list(SELF_COLUMNS))


def _summary(pairs: pd.DataFrame, selves: pd.DataFrame, treatments: Sequence[str]) -> pd.DataFrame:
    rows = []
    for treatment in treatments:
        mine = pairs[pairs["treatment"] == treatment]
        own = selves[selves["treatment"] == treatment]
        for subset in sorted(set(mine["subset"]) | set(own["subset"])):
            cells = mine[mine["subset"] == subset]
            differ = cells[cells["verdict"].isin(DIFFERENT)]
            prompts = sorted(set(differ["prompt_id"]))
            me = own[own["subset"] == subset]
            unlike = me[me["verdict"].isin(DIFFERENT)]
            rows.append(
                (
                    treatment,
                    subset,
                    len(cells),
                    len(differ),
                    int((cells["verdict"] == IDENTICAL_TO_CAP).sum()),
                    int((cells["verdict"] == DIFFERS_WITHIN_CAP).sum()),
                    " ".join(prompts),
                    len(me),
                    len(me) - len(unlike),
                    " ".join(sorted(set(unlike["prompt_id"]))),
                )
            )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def content_equivalence(
    records: pd.DataFrame, baseline: str, order: Sequence[str] = ()
) -> Equivalence:
    """Compare every treatment's answers with the baseline's (same cycle) and with its own.

    The summary lists the baseline, then `order` (the ladder's), then any other treatment."""
    answers = _answers(records)
    pairs = _pairs(answers, baseline)
    selves = _self_identity(answers)
    present = set(answers["treatment"])
    order = [t for t in dict.fromkeys([baseline, *order, *answers["treatment"]]) if t in present]
    return Equivalence(baseline, pairs, selves, _summary(pairs, selves, order))


def describe(eq: Equivalence) -> list[str]:
    """One line per (treatment, subset), as a findings document would say it."""
    lines = []
    for _, s in eq.summary.iterrows():
        head = f"{s['treatment']} ({s['subset']}): "
        if s["treatment"] == eq.baseline:
            parts = []
        elif s["differ"]:
            cells = eq.pairs[
                (eq.pairs["treatment"] == s["treatment"])
                & (eq.pairs["subset"] == s["subset"])
                & eq.pairs["verdict"].isin(DIFFERENT)
            ]
            where = "; ".join(
                f"{p} ({', '.join(f'c{c}' for c in sorted(g['cycle']))})"
                for p, g in cells.groupby("prompt_id", sort=True)
            )
            parts = [
                f"differs from {eq.baseline} in {s['differ']} of {s['cells']} (prompt, "
                f"cycle) cells: {where}"
            ]
        else:
            parts = [f"identical to {eq.baseline} in all {s['cells']} (prompt, cycle) cells"]
        if s["identical_to_cap"] or s["differ_within_cap"]:
            parts.append(
                f"truncated pairs: {s['identical_to_cap']} identical up to the cap, "
                f"{s['differ_within_cap']} differ within the cap"
            )
        if s["self_prompts"]:
            parts.append(_self_phrase(eq, s))
        lines.append(head + ("; ".join(parts) or "no pairs"))
    return lines


def _self_phrase(eq: Equivalence, s: pd.Series) -> str:
    """'identical to its own c1 in all 8 prompts (same char counts)', as the users wrote it."""
    mine = eq.self_identity[
        (eq.self_identity["treatment"] == s["treatment"])
        & (eq.self_identity["subset"] == s["subset"])
    ]
    firsts = {str(c).split(",")[0] for c in mine["cycles"]}
    own = f"its own {firsts.pop()}" if len(firsts) == 1 else "its own first cycle"
    if s["self_identical"] == s["self_prompts"]:
        return f"identical to {own} in all {s['self_prompts']} prompts (same char counts)"
    unlike = mine[mine["verdict"].isin(DIFFERENT)]
    where = "; ".join(f"{r.prompt_id} (chars {r.chars})" for r in unlike.itertuples())
    n = s["self_prompts"] - s["self_identical"]
    return f"differs from {own} in {n} of {s['self_prompts']} prompts: {where}"
