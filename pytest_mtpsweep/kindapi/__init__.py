"""The front door for kind authors: everything an experiment kind may import, and nothing else.

A kind (a shipped one under `kinds/`, or a third party's) imports the package only through
this door; `tests/test_kindapi.py` holds `kinds/*` and the `mtpsweep new-kind` template
(`kindtemplate/`, a third party's kind's start) to it, and docs/architecture/10-front-door.md
lists each name with one line. Every other module of the package is private to it by that
test, whatever its name: the layout underneath may change, the door's names do not without a
CHANGELOG entry.

This module is cheap (every pytest run with `--ladder` imports each kind's declaration, which
imports it): the kind's declaration and run interface (its parts are plain typed functions,
checked by `Kind.check_parts`), the gates, the errors, the option type, the exit status, the
shared values (`SUBSETS`, `BOOT`) and one invocation's wishes. What costs more lives in the door's
submodules, imported by the kind's modules that need them:

- `kindapi.ladder` — the ladder side: `Ladder`, `Treatment`, field specs and checks, prompts;
- `kindapi.run` — a live session, the run's context, preflight items, attached counters;
- `kindapi.rig` — requests to a server: one streamed request, bounded reads and their checks;
- `kindapi.records` — the run directory's names (`schema`), record lines (`recordlines`), the
  record writer, the run reader, atomic files;
- `kindapi.analysis` — the statistics a kind may call (pandas and numpy come with it);
- `kindapi.report` — the report model and its writer.

Below the door sits `kindbase` (the interface the protocol imports, pluggy's shape): the door
re-exports it, so the protocol never imports the door and the door may stand above it.
"""

from __future__ import annotations

from ..base.constants import BOOT, SUBSETS
from ..base.errors import (
    AnalysisError,
    ExpectationError,
    LadderError,
    OptionError,
    PromptError,
    ReplyCut,
    RunReadError,
    SkipSession,
    UserError,
)
from ..interface.kind import (
    Case,
    EndAnalysis,
    ExitStatus,
    Kind,
    KindRun,
    KindSpec,
    Outcome,
    SweepLookAt,
    SweepVerdict,
)
from ..wishes.gate import Gate, GateFigures, GateGrammar, GateVerdict
from ..wishes.options import Opt
from ..wishes.request import AnalysisRequest, RunRequest

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # the declaration and the run side
    "Kind",
    "KindSpec",
    "KindRun",
    "Case",
    "Outcome",
    "EndAnalysis",
    "ExitStatus",
    "Opt",
    # a gate: what a kind's gates may say, one parsed, one judged
    "GateGrammar",
    "Gate",
    "GateVerdict",
    "GateFigures",
    # what a sweep's look is asked and answers (the parts' signatures: `Kind.check_parts`)
    "SweepLookAt",
    "SweepVerdict",
    # one invocation's wishes
    "RunRequest",
    "AnalysisRequest",
    # shared numbers and names
    "SUBSETS",
    "BOOT",
    # the errors (each one sentence: what, where, the fix)
    "UserError",
    "LadderError",
    "PromptError",
    "OptionError",
    "AnalysisError",
    "RunReadError",
    "ExpectationError",
    "ReplyCut",
    "SkipSession",
]
