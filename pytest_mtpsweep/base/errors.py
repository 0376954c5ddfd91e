"""Every exception the package raises, in one hierarchy.

MtpsweepError
├── UserError            one sentence naming what is wrong, where, and the fix; every
│   │                    edge (pytest hooks, the CLI) prints it as one line, no traceback
│   ├── LadderError      a ladder file or an option that overrides it
│   ├── KindError        an installed kind that is set aside: it does not load, is
│   │                    malformed, or clashes with another (names its distribution)
│   ├── PromptError      a prompt set or a task set
│   ├── OptionError      a command-line option on its own (a deadline, a bootstrap count)
│   ├── ProvisionError   the server binary or the model cannot be found or made
│   ├── PreflightError   preflight cannot run as asked (unknown waiver, bad --against)
│   ├── RunDirError      the run directory cannot be created, reopened or written
│   ├── AnalysisError    the analysis refuses (incomparable runs, no records, bad settings)
│   │   └── RunReadError a run-wide file of a run directory cannot be read (names the file)
│   └── ExpectationError an --expect gate that cannot be understood
├── ServerError          a session's server could not be started, reached or witnessed:
│   │                    that session fails, the run goes on
│   ├── ServerCrashed    the server process ended while loading (its status or signal
│   │                    named): twice the same way at load, and the run stops
│   └── ReplyCut         a reply passed its bound (time, bytes, lines, events) and was cut
└── ProtocolSignal       not errors: a protocol rule changes the course of the run
    ├── StopRun          the whole run stops now (a stop marker, a second failed warm-up,
    │                    a write failure)
    ├── SkipSession      this session does not run
    │   ├── AlreadyDone  --resume: it completed in the run being resumed
    │   ├── Curtailed    dropped, in the pre-registered order, to meet the deadline
    │   └── Decided      not needed: the pre-registered stop rule was met at a look
    │                    (a kind may raise its own: a token budget spent, say)
    └── SkipCase         this case was not run, and its record says so (the token budget)
"""

from __future__ import annotations


class MtpsweepError(Exception):
    """Base of every exception this package raises on purpose."""


class UserError(MtpsweepError):
    """Something the user can fix; the message is one sentence with the fix."""


class LadderError(UserError):
    """A ladder is missing, malformed or inconsistent; the message names file, field and fix."""


class KindError(UserError):
    """An installed kind cannot be used; the message names its distribution and the fix."""


class PromptError(UserError):
    """A prompt set (or task set) is missing or malformed; the message names the path."""


class OptionError(UserError, ValueError):
    """A command-line value that cannot be read; the message shows the expected form."""


class ProvisionError(UserError):
    """The server or the model cannot be found or made; the message names the fix."""


class PreflightError(UserError):
    """Preflight cannot run as asked (unknown waiver, unreadable earlier run)."""


class RunDirError(UserError):
    """The run directory cannot be created or written; the message says where and what to do."""


class AnalysisError(UserError):
    """A refusal of the analysis: incomparable runs, no records, an unknown baseline, bad settings."""


class RunReadError(AnalysisError):
    """A run-wide file (plan.json, stop.json, a table) is malformed; the message names it and
    the fix. An AnalysisError, since what reads a run is an analysis or a command over one."""


class ExpectationError(UserError, ValueError):
    """An `--expect` gate that cannot be understood or names something the run lacks."""


class ServerError(MtpsweepError):
    """A session's server could not be started, reached or witnessed; the message says why."""


class ServerCrashed(ServerError):
    """The server process ended while loading; `status` as Popen gives it (negative: a signal),
    `last_line` the log's last line, `site` where the kernel saw a fault (a library), if known."""

    def __init__(self, message: str, *, status: int, last_line: str, site: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.last_line = last_line
        self.site = site

    @property
    def same_as(self) -> tuple[int, str]:
        """What two crashes must share to be one cause: the status and the last log line."""
        return (self.status, self.last_line)


class ReplyCut(ServerError):
    """A server's reply passed its bound (rig/bounds.py) and was cut; the message says which
    bound and where. The request it ends is a failed one, never a hang."""


class ProtocolSignal(MtpsweepError):
    """A protocol rule that changes the course of the run (not a failure of the harness)."""


class StopRun(ProtocolSignal):
    """A protocol rule says the whole run stops now; the message is the marker line."""


class SkipSession(ProtocolSignal):
    """This session does not run; the message says why."""


class AlreadyDone(SkipSession):
    """On --resume: this session completed in the run being resumed."""


class Curtailed(SkipSession):
    """This session was dropped to meet the deadline, in the pre-registered order."""


class Decided(SkipSession):
    """The pre-registered stop rule was met at a look: this session is not needed."""


class SkipCase(ProtocolSignal):
    """This case was not run (its record, already written, says why): the test is skipped."""
