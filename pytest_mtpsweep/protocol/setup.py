"""Before the run directory exists: find the rig (server binary, model, keyed fields, run path)
and run preflight against it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import rig
from .._version import __version__
from ..base import schema
from ..ladder import Ladder
from ..preflight import AttachedTarget, PreflightInputs, QuietCheck, run_preflight
from ..rig import liveset
from ..rig.buildid import BuildIdentity, identify, short
from ..rig.digests import default_digest_cache
from ..rig.provision import treatment_server
from ..wishes.request import PreflightRequest, RunRequest
from . import hostrule

if TYPE_CHECKING:
    from ..interface.kind import KindRun
    from ..preflight import PreflightItem


@dataclass(frozen=True)
class Resolved:
    """The rig this run will use, found before preflight."""

    server_bin: rig.ServerBinary | None  # None when every treatment is attached
    server_version: str
    model_path: Path | None  # the ladder's [model], when it names one
    keyed: dict[str, Any]
    run_path: Path
    run_id: str
    models: dict[str, Path] = field(default_factory=dict)  # launched treatment -> its model
    # a treatment that names its own server -> that server (ladder/builds.py)
    servers: dict[str, rig.ServerBinary] = field(default_factory=dict)
    # launched treatment -> the build its sessions must run (rig/buildid.py)
    builds: dict[str, BuildIdentity] = field(default_factory=dict)


NOT_LAUNCHED = "none launched"  # the server build of a run whose servers are all attached


def resolve(ladder: Ladder, kind: KindRun, request: RunRequest) -> Resolved:
    """Find the server and the models; fix the keyed fields, the run id and its path."""
    launched = [t.key for t in ladder.treatments if not t.attached]
    servers = own_servers(ladder)
    shared = [key for key in launched if key not in servers]
    server_bin = rig.resolve_server_bin(request.server_bin, ladder.server_bin) if shared else None
    version = rig.server_version(server_bin.path) if server_bin else ""
    builds = builds_of(launched, servers, server_bin)
    found: dict[str, Path] = {}  # each distinct model resolved (and assembled) once
    for key in launched:
        value = ladder.model_of(key) or ""
        if value not in found:
            found[value] = rig.resolve_model(value)
    default = None
    if ladder.model:
        default = found.get(ladder.model) or rig.resolve_model(ladder.model)
    models = {key: found[ladder.model_of(key) or ""] for key in launched}
    verify = request.preflight.verify_digests

    def sha(path: Path) -> str:
        return rig.model_sha256(path, cache=default_digest_cache(), verify=verify)

    # per-treatment models only: each named (a resume must find the same files)
    model_sha = sha(default) if default else ",".join(f"{k}={sha(p)}" for k, p in models.items())
    keyed = {
        "ladder": ladder.name,
        "model_id": ladder.model_id,
        "model_sha256": model_sha,
        "ctx_size": ladder.ctx_size,
        "seed": ladder.seed,
        "max_tokens": ladder.max_tokens,
        "temperature": ladder.temperature,
        "server_build": server_build_keyed(version, servers, builds),
        "placement": ladder.placement,
        **kind.keyed(),
    }
    run_id = schema.new_run_id()
    path = request.resume or request.run_dir or request.cwd / "runs" / ladder.name / run_id
    return Resolved(server_bin, version, default, keyed, path, run_id, models, servers, builds)


def own_servers(ladder: Ladder) -> dict[str, rig.ServerBinary]:
    """Each launched treatment that names its own server, that server found (or built)."""
    found: dict[str, rig.ServerBinary] = {}
    for t in ladder.treatments:
        if not t.attached and t.own_server:
            found[t.key] = treatment_server(
                t.key,
                ladder.path.parent,
                server_bin=t.server_bin,
                server_pip=t.server_pip,
                server_commit=t.server_commit,
                server_repo=t.server_repo,
            )
    return found


def builds_of(
    launched: list[str], servers: dict[str, rig.ServerBinary], shared: rig.ServerBinary | None
) -> dict[str, BuildIdentity]:
    """The build each launched treatment's sessions must run, as it is on disk now."""
    seen: dict[Path, BuildIdentity] = {}
    out: dict[str, BuildIdentity] = {}
    for key in launched:
        binary = servers.get(key, shared)
        if binary is None:
            continue
        if binary.path not in seen:
            seen[binary.path] = identify(binary.path)
        out[key] = seen[binary.path]
    return out


def server_build_keyed(
    version: str, servers: dict[str, rig.ServerBinary], builds: dict[str, BuildIdentity]
) -> str:
    """The keyed server build: the one build of the run, or each treatment's by design.

    With builds as treatments every treatment's build (and its binary's digest) is named, so
    the run's own sessions pool and another run pools only with the very same builds."""
    if servers:
        return ",".join(f"{key}={short(b)}" for key, b in builds.items())
    return rig.server_build(version) if version else NOT_LAUNCHED


def model_files(ladder: Ladder, models: dict[str, Path], default: Path | None) -> tuple[Path, ...]:
    """Every model a session loads, and any draft model a treatment names."""
    files = [*([default] if default else []), *models.values()]
    for t in ladder.treatments:
        own = models.get(t.key, default)
        args = [a.replace("{model}", str(own)) for a in t.args]
        for flag in ("-md", "--model-draft"):
            if flag in args[:-1]:
                files.append(Path(args[args.index(flag) + 1]).resolve())
    return tuple(dict.fromkeys(shard for f in files for shard in rig.shards(f)))


def other_servers(
    res: Resolved, main: rig.ServerBinary | None
) -> tuple[tuple[str, Path, str], ...]:
    """Each treatment's own build that preflight's server_runs did not already prove, once."""
    seen = {main.path} if main else set()
    out: list[tuple[str, Path, str]] = []
    for key, binary in res.servers.items():
        if binary.path not in seen:
            seen.add(binary.path)
            out.append((key, binary.path, binary.source))
    return tuple(out)


# What a run writes, generously: a record's fields, the text each token can add (UTF-8 and
# JSON escapes), each session's server log, session file and flags, and the analysis outputs.
RECORD_BYTES = 2048
TEXT_BYTES_PER_TOKEN = 8
SESSION_BYTES = 1 << 20
ANALYSIS_BYTES = 4 << 20


def expected_run_bytes(sessions: int, measurements: int, max_tokens: int) -> int:
    """About how many bytes a run of this size writes into its directory."""
    per_record = RECORD_BYTES + TEXT_BYTES_PER_TOKEN * max_tokens
    return measurements * per_record + sessions * SESSION_BYTES + ANALYSIS_BYTES


def preflight(
    ladder: Ladder,
    kind: KindRun,
    request: RunRequest,
    res: Resolved,
    opts: PreflightRequest,
    *,
    sessions: int = 0,
    measurements: int = 0,
    treatments: tuple[str, ...] | None = None,
    workers: int = 1,
    on_wait: Callable[[str], None] | None = None,
) -> list[PreflightItem]:
    """Every preflight item for this run, before anything starts; attached servers are checked
    for the `treatments` measured (None: all), a fixed port for each pytest-xdist worker
    (server.port + worker index); `on_wait` hears about a wait for a quiet host."""

    pre = ladder.preflight
    # the run's server, else (every launched treatment names its own) the first of theirs
    main = res.server_bin or next(iter(res.servers.values()), None)
    off = hostrule.off_reason(ladder.host_rule, os.environ)
    quiet = QuietCheck(None if off else ladder.host_rule, off or "", opts.wait_for_quiet_s, on_wait)
    inputs = PreflightInputs(
        run_dir=res.run_path,
        server_bin=main.path if main else None,
        server_source=main.source if main else None,
        expected_build=opts.server_build or pre.server_build,
        ports=tuple(ladder.port + i for i in range(workers if ladder.port and main else 0))
        + pre.ports,
        host=ladder.host,
        model_files=model_files(ladder, res.models, res.model_path),
        ram_floor_gb=pre.ram_floor_gb,
        disk_floor_gb=pre.disk_floor_gb,
        must_be_inactive_processes=pre.inactive_processes,
        must_be_inactive_units=pre.inactive_units,
        launchers=ladder.launchers.pins() if ladder.launchers else {},
        experiments_dir=ladder.path.parent.parent,
        ladder_file=ladder.path,
        package_version=__version__,
        kind_items=kind.preflight_items(),
        chat_template_pin=ladder.chat_template_sha256,
        host_idle_pct=pre.host_idle_pct,
        run_bytes=expected_run_bytes(sessions, measurements, ladder.max_tokens)
        if measurements
        else 0,
        self_test=pre.self_test,
        attached=tuple(
            AttachedTarget(
                t.key,
                rig.Endpoint(t.base_url, t.api_key_env, t.ready_url),
                ladder.alias(t.key),
                t.flags_file,
                tuple(t.flags_command) if t.flags_command is not None else None,
                ladder.path.parent,
            )
            for t in ladder.treatments
            if t.base_url is not None and (treatments is None or t.key in treatments)
        ),
        other_servers=other_servers(res, main),
        leftover_servers=tuple(
            (run, server.describe()) for run, server in liveset.leftovers(res.run_path.parent)
        ),
        quiet=quiet,
    )
    waive = opts.waive | ({"run_dir"} if request.resume else set())
    return run_preflight(
        inputs, waive=waive, against=opts.against, verify_digests=opts.verify_digests
    )
