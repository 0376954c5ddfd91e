"""A session's protocol rules, kind-neutral (the server side is lifecycle.py).

A failed warm-up is quarantined and tried once more from a fresh server (a second failure
stops the run), and so is a server killed by a signal while loading (killed the same way twice:
the binary cannot run here, and the run stops before the other sessions); a server that dies mid-session fails the rest of the session; a partial census
is quarantined and re-run once if time allows, and so is a session the host spoiled
(hostrule.py: kept and flagged instead when its re-run fails too or there is no time);
whatever goes wrong after a launch, the server is stopped and the session file written before
the error travels on.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from ..base import schema
from ..base.errors import RunDirError, ServerCrashed, ServerError, SkipCase, StopRun
from ..ladder.runplan import SessionSlot
from ..rig.exits import describe_exit, ended, exit_of
from ..state.context import RunContext
from ..state.live import LiveSession
from . import busywatch, hostrule, interrupts, lifecycle
from .lifecycle import one_line
from .progress import Progress, Silent, session_summary
from .schedule import Schedule

if TYPE_CHECKING:
    from ..interface.kind import Case, KindRun, Result


def crash_marker(slot: str, exc: ServerCrashed) -> str:
    """The one line a run stops with when its server crashes at load twice the same way."""
    end = exit_of(exc.status)
    site = f" in {exc.site}" if exc.site else ""
    cause = (
        " It was likely built for CPU features this machine lacks (a native build from another"
        " machine or a shared wheel cache, or llama.cpp's AMX kernels): rebuild it here with"
        " `mtpsweep provision --rebuild` (or fix --server-bin), then continue with --resume."
        if end.illegal_instruction
        else " Fix the server (its log is in the run's servers/ folder), then continue with"
        " --resume."
    )
    return (
        f"** SERVER-CRASHED-AT-LOAD={slot}: the server was {describe_exit(exc.status)}{site} "
        f"while loading, twice from a fresh start, after the log line {exc.last_line!r}, so no "
        f"other session was started.{cause}"
    )


class Sessions:
    """Opens, measures in and closes the sessions of one run."""

    def __init__(
        self,
        ctx: RunContext,
        kind: KindRun,
        schedule: Schedule,
        cases: Mapping[str, Sequence[Case]],
    ) -> None:
        self.ctx = ctx
        self.kind = kind
        self.schedule = schedule
        self.cases = cases  # session name -> its selected cases, in run order
        self.stopped: str | None = None
        self.progress: Progress = Silent()
        self.closed: set[str] = set()  # sessions closed for good (after their re-run, if any)
        self.recovered: set[str] = set()  # sessions whose re-run completed the census
        self.host_off = hostrule.off_reason(ctx.ladder.host_rule, os.environ)
        self.calibrated_tps: float | None = None  # the best start calibration the host left alone

    # -- opening ------------------------------------------------------------------------

    def open(self, slot: SessionSlot) -> LiveSession:
        """Start this slot's server, witness it, warm it up; a failed warm-up gets one fresh try.

        The kind is asked first (it may raise SkipSession, e.g. when its token budget is spent).
        """
        self.kind.before_session(self.ctx, slot, self.cases.get(slot.name, ()))
        live = self._start_or_stop(slot)
        if live.quarantine is None:
            return live
        first = live.quarantine
        self.close(live)
        live = self._start(slot)
        if live.quarantine is not None:
            reason = f"warm-up failed twice: {first}; then {live.quarantine}"
            self.close(live)
            self.stop_run(f"** WARMUP-FAILED-TWICE={slot.name}: {reason}")
        self.closed.discard(slot.name)  # the failed warm-up's close was not the session's
        return live

    def _start_or_stop(self, slot: SessionSlot) -> LiveSession:
        """A server killed by a signal while loading gets one fresh start; killed the same way
        again, the binary cannot run here: the run stops (no STOPPED file, so --resume works
        once it is fixed) instead of crashing in every session."""
        try:
            return self._start(slot)
        except ServerCrashed as first:
            if exit_of(first.status).signal is None:
                raise  # an exit status (a flag it refuses, a missing file): this session's own
            try:
                return self._start(slot)
            except ServerCrashed as again:
                if again.status != first.status:
                    raise
                self.stop_run(crash_marker(slot.name, again), mark=False)

    def _start(self, slot: SessionSlot, rerun: bool = False) -> LiveSession:
        live = LiveSession.new(self.ctx, slot, rerun)
        try:
            lifecycle.bring_up(live, self.kind, self.progress)
        except BaseException as exc:
            # Whatever failed after the launch, the server goes down and the session is filed.
            if "error" not in live.info:
                live.info["error"] = one_line(exc)
            if isinstance(exc, ServerCrashed) and exit_of(exc.status).signal is not None:
                live.info["complete"] = False  # it measured nothing: --resume runs it again
            self.close(live)
            if isinstance(exc, Exception) and not isinstance(
                exc, ServerError | StopRun | RunDirError
            ):
                raise ServerError(f"session start failed: {one_line(exc)}") from exc
            raise
        return live

    # -- measuring ----------------------------------------------------------------------

    def measure(self, live: LiveSession, case: Case) -> Result:
        """One case, measured by the kind; its record is on disk before this returns.

        SkipCase when the kind did not run it (its record says why).
        """
        interrupted: BaseException | None = None
        gone = live.dead or live.spoiled_early
        if gone is not None:
            outcome = self.kind.unmeasured(live, case, gone)
        else:
            try:
                outcome = self.kind.measure(live, case)
            except RunDirError as exc:
                live.quarantine = f"a record could not be written: {exc}"
                # No STOPPED file: once there is space again the run may be resumed.
                self.stop_run(f"** WRITE-FAILED at {live.slot.name}/{case.id}: {exc}", mark=False)
            except BaseException as exc:  # a timeout or Ctrl-C mid-request: record it, go on
                interrupted = exc
                live.dead = f"a measurement was interrupted ({type(exc).__name__}: {one_line(exc)})"
                live.quarantine = live.dead
                outcome = self.kind.unmeasured(live, case, live.dead)
        live.measured += 1
        live.valid += outcome.result.valid
        live.usable += outcome.result.valid if outcome.usable is None else outcome.usable
        if interrupted is not None:
            raise interrupted
        if gone is None and self.host_off is None:
            live.spoiled_early = busywatch.watch(
                live, outcome.rate, self.ctx.ladder.host_rule, self.calibrated_tps
            )
        if live.dead is None and not outcome.result.valid and live.proc and not live.proc.alive():
            code = live.proc.exit_code()
            how = ended(code) if code is not None else "died"
            live.dead = f"the server {how} mid-session (during {case.id}): {outcome.result.reason}"
            live.quarantine = live.dead
        if outcome.marker:
            live.quarantine = outcome.marker
            self._log(live, outcome.marker)
            self.stop_run(outcome.marker)
        if outcome.skip:
            raise SkipCase(outcome.skip)
        return outcome.result

    def _log(self, live: LiveSession, line: str) -> None:
        if live.proc is not None:
            try:
                with live.proc.spec.log_path.open("a", encoding="utf-8") as f:
                    f.write(line + "\n")
            except OSError:
                pass  # the marker still reaches STOPPED, the terminal and the session file

    def stop_run(self, marker: str, *, mark: bool = True) -> NoReturn:
        """Stop everything; `mark` writes STOPPED, so --resume refuses the run."""
        self.stopped = marker
        try:
            if mark:
                self.ctx.run_dir.write_text(schema.STOPPED_FILE, marker + "\n")
        finally:
            raise StopRun(marker)

    # -- closing ------------------------------------------------------------------------

    def close(self, live: LiveSession) -> None:
        """Calibrate, stop the server, confirm its release, write the session file; set the
        session aside if a rule says so, and re-run a partial census or a session the host
        spoiled once."""
        # Whatever interrupts the close (a test timeout on a frozen server, Ctrl-C), the server
        # is released and the session filed and set aside, so nothing half-done enters the
        # analysis and nothing is left running; the interruption travels on afterwards.
        interrupted: BaseException | None = None
        for step in (lifecycle.final_witnesses, lifecycle.release):
            try:
                step(live)
            except BaseException as exc:
                interrupted = interrupted or exc
                live.quarantine = live.quarantine or (
                    f"the session close was interrupted ({type(exc).__name__}: {one_line(exc)})"
                )
        with interrupts.held():  # a session file and its quarantine are written together
            rerun = self._file(live)
        if interrupted is not None:
            raise interrupted
        note = self.kind.session_note(live)
        self.progress.closed(live.slot.name, session_summary(live.info, note))
        if rerun == "host" or (
            rerun == "partial" and not live.rerun and self.schedule.time_for(live.slot)
        ):
            self._rerun(live)
        if not live.rerun:
            self.closed.add(live.slot.name)

    def _file(self, live: LiveSession) -> str | None:
        """Write the session file and quarantine if a rule says so; "partial" or "host" when
        the session is to be re-run (a partial census; the host spoiled it, and there is time)."""
        info = live.info
        planned = info.get("planned_measurements", 0)
        clean = live.quarantine is None and not info.get("error") and self.stopped is None
        early = live.spoiled_early if clean else None
        partial = clean and not early and live.measured == planned and live.usable < planned
        if partial:
            live.quarantine = (
                f"partial census: {live.usable} of {planned} measurements usable "
                f"({live.valid} valid)"
            )
        spoiled = None
        if live.measured:  # a session that measured nothing has nothing for the host to spoil
            facts = cast(Mapping[str, Any], info)
            info["host_rule"] = hostrule.judge(facts, self.ctx.ladder.host_rule, self.host_off)
            spoiled = info["host_rule"]["spoiled"] if clean and not partial else None
        again = False  # to be re-run for the host
        if early is not None:  # stopped mid-session: its census is cut short, never kept
            info["host_stopped_early"] = early
            info["host_rule"]["spoiled"] = live.quarantine = early
            again = not live.rerun and self.schedule.time_for(live.slot)
        elif spoiled is not None:
            if not live.rerun and self.schedule.time_for(live.slot):
                live.quarantine = spoiled
                again = True
            else:
                why = "it was the one re-run" if live.rerun else "no time was left for a re-run"
                info["host_spoiled"] = f"{spoiled} (kept: {why})"
        release = info.get("release")
        released: bool | str = release["released"] if release else live.proc is None
        if live.endpoint is not None:
            released = "not applicable: attached"
        info.update(
            {
                "ended_at": schema.utc_now_iso(),
                "duration_s": time.monotonic() - live.t0,
                "measured": live.measured,
                "valid": live.valid,
                "usable": live.usable,
                "failed": live.measured - live.valid,
                "released": released,
                "quarantined": live.quarantine,
                **self.kind.session_facts(live),  # type: ignore[typeddict-item]
            }
        )
        run_dir = self.ctx.run_dir
        unwritten: RunDirError | None = None
        try:
            run_dir.write_session(live.slot.name, info)
        except RunDirError as exc:
            # A session without its file must not enter the analysis: set it aside, then say so.
            unwritten = exc
            live.quarantine = live.quarantine or f"its session file could not be written: {exc}"
        self.schedule.ran.append(live.slot.name)
        if live.quarantine is None:
            self.schedule.record(info["duration_s"], live.measured)
            if not info.get("host_spoiled") and (tps := busywatch.calibration_of(info)):
                self.calibrated_tps = max(tps, self.calibrated_tps or 0.0)
        else:
            live.quarantined_at = run_dir.quarantine(live.slot.name, live.quarantine)
        if unwritten is not None:
            raise unwritten
        if partial:
            return "partial"
        return "host" if again else None

    def _rerun(self, first: LiveSession) -> None:
        """The one re-run of a session with a partial census or spoiled by the host, from a
        fresh server; when the host spoiled the first and the re-run fails too, the first is
        kept (flagged host_spoiled) instead of leaving a gap. A re-run for the host that meets
        it busy again (before it starts, or stopped early) stops the run; both attempts stay
        in quarantine/, and --resume runs the session again."""
        slot, live = first.slot, None
        host = first.quarantine is not None and first.quarantine.startswith(schema.HOST_SPOILED)
        if host and self.host_off is None:
            busy = busywatch.busy_before_rerun(self.ctx.ladder.host_rule, self.ctx.run_root_pid)
            if busy is not None:
                self.stop_run(busywatch.busy_marker(slot.name, busy), mark=False)
        try:
            try:
                live = self._start(slot, rerun=True)
            except ServerError:
                return  # its session file says why; the census shows the gap
            try:
                if live.quarantine is None:
                    for case in self.cases.get(slot.name, ()):
                        with contextlib.suppress(SkipCase):
                            self.measure(live, case)
            finally:  # a stop marker in the re-run still releases and quarantines it first
                self.close(live)
        finally:
            clean = (
                live is not None
                and live.quarantine is None
                and not live.info.get("error")  # the key may be there, holding None
                and not live.info.get("host_spoiled")
            )
            again = live is not None and live.spoiled_early is not None
            if host and first.quarantined_at is not None and not clean and not again:
                self._keep(first.quarantined_at, slot.name, first.quarantine or "", live)
            if clean and live is not None and live.usable == live.info.get("planned_measurements"):
                self.recovered.add(slot.name)  # its census is complete: a failure was recovered
        if live is not None and live.spoiled_early is not None:
            self.stop_run(busywatch.busy_marker(slot.name, live.spoiled_early), mark=False)

    def _keep(self, held: Path, name: str, reason: str, rerun: LiveSession | None) -> None:
        """Bring a host-spoiled first attempt back from quarantine, flagged host_spoiled."""
        why = "its re-run did not finish clean"
        if rerun is not None and rerun.info.get("host_spoiled"):
            why = "its re-run was spoiled too"
        elif rerun is not None and rerun.quarantine:
            why = f"its re-run was set aside ({rerun.quarantine})"
        with contextlib.suppress(RunDirError, OSError, ValueError):  # else it stays quarantined
            self.ctx.run_dir.restore(held, name, f"{reason} (kept: {why})")
