"""The server side of a session: bring it up (launch or attach, witness, warm up, calibrate)
and take it down (final witnesses, stop, release). The rules around it live in session.py."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import rig
from ..base import schema
from ..base.errors import ServerError
from ..ladder.fields import parse_cpus
from ..rig import exits as rig_exits
from ..rig import hostnoise as host
from ..rig import liveset
from ..rig.buildid import identify, mismatch, props_mismatch
from ..rig.gguf import template_identity
from ..state.context import CALIBRATION_PROMPT, CALIBRATION_TOKENS
from ..state.live import LiveSession
from .attach import attach
from .progress import Progress, Silent, describe
from .serveridentity import startup_error

if TYPE_CHECKING:
    from ..interface.kind import KindRun


def bring_up(live: LiveSession, kind: KindRun, progress: Progress | None = None) -> None:
    """Launch or attach, witness, warm up (as the kind does it) and calibrate; sets
    `live.quarantine` if the warm-up fails, raises ServerError if a witness refuses the server."""
    progress = progress or Silent()
    treatment = live.ctx.ladder.treatment(live.slot.treatment)
    if treatment.base_url is not None:
        _attach(live, progress)
    else:
        _launch(live, progress)
        _witness(live)
    _warm_up(live, kind)


def _launch(live: LiveSession, progress: Progress) -> None:
    ctx, info = live.ctx, live.info
    spec = ctx.launch_spec(live.slot, ctx.port() or rig.free_port(ctx.ladder.host))
    server = ctx.server_for(live.slot.treatment)
    info.update(
        {
            "rig": "launched" if spec.launcher else "spawned",
            "argv_requested": spec.argv,
            "server_bin": str(spec.server_bin),
            "server_bin_source": server.source if server else "",
            "server_version": ctx.server_version,
            "port": spec.port,
        }
    )
    _build_witness(live, spec.server_bin)
    if ctx.ladder.launchers is not None:
        info["launchers"] = {
            name: {"path": str(path), "sha256": rig.file_digest(path, cache=None)}
            for name, (path, _) in ctx.ladder.launchers.pins().items()
        }
    name, what = live.slot.name, describe(live.slot)

    def on_wait(waited_s: float) -> None:
        progress.loading(name, what, waited_s, rig.last_log_line(spec.log_path))

    live.proc = rig.start(spec, on_wait, on_launch=lambda proc: _listed(live, proc))
    live.base_url = spec.base_url
    progress.ready(name, what, live.proc.load_s)


def _build_witness(live: LiveSession, binary: Path) -> None:
    """The build on disk now is the one the run resolved for this treatment, before it starts:
    a binary replaced between sessions is refused, not measured as the treatment."""
    expected = live.ctx.builds.get(live.slot.treatment)
    if expected is None:
        return
    error: str | None
    try:
        seen = identify(binary)
    except OSError as exc:
        error = (
            f"the server {binary} cannot be read to witness its build ({exc.strerror}); restore it."
        )
    else:
        live.info["server_identity"] = seen.document()
        live.info["server_sha256"] = seen.sha256
        live.info["server_version"] = seen.version
        error = mismatch(live.slot.treatment, expected, seen)
    if error:
        live.info["error"] = error
        raise ServerError(error)


def _listed(live: LiveSession, proc: rig.ServerProcess) -> None:
    """servers/live.json names the server from the moment it exists (mtpsweep cleanup)."""
    spec, slot = proc.spec, live.slot
    lau = spec.launcher
    launcher = liveset.keep_stop(lau.stop, lau.session_dir) if lau else None
    entry = liveset.entry(
        slot.name, slot.treatment, proc.pid, spec.host, spec.port, str(spec.server_bin), launcher
    )
    liveset.add(live.ctx.run_dir.path / schema.LIVE_SERVERS_FILE, entry)


def _attach(live: LiveSession, progress: Progress) -> None:
    """A server the harness does not own: witnessed where it can be, never stopped."""

    error = attach(live, progress) or _template_witness(live, live.info.get("props_start") or {})
    if error:
        live.info["error"] = error
        raise ServerError(error)


def _witness(live: LiveSession) -> None:
    assert live.proc is not None
    info, proc = live.info, live.proc
    argv = rig.read_cmdline(proc.pid)
    live.ctx.run_dir.write_text_new(schema.flags_file(live.slot.name), " ".join(argv) + "\n")
    props = rig.props(proc.spec.base_url)
    info.update(
        {
            "pid": proc.pid,
            "load_s": proc.load_s,
            "argv": argv,
            "props_start": props,
            "build_info": props.get("build_info"),
            "n_ctx": (props.get("default_generation_settings") or {}).get("n_ctx"),
            "model_path": props.get("model_path"),
            "rss_after_load_bytes": rig.rss_bytes(proc.pid),
            "gpu_used_mib_after_load": rig.gpu_used_mib(),
            "cpus_allowed": host.cpus_allowed(proc.pid),
        }
    )
    expected = live.ctx.builds.get(live.slot.treatment)
    error = (
        startup_error(
            argv, live.ctx.treatment_args(live.slot), info["n_ctx"], live.ctx.ladder.ctx_size
        )
        or (
            props_mismatch(live.slot.treatment, expected, props.get("build_info"))
            if expected
            else None
        )
        or _template_witness(live, props)
        or _affinity_witness(live)
    )
    if error:
        info["error"] = error
        raise ServerError(error)


def _affinity_witness(live: LiveSession) -> str | None:
    """The CPU list the kernel holds for the server is the one the ladder asked for."""
    wanted, seen = live.ctx.cpus, live.info.get("cpus_allowed")
    if wanted is None or seen is None:
        return None

    if parse_cpus(str(seen)) != set(wanted):
        return (
            f"the server may run on CPUs {seen}, not the {sorted(wanted)} it was given "
            "(server.cpus, or this worker's share); "
            "check the launcher or the machine's cgroup limits."
        )
    return None


def _template_witness(live: LiveSession, props: dict[str, Any]) -> str | None:
    """Record the chat template the server really uses; refuse one the ladder did not pin."""
    template = props.get("chat_template")
    sha, first = template_identity(template if isinstance(template, str) else None)
    live.info["chat_template_sha256"] = sha
    live.info["chat_template_first_line"] = first
    pin = live.ctx.ladder.chat_template_sha256
    if pin and sha is not None and pin.strip().lower() != sha:
        return (
            f"the server uses chat template sha256 {sha} (first line {first!r}), not the pinned "
            f"{pin}; serve the pinned template or change chat_template_sha256 in the ladder."
        )
    return None


def _warm_up(live: LiveSession, kind: KindRun) -> None:
    if live.ctx.warmup:
        facts = kind.warm_up(live)
        live.info["warmup"] = facts
        if not facts["valid"]:
            # No silent fallback (e.g. to a stream without usage): set the session aside.
            live.quarantine = f"warm-up request failed: {facts['reason']}"
            code = live.proc.exit_code() if live.proc is not None else None
            if code is not None:  # the server itself went: say how, by the signal's name
                live.quarantine += f" (the server {rig_exits.ended(code)})"
            return
    if live.ctx.calibration and kind.calibrates:
        tps, why = calibrate(live)
        live.info["calibration"] = {"start_tps": tps}
        if why is not None:
            live.info["calibration"]["start_reason"] = why
    live.host_start = host.sample(_server_pids(live), _run_roots(live))


def _server_pids(live: LiveSession) -> list[int]:
    return [live.proc.pid] if live.proc else []


def _run_roots(live: LiveSession) -> tuple[int, ...]:
    # with -n on one host the controller's tree holds the sibling workers and their servers
    return (live.ctx.run_root_pid,) if live.ctx.run_root_pid else ()


def _host_noise(live: LiveSession) -> None:
    """What others used of the machine while this session measured; flagged over the ladder's
    threshold."""
    if live.host_start is None:
        return
    noise = host.noise(live.host_start, host.sample(_server_pids(live), _run_roots(live)))
    limit = live.ctx.ladder.preflight.host_noise_pct
    noise["threshold_pct"] = limit
    noise["flagged"] = noise["other_cpu_pct"] > limit
    if live.endpoint is not None:
        noise["note"] = "attached: a server on this host counts as other load"
    elif live.ctx.run_root_pid:
        noise["note"] = "-n on this host: the sibling workers and their servers count as the run"
    live.info["host"] = noise


def final_witnesses(live: LiveSession) -> None:
    info = live.info
    if live.proc is None and live.endpoint is None:
        return
    _host_noise(live)  # before the end calibration: the span is the measurements'
    if live.dead is not None:
        # A server that died or stopped answering mid-session is not asked again: a frozen one
        # would hold the close up for as long as each request's timeout.
        info["props_end"], info["props_changed"], info["props_stable"] = {}, [], False
        return
    try:
        alive = live.proc.alive() if live.proc is not None else True
        cal = info.get("calibration")
        # a session the busy host stopped early would spend minutes on a slow calibration
        if cal is not None and alive and live.quarantine is None and not live.spoiled_early:
            cal["end_tps"], why = calibrate(live)
            if why is not None:
                cal["end_reason"] = why
            start, end = cal.get("start_tps"), cal.get("end_tps")
            if start and end:
                cal["drift_pct"] = (end / start - 1) * 100
        if live.endpoint is not None:
            from .attach import end_identity

            end_identity(live)
            return
        info["props_end"] = rig.props(live.base_url) if alive else {}
        info["props_changed"] = rig.props_diff(info.get("props_start") or {}, info["props_end"])
        info["props_stable"] = bool(info["props_end"]) and not info["props_changed"]
    except BaseException as exc:
        live.quarantine = live.quarantine or (
            f"the session close was interrupted ({type(exc).__name__}: {one_line(exc)})"
        )
        raise


def release(live: LiveSession) -> None:
    live.http.close()  # before the stop: idle connections would hold up the shutdown
    live.writer.close()
    if live.proc is None:
        return
    try:
        release = rig.stop(live.proc)
    except BaseException:
        # Interrupted mid-stop: rig.stop killed the server outright; say so, then travel on.
        gone = not live.proc.alive()
        live.info["release"] = {
            "released": gone,
            "exit_code": live.proc.exit_code(),
            "signal": "SIGKILL (the stop was interrupted)",
            "stop_s": 0.0,
            "port_free": False,
            "detail": "" if gone else "process still present",
        }
        raise
    if release.released:
        with contextlib.suppress(OSError):  # cleanup would find it gone anyway
            liveset.remove(live.ctx.run_dir.path / schema.LIVE_SERVERS_FILE, live.slot.name)
    live.info["gpu_used_mib_after_release"] = rig.gpu_used_mib()
    live.info["host_available_mib_after_release"] = rig.host_available_mib()
    live.info["release"] = {
        "released": release.released,
        "exit_code": release.exit_code,
        "signal": release.signal_used,
        "stop_s": release.stop_s,
        "port_free": release.port_free,
        "detail": release.detail,
    }


def calibrate(live: LiveSession) -> tuple[float | None, str | None]:
    """The decode rate of the fixed calibration prompt now, or None and why it failed."""
    m = rig.stream_chat(
        live.http, live.base_url, CALIBRATION_PROMPT, live.request_spec(CALIBRATION_TOKENS)
    )
    return (m.decode_rate_tps_primary, None) if m.valid else (None, m.reason)


def one_line(exc: BaseException | str) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
