"""Value types shared by the analysis modules: settings, raw run contents, the result."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ....kindapi import BOOT, SUBSETS, AnalysisError
from ....kindapi.analysis import INTERVAL, LookState
from ....kindapi.records import DroppedArm, PlanDoc
from ....kindapi.report import Report
from ..records import ENDPOINT_FIELDS
from .equivalence import Equivalence

ENDPOINTS: tuple[str, ...] = tuple(ENDPOINT_FIELDS)
ENDPOINT_COLUMNS: Mapping[str, str] = ENDPOINT_FIELDS
ENDPOINT_LABELS: Mapping[str, str] = {
    "primary": "client-clock primary",
    "interval": "interval basis",
}
KNOWN_SUBSETS: tuple[str, ...] = (*SUBSETS.names, SUBSETS.pooled)

DEFAULT_MARGIN_PCT = 1.0
DEFAULT_TIEBREAK_PP = 1.0
# A within-session trend smaller than this (percent per position) is not called stateful even
# when it is statistically clear: 0.1 % per position is under 2 % across a 16-prompt session.
STATEFUL_MIN_PCT_PER_POSITION = 0.1


@dataclass(frozen=True)
class AnalysisSettings:
    """Everything that changes the numbers; identical settings give identical output."""

    baseline: str
    boot: int = BOOT.default
    seed: int = BOOT.seed
    margin_pct: float = DEFAULT_MARGIN_PCT
    tiebreak_pp: float = DEFAULT_TIEBREAK_PP
    primary_endpoint: str = "primary"
    registered_baseline: str | None = None
    # The nominal levels of the published "95 %" and "90 %" intervals: a sequential design's
    # look publishes repeated confidence intervals at its own (analysis/sequential.py).
    confidence: float = 0.95
    equivalence_confidence: float = 0.90
    # Under 4 cycles a contrast borrows the session level its run's arms share
    # (kinds/decode/analysis/sessionpool.py). False only for the simulations that pack independent
    # replications as the treatments of one frame (tests/strategies.replication_records):
    # borrowing across them would pool runs that never shared a host.
    pool_sessions: bool = True
    # the fewest df a borrowed session level may have: a contrast table's 3, a sweep's run 1 (its
    # looks judged on the borrowed level, and its table must say what they saw)
    borrow_min_df: float = float(INTERVAL.min_borrowed_df)

    def __post_init__(self) -> None:
        if not self.baseline:
            raise AnalysisError(
                "no baseline treatment is set; pass --baseline TREATMENT or set "
                "analysis.baseline in plan.json"
            )
        BOOT.check(self.boot, self.seed)
        if not (math.isfinite(self.margin_pct) and self.margin_pct > 0):
            raise AnalysisError(
                f"the equivalence margin {self.margin_pct} % is not a positive number; fix "
                "analysis.margin_pct in plan.json"
            )
        if not (math.isfinite(self.tiebreak_pp) and self.tiebreak_pp >= 0):
            raise AnalysisError(
                f"the endpoint tie-break {self.tiebreak_pp} pp is not a non-negative number; "
                "fix analysis.tiebreak_pp in plan.json"
            )
        if not (0.5 < self.equivalence_confidence <= self.confidence < 1.0):
            raise AnalysisError(
                f"the interval levels {self.confidence} and {self.equivalence_confidence} are "
                "not 0.5 < equivalence <= confidence < 1; fix stop.confidence in plan.json"
            )
        if self.primary_endpoint not in ENDPOINTS:
            raise AnalysisError(
                f"the primary endpoint {self.primary_endpoint!r} is not one of "
                f"{', '.join(ENDPOINTS)}; fix analysis.primary_endpoint in plan.json"
            )

    @property
    def exploratory(self) -> bool:
        """True when the baseline is not the one the plan pre-registered."""
        return self.registered_baseline is not None and self.baseline != self.registered_baseline


@dataclass(frozen=True)
class RecordFile:
    """The raw lines of one records/<session>.jsonl file."""

    run_id: str
    session: str
    lines: tuple[str, ...]
    identity: Mapping[str, str] = field(default_factory=dict)  # plan.json's: another run's
    # lines are set aside (`recordlines.foreign`)


@dataclass(frozen=True)
class QuarantinedSession:
    """A session set aside in quarantine/: counted, never analysed."""

    run_id: str
    session: str
    n_records: int
    reason: str
    # A session the host rule set aside (it was re-run): its records and session file, for the
    # analysis with the spoiled attempts in place of their re-runs (analysis/hostrule.py).
    lines: tuple[str, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class RunData:
    """Everything read from one run directory, before any analysis."""

    run_dir: str
    run_id: str
    plan: PlanDoc
    record_files: tuple[RecordFile, ...]
    sessions: tuple[Mapping[str, Any], ...]
    quarantined: tuple[QuarantinedSession, ...] = ()
    notes: tuple[str, ...] = ()
    # What cut the run short (protocol stop, deadline stop, curtailment): the report's limits.
    stops: tuple[str, ...] = ()
    # A sweep's arms that left at a look ({arm, look, after_cycle, why}), from stop.json: only
    # which arm left and why; the decisions themselves are recomputed from the records.
    sweep_dropped: tuple[DroppedArm, ...] = ()

    @property
    def ladder(self) -> str | None:
        return self.plan.ladder or None


@dataclass(frozen=True)
class ComparabilityGroup:
    """Sessions whose keyed fields are identical and may therefore be pooled."""

    keyed: tuple[tuple[str, str], ...]
    sessions: tuple[str, ...]
    treatments: tuple[str, ...]
    n_records: int
    n_baseline_records: int
    chosen: bool


@dataclass(frozen=True, eq=False)
class HostRuleEffect:
    """What the host rule did in the analysed runs."""

    recorded: bool = False  # plan.json carries the rule (a run from before it does not)
    why_not: str = ""  # "" when the rule was applied, else why not
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    rerun: tuple[tuple[str, str], ...] = ()  # (session, reason): set aside, re-run
    kept: tuple[tuple[str, str], ...] = ()  # (session, reason): kept, flagged host_spoiled
    not_available: tuple[tuple[str, str], ...] = ()  # (criterion, why), once each
    # the published rows with the spoiled attempts in place of their re-runs (None: none)
    with_originals: pd.DataFrame | None = None


@dataclass(frozen=True, eq=False)
class DecodeAnalysis:
    """The decode analysis of one comparability group, with every table the outputs need (the
    kind-neutral result it is saved as: `report.result.AnalysisResult`, by `io.write_outputs`)."""

    run_dirs: tuple[str, ...]
    run_ids: tuple[str, ...]
    ladder: str | None
    settings: AnalysisSettings
    treatments: tuple[str, ...]
    known_treatments: tuple[str, ...]
    subsets: tuple[str, ...]
    contrasts: pd.DataFrame
    census: pd.DataFrame
    gaps: pd.DataFrame
    exclusions: pd.DataFrame
    per_cycle: pd.DataFrame
    drift: pd.DataFrame
    calibration: pd.DataFrame
    truncated: pd.DataFrame
    quarantined: pd.DataFrame
    groups: tuple[ComparabilityGroup, ...]
    notes: tuple[str, ...] = ()
    position_trend: pd.DataFrame = field(default_factory=pd.DataFrame)
    degenerate: pd.DataFrame = field(default_factory=pd.DataFrame)
    host: pd.DataFrame = field(default_factory=pd.DataFrame)
    interval_basis: pd.DataFrame = field(default_factory=pd.DataFrame)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # pair log ratios (planning)
    per_device: pd.DataFrame = field(default_factory=pd.DataFrame)  # >1 device: analysis/devices
    # The findings frame: what was asked, what the design can claim, what limits the answer.
    question: str = ""
    scope: str = ""
    multiplicity: str = ""  # the pre-registered statement, when plan.json carries it
    stops: tuple[str, ...] = ()
    unselected: tuple[str, ...] = ()  # planned sessions this invocation did not select
    not_run: tuple[str, ...] = ()  # selected sessions that left no trace (the run ended first)
    # record lines set aside as they were read: `records/<session>.jsonl:<line>: why`
    unreadable: tuple[str, ...] = ()
    # Content equivalence (temperature 0 only); `equivalence_skipped` says why it is None.
    equivalence: Equivalence | None = None
    equivalence_skipped: str = ""
    acceptance: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the drafting mechanism per drafting treatment and subset (kinds/decode/analysis/drafting.py)
    mechanism: pd.DataFrame = field(default_factory=pd.DataFrame)
    sequential: LookState | None = None  # a [stop] design: the look the intervals are at
    sweep: Any = None  # a [sweep]: sweep.SweepResult (where the gain starts, the best set)
    host_rule: HostRuleEffect = field(default_factory=HostRuleEffect)
    report_md: str = ""
    report: Report | None = None  # the model report.md and report.html were written from
    # the raw record lines analysed: the page's pictures are drawn from them, not a second read
    record_files: tuple[RecordFile, ...] = ()
    plot_available: bool = False
    out_dir: str | None = None
    written: tuple[str, ...] = field(default=())

    @property
    def has_pairs(self) -> bool:
        """True when at least one treatment-baseline pair entered the analysis."""
        return bool(len(self.contrasts)) and int(self.contrasts["n_pairs"].max()) > 0

    @property
    def published(self) -> pd.DataFrame:
        """The published endpoint's row for every treatment × subset."""
        return self.contrasts[self.contrasts["published"]].reset_index(drop=True)
