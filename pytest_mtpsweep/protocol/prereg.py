"""Pre-registration: what a run commits to, rendered and hashed before its first measurement."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..ladder.model import Ladder, Preregistration
from ..ladder.plan import SessionSlot, session_label


def effective(ladder: Ladder, plan: list[SessionSlot]) -> Preregistration:
    """The ladder's pre-registration with every unstated field given its documented default."""
    reg = ladder.prereg
    others = [t.key for t in ladder.treatments if t.key != ladder.baseline]
    never = reg.never_drop or (session_label(plan[-1]) if plan else "")
    drop = reg.drop_order or tuple(
        session_label(s) for s in reversed(plan) if session_label(s) != never
    )
    n = len(others)
    return Preregistration(
        primary_contrasts=reg.primary_contrasts
        or tuple(f"{t} vs {ladder.baseline}" for t in others),
        secondary_contrasts=reg.secondary_contrasts,
        multiplicity=reg.multiplicity
        or (
            f"{n} treatment(s) x 2 subsets x 2 endpoints = {4 * n} intervals, no correction for "
            "multiplicity; each interval describes a distribution, not a family-wise guarantee."
        ),
        drop_order=drop,
        never_drop=never,
        curtailment_sentence=reg.curtailment_sentence,
        scope=reg.scope,
    )


def decode_lines(ladder: Ladder, reg: Preregistration) -> list[str]:
    """The decode kind's endpoints and contrasts."""
    a = ladder.analysis
    return [
        f"- Primary endpoint: `decode_rate_tps_{a.primary_endpoint}`, paired within (prompt, cycle).",
        f"- Primary contrasts: {'; '.join(reg.primary_contrasts) or 'none'}.",
        f"- Secondary contrasts (exploratory): {'; '.join(reg.secondary_contrasts) or 'none'}.",
        f"- Tie-break: if the primary and interval-basis figures differ by more than "
        f"{a.tiebreak_pp:g} pp on a headline cell, the interval-basis figure is published.",
        f"- Decision margin: ±{a.margin_pct:g} %.",
        f"- Multiplicity: {reg.multiplicity}",
    ]


def render(
    ladder: Ladder,
    plan: list[SessionSlot],
    selected: list[SessionSlot],
    invocation: list[str],
    run_id: str,
    created_at: str,
    endpoints: Sequence[str] | None = None,
) -> str:
    """The pre-registration document, in Markdown; `endpoints` is the kind's own section."""
    reg = effective(ladder, plan)
    chosen = set(selected)
    lines = [
        f"# Pre-registration: {ladder.name} / {run_id}",
        "",
        f"Written {created_at}, before the first measurement.",
        "",
        "## Question",
        "",
        ladder.question,
        "",
        *([f"Scope: {reg.scope}", ""] if reg.scope else []),
        "## Endpoints and contrasts",
        "",
        *(decode_lines(ladder, reg) if endpoints is None else endpoints),
        "",
        "## Curtailment",
        "",
        f"- Drop order: {', '.join(reg.drop_order) or 'none'}.",
        f"- Never dropped: {reg.never_drop or 'none'}.",
        f'- Sentence used for each affected cell: "{reg.curtailment_sentence}"',
        "",
        "## Invocation",
        "",
        "    " + " ".join(invocation),
        "",
        "## Plan",
        "",
        "| ordinal | treatment | cycle | selected |",
        "|---|---|---|---|",
        *[
            f"| {s.ordinal} | {s.treatment} | {s.cycle} | {'yes' if s in chosen else 'no'} |"
            for s in plan
        ],
        "",
    ]
    return "\n".join(lines)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
