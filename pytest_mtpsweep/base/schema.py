"""The names the protocol writes for every kind: the run directory, the keyed fields, the
session file; and the rig's value of one streamed request (`Measurement`).

A kind's own record fields live in its package (`kinds/<name>/records.py`); the shared layers
name none of them (tests/test_layers.py).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict


def new_run_id(now: dt.datetime | None = None) -> str:
    """A run's id: UTC time plus a short random suffix, sortable and unique within one second."""
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def utc_now_iso() -> str:
    """A record's time stamp (`started_at`, `ended_at`): UTC, milliseconds, a `Z`."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- run directory

RECORDS_DIR = "records"
SESSIONS_DIR = "sessions"
SERVERS_DIR = "servers"
QUARANTINE_DIR = "quarantine"
ANALYSIS_DIR = "analysis"
RUN_SUBDIRS = (RECORDS_DIR, SESSIONS_DIR, SERVERS_DIR, QUARANTINE_DIR, ANALYSIS_DIR)

PLAN_FILE = "plan.json"
PREFLIGHT_FILE = "preflight.json"
PREREGISTRATION_FILE = "preregistration.md"
STOPPED_FILE = "STOPPED"
RUN_STATUS_FILE = "RUN_STATUS"
CURTAILMENT_FILE = "curtailment.json"
STOP_FILE = "stop.json"  # the stop rule's looks (protocol/looks.py)
RESUME_LOG = "resume.log"
SESSIONS_CSV = "sessions.csv"
MEMORY_CHECK_FILE = "memory_check.json"
QUARANTINE_REASON = "reason.txt"
REPORT_MD = "report.md"  # under analysis/: every kind's analysis writes one
# How a quarantine reason starts when the host rule set the session aside (it was re-run).
HOST_SPOILED = "host spoiled"
# Every server the run started and has not yet seen gone (mtpsweep cleanup reads it).
LIVE_SERVERS_FILE = f"{SERVERS_DIR}/live.json"


def records_file(session: str) -> str:
    """One JSON line per measurement of a session, fsync'd as made."""
    return f"{RECORDS_DIR}/{session}.jsonl"


def session_file(session: str) -> str:
    """The session's facts: argv, identity, load time, memory, calibration, census."""
    return f"{SESSIONS_DIR}/{session}.json"


def server_log(session: str) -> str:
    return f"{SERVERS_DIR}/{session}.log"


def flags_file(session: str) -> str:
    """The argv the running server really holds, read from /proc, cycle-tagged by the name."""
    return f"{SERVERS_DIR}/{session}.flags.txt"


def launcher_dir(session: str) -> str:
    """Where a rig's launch/stop pair keeps a session's pid and log."""
    return f"{SERVERS_DIR}/{session}"


def preflight_resume_file(n: int) -> str:
    return f"preflight.resume{n}.json"


# What a quarantined session's files are called inside quarantine/<session>/.
QUARANTINE_MEMBERS: dict[str, str] = {
    "records": "records.jsonl",
    "session": "session.json",
    "log": "server.log",
    "flags": "flags.txt",
    "launcher": "server",
}

# The fields every line of a gate history (`--history`, state/history.py) holds: how a file
# about to be appended to is known for one before the run (options.check_history).
HISTORY_REQUIRED = ("format", "time", "gate", "treatment", "decision")

# --------------------------------------------------------------------------- record fields

# Which session: a record of a kind that runs sessions of treatments starts with these.
SESSION_IDENTITY_FIELDS: tuple[str, ...] = (
    "run_id",
    "ladder",
    "treatment",
    "cycle",
    "ordinal",
    "session",
)
# Sessions pool only when all of these are identical (comparability).
KEYED_FIELDS: tuple[str, ...] = (
    "model_id",
    "model_sha256",  # the model file's bytes (all shards): a different --model never pools
    "ctx_size",
    "seed",
    "max_tokens",
    "temperature",
    "server_build",
    "placement",
    "prompt_set_digest",
    "cache_prompt",  # llama-server's prompt cache on or off changes what a request costs
    "ladder",
)
# `device` (the CUDA_VISIBLE_DEVICES its server saw, "" when not pinned) and `worker` (the
# pytest-xdist worker, "" in a run without -n) say where a distributed run measured it.
DISTRIBUTION_FIELDS: tuple[str, ...] = ("device", "worker")


@dataclass(frozen=True)
class Measurement:
    """One streamed request, reduced to its numbers: the rig makes it (`rig.stream_chat`), the
    protocol's calibration and a kind's warm-up read it, and a decode record keeps it whole
    (`kinds/decode/records.py`)."""

    valid: bool
    reason: str | None
    http_status: int | None = None
    decode_rate_tps_primary: float | None = None
    decode_rate_tps_interval: float | None = None
    interval_basis: str | None = None  # "server_timings" or "inter_chunk"
    ttft_s: float | None = None
    e2e_s: float | None = None
    max_gap_s: float | None = None  # longest silence from the first token to the end
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    predicted_n: int | None = None
    predicted_ms: float | None = None
    prompt_ms: float | None = None
    cache_n: int | None = None
    draft_n: int | None = None
    draft_n_accepted: int | None = None
    # where draft_n came from: "server_timings" (llama-server) or "metrics" (Prometheus deltas)
    draft_source: str | None = None
    # why the drafter's counts are no mechanism reading (rig/timings.py, kinds' records): the
    # counts are dropped, the rate reading stands
    mechanism_invalid: str | None = None
    # spec-decode tokens the counters gained between the harness's previous request and this
    # one (another client, or a late update): nonzero means the deltas are not this request's
    metrics_moved_between: int | None = None
    finish_reason: str | None = None
    content_chars: int = 0
    content_sha256: str = ""
    reasoning_chars: int = 0
    chunks: int = 0
    content_chunks: int = 0
    server_alias: str | None = None
    anomalies: dict[str, int] = field(default_factory=dict)
    unrecognised_delta_fields: tuple[str, ...] = ()
    # What the model wrote, kept so a reader can check it; judged after the stream ended.
    content: str = ""
    degenerate: str | None = None  # why the text is not a real answer (echo, loop, control strings)

    @classmethod
    def not_measured(cls, reason: str) -> Measurement:
        """An invalid measurement that never reached the server (it is recorded all the same)."""
        return cls(valid=False, reason=reason)

    def fields(self) -> dict[str, Any]:
        d = asdict(self)
        d["unrecognised_delta_fields"] = list(self.unrecognised_delta_fields)
        return d


# --------------------------------------------------------------------------- session files


class WarmupFacts(TypedDict):
    valid: bool
    reason: str | None
    http_status: int | None
    ttft_s: float | None


class CalibrationFacts(TypedDict, total=False):
    start_tps: float | None
    end_tps: float | None
    drift_pct: float
    start_reason: str  # why the calibration request failed, where it did
    end_reason: str


class ReleaseFacts(TypedDict):
    released: bool
    exit_code: int | None
    signal: str
    stop_s: float
    port_free: bool
    detail: str


class HostNoise(TypedDict, total=False):
    """What others used of the machine while a session measured."""

    span_s: float
    other_cpu_s: float
    other_cpu_pct: float
    load_avg_start: list[float]
    load_avg_end: list[float]
    throttled: dict[str, int]
    threshold_pct: float
    flagged: bool
    note: str
    memory_stall_pct: float | None  # % of the span some task stalled on memory (PSI)
    cpu_stall_pct: float | None  # % of the span some task waited for a CPU (PSI)
    major_faults: int | None  # the server process's major page faults in the span
    not_available: dict[str, str]  # witness -> why it could not be read here


class SessionFile(TypedDict, total=False):
    """sessions/<session>.json: everything known about one server session."""

    session: str
    run_id: str  # the run, as plan.json says it: another run's file is set aside on reading
    preregistration_sha256: str
    ordinal: int
    treatment: str
    cycle: int
    device: str  # DISTRIBUTION_FIELDS
    worker: str
    alias: str
    rig: str  # "spawned", "launched" or "attached"
    argv_requested: list[str]
    server_bin: str
    server_bin_source: str
    server_version: str
    port: int
    planned_measurements: int
    rerun: bool
    started_at: str
    launchers: dict[str, dict[str, str]]
    error: str
    complete: bool  # False: --resume runs it again (a server killed while loading, a kind's own)
    pid: int
    load_s: float
    argv: list[str]
    props_start: dict[str, Any]
    props_end: dict[str, Any]
    props_changed: list[str]
    props_stable: bool
    build_info: Any
    server_identity: dict[str, Any]  # the build on disk at launch (rig/buildid.py)
    server_sha256: str  # its binary file's sha256
    n_ctx: Any
    model_path: Any
    rss_after_load_bytes: int | None
    gpu_used_mib_after_load: int | None
    gpu_used_mib_after_release: int | None
    host_available_mib_after_release: int
    warmup: WarmupFacts
    calibration: CalibrationFacts
    release: ReleaseFacts
    ended_at: str
    duration_s: float
    measured: int
    valid: int
    usable: int  # valid and carrying what the analysis pairs (a decode's primary rate)
    failed: int
    length_prompts: list[str]
    degenerate_prompts: list[str]
    chat_template_sha256: str | None
    cpus_allowed: str | None
    host: HostNoise
    host_rule: dict[str, Any]  # the rule's verdict on this session (protocol/hostrule.py)
    host_spoiled: str  # kept although the host spoiled it (its re-run was spoiled too, ...)
    host_spoiled_first: dict[str, Any]  # the first attempt's session file, kept beside this one
    # the host rule's verdict that stopped it mid-session (protocol/busywatch.py)
    host_stopped_early: str
    chat_template_first_line: str | None
    finish_reasons: dict[str, int]
    draft_n: int | None
    draft_n_accepted: int | None
    shakedown: dict[str, Any]  # the kind's check of its records; "summary" is one line
    released: bool | str  # "not applicable: attached" for a server the harness did not start
    quarantined: str | None
    base_url: str
    not_applicable: dict[str, str]
    endpoint_identity: dict[str, Any]
    endpoint_identity_end: dict[str, Any]
    served_models: list[str]
    argv_source: str  # an attached server's flags_file or flags_command
    spec_metrics: str  # whether each request read the spec-decode counters, or why not
    # the keyed fields are copied in too (KEYED_FIELDS)
    model_id: str
    model_sha256: str
    ctx_size: int
    seed: int
    max_tokens: int
    temperature: float
    server_build: str
    placement: str
    prompt_set_digest: str
    cache_prompt: bool
    ladder: str
