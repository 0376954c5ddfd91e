"""One pytest run of a ladder: options -> ladder, plan, run directory; sessions and measurements."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from . import (
    __version__,
    curtailment,
    gpu,
    planfile,
    preflight,
    preregistration,
    provision,
    rowtable,
    server,
    witnesses,
)
from .client import Measurement, RequestSpec, stream_chat
from .ladder import (
    Ladder,
    LadderError,
    SessionSlot,
    find_ladder,
    load_ladder,
    run_order_key,
    run_plan,
    session_label,
    validate,
)
from .prompts import Prompt, digest, load_prompt_set, select
from .records import RecordWriter, RunDir, new_run_id, utc_now_iso

WARMUP_PROMPT = "Say hello in one short sentence."
WARMUP_TOKENS = 8
CALIBRATION_PROMPT = "Count from one to forty in words, separated by commas."
CALIBRATION_TOKENS = 32
STOPPED_FILE = "STOPPED"

# option dest -> ladder field it overrides
OVERRIDES = {
    "mtpsweep_model": "model",
    "mtpsweep_max_tokens": "max_tokens",
    "mtpsweep_seed": "seed",
    "mtpsweep_temperature": "temperature",
    "mtpsweep_cycles": "cycles",
    "mtpsweep_subset": "subset",
    "mtpsweep_port": "port",
    "mtpsweep_note": "note",
    "mtpsweep_placement": "placement",
}


class ExperimentError(Exception):
    """Bad options or a run that cannot proceed; the message is one sentence with the fix."""


class StopRun(Exception):
    """A protocol rule says the whole run stops now (a stop marker, a second failed warm-up)."""


class Curtailed(Exception):
    """This session was dropped to meet the deadline, in the pre-registered order."""


class AlreadyDone(Exception):
    """On --resume: this session completed in the run being resumed."""


@dataclass(frozen=True)
class PreflightOptions:
    """The command line's say over preflight."""

    waive: frozenset[str] = frozenset()
    against: Path | None = None
    verify_digests: bool = False
    server_build: str | None = None


@dataclass(frozen=True)
class RunOptions:
    """The command line's say over the protocol."""

    warmup: bool = True
    calibration: bool = True
    deadline: str | None = None
    time_budget: str | None = None
    resume: Path | None = None


@dataclass(frozen=True)
class Case:
    """One parametrised measurement: a session slot and a prompt."""

    slot: SessionSlot
    prompt: Prompt
    prompt_index: int
    repeat: int = 1

    @property
    def id(self) -> str:
        return f"{self.slot.id}-{self.prompt.id}"

    @property
    def order_key(self) -> tuple[int, int]:
        return run_order_key(self.slot, self.prompt_index)


@dataclass
class LiveSession:
    """A session in progress: its server, its records file, and its tallies."""

    slot: SessionSlot
    proc: server.ServerProcess | None
    writer: RecordWriter
    info: dict[str, Any]
    http: httpx.Client
    t0: float = field(default_factory=time.monotonic)
    measured: int = 0
    valid: int = 0
    length_prompts: list[str] = field(default_factory=list)
    dead: str | None = None  # why the server is gone mid-session
    quarantine: str | None = None  # why this session is set aside
    rerun: bool = False  # this is the one re-run after a partial census


@dataclass
class Experiment:
    """The state of one pytest session that runs a ladder."""

    ladder: Ladder
    prompts: tuple[Prompt, ...]
    prompt_set_digest: str
    plan: list[SessionSlot]
    runs_root: Path
    run_dir_opt: Path | None
    invocation: list[str]
    cli_server_bin: str | None = None
    opts: RunOptions = field(default_factory=RunOptions)
    run_dir: RunDir | None = None
    run_id: str = ""
    selected: list[SessionSlot] = field(default_factory=list)
    cases_by_session: dict[str, list[Case]] = field(default_factory=dict)
    keyed: dict[str, Any] = field(default_factory=dict)
    server_bin: provision.ServerBinary | None = None
    server_version: str = ""
    model_path: Path | None = None
    prereg_sha256: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() value
    durations: list[tuple[float, int]] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # session name -> reason
    done: set[str] = field(default_factory=set)  # sessions completed in a resumed run
    stopped: str | None = None
    session_infos: list[dict[str, Any]] = field(default_factory=list)
    memory_lines: list[str] = field(default_factory=list)

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_options(
        cls,
        ladder_name: str,
        options: dict[str, Any],
        search_dirs: list[Path],
        cwd: Path,
        invocation: list[str],
    ) -> Experiment:
        ladder = load_ladder(find_ladder(ladder_name, search_dirs))
        changes = {f: options[o] for o, f in OVERRIDES.items() if options.get(o) is not None}
        if changes:
            ladder = ladder.replace(**changes)
            validate(ladder, "command line")
        if not ladder.model:
            raise LadderError(
                f"ladder {ladder.name} ({ladder.path}) needs --model: "
                f"{ladder.requires_model or 'a GGUF model file'}."
            )
        prompts_dir = options.get("mtpsweep_prompts_dir")
        prompts_path = (
            Path(prompts_dir)
            if prompts_dir
            else ladder.path.parent.parent / "prompts" / ladder.prompt_set
        )
        all_prompts = load_prompt_set(prompts_path)
        prompts = select(all_prompts, ladder.subset)
        if not prompts:
            raise ExperimentError(
                f"prompt set {prompts_path} has no {ladder.subset} prompts; choose another --subset."
            )
        run_dir = options.get("mtpsweep_run_dir")
        resume = options.get("mtpsweep_resume")
        opts = RunOptions(
            warmup=not options.get("mtpsweep_no_warmup", False),
            calibration=not options.get("mtpsweep_no_calibration", False),
            deadline=options.get("mtpsweep_deadline"),
            time_budget=options.get("mtpsweep_time_budget"),
            resume=Path(resume) if resume else None,
        )
        now = dt.datetime.now()
        # Parse early: a bad deadline is a usage error, not a surprise an hour into the run.
        if opts.deadline:
            curtailment.parse_deadline(opts.deadline, now)
        if opts.time_budget:
            curtailment.parse_duration(opts.time_budget)
        if resume and run_dir:
            raise ExperimentError("--resume continues its own run directory; drop --run-dir.")
        return cls(
            ladder=ladder,
            prompts=prompts,
            prompt_set_digest=digest(prompts),
            plan=run_plan([t.key for t in ladder.treatments], ladder.cycles),
            runs_root=cwd / "runs",
            run_dir_opt=Path(run_dir) if run_dir else None,
            invocation=invocation,
            cli_server_bin=options.get("mtpsweep_server_bin"),
            opts=opts,
        )

    def cases(self) -> list[Case]:
        """Every measurement of the plan, in run order."""
        return [
            Case(slot, prompt, i) for slot in self.plan for i, prompt in enumerate(self.prompts)
        ]

    # -- before the first measurement ---------------------------------------------------

    def resolve(self) -> Path:
        """Find the server and the model; fix the run id and the run directory's path."""
        lad = self.ladder
        self.server_bin = provision.resolve_server_bin(self.cli_server_bin, lad.server_bin)
        self.server_version = provision.server_version(self.server_bin.path)
        self.model_path = provision.resolve_model(lad.model)
        self.keyed = {
            "ladder": lad.name,
            "model_id": lad.model_id,
            "ctx_size": lad.ctx_size,
            "seed": lad.seed,
            "max_tokens": lad.max_tokens,
            "temperature": lad.temperature,
            "server_build": provision.build_id(self.server_version) or self.server_version,
            "placement": lad.placement,
            "prompt_set_digest": self.prompt_set_digest,
        }
        if self.opts.resume is not None:
            return self.opts.resume
        self.run_id = new_run_id()
        return self.run_dir_opt or self.runs_root / lad.name / self.run_id

    def model_files(self) -> tuple[Path, ...]:
        """The model and any draft model a treatment names."""
        files = [self.model_path] if self.model_path else []
        for t in self.ladder.treatments:
            args = self._subst(t.args)
            for flag in ("-md", "--model-draft"):
                if flag in args[:-1]:
                    files.append(Path(args[args.index(flag) + 1]).resolve())
        return tuple(dict.fromkeys(files))

    def run_preflight(
        self, run_path: Path, opts: PreflightOptions
    ) -> list[preflight.PreflightItem]:
        """Every preflight item for this run, before anything starts."""
        assert self.server_bin is not None
        lad, pre = self.ladder, self.ladder.preflight
        inputs = preflight.PreflightInputs(
            run_dir=run_path,
            server_bin=self.server_bin.path,
            expected_build=opts.server_build or pre.server_build,
            ports=(lad.port,) if lad.port else (),
            host=lad.host,
            model_files=self.model_files(),
            ram_floor_gb=pre.ram_floor_gb,
            disk_floor_gb=pre.disk_floor_gb,
            must_be_inactive_processes=pre.inactive_processes,
            must_be_inactive_units=pre.inactive_units,
            launchers=self._launcher_pins(),
            experiments_dir=lad.path.parent.parent,
            ladder_file=lad.path,
            prompt_set_digest=self.prompt_set_digest,
            package_version=__version__,
        )
        waive = opts.waive | ({"run_dir"} if self.opts.resume else set())
        return preflight.run_preflight(
            inputs, waive=waive, against=opts.against, verify_digests=opts.verify_digests
        )

    def _launcher_pins(self) -> dict[str, tuple[Path, str | None]]:
        lau = self.ladder.launchers
        if lau is None:
            return {}
        return {"launch": (lau.launch, lau.launch_sha256), "stop": (lau.stop, lau.stop_sha256)}

    def begin(
        self, cases: list[Case], run_path: Path, checks: list[preflight.PreflightItem]
    ) -> None:
        """Create the run directory (or reopen the resumed one); write preflight, plan and
        pre-registration."""
        for c in cases:
            self.cases_by_session.setdefault(c.slot.name, []).append(c)
        self.selected = [s for s in self.plan if s.name in self.cases_by_session]
        if self.opts.resume is not None:
            self._reopen(run_path, checks)
        else:
            self._create(run_path, checks)
        now = time.monotonic()
        if self.opts.time_budget:
            self.deadline = now + curtailment.parse_duration(self.opts.time_budget)
        if self.opts.deadline:
            wall = dt.datetime.now()
            at = curtailment.parse_deadline(self.opts.deadline, wall)
            left = (at - wall).total_seconds()
            self.deadline = min(self.deadline or now + left, now + left)

    def _create(self, run_path: Path, checks: list[preflight.PreflightItem]) -> None:
        lad = self.ladder
        assert self.server_bin is not None, "resolve() comes first"
        self.run_dir = RunDir.create(run_path)
        preflight.write_preflight_json(checks, run_path / "preflight.json")
        created = utc_now_iso()
        text = preregistration.render(
            lad, self.plan, self.selected, self.invocation, self.run_id, created
        )
        self.run_dir.write_text_new("preregistration.md", text)
        self.prereg_sha256 = preregistration.digest(text)
        self.run_dir.write_json("plan.json", self._plan_document(created))

    def _plan_document(self, created: str) -> dict[str, Any]:
        lad = self.ladder
        assert self.server_bin is not None, "resolve() comes first"
        reg = preregistration.effective(lad, self.plan)
        return {
            "run_id": self.run_id,
            "ladder": lad.name,
            "ladder_file": str(lad.path),
            "question": lad.question,
            "created_at": created,
            "invocation": self.invocation,
            "harness_version": __version__,
            "server_bin": str(self.server_bin.path),
            "server_bin_source": self.server_bin.source,
            "server_version": self.server_version,
            "model_path": str(self.model_path),
            "note": lad.note,
            "keyed": self.keyed,
            "preregistration_sha256": self.prereg_sha256,
            "analysis": {
                "baseline": lad.baseline,
                "margin_pct": lad.analysis.margin_pct,
                "tiebreak_pp": lad.analysis.tiebreak_pp,
                "primary_endpoint": lad.analysis.primary_endpoint,
                "curtailment_sentence": reg.curtailment_sentence,
            },
            "treatments": [{"key": t.key, "args": list(t.args)} for t in lad.treatments],
            "prompts": [{"id": p.id, "subset": p.subset} for p in self.prompts],
            "sessions": [
                {
                    "ordinal": s.ordinal,
                    "treatment": s.treatment,
                    "cycle": s.cycle,
                    "session": s.name,
                    "selected": s.name in self.cases_by_session,
                    "measurements": len(self.cases_by_session.get(s.name, [])),
                }
                for s in self.plan
            ],
        }

    def _reopen(self, run_path: Path, checks: list[preflight.PreflightItem]) -> None:
        """Continue an interrupted run: same ladder and options, or a refusal naming the change."""
        plan_file = run_path / "plan.json"
        if not plan_file.is_file():
            raise ExperimentError(f"--resume {run_path}: no plan.json there; name a run directory.")
        stopped = run_path / STOPPED_FILE
        if stopped.exists():
            raise ExperimentError(
                f"--resume {run_path}: the run was stopped by a protocol rule "
                f"({stopped.read_text().strip()}) and must not be resumed; start a new run."
            )
        old = json.loads(plan_file.read_text())
        differ = planfile.differences(old, self._plan_document(utc_now_iso()))
        if differ:
            raise ExperimentError(
                f"--resume {run_path}: this invocation differs from the run in {', '.join(differ)}; "
                "resume with the same ladder and options, or start a new run."
            )
        self.run_dir = RunDir(run_path)
        self.run_id = old["run_id"]
        self.prereg_sha256 = old.get("preregistration_sha256", "")
        n = len(list(run_path.glob("preflight*.json")))
        preflight.write_preflight_json(checks, run_path / f"preflight.resume{n}.json")
        for slot in self.plan:
            finished = (run_path / "sessions" / f"{slot.name}.json").exists()
            partial = (run_path / "records" / f"{slot.name}.jsonl").exists()
            if finished:
                self.done.add(slot.name)
            elif partial or (run_path / "servers" / f"{slot.name}.log").exists():
                self.run_dir.quarantine(
                    slot.name,
                    "interrupted before it finished; run again from a fresh server on --resume",
                )
        log = run_path / "resume.log"
        with log.open("a", encoding="utf-8") as f:
            f.write(f"{utc_now_iso()} resumed: {' '.join(self.invocation)}\n")

    # -- sessions -----------------------------------------------------------------------

    def _subst(self, args: tuple[str, ...]) -> list[str]:
        # `{model}` lets a treatment name the session's own model, e.g. as its draft model.
        return [a.replace("{model}", str(self.model_path)) for a in args]

    def _treatment_args(self, slot: SessionSlot) -> list[str]:
        return self._subst(self.ladder.treatment(slot.treatment).args)

    def _argv_tail(self, slot: SessionSlot) -> tuple[str, ...]:
        lad = self.ladder
        return (
            "-m",
            str(self.model_path),
            "--ctx-size",
            str(lad.ctx_size),
            *self._subst(lad.server_args),
            *self._treatment_args(slot),
        )

    def alias(self, treatment: str) -> str:
        return f"{self.ladder.model_id}-{treatment}"

    def check_schedule(self, slot: SessionSlot) -> None:
        """Before a session: skip it if done (resume) or dropped to meet the deadline."""
        if slot.name in self.done:
            raise AlreadyDone(f"session {slot.name} completed in the resumed run")
        if self.deadline is not None and slot.name not in self.dropped:
            self._curtail(slot)
        if slot.name in self.dropped:
            raise Curtailed(self.dropped[slot.name])

    def _curtail(self, current: SessionSlot) -> None:
        names = [s.name for s in self.plan]
        ahead = [
            s
            for s in self.selected
            if names.index(s.name) >= names.index(current.name)
            and s.name not in self.dropped
            and s.name not in self.done
        ]
        remaining = []
        for s in ahead:
            est = curtailment.estimate_s(self.durations, len(self.cases_by_session[s.name]))
            if est is None:
                return  # nothing measured yet to estimate from
            remaining.append((s, est))
        assert self.deadline is not None
        reg = preregistration.effective(self.ladder, self.plan)
        left = self.deadline - time.monotonic()
        for s in curtailment.plan_drops(remaining, left, reg.drop_order, reg.never_drop):
            self.dropped[s.name] = (
                f"curtailed: dropped {session_label(s)} (pre-registered drop order) so the run "
                f"ends by its deadline; {left:.0f} s were left"
            )
        if self.dropped and self.run_dir is not None:
            self.run_dir.write_json(
                "curtailment.json",
                {
                    "dropped": [
                        {
                            "session": n,
                            "treatment": s.treatment,
                            "cycle": s.cycle,
                            "reason": self.dropped[n],
                        }
                        for s in self.plan
                        if (n := s.name) in self.dropped
                    ],
                    "sentence": reg.curtailment_sentence,
                    "affected_treatments": sorted(
                        {s.treatment for s in self.plan if s.name in self.dropped}
                    ),
                },
            )

    def open_session(self, slot: SessionSlot) -> LiveSession:
        """Start this slot's server, witness it, warm it up; a failed warm-up gets one fresh try."""
        live = self._start(slot)
        if live.quarantine is None:
            return live
        first = live.quarantine
        self.close_session(live)
        live = self._start(slot)
        if live.quarantine is not None:
            reason = f"warm-up failed twice: {first}; then {live.quarantine}"
            self.close_session(live)
            self._stop_run(f"** WARMUP-FAILED-TWICE={slot.name}: {reason}")
        return live

    def _start(self, slot: SessionSlot, rerun: bool = False) -> LiveSession:
        assert self.run_dir is not None and self.server_bin is not None
        lad = self.ladder
        port = lad.port or server.free_port(lad.host)
        launcher = None
        log_path = self.run_dir.path / "servers" / f"{slot.name}.log"
        if lad.launchers is not None:
            session_dir = self.run_dir.path / "servers" / slot.name
            launcher = server.Launcher(
                lad.launchers.launch,
                lad.launchers.stop,
                slot.treatment,
                session_dir,
                timeout_s=max(120.0, lad.ready_timeout_s),
            )
            log_path = session_dir / "server.log"
        spec = server.LaunchSpec(
            server_bin=self.server_bin.path,
            argv_tail=self._argv_tail(slot),
            host=lad.host,
            port=port,
            alias=self.alias(slot.treatment),
            log_path=log_path,
            ready_timeout_s=lad.ready_timeout_s,
            launcher=launcher,
        )
        info: dict[str, Any] = {
            "session": slot.name,
            "ordinal": slot.ordinal,
            "treatment": slot.treatment,
            "cycle": slot.cycle,
            "alias": spec.alias,
            "argv_requested": spec.argv,
            "server_bin": str(spec.server_bin),
            "server_bin_source": self.server_bin.source,
            "server_version": self.server_version,
            "port": port,
            "planned_measurements": len(self.cases_by_session.get(slot.name, [])),
            "rerun": rerun,
            "started_at": utc_now_iso(),
            **self.keyed,
        }
        if lad.launchers is not None:
            info["launchers"] = {
                name: {"path": str(path), "sha256": preflight.file_digest(path, cache=None)}
                for name, (path, _) in self._launcher_pins().items()
            }
        # One fresh connection per request: a kept-alive socket that the server has just closed
        # would turn into a spurious failed measurement. trust_env=False keeps proxies off loopback.
        http = httpx.Client(trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))
        live = LiveSession(
            slot, None, self.run_dir.record_writer(slot.name), info, http, rerun=rerun
        )
        try:
            proc = server.start(spec)
        except server.ServerError as exc:
            info["error"] = str(exc)
            self.close_session(live)
            raise
        live.proc = proc
        argv = server.read_cmdline(proc.pid)
        self.run_dir.write_text_new(f"servers/{slot.name}.flags.txt", " ".join(argv) + "\n")
        props = server.props(spec.base_url)
        info.update(
            {
                "pid": proc.pid,
                "load_s": proc.load_s,
                "argv": argv,
                "props_start": props,
                "build_info": props.get("build_info"),
                "n_ctx": (props.get("default_generation_settings") or {}).get("n_ctx"),
                "model_path": props.get("model_path"),
                "rss_after_load_bytes": server.rss_bytes(proc.pid),
                "gpu_used_mib_after_load": gpu.used_mib(),
            }
        )
        witness_error = witnesses.startup_error(
            argv, self._treatment_args(slot), info["n_ctx"], lad.ctx_size
        )
        if witness_error:
            info["error"] = witness_error
            self.close_session(live)
            raise server.ServerError(witness_error)
        if self.opts.warmup:
            warm = stream_chat(
                live.http, spec.base_url, WARMUP_PROMPT, self._request_spec(slot, WARMUP_TOKENS)
            )
            info["warmup"] = {
                "valid": warm.valid,
                "reason": warm.reason,
                "http_status": warm.http_status,
                "ttft_s": warm.ttft_s,
            }
            if not warm.valid:
                # No silent fallback (e.g. to a stream without usage): set the session aside.
                live.quarantine = f"warm-up request failed: {warm.reason}"
                return live
        if self.opts.calibration:
            info["calibration"] = {"start_tps": self._calibrate(live)}
        return live

    def _calibrate(self, live: LiveSession) -> float | None:
        assert live.proc is not None
        m = stream_chat(
            live.http,
            live.proc.spec.base_url,
            CALIBRATION_PROMPT,
            self._request_spec(live.slot, CALIBRATION_TOKENS),
        )
        return m.decode_rate_tps_primary if m.valid else None

    def _request_spec(self, slot: SessionSlot, max_tokens: int | None = None) -> RequestSpec:
        lad = self.ladder
        return RequestSpec(
            alias=self.alias(slot.treatment),
            max_tokens=max_tokens or lad.max_tokens,
            seed=lad.seed,
            temperature=lad.temperature,
        )

    def measure(self, live: LiveSession, case: Case) -> Measurement:
        """One streamed request; the record is on disk before this returns."""
        assert live.proc is not None
        started_at = utc_now_iso()
        interrupted: BaseException | None = None
        if live.dead is not None:
            m = _not_measured(live.dead)
        else:
            try:
                m = stream_chat(
                    live.http,
                    live.proc.spec.base_url,
                    case.prompt.text,
                    self._request_spec(case.slot),
                )
            except BaseException as exc:  # a timeout or Ctrl-C mid-stream: record it, then go on
                interrupted = exc
                live.dead = f"a measurement was interrupted ({type(exc).__name__}: {exc})"
                live.quarantine = live.dead
                m = _not_measured(live.dead)
        record = {
            "run_id": self.run_id,
            "ladder": self.ladder.name,
            "treatment": case.slot.treatment,
            "cycle": case.slot.cycle,
            "ordinal": case.slot.ordinal,
            "session": case.slot.name,
            "prompt_id": case.prompt.id,
            "subset": case.prompt.subset,
            "repeat": case.repeat,
            **m.fields(),
            "started_at": started_at,
            **self.keyed,
            "note": self.ladder.note,
            "preregistration_sha256": self.prereg_sha256,
        }
        live.writer.append(record)
        live.measured += 1
        live.valid += m.valid
        if m.finish_reason == "length":
            live.length_prompts.append(case.prompt.id)
        if interrupted is not None:
            raise interrupted
        if live.dead is None and not m.valid and not live.proc.alive():
            live.dead = f"the server died mid-session (during {case.prompt.id}): {m.reason}"
            live.quarantine = live.dead
        marker = self._marker(case, m)
        if marker:
            live.quarantine = marker
            self._note_marker(live, marker)
            self._stop_run(marker)
        return m

    def _marker(self, case: Case, m: Measurement) -> str | None:
        """A protocol stop marker for what this measurement showed, if any."""
        where = f"{case.slot.name}/{case.prompt.id}"
        if m.unrecognised_delta_fields:
            return (
                f"** UNRECOGNISED-DELTA-FIELDS={','.join(m.unrecognised_delta_fields)} at {where}"
            )
        if m.reasoning_chars and not self.ladder.reasoning_expected:
            return f"** HIDDEN-REASONING={m.reasoning_chars} chars at {where}"
        return None

    def _note_marker(self, live: LiveSession, marker: str) -> None:
        assert live.proc is not None
        with live.proc.spec.log_path.open("a", encoding="utf-8") as f:
            f.write(marker + "\n")

    def _stop_run(self, marker: str) -> None:
        """Mark the run so --resume refuses it, and stop everything."""
        assert self.run_dir is not None
        self.stopped = marker
        (self.run_dir.path / STOPPED_FILE).write_text(marker + "\n", encoding="utf-8")
        raise StopRun(marker)

    def close_session(self, live: LiveSession) -> None:
        """Calibrate, stop the server, confirm its release, write the session file and row;
        set the session aside if a rule says so, and re-run a partial census once."""
        assert self.run_dir is not None
        info = live.info
        if live.proc is not None:
            alive = live.proc.alive()
            cal = info.get("calibration")
            if cal is not None and alive and live.quarantine is None:
                cal["end_tps"] = self._calibrate(live)
                if cal.get("start_tps") and cal.get("end_tps"):
                    cal["drift_pct"] = (cal["end_tps"] / cal["start_tps"] - 1) * 100
            info["props_end"] = server.props(live.proc.spec.base_url) if alive else {}
            info["props_changed"] = server.props_diff(
                info.get("props_start") or {}, info["props_end"]
            )
            info["props_stable"] = bool(info["props_end"]) and not info["props_changed"]
        live.http.close()  # before the stop: idle connections would hold up the shutdown
        if live.proc is not None:
            release = server.stop(live.proc)
            info["gpu_used_mib_after_release"] = gpu.used_mib()
            info["host_available_mib_after_release"] = psutil.virtual_memory().available // 2**20
            info["release"] = {
                "released": release.released,
                "exit_code": release.exit_code,
                "signal": release.signal_used,
                "stop_s": release.stop_s,
                "port_free": release.port_free,
                "detail": release.detail,
            }
        live.writer.close()
        planned = info["planned_measurements"]
        partial = (
            live.quarantine is None
            and "error" not in info
            and self.stopped is None
            and live.measured == planned
            and live.valid < planned
        )
        if partial:
            live.quarantine = f"partial census: {live.valid} of {planned} measurements valid"
        info.update(
            {
                "ended_at": utc_now_iso(),
                "duration_s": time.monotonic() - live.t0,
                "measured": live.measured,
                "valid": live.valid,
                "failed": live.measured - live.valid,
                "length_prompts": live.length_prompts,
                "released": (info.get("release") or {}).get("released", live.proc is None),
                "quarantined": live.quarantine,
            }
        )
        self.run_dir.write_json(f"sessions/{live.slot.name}.json", info)
        if live.measured and live.quarantine is None:
            self.durations.append((info["duration_s"], live.measured))
        self.rows.append(rowtable.session_row(info, live.slot, rerun=live.rerun))
        if live.quarantine is None:
            self.session_infos.append(info)
        if live.quarantine is not None:
            self.run_dir.quarantine(live.slot.name, live.quarantine)
        if partial and not live.rerun and self._time_for(live.slot):
            self._rerun(live.slot)

    def _time_for(self, slot: SessionSlot) -> bool:
        if self.deadline is None:
            return True
        est = curtailment.estimate_s(self.durations, len(self.cases_by_session[slot.name]))
        return est is None or time.monotonic() + est < self.deadline

    def _rerun(self, slot: SessionSlot) -> None:
        """The one re-run of a session with a partial census, from a fresh server."""
        try:
            live = self._start(slot, rerun=True)
        except server.ServerError:
            return  # its session file says why; the census shows the gap
        try:
            if live.quarantine is None:
                for case in self.cases_by_session[slot.name]:
                    self.measure(live, case)
        finally:  # a stop marker in the re-run still releases and quarantines it first
            self.close_session(live)

    def finish(self) -> Path | None:
        """Write the row table; return the run directory."""
        if self.run_dir is None:
            return None
        self.run_dir.write_sessions_csv(sorted(self.rows, key=lambda r: r["ordinal"]))
        declared = {
            t.key: t.memory_step_mib
            for t in self.ladder.treatments
            if t.memory_step_mib is not None
        }
        if declared and self.session_infos:
            steps = witnesses.memory_steps(self.session_infos, declared, self.ladder.baseline)
            self.memory_lines = [witnesses.describe(s) for s in steps]
            self.run_dir.write_json("memory_check.json", [asdict(s) for s in steps])
        return self.run_dir.path


@dataclass(frozen=True)
class SessionEndAnalysis:
    """What the session-end analysis produced, for the terminal summary and the exit status."""

    table: str = ""
    report: Path | None = None
    error: str | None = None
    gate_failures: tuple[str, ...] = ()


def analyse_at_end(
    run_dir: Path, baseline: str | None, boot: int, seed: int, expectations: list[str]
) -> SessionEndAnalysis:
    """Run the same analysis `mtpsweep analyse` runs, on what the run directory holds now."""
    from .analysis import AnalysisError, analyse_run, evaluate_expectations, headline_table

    if not any((run_dir / "records").glob("*.jsonl")):
        return SessionEndAnalysis(error="no records were written, so there is nothing to analyse")
    try:
        result = analyse_run([run_dir], baseline=baseline, boot=boot, seed=seed)
    except AnalysisError as exc:
        return SessionEndAnalysis(error=str(exc))
    out = Path(result.out_dir) if result.out_dir else None
    return SessionEndAnalysis(
        table=headline_table(result),
        report=out / "report.md" if out else None,
        gate_failures=tuple(evaluate_expectations(result, expectations)),
    )


def _not_measured(reason: str) -> Measurement:
    return Measurement(
        valid=False,
        reason=reason,
        http_status=None,
        decode_rate_tps_primary=None,
        decode_rate_tps_interval=None,
        interval_basis=None,
        ttft_s=None,
        e2e_s=None,
        prompt_tokens=None,
        completion_tokens=None,
        predicted_n=None,
        predicted_ms=None,
        prompt_ms=None,
        cache_n=None,
        draft_n=None,
        draft_n_accepted=None,
        finish_reason=None,
        content_chars=0,
        content_sha256="",
        reasoning_chars=0,
        chunks=0,
        content_chunks=0,
        server_alias=None,
    )
