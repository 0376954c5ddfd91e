"""report.md as a findings document: the question, the limitations, content and drafting.

The report opens with what was asked (the pre-registered question and its scope), then the
headline, then what limits the answer before any detail table: multiplicity, truncation,
curtailment or a stop, intervals conditional on the sessions run, content that differs at
temperature 0, degenerate answers.
"""

from __future__ import annotations

import math

from ....kindapi.analysis import INTERVAL, Spread
from ....kindapi.records import recordlines
from ....kindapi.report import Md
from ..analysis import hosteffect as hostrule
from ..analysis.equivalence import DIFFERENT, describe
from ..analysis.runvalues import ENDPOINTS, DecodeAnalysis
from ..analysis.sessionpool import BORROWED_SESSION
from . import limits as limits
from .diagnostics import degenerate_warning, interval_fallback_warning
from .textfmt import dict_rows, num, table_or_count, texts, titled

LIMITATIONS = "## Limitations"
EQUIVALENCE_HEADERS = [
    "treatment",
    "subset",
    "prompt",
    "cycle",
    "verdict",
    "truncated",
    "chars",
    "baseline chars",
]
SELF_HEADERS = ["treatment", "subset", "prompt", "cycles", "verdict", "chars"]
ACCEPTANCE_HEADERS = [
    "treatment",
    "subset",
    "measurements",
    "with draft",
    "drafted",
    "accepted",
    "acceptance",
]


def section_question(result: DecodeAnalysis) -> list[str]:
    """The pre-registered question and the design's scope, first of all."""
    question = Md.text(result.question) or "not recorded (plan.json has no `question`)"
    out = [f"**Question (pre-registered):** {question}", ""]
    if Md.text(result.scope):
        out += [f"**Scope:** {Md.text(result.scope)}", ""]
    return out


def conditional(result: DecodeAnalysis) -> bool:
    """True when some published interval leaves the session level out (too few cycles)."""
    methods = set(result.published["interval_method"]) if not result.contrasts.empty else set()
    return Spread.PROMPTS_ONLY in methods


def _multiplicity(result: DecodeAnalysis) -> str:
    n_t = len(result.treatments)
    n_s = len(result.subsets) + (len(result.subsets) >= 2)
    text = (
        f"**Multiplicity:** {n_t} treatment(s) × {n_s} subset cell(s) = {n_t * n_s} headline "
        f"contrasts ({n_t * n_s * len(ENDPOINTS)} intervals over both endpoints); no correction "
        "for multiplicity is applied, so each interval covers its own contrast and the table "
        "is not a joint 95% guarantee."
    )
    if result.multiplicity:
        text += f" Pre-registered: {Md.text(result.multiplicity)}"
    return text


def _truncation(result: DecodeAnalysis) -> str:
    t = result.truncated
    if t.empty:
        return "**Truncation:** no analysed measurement hit the token cap."
    prompts = sorted({str(p) for p in t["prompt_id"]})
    named: str = Md.text(", ".join(prompts[: Md.LONG_LIST_ROWS]))
    if len(prompts) > Md.LONG_LIST_ROWS:
        named += f" and {len(prompts) - Md.LONG_LIST_ROWS} more"
    return (
        f"**Truncation:** {len(t)} analysed measurement(s) of {len(prompts)} prompt(s) hit the "
        f"token cap ({named}). Their rates are valid observations of decoding up to the cap; "
        "no claim about these prompts reaches beyond it (one row each in `truncated.csv`, see "
        f"{limits.see('Truncated measurements')}; content equivalence compares them only up "
        "to the cap)."
    )


def _curtailment(result: DecodeAnalysis) -> list[str]:
    look = result.sequential
    stopped = look is not None and look.stopped_at is not None
    if not result.stops and not result.unselected and not result.not_run and not stopped:
        return ["**Curtailment and stops:** none; no session was dropped and no stop rule fired."]
    out = [f"**Curtailment and stops:** {Md.text(stop)}" for stop in result.stops]
    if look is not None and look.stopped_at is not None:
        after = look.design.looks[look.stopped_at - 1]
        out.append(
            f"**Stopped by its rule:** the pre-registered stop rule was met at look "
            f"{look.stopped_at} (after cycle {after} of at most {look.design.looks[-1]}), so "
            "the later cycles were not run; the design is balanced there (whole cycle pairs) "
            "and the intervals keep their level (repeated confidence intervals)."
        )
    if result.not_run:
        out.append(
            f"**Not run:** {len(result.not_run)} selected session(s) left neither records nor a "
            f"session file ({Md.text(', '.join(result.not_run))}): the run ended before them."
        )
    if result.unselected:
        out.append(
            f"**Not selected:** {len(result.unselected)} planned session(s) were not selected by "
            f"the invocation ({Md.text(', '.join(result.unselected))}); the figures rest on the "
            "selected "
            "sessions only."
        )
    return out


def _sessions(result: DecodeAnalysis) -> str:
    cycles = sorted({int(c) for c in result.per_cycle["cycle"]}) if len(result.per_cycle) else []
    n = len(cycles)
    if conditional(result):
        return (
            f"**Conditional on sessions:** with {n} cycle(s), fewer than "
            f"{INTERVAL.session_cycles}, the intervals are conditional on the server sessions "
            "that were run: they resample prompts only, so an offset shared by a whole session "
            "is not in them; the per-cycle contrasts show how far each figure moved."
        )
    methods = set(result.published["interval_method"]) if not result.contrasts.empty else set()
    if BORROWED_SESSION in methods:
        return (
            f"**Sessions borrowed:** with {n} cycle(s), fewer than {INTERVAL.session_cycles}, "
            "each interval borrows the session level from the run's treatments (their arm × "
            f"cycle interaction, `{BORROWED_SESSION}`), assuming their sessions vary alike: a "
            "whole-session offset widens them, and a treatment whose own sessions are unusually "
            f"noisy is seen only from {INTERVAL.session_cycles} cycles."
        )
    if Spread.WITH_SESSION in methods:
        return (
            f"**Sessions:** with {n} cycles the session level is in the intervals "
            f"(`{Spread.WITH_SESSION}`): a whole-session offset widens them, so they speak for further "
            "sessions of this rig, not only the ones run."
        )
    return "**Sessions:** no interval was computed."


def equivalence_flags(result: DecodeAnalysis) -> list[str]:
    """One correctness flag per treatment whose answers differ at temperature 0."""
    eq = result.equivalence
    if eq is None:
        return []
    flags = []
    for _, s in eq.summary.iterrows():
        if s["treatment"] != eq.baseline and s["differ"]:
            flags.append(
                f"**Correctness flag:** {Md.code(s['treatment'])} answers differ from "
                f"{Md.code(eq.baseline)}'s in {s['differ']} of {s['cells']} "
                f"{Md.text(s['subset'])} (prompt, cycle) cells at temperature 0 "
                f"({Md.text(s['differing_prompts'].replace(' ', ', '))}). "
                "Speculative decoding should not change the output at temperature 0; its rates "
                "were measured on different text. A correctness question, not a rate problem."
            )
        unlike = int(s["self_prompts"]) - int(s["self_identical"])
        if unlike:
            flags.append(
                f"**Correctness flag:** {Md.code(s['treatment'])} ({Md.text(s['subset'])}) is not "
                f"identical to itself across cycles in {unlike} of {s['self_prompts']} prompts "
                f"({Md.text(s['self_differing_prompts'].replace(' ', ', '))}): the rig is not "
                "deterministic at temperature 0."
            )
    return flags


def _equivalence(result: DecodeAnalysis) -> list[str]:
    if result.equivalence is None:
        return [f"**Content equivalence:** {Md.text(result.equivalence_skipped)}."]
    flags = equivalence_flags(result)
    if flags:
        return flags
    n = len(result.equivalence.pairs)
    selves = len(result.equivalence.self_identity)
    itself = (
        f"each is identical to itself across cycles ({selves} prompt(s) seen in two cycles or more)"
        if selves
        else "no prompt was answered in two cycles, so nothing was compared across cycles"
    )
    return [
        f"**Content equivalence:** every treatment's answers are identical to the baseline's in "
        f"all {n} compared (prompt, cycle) cells (truncated pairs up to the cap); {itself}."
    ]


@titled(LIMITATIONS[3:])
def section_limitations(result: DecodeAnalysis) -> list[str]:
    """What limits the headline, before any detail table: every limitation, one bullet each,
    whether its detail is in report.md or only in report.html."""
    warning = degenerate_warning(result)
    degenerate = f"**{Md.text(warning)}**" if warning else "**Degenerate output:** none detected."
    fallback = interval_fallback_warning(result)
    items = [
        *(
            [recordlines.limitation([Md.text(str(u)) for u in result.unreadable])]
            if result.unreadable
            else []
        ),
        _multiplicity(result),
        _truncation(result),
        *_curtailment(result),
        _sessions(result),
        *_equivalence(result),
        degenerate,
        *([f"**{fallback}**"] if fallback else []),
        limits.host_noise(result),
        *filter(None, [hostrule.limitation(result.host_rule)]),
    ]
    if result.has_pairs and result.treatments:
        items += [limits.drift(result), limits.position(result), limits.cross_checks(result)]
    return [*(f"- {item}" for item in items), ""]


@titled("Content equivalence")
def section_equivalence(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    eq = result.equivalence
    if eq is None:
        return [*out, f"Content equivalence: {Md.text(result.equivalence_skipped)}.", ""]
    out += [
        f"At temperature 0 each treatment's answer (`content_sha256`) is compared with "
        f"{Md.code(eq.baseline)}'s to the same prompt in the same cycle, and with its own answer in "
        "its first cycle. Two answers cut by the token cap at the same token count are "
        "'identical up to the cap' or 'differ within the cap'; nothing is claimed beyond it.",
        "",
        *(f"- {Md.text(line)}" for line in describe(eq)),
        "",
    ]
    differ = eq.pairs["verdict"].isin(DIFFERENT)
    # The cells that differ are findings; truncated cells that agree are a count with a file.
    for title, shown in (
        ("Cells that differ:", eq.pairs[differ]),
        ("Truncated cells that do not differ:", eq.pairs[~differ & (eq.pairs["truncated"] != "")]),
    ):
        if shown.empty:
            continue
        rows = [
            [
                *texts(r, "treatment", "subset", "prompt_id"),
                f"c{r['cycle']}",
                str(r["verdict"]),
                str(r["truncated"] or "-"),
                *texts(r, "chars", "baseline_chars"),
            ]
            for r in dict_rows(shown)
        ]
        table = table_or_count(EQUIVALENCE_HEADERS, rows, "equivalence.csv", "cells")
        out += [title, "", table, ""]
    unlike = eq.self_identity[eq.self_identity["verdict"].isin(DIFFERENT)]
    if not unlike.empty:
        rows = [
            [str(r[c]) for c in ("treatment", "subset", "prompt_id", "cycles", "verdict", "chars")]
            for r in dict_rows(unlike)
        ]
        table = table_or_count(
            SELF_HEADERS, rows, "contrasts.json", "answers (equivalence.self_identity)"
        )
        out += ["Answers unlike their own first cycle:", "", table, ""]
    return out


def _rate(value: object) -> str:
    return f"{num(value, 1)}%" if isinstance(value, float) and math.isfinite(value) else "-"


@titled("Draft acceptance")
def section_acceptance(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    t = result.acceptance
    if t.empty:
        return [*out, "No analysed measurements.", ""]
    if not int(t["with_draft"].sum()):
        # A table of dashes says less than a sentence.
        return [
            *out,
            "No treatment drafted tokens: no valid analysed measurement reports a drafted "
            "token (the server's `draft_n`); the counts per treatment and subset are in "
            "`acceptance.csv`.",
            "",
        ]
    rows = [
        [
            *texts(r, "treatment", "subset", "records", "with_draft"),
            str(r["draft_n"]) if r["with_draft"] else "-",
            str(r["draft_n_accepted"]) if r["with_draft"] else "-",
            _rate(r["acceptance_pct"]),
        ]
        for r in dict_rows(t)
    ]
    lead = (
        "Tokens the drafter proposed and the target accepted, summed over valid analysed "
        "measurements (the server's `draft_n` / `draft_n_accepted`); a treatment without a "
        "drafter has none, shown as '-', not 0."
    )
    table = table_or_count(ACCEPTANCE_HEADERS, rows, "acceptance.csv", "treatment × subset rows")
    return [*out, lead, "", table, ""]
