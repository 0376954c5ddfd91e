"""What every session of one run shares, fixed once the run directory exists."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ladder.runplan import SessionSlot
from ..ladder.values import Ladder
from ..rig.buildid import BuildIdentity
from ..rig.models import synthetic
from ..rig.provision import ServerBinary
from ..rig.server import Launcher, LaunchSpec
from ..rig.tinymodel import NOT_LANGUAGE
from .rundir import RunDir


@dataclass(frozen=True)
class Warmup:
    """The short request a kind sends before a session's first case: its prompt and its
    max_tokens."""

    prompt: str = "Say hello in one short sentence."
    tokens: int = 8


WARMUP = Warmup()
CALIBRATION_PROMPT = "Count from one to forty in words, separated by commas."
CALIBRATION_TOKENS = 32


@dataclass(frozen=True)
class RunContext:
    """The resolved run: ladder, run directory, server binary, model, keyed fields."""

    ladder: Ladder
    run_dir: RunDir
    run_id: str
    server_bin: ServerBinary | None  # None when every treatment is attached
    server_version: str
    model_path: Path | None  # the ladder's [model]
    keyed: Mapping[str, Any]
    prereg_sha256: str
    planned: Mapping[str, int]  # session name -> measurements selected in it
    warmup: bool = True
    calibration: bool = True
    models: Mapping[str, Path] = field(default_factory=dict)  # launched treatment -> its model
    # where a pytest-xdist worker measures: its device ("" = not pinned), its name ("" without
    # -n) and its place among the workers (a fixed server.port is offset by it)
    device: str = ""
    worker: str = ""
    worker_index: int = 0
    # a worker's share of the host's CPUs when -n splits a host without devices (empty: none)
    worker_cpus: frozenset[int] = frozenset()
    # with -n on this host: the controller's pid, whose process tree (the workers and their
    # servers) is the run, never the host's noise (0: no sibling here)
    run_root_pid: int = 0
    # builds as treatments: a treatment's own server, and the build every launched treatment's
    # sessions must run (its identity as resolved; a session on another is refused)
    servers: Mapping[str, ServerBinary] = field(default_factory=dict)
    builds: Mapping[str, BuildIdentity] = field(default_factory=dict)

    def server_for(self, treatment: str) -> ServerBinary | None:
        """The server a treatment's sessions run: its own, else the run's."""
        return self.servers.get(treatment, self.server_bin)

    @property
    def not_language(self) -> str | None:
        """Why this run's text is no model's answer (a synthetic model: rig/tinymodel.py), or
        None: every decode record says it, as a degenerate answer's record does."""

        model = synthetic(str(self.keyed.get("model_sha256") or ""))
        return None if model is None else NOT_LANGUAGE

    @property
    def cpus(self) -> frozenset[int] | None:
        """The CPU affinity of this context's spawned servers (witnessed from /proc)."""
        return self.worker_cpus or self.ladder.cpus

    def model_for(self, slot: SessionSlot) -> Path | None:
        """The model this slot's server loads: the treatment's own, else the ladder's."""
        return self.models.get(slot.treatment, self.model_path)

    def subst(self, args: tuple[str, ...], slot: SessionSlot | None = None) -> list[str]:
        # `{model}` lets a treatment name the session's own model, e.g. as its draft model.
        model = self.model_for(slot) if slot is not None else self.model_path
        return [a.replace("{model}", str(model)) for a in args]

    def treatment_args(self, slot: SessionSlot) -> list[str]:
        return self.subst(self.ladder.treatment(slot.treatment).args, slot)

    def thread_args(self, slot: SessionSlot) -> tuple[str, ...]:
        """A worker's server uses as many threads as its CPU share (llama-server's default is
        every core of the machine, whatever its affinity), unless the ladder sets them."""
        given = {*self.ladder.server_args, *self.ladder.treatment(slot.treatment).args}
        if not self.worker_cpus or given & {"-t", "--threads", "-tb", "--threads-batch"}:
            return ()
        n = str(len(self.worker_cpus))
        return ("--threads", n, "--threads-batch", n)

    def provenance(self) -> dict[str, Any]:
        """The fields every record carries after its measurement and keyed fields."""
        return {
            "note": self.ladder.note,
            "preregistration_sha256": self.prereg_sha256,
            "device": self.device,
            "worker": self.worker,
        }

    def port(self) -> int:
        """The fixed port of this worker's servers (server.port + worker index); 0: pick one."""
        return self.ladder.port + self.worker_index if self.ladder.port else 0

    def launch_spec(self, slot: SessionSlot, port: int) -> LaunchSpec:
        """How to start this slot's server: spawned from argv, or through the rig's launcher."""
        lad = self.ladder
        servers = self.run_dir.path / "servers"
        launcher = None
        log_path = servers / f"{slot.name}.log"
        if lad.launchers is not None:
            session_dir = servers / slot.name
            launcher = Launcher(
                lad.launchers.launch,
                lad.launchers.stop,
                slot.treatment,
                session_dir,
                timeout_s=max(120.0, lad.ready_timeout_s),
            )
            log_path = session_dir / "server.log"
        tail = (
            "-m",
            str(self.model_for(slot)),
            "--ctx-size",
            str(lad.ctx_size),
            *self.subst(lad.server_args, slot),
            *self.treatment_args(slot),
            *self.thread_args(slot),
        )
        server = self.server_for(slot.treatment)
        assert server is not None, "a launched treatment resolves the server first"
        return LaunchSpec(
            server_bin=server.path,
            argv_tail=tail,
            host=lad.host,
            port=port,
            alias=lad.alias(slot.treatment),
            log_path=log_path,
            ready_timeout_s=lad.ready_timeout_s,
            launcher=launcher,
            cpus=self.cpus,
            env=(("CUDA_VISIBLE_DEVICES", self.device),) if self.device else (),
        )
