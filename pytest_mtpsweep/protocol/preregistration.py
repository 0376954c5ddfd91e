"""Pre-registration: what a run commits to, rendered and hashed before its first measurement."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..ladder.runplan import SessionSlot, session_label
from ..ladder.values import Ladder, Preregistration


def effective(ladder: Ladder, plan: list[SessionSlot]) -> Preregistration:
    """The ladder's pre-registration with every unstated field the protocol defaults given its
    documented default (the kind fills in its own: `KindRun.registration`)."""
    reg = ladder.prereg
    others = [t.key for t in ladder.treatments if t.key != ladder.baseline]
    never = reg.never_drop or (session_label(plan[-1]) if plan else "")
    drop = reg.drop_order or tuple(
        session_label(s) for s in reversed(plan) if session_label(s) != never
    )
    return Preregistration(
        primary_contrasts=reg.primary_contrasts
        or tuple(f"{t} vs {ladder.baseline}" for t in others),
        secondary_contrasts=reg.secondary_contrasts,
        multiplicity=reg.multiplicity,
        drop_order=drop,
        never_drop=never,
        curtailment_sentence=reg.curtailment_sentence,
        scope=reg.scope,
    )


def render(
    ladder: Ladder,
    plan: list[SessionSlot],
    selected: list[SessionSlot],
    invocation: list[str],
    run_id: str,
    created_at: str,
    endpoints: Sequence[str] = (),
    stopping: Sequence[str] = (),
    host: Sequence[str] = (),
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
        *endpoints,
        "",
        *(ladder.sweep.prereg_lines(ladder.baseline) if ladder.sweep else []),
        *stopping,
        *host,
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
