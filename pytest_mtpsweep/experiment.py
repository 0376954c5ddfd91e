"""One pytest run of a ladder: options -> ladder, plan, run directory; sessions and measurements."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from . import __version__, gpu, preflight, provision, server
from .client import Measurement, RequestSpec, stream_chat
from .ladder import (
    Ladder,
    LadderError,
    SessionSlot,
    find_ladder,
    load_ladder,
    run_order_key,
    run_plan,
    validate,
)
from .prompts import Prompt, digest, load_prompt_set, select
from .records import RecordWriter, RunDir, new_run_id, utc_now_iso

WARMUP_PROMPT = "Say hello in one short sentence."
WARMUP_TOKENS = 8

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


@dataclass(frozen=True)
class PreflightOptions:
    """The command line's say over preflight."""

    waive: frozenset[str] = frozenset()
    against: Path | None = None
    verify_digests: bool = False
    server_build: str | None = None


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
    measured: int = 0
    valid: int = 0
    length_prompts: list[str] = field(default_factory=list)


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
    run_dir: RunDir | None = None
    run_id: str = ""
    selected: list[SessionSlot] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    keyed: dict[str, Any] = field(default_factory=dict)
    server_bin: provision.ServerBinary | None = None
    server_version: str = ""
    model_path: Path | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)

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
        return cls(
            ladder=ladder,
            prompts=prompts,
            prompt_set_digest=digest(prompts),
            plan=run_plan([t.key for t in ladder.treatments], ladder.cycles),
            runs_root=cwd / "runs",
            run_dir_opt=Path(run_dir) if run_dir else None,
            invocation=invocation,
            cli_server_bin=options.get("mtpsweep_server_bin"),
        )

    def cases(self) -> list[Case]:
        """Every measurement of the plan, in run order."""
        return [
            Case(slot, prompt, i) for slot in self.plan for i, prompt in enumerate(self.prompts)
        ]

    # -- the run ------------------------------------------------------------------------

    def resolve(self) -> Path:
        """Find the server and the model; fix the run id and the run directory's path."""
        lad = self.ladder
        self.server_bin = provision.resolve_server_bin(self.cli_server_bin, lad.server_bin)
        self.server_version = provision.server_version(self.server_bin.path)
        self.model_path = provision.resolve_model(lad.model)
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
        return preflight.run_preflight(
            inputs, waive=opts.waive, against=opts.against, verify_digests=opts.verify_digests
        )

    def _launcher_pins(self) -> dict[str, tuple[Path, str | None]]:
        lau = self.ladder.launchers
        if lau is None:
            return {}
        return {"launch": (lau.launch, lau.launch_sha256), "stop": (lau.stop, lau.stop_sha256)}

    def begin(
        self, cases: list[Case], run_path: Path, checks: list[preflight.PreflightItem]
    ) -> None:
        """Create the run directory; write the preflight and the plan."""
        lad = self.ladder
        assert self.server_bin is not None, "resolve() comes first"
        self.run_dir = RunDir.create(run_path)
        preflight.write_preflight_json(checks, run_path / "preflight.json")
        seen: dict[SessionSlot, int] = {}
        for c in cases:
            seen[c.slot] = seen.get(c.slot, 0) + 1
        self.selected = [s for s in self.plan if s in seen]
        self.counts = {s.name: n for s, n in seen.items()}
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
        self.run_dir.write_json(
            "plan.json",
            {
                "run_id": self.run_id,
                "ladder": lad.name,
                "ladder_file": str(lad.path),
                "question": lad.question,
                "created_at": utc_now_iso(),
                "invocation": self.invocation,
                "harness_version": __version__,
                "server_bin": str(self.server_bin.path),
                "server_bin_source": self.server_bin.source,
                "server_version": self.server_version,
                "model_path": str(self.model_path),
                "note": lad.note,
                "keyed": self.keyed,
                "analysis": {
                    "baseline": lad.baseline,
                    "margin_pct": lad.analysis.margin_pct,
                    "tiebreak_pp": lad.analysis.tiebreak_pp,
                    "primary_endpoint": lad.analysis.primary_endpoint,
                },
                "treatments": [{"key": t.key, "args": list(t.args)} for t in lad.treatments],
                "prompts": [{"id": p.id, "subset": p.subset} for p in self.prompts],
                "sessions": [
                    {
                        "ordinal": s.ordinal,
                        "treatment": s.treatment,
                        "cycle": s.cycle,
                        "session": s.name,
                        "selected": s in seen,
                        "measurements": seen.get(s, 0),
                    }
                    for s in self.plan
                ],
            },
        )

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

    def open_session(self, slot: SessionSlot) -> LiveSession:
        """Start this slot's server, witness its identity, warm it up."""
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
            "planned_measurements": self.counts.get(slot.name, 0),
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
        live = LiveSession(slot, None, self.run_dir.record_writer(slot.name), info, http)
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
        witness_error = self._witness_error(slot, argv, info["n_ctx"])
        if witness_error:
            info["error"] = witness_error
            self.close_session(live)
            raise server.ServerError(witness_error)
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
            info["error"] = f"warm-up request failed: {warm.reason}"
            self.close_session(live)
            raise server.ServerError(info["error"])
        return live

    def _witness_error(self, slot: SessionSlot, argv: list[str], n_ctx: Any) -> str | None:
        """The identity witnesses a session must pass before it may measure anything."""
        treatment_args = self._treatment_args(slot)
        if not _contains(argv, treatment_args):
            return (
                f"the running server's argv lacks the treatment flags {treatment_args}; "
                "check the launcher or the ladder."
            )
        if n_ctx is not None and n_ctx != self.ladder.ctx_size:
            return (
                f"the server serves n_ctx {n_ctx}, not the requested {self.ladder.ctx_size}; "
                "use --parallel 1 in server.args or set ctx_size to what each slot gets."
            )
        return None

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
        m = stream_chat(
            live.http, live.proc.spec.base_url, case.prompt.text, self._request_spec(case.slot)
        )
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
        }
        live.writer.append(record)
        live.measured += 1
        live.valid += m.valid
        if m.finish_reason == "length":
            live.length_prompts.append(case.prompt.id)
        return m

    def close_session(self, live: LiveSession) -> None:
        """Stop the server, confirm its release, and write the session file and row."""
        assert self.run_dir is not None
        info = live.info
        live.http.close()  # idle keep-alive connections would hold up the server's shutdown
        if live.proc is not None:
            info["props_end"] = server.props(live.proc.spec.base_url) if live.proc.alive() else {}
            info["props_changed"] = server.props_diff(
                info.get("props_start") or {}, info["props_end"]
            )
            info["props_stable"] = bool(info["props_end"]) and not info["props_changed"]
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
        info.update(
            {
                "ended_at": utc_now_iso(),
                "measured": live.measured,
                "valid": live.valid,
                "failed": live.measured - live.valid,
                "length_prompts": live.length_prompts,
                "released": (info.get("release") or {}).get("released", live.proc is None),
            }
        )
        self.run_dir.write_json(f"sessions/{live.slot.name}.json", info)
        rss = info.get("rss_after_load_bytes")
        self.rows.append(
            {
                "ordinal": live.slot.ordinal,
                "treatment": live.slot.treatment,
                "cycle": live.slot.cycle,
                "load_s": info.get("load_s"),
                "mem_after_load_mib": round(rss / 2**20, 1) if rss else None,
                "alias": info["alias"],
                "measured": live.measured,
                "valid": live.valid,
                "failed": live.measured - live.valid,
                "length_prompts": live.length_prompts,
                "released": info["released"],
                "error": info.get("error", ""),
            }
        )

    def finish(self) -> Path | None:
        """Write the row table; return the run directory."""
        if self.run_dir is None:
            return None
        self.run_dir.write_sessions_csv(sorted(self.rows, key=lambda r: r["ordinal"]))
        return self.run_dir.path


def _contains(argv: list[str], needle: list[str]) -> bool:
    if not needle:
        return True
    n = len(needle)
    return any(argv[i : i + n] == needle for i in range(len(argv) - n + 1))


def row_table(rows: list[dict[str, Any]]) -> str:
    """The users' hand-kept row table, one line per server session."""
    header = [
        "#",
        "treatment",
        "cyc",
        "load s",
        "mem MiB",
        "alias",
        "meas/ok/fail",
        "length",
        "released",
    ]
    body = [
        [
            str(r["ordinal"]),
            r["treatment"],
            str(r["cycle"]),
            f"{r['load_s']:.1f}" if r.get("load_s") is not None else "-",
            f"{r['mem_after_load_mib']:.0f}" if r.get("mem_after_load_mib") else "-",
            r["alias"],
            f"{r['measured']}/{r['valid']}/{r['failed']}",
            ",".join(r["length_prompts"]) or "-",
            "yes" if r["released"] else "NO" + (f" ({r['error']})" if r.get("error") else ""),
        ]
        for r in sorted(rows, key=lambda r: r["ordinal"])
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *body]
    ]
    return "\n".join(lines)
