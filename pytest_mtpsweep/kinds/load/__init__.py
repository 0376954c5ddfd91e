"""The load experiment: does a configuration's gain hold when requests arrive together?

A case is one level block (a concurrency, or a request rate) in one session (treatment x
cycle): a short warm-up, then the level's requests on the seeded schedule every treatment
shares, one record per request plus the level's summary.

This module is the kind's declaration (the entry point `load` names `KIND`): every pytest
process of the environment imports it for the kind's options, so it imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kindapi import GateGrammar, Kind, Opt
from .optiontypes import seconds

KIND = Kind(
    name="load",
    sweeps=True,  # a [sweep]'s arms are treatments like the declared ones
    fixture="load_level",
    summary="One level block of concurrent streamed requests (load kind), recorded; assert "
    "`.valid` in the test.",
    ladder=f"{__name__}.ladder:SPEC",
    run=f"{__name__}.run.loadrun:prepare",
    analyse=f"{__name__}.analysis.commands:analyse_command",
    plan=f"{__name__}.analysis.plan:plan_command",
    interim=f"{__name__}.analysis.atend:interim",  # the headline gains so far, for [stop]
    gates=GateGrammar(  # --expect TREATMENT:LEVEL:not-slower:M (or TREATMENT:capacity:...)
        syntax=f"TREATMENT:LEVEL:{GateGrammar.WORD}:M, the one gate a load run has",
        example=f"ngram:conc4:{GateGrammar.WORD}:5",
        cell_word="level",
    ),
    options=(
        Opt(
            "--load-requests",
            "load_requests",
            "load: requests per level block (overrides the ladder's requests or duration_s)",
            int,
            metavar="N",
            overrides="command_line.requests",
        ),
        Opt(
            "--load-duration",
            "load_duration",
            "load: seconds per level block instead of a count of requests (overrides the "
            "ladder's requests or duration_s)",
            seconds,
            metavar="S",
            overrides="command_line.duration_s",
        ),
    ),
    # the levels, their order, the schedule, the SLOs: another value is another experiment
    resume_fields=("load",),
)


if TYPE_CHECKING:  # mypy checks each part named above against its signature
    from .analysis.atend import interim
    from .analysis.commands import analyse_command
    from .analysis.plan import plan_command
    from .run.loadrun import prepare

    Kind.check_parts(run=prepare, analyse=analyse_command, plan=plan_command, interim=interim)
