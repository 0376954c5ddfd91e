"""The decode-rate experiment: prompt × treatment × cycle, one streamed request each.

This module is the kind's declaration (the entry point `decode` names `KIND`): every pytest
process of the environment imports it for the kind's options, so it imports nothing else
but its gate grammar (`grammar.py`, as light).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kindapi import SUBSETS, Kind, Opt
from .grammar import GATES

KIND = Kind(
    name="decode",
    sweeps=True,  # a [sweep]'s arms are treatments like the declared ones
    fixture="measurement",
    summary="One streamed measurement (decode kind), already recorded; assert `.valid` in the test.",
    ladder=f"{__name__}.ladder:SPEC",
    run=f"{__name__}.run.decoderun:prepare",
    analyse=f"{__name__}.analysis.commands:analyse_command",
    plan=f"{__name__}.analysis.plan:plan_command",
    interim=f"{__name__}.analysis.atend:interim",  # the published cells so far, for [stop]
    sweep=f"{__name__}.analysis.sweeplook:sweep_look",  # a [stop] sweep's arms to drop
    compare=f"{__name__}.analysis.commands:compare_command",
    commands=f"{__name__}.calibrate:register",  # `mtpsweep calibrate RUN --margin M`
    options=(
        Opt(
            "--subset",
            "subset",
            "which prompts: prose, structured or both",
            choices=SUBSETS.choices,
            overrides="subset",
        ),
        Opt(
            "--cache-prompt",
            "cache_prompt",
            "let llama-server reuse cached prompt prefixes (recorded, keyed)",
            action="store_true",
            overrides="cache_prompt",
        ),
        Opt(
            "--gate-calibration",
            "gate_calibration",
            "the A/A calibration file (`mtpsweep calibrate`) a not-slower gate cites; refused "
            "when stale (another host or model, too old) or when its margin is below the floor",
            metavar="FILE",
        ),
    ),
    gates=GATES,  # --expect TREATMENT:SUBSET:faster|slower|equivalent|not-slower:M
    default=True,  # a ladder without a `kind` field is a decode ladder
    distributable=True,
    resume_fields=("prompts",),  # the prompt set and its subsets, as plan.json lists them
)


if TYPE_CHECKING:  # mypy checks each part named above against its signature
    from .analysis.atend import interim
    from .analysis.commands import analyse_command, compare_command
    from .analysis.plan import plan_command
    from .analysis.sweeplook import sweep_look
    from .calibrate import register
    from .run.decoderun import prepare

    Kind.check_parts(
        run=prepare,
        analyse=analyse_command,
        compare=compare_command,
        plan=plan_command,
        interim=interim,
        sweep=sweep_look,
        commands=register,
    )
