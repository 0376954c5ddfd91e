"""The one home of record fields, session-file fields, keyed fields and run-directory names.

The producer (the protocol and the kinds), the analysis and the tests all import these names;
nobody else spells them.
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

# --------------------------------------------------------------------------- record fields

# Which measurement of which session: every record of every kind starts with these.
IDENTITY_FIELDS: tuple[str, ...] = (
    "run_id",
    "ladder",
    "treatment",
    "cycle",
    "ordinal",
    "session",
    "prompt_id",
    "subset",
    "repeat",
    "position",
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

# The two decode-rate endpoints: analysis name -> record field.
ENDPOINT_FIELDS: dict[str, str] = {
    "primary": "decode_rate_tps_primary",
    "interval": "decode_rate_tps_interval",
}


@dataclass(frozen=True)
class Measurement:
    """One streamed request, reduced to the numbers a decode record keeps."""

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


def decode_record(
    identity: dict[str, Any],
    measurement: Measurement,
    started_at: str,
    keyed: dict[str, Any],
    provenance: dict[str, Any],
) -> dict[str, Any]:
    """One decode record: identity, the measurement, when, the keyed fields, provenance."""
    return {
        **identity,
        **measurement.fields(),
        "started_at": started_at,
        **keyed,
        **provenance,
    }


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
    pid: int
    load_s: float
    argv: list[str]
    props_start: dict[str, Any]
    props_end: dict[str, Any]
    props_changed: list[str]
    props_stable: bool
    build_info: Any
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


# --------------------------------------------------------------------------- authoring kind
# A case is one cell: subject x cohort x task x repeat, a conversation to its outcome. The
# cells and turns live outside records/ on purpose: quarantine moves a session's records/ file,
# but a cell that reached its outcome stays valid data whatever happens to its session later,
# and --resume re-runs only the cells without one.

CELLS_DIR = "cells"
TURNS_DIR = "turns"
CONVERSATIONS_DIR = "conversations"
SCORES_CSV = "scores.csv"


def cells_file(session: str) -> str:
    """One JSON line per cell (its outcome), fsync'd as made."""
    return f"{CELLS_DIR}/{session}.jsonl"


def turns_file(session: str) -> str:
    """One JSON line per turn (request, reply, check), fsync'd as made."""
    return f"{TURNS_DIR}/{session}.jsonl"


def conversation_file(session: str, cell: str, attempt: int) -> str:
    """The full message list of one cell's conversation, for inspection."""
    suffix = f".a{attempt}" if attempt else ""
    return f"{CONVERSATIONS_DIR}/{session}/{cell}{suffix}.json"


# Cell outcomes. A cell with one of FINAL_OUTCOMES is never run again (not even on --resume);
# a budget_stopped cell, or one without a cell record, runs again on --resume.
FIRST_ATTEMPT_GREEN = "first_attempt_green"
GREEN_AFTER_K = "green_after_k"
EXHAUSTED = "exhausted"
API_FAILURE = "api_failure"
CHECKER_ERROR = "checker_error"
BUDGET_STOPPED = "budget_stopped"
OUTCOMES = (
    FIRST_ATTEMPT_GREEN,
    GREEN_AFTER_K,
    EXHAUSTED,
    API_FAILURE,
    CHECKER_ERROR,
    BUDGET_STOPPED,
)
FINAL_OUTCOMES = OUTCOMES[:-1]
GREEN_OUTCOMES = (FIRST_ATTEMPT_GREEN, GREEN_AFTER_K)
# Informative cells say something about the subject; the others are counted, by name.
INFORMATIVE_OUTCOMES = (FIRST_ATTEMPT_GREEN, GREEN_AFTER_K, EXHAUSTED)

# Turn verdicts: what the checker said of the artefact of one reply.
VERDICT_PASS = "pass"
VERDICT_FAIL = "fail"  # the artefact failed, hung, or broke a limit: the model gets the error
VERDICT_NO_ARTEFACT = "no_artefact"  # nothing to extract: the model is told so
VERDICT_CHECKER_ERROR = "checker_error"  # the checker could not judge: the cell ends
VERDICT_NOT_CHECKED = "not_checked"  # no reply came back

RUN_OK, RUN_PARTIAL, RUN_STOPPED = "ok", "partial", "stopped"

# Which cell of which session: every authoring turn and cell record starts with these.
# `attempt` is 0 for the first invocation, n after the n-th --resume.
CELL_IDENTITY_FIELDS: tuple[str, ...] = (
    "run_id", "ladder", "session", "subject", "model_id", "cohort", "task", "repeat", "cell",
    "position", "attempt",
)  # fmt: skip
# latency_s: the successful (or last) try, send to full response; request_s: every try and wait;
# api_retried: the HTTP status (or error name) of each retried try.
TURN_FIELDS: tuple[str, ...] = (
    "turn", "started_at", "latency_s", "request_s", "api_tries", "api_retried", "http_status",
    "api_error", "prompt_tokens", "completion_tokens", "tokens_unknown", "budget_tokens",
    "finish_reason", "response_model", "reasoning_chars", "content_chars", "artefact_sha256", "artefact_bytes", "verdict",
    "exit_code", "check_s", "check_reason", "error_first_line", "feedback_chars",
    "tests_collected", "tests_passed", "verdict_forgeable", "sampling_seed", "reply_cached",
)  # fmt: skip
# tests_collected/tests_passed: the grader's own report of the check; verdict_forgeable: the task
# is checked in-process (task.toml checking = "in-process"), so the artefact could write that report.
# tokens_unknown: the server answered without usage (or with usage that could not be true, then
# also api_failure); budget_tokens: what the budget was charged for the turn (its bound then).
# reply_cached: the reply came from the opt-in reply cache ([api] cache = true), not the subject.
# sampling_seed: the request seed of the cell's repeat (the ladder's seeds, or derived from seed).
# green_turn: the k of green_after_k (1 for first_attempt_green).
CELL_FIELDS: tuple[str, ...] = (
    "valid", "reason", "outcome", "green_turn", "turns_used", "prompt_tokens",
    "completion_tokens", "tokens_unknown_turns", "api_retries", "api_status", "api_error", "checker_error", "started_at",
    "ended_at", "conversation", "verdict_forgeable", "sampling_seed",
)  # fmt: skip
SCORES_COLUMNS: tuple[str, ...] = (
    "subject", "model_id", "cohort", "task", "repeat", "cell", "outcome", "green_turn",
    "turns_used", "prompt_tokens", "completion_tokens", "api_retries", "api_status", "api_error",
    "checker_error", "attempt",
)  # fmt: skip


@dataclass(frozen=True)
class CellResult:
    """What an authoring test receives: valid when the cell reached an outcome (any outcome)."""

    cell: str
    valid: bool
    reason: str | None
    outcome: str | None = None
    green_turn: int | None = None
    turns_used: int = 0
    prompt_tokens: int | None = 0  # None: a turn came back without usage (unknown, not 0)
    completion_tokens: int | None = 0


def authoring_record(
    identity: dict[str, Any], body: dict[str, Any], fields_: tuple[str, ...], tail: dict[str, Any]
) -> dict[str, Any]:
    """A turn or cell record: identity, the named fields (missing ones null), keyed, provenance."""
    return {**identity, **{k: body.get(k) for k in fields_}, **tail}


# What the authoring analysis writes into analysis/.
COHORT_TABLE_CSV = "cohort_table.csv"  # subject x cohort: green first / after k / never, tokens
CONTRASTS_CSV = "contrasts.csv"  # within subject: cohort vs baseline cohort, paired by task
CENSUS_CSV = "census.csv"  # every cell: informative or not, and why
REPORT_MD = "report.md"
