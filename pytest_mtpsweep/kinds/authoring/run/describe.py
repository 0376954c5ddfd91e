"""What an authoring run says of itself before it starts: plan.json fields, the pre-registered
endpoints and contrasts, its keyed fields and its preflight items."""

from __future__ import annotations

from typing import Any

from ....kindapi.ladder import Ladder, Preregistration
from ....kindapi.records import redact_url
from ....kindapi.run import PreflightItem
from ..cohorts import Cohort
from ..ladder import AuthoringSettings, CheckerLimits
from ..tasks import Task
from .order import subject_order


def limits_text(c: CheckerLimits) -> str:
    return (
        f"timeout {c.timeout_s:g} s, cpu {c.cpu_s} s, memory {c.memory_mib} MiB, file "
        f"{c.file_mib} MiB, tmp {c.tmp_mib} MiB, nproc +{c.nproc}, output {c.output_kib} KiB"
    )


def subjects(ladder: Ladder) -> list[dict[str, Any]]:
    """Each subject as plan.json records it (the key's variable by NAME only)."""
    out = []
    for t in ladder.treatments:
        out.append(
            {
                "key": t.key,
                "rig": "remote" if t.attached else "local",
                "model": ladder.model_of(t.key),
                "model_id": ladder.model_id_of(t.key),
                "base_url": redact_url(t.base_url) if t.base_url else None,
                "served_model": t.served_model,
                "api_key_env": t.api_key_env,
                "args": list(t.args),
            }
        )
    return out


def plan_fields(
    ladder: Ladder, s: AuthoringSettings, tasks: tuple[Task, ...], cohorts: tuple[Cohort, ...]
) -> dict[str, Any]:
    order = subject_order([c.name for c in cohorts], [t.id for t in tasks], s.repeats, ladder.seed)
    return {
        "subjects": subjects(ladder),
        "cohorts": [{"name": c.name, "extract": c.extract} for c in cohorts],
        "baseline_cohort": ladder.baseline,
        "tasks": [t.id for t in tasks],
        "repeats": s.repeats,
        "max_turns": s.max_turns,
        "token_budget": s.token_budget,
        "feedback_chars": s.feedback_chars,
        "checker_limits": limits_text(s.checker),
        "contrast": {"resamples": s.resamples, "seed": s.boot_seed, "pooled": s.pooled},
        "cell_order": [f"{c}-{t}-r{r}" for c, t, r in order],
    }


def prereg_lines(
    ladder: Ladder, s: AuthoringSettings, reg: Preregistration, tasks: int, cohorts: list[str]
) -> list[str]:
    """The authoring endpoints and contrasts, as preregistration.md states them."""
    base = ladder.baseline
    others = [c for c in cohorts if c != base]
    own = ladder.prereg.primary_contrasts
    contrasts = "; ".join(own) if own else "; ".join(f"{c} vs {base}" for c in others)
    subjects = ", ".join(ladder.treatment_keys)
    budget = (
        f"{s.token_budget} tokens for the whole run; a turn is sent only if it cannot take the "
        "run past it."
        if s.token_budget
        else "none."
    )
    return [
        f"- Subjects: {subjects}; each analysed on its own, side by side, never pooled"
        + (" (a pooled estimate is also reported, as the ladder asks)." if s.pooled else "."),
        f"- Cohorts: {', '.join(cohorts)} (baseline {base}); {tasks} tasks; {s.repeats} repeats; "
        f"at most {s.max_turns} turns; temperature {ladder.temperature:g}, seed {ladder.seed}, "
        f"{ladder.max_tokens} tokens per turn.",
        "- Cell outcomes: first_attempt_green, green_after_k, exhausted (informative); "
        "api_failure, checker_error, budget_stopped (counted by name, left out of the rates).",
        f"- Primary contrasts, within each subject: {contrasts or 'none'}: paired by task "
        "(repeats averaged within a task first): the difference in the rate of reaching green, "
        "and in first-attempt green; the ratio of mean prompt tokens and of mean completion "
        "tokens per cell.",
        "- Intervals (95 %): the two pass-rate differences by Newcombe's paired score interval "
        "(method 10, over tasks); the token ratios by the larger of Student's t and the "
        f"bootstrap-t over tasks, at most twice t ({s.resamples} resamples, seed {s.boot_seed}).",
        f"- Secondary contrasts (exploratory): {'; '.join(reg.secondary_contrasts) or 'none'}.",
        f"- Token budget: {budget}",
        *_flight_lines(ladder, s),
        f"- Multiplicity: {ladder.prereg.multiplicity or multiplicity(len(others), ladder)}",
    ]


def _flight_lines(ladder: Ladder, s: AuthoringSettings) -> list[str]:
    many = {k: s.cells_in_flight(k) for k in ladder.treatment_keys if s.cells_in_flight(k) > 1}
    if not many:
        return []
    said = ", ".join(f"{k} {n}" for k, n in many.items())
    return [
        f"- Cells in flight together: {said}; cells start in the order above; an HTTP 429 "
        "halves the requests in flight (down to one) and answers raise it again; the token "
        "budget reserves each turn's bound before it is sent."
    ]


def multiplicity(others: int, ladder: Ladder) -> str:
    n = others * len(ladder.treatments) * 4
    return (
        f"{others} contrast(s) x {len(ladder.treatments)} subject(s) x 4 endpoints = {n} "
        "intervals, no correction; each describes the tasks at hand, not a family-wise guarantee."
    )


def tasks_item(digest: str, n: int) -> PreflightItem:
    return PreflightItem("tasks", "recorded", f"{n} tasks, digest {digest}", PreflightItem.PASS)


def sandbox_item(verdict: str, reason: str | None, isolation: dict[str, Any]) -> PreflightItem:
    """Whether a trivial check passes in the checker sandbox, and what the sandbox isolates."""
    expected = "a trivial check passes in the sandbox"
    if verdict != "pass":
        return PreflightItem(
            "checker_sandbox",
            expected,
            f"{verdict}: {reason}",
            PreflightItem.FAIL,
            fix="The checker cannot run pytest in the sandbox; see the reason and 'The checker "
            "sandbox' in docs/authoring.md.",
        )
    return PreflightItem("checker_sandbox", expected, isolation_text(isolation), PreflightItem.PASS)


def isolation_text(iso: dict[str, Any]) -> str:
    """One line saying plainly what is and is not isolated (the candidate's jail)."""
    net = "network isolated" if iso.get("network") == "namespace" else "network NOT isolated"
    pids = (
        "own PID namespace"
        if iso.get("pids") == "namespace"
        else "no PID namespace (process group only)"
    )
    if iso.get("root") == "minimal":
        fs = f"sees only the interpreter (minimal read-only root), workdir {iso.get('workdir')}"
    elif iso.get("filesystem") == "read-only":
        fs = f"filesystem read-only but VISIBLE, workdir {iso.get('workdir')}"
    else:
        fs = "filesystem visible and NOT read-only (file-size limit only)"
    boundary = (
        "artefact in its own process, reached through a data-only proxy"
        if iso.get("boundary") == "process"
        else "artefact inside the checker's process (verdicts forgeable)"
    )
    return f"{boundary}; {net}; {pids}; {fs}; runs as {iso.get('user', '?')}"
