"""--resume: reopen an interrupted run if, and only if, this invocation is the same run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base import schema
from ..base.errors import RunDirError, RunReadError
from ..interface import registry
from ..preflight.items import PreflightItem, write_preflight_json
from ..state.plandoc import PlanDoc
from ..state.rundir import RunDir
from ..state.runread import RunReader
from . import planfile

INTERRUPTED = "interrupted before it finished; run again from a fresh server on --resume"
FOREIGN = "another run's session file (its run_id or pre-registration differs); run again"
INCOMPLETE = "closed with cases its kind will run again on --resume (e.g. budget_stopped cells)"


@dataclass(frozen=True)
class ResumeState:
    """What the resumed run already holds."""

    run_dir: RunDir
    run_id: str
    prereg_sha256: str
    done: set[str]


def read_plan(run_path: Path) -> PlanDoc:
    """The run's plan.json by the run reader's rule, refused in --resume's own words."""
    run = RunReader(run_path)
    if not run.has(schema.PLAN_FILE):
        raise RunDirError(f"--resume {run_path}: no plan.json there; name a run directory.")
    try:
        old = run.plan
    except RunReadError as exc:  # it names the file and says to restore it
        raise RunDirError(f"--resume {run_path}: {exc} or start a new run.") from None
    except OSError as exc:
        raise RunDirError(
            f"--resume {run_path}: plan.json cannot be read ({exc}); restore it or start a new run."
        ) from None
    if not old.run_id:
        raise RunDirError(
            f"--resume {run_path}: plan.json holds no run; restore it or start a new run."
        )
    return old


def check_stop_file(run_path: Path) -> None:
    """A damaged stop.json (or curtailment.json) refused before preflight: the looks are taken again from the
    records, but a file that is not the protocol's means someone or something changed the run."""
    try:
        _ = RunReader(run_path).stop
    except RunReadError as exc:  # it names the file and says to restore it
        raise RunDirError(
            f"--resume {run_path}: {exc}, or move it aside (the stop rule's looks are taken again "
            "from the records), then resume."
        ) from None
    except OSError as exc:
        raise RunDirError(
            f"--resume {run_path}: stop.json cannot be read ({exc.strerror or exc}); restore it "
            "or move it aside (the looks are taken again from the records), then resume."
        ) from None
    try:  # a forged curtailment.json would be refused by the analysis after every session
        _ = RunReader(run_path).curtailment
    except RunReadError as exc:
        raise RunDirError(f"--resume {run_path}: {exc}, or move it aside, then resume.") from None


def finished_sessions(run_path: Path, plan: PlanDoc) -> set[str]:
    """Sessions whose session file exists and does not say `complete: false` (a kind whose
    cases can be resumed one by one writes that when some still need running)."""
    names = plan.session_names
    # An unreadable session file was still closed: it is not run again. Another run's file
    # (copied in) is no session of this run: it is run, the file set aside first (`reopen`).
    read = RunReader(run_path).sessions()
    unfinished = {d.session for d in read.documents if not d.complete}
    unfinished |= read.foreign
    return {
        n for n in names if n not in unfinished and (run_path / schema.session_file(n)).exists()
    }


def reopen(
    run_path: Path,
    now: PlanDoc,
    checks: Sequence[PreflightItem],
    kind_fields: Sequence[str] = (),
) -> ResumeState:
    """Continue an interrupted run: same ladder and options, or a refusal naming the change.

    `kind_fields` are the plan fields the kind counts as the run's identity (`--resume`)."""

    old = read_plan(run_path)
    if (run_path / schema.STOPPED_FILE).exists():
        why = RunReader(run_path).stop_reason  # bounded: a FIFO there is never waited on
        raise RunDirError(
            f"--resume {run_path}: the run was stopped by a protocol rule ({why}) and must not "
            "be resumed; start a new run."
        )
    differ = planfile.differences(old, now, kind_fields, registry.default_name())
    if differ:
        raise RunDirError(
            f"--resume {run_path}: this invocation differs from the run in {', '.join(differ)}; "
            "resume with the same ladder and options, or start a new run."
        )
    done = finished_sessions(run_path, old)
    foreign = RunReader(run_path).sessions().foreign
    selected = {s.session for s in now.sessions if s.selected}
    if selected and selected <= done:
        raise RunDirError(
            f"--resume {run_path}: every selected session already finished, so there is nothing "
            "to resume; nothing was changed."
        )
    run_dir = RunDir.reopen(run_path)
    n = len(list(run_path.glob("preflight*.json")))
    write_preflight_json(checks, run_path / schema.preflight_resume_file(n))
    for name in old.session_names:
        if name in done:
            continue
        if (run_path / schema.session_file(name)).exists():  # closed, but incomplete
            run_dir.quarantine(name, FOREIGN if name in foreign else INCOMPLETE)
            continue
        touched = (run_path / schema.records_file(name)).exists() or (
            run_path / schema.server_log(name)
        ).exists()
        if touched:
            run_dir.quarantine(name, INTERRUPTED)
    return ResumeState(run_dir, old.run_id, old.preregistration_sha256, done)
