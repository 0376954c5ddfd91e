"""plan.json as a frozen value (`PlanDoc`): the run as founded, written once by the run
directory's writer and parsed once by its reader (`runread.RunReader.plan`).

The protocol's fields are typed; the kind's own (`Kind.plan_fields()`, e.g. load's `load`,
decode's `prompts`) are `PlanDoc.kind_fields`, and its part of the analysis block
`AnalysisPlan.kind_settings`: mappings the kind parses itself. Formats: see `rundocs`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import RunReadError
from ..ladder.hostthresholds import BOUNDS as HOST_BOUNDS
from ..ladder.stop import MAX_CELLS
from ..ladder.sweepaxes import MAX_SWEEP_ARMS
from ..ladder.values import BOUNDS, MAX_CYCLES, SPENDINGS, STOP_RULES
from .rundocs import FORMAT, FORMAT_FIELD, Fields, check_format

# plan.json's own fields: everything else at its top level is the kind's (`kind_fields`)
PLAN_FIELDS = (
    "format",
    "run_id",
    "ladder",
    "kind",
    "ladder_file",
    "question",
    "scope",
    "created_at",
    "invocation",
    "harness_version",
    "server_bin",
    "server_bin_source",
    "server_version",
    "model_path",
    "models",
    "servers",
    "note",
    "keyed",
    "preregistration_sha256",
    "analysis",
    "treatments",
    "sweep",
    "stop",
    "host_rule",
    "sessions",
)
ANALYSIS_FIELDS = ("baseline", "curtailment_sentence", "multiplicity")


@dataclass(frozen=True)
class Treatment:
    """A treatment as the plan records it: its key and its server arguments."""

    key: str
    args: tuple[str, ...] = ()
    server: str | None = None  # its own server build (a path or a requirement), if it names one


@dataclass(frozen=True)
class PlannedSession:
    """One (treatment, cycle) session of the plan, in run order."""

    ordinal: int
    treatment: str
    cycle: int
    session: str  # its name: 01_none_c1
    selected: bool = True  # -k or node ids left it some measurements
    measurements: int = 0  # how many were selected


@dataclass(frozen=True)
class AnalysisPlan:
    """plan.json's `analysis` block: the protocol's settings and the kind's own."""

    baseline: str = ""
    curtailment_sentence: str = ""
    multiplicity: str = ""
    kind_settings: Mapping[str, Any] = field(default_factory=dict)  # e.g. decode's margin_pct


@dataclass(frozen=True)
class SweepAxis:
    flag: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class SweepPlan:
    """plan.json's `sweep`: the arms of a `[sweep]` ladder, in order, and where the step-down
    starts (`start`, written as `from`)."""

    setting: str
    axes: tuple[SweepAxis, ...]
    shared_args: tuple[str, ...]
    start: str
    arms: tuple[str, ...]
    order: str = "mirrored Williams"

    @property
    def arm_values(self) -> tuple[str, ...]:
        """Each arm's value(s) in words (a grid's as a/b), in arm order."""
        if not self.axes:
            return tuple("" for _ in self.arms)
        first = list(self.axes[0].values)
        if len(self.axes) == 1:
            return tuple(first)
        second = list(self.axes[1].values)
        return tuple(f"{a}/{b}" for a in first for b in second)


@dataclass(frozen=True)
class StopDesign:
    """The sequential design of a `[stop]` run: plan.json's `stop`, its only home."""

    rule: str
    looks: tuple[int, ...]  # the cycles after which the rule looks
    spending: str
    confidence: tuple[float, ...]  # the 95 % interval's nominal level at each look
    equivalence_confidence: tuple[float, ...]  # the 90 % interval's
    width_pct: float | None = None
    cells: tuple[str, ...] = ()  # the headline cells the rule waits for (empty: every one)


@dataclass(frozen=True)
class HostRulePlan:
    """plan.json's `host_rule`: the thresholds, and whether this run applies them."""

    enabled: bool = True
    applied: bool = True
    why: str = ""  # why it is not applied ("" when it is)
    thresholds: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanDoc:
    """plan.json: the run as founded. A run without plan.json reads as `PlanDoc()`."""

    format: int = FORMAT
    run_id: str = ""
    ladder: str = ""
    kind: str = ""  # "" in a plan written before plan.json named its kind
    ladder_file: str = ""
    question: str = ""
    scope: str = ""
    created_at: str = ""
    invocation: tuple[str, ...] = ()
    harness_version: str = ""
    server_bin: str | None = None
    server_bin_source: str | None = None
    server_version: str | None = None
    model_path: str | None = None
    models: Mapping[str, str] | None = None  # treatment -> model file, when treatments differ
    # treatment -> its own build as resolved (path, sha256, version), when treatments name one
    servers: Mapping[str, Any] | None = None
    note: str = ""
    keyed: Mapping[str, Any] = field(default_factory=dict)  # schema.KEYED_FIELDS' values
    preregistration_sha256: str = ""
    analysis: AnalysisPlan = field(default_factory=AnalysisPlan)
    treatments: tuple[Treatment, ...] = ()
    sweep: SweepPlan | None = None
    stop: StopDesign | None = None
    host_rule: HostRulePlan | None = None
    sessions: tuple[PlannedSession, ...] = ()
    kind_fields: Mapping[str, Any] = field(default_factory=dict)  # the kind's plan_fields()

    @property
    def treatment_keys(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.treatments)

    @property
    def session_names(self) -> tuple[str, ...]:
        return tuple(s.session for s in self.sessions)

    def to_json(self) -> dict[str, Any]:
        """plan.json as the writer writes it (the kind's fields after the treatments)."""
        server: dict[str, Any] = {
            "server_bin": self.server_bin,
            "server_bin_source": self.server_bin_source,
            "server_version": self.server_version,
            "model_path": self.model_path,
            **({"models": dict(self.models)} if self.models is not None else {}),
            **({"servers": dict(self.servers)} if self.servers is not None else {}),
        }
        a = self.analysis
        return {
            FORMAT_FIELD: FORMAT,
            "run_id": self.run_id,
            "ladder": self.ladder,
            "kind": self.kind,
            "ladder_file": self.ladder_file,
            "question": self.question,
            "scope": self.scope,
            "created_at": self.created_at,
            "invocation": list(self.invocation),
            "harness_version": self.harness_version,
            **server,
            "note": self.note,
            "keyed": dict(self.keyed),
            "preregistration_sha256": self.preregistration_sha256,
            "analysis": {
                "baseline": a.baseline,
                **a.kind_settings,
                "curtailment_sentence": a.curtailment_sentence,
                "multiplicity": a.multiplicity,
            },
            "treatments": [
                {"key": t.key, "args": list(t.args), **({"server": t.server} if t.server else {})}
                for t in self.treatments
            ],
            **self.kind_fields,
            **({"sweep": _sweep_json(self.sweep)} if self.sweep else {}),
            **({"stop": stop_json(self.stop)} if self.stop else {}),
            **({"host_rule": host_json(self.host_rule)} if self.host_rule else {}),
            "sessions": [
                {
                    "ordinal": s.ordinal,
                    "treatment": s.treatment,
                    "cycle": s.cycle,
                    "session": s.session,
                    "selected": s.selected,
                    "measurements": s.measurements,
                }
                for s in self.sessions
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str = "plan.json") -> PlanDoc:
        """plan.json parsed (format 0 or 1); RunReadError naming the field that is wrong."""
        f = Fields(raw, where)
        version = check_format(raw, where, f.text("harness_version"))
        analysis = Fields(f.mapping("analysis") or {}, where, "analysis.")
        models = f.mapping("models")
        return cls(
            format=version,
            run_id=f.text("run_id"),
            ladder=f.text("ladder"),
            kind=f.text("kind"),
            ladder_file=f.text("ladder_file"),
            question=f.text("question"),
            scope=f.text("scope"),
            created_at=f.text("created_at"),
            invocation=f.texts("invocation"),
            harness_version=f.text("harness_version"),
            server_bin=f.optional_text("server_bin"),
            server_bin_source=f.optional_text("server_bin_source"),
            server_version=f.optional_text("server_version"),
            model_path=f.optional_text("model_path"),
            models=None if models is None else {str(k): str(v) for k, v in models.items()},
            servers=f.mapping("servers"),
            note=f.text("note"),
            keyed=f.mapping("keyed") or {},
            preregistration_sha256=f.text("preregistration_sha256"),
            analysis=AnalysisPlan(
                analysis.text("baseline"),
                analysis.text("curtailment_sentence"),
                analysis.text("multiplicity"),
                _bounded_settings(analysis),
            ),
            treatments=tuple(
                Treatment(t.text("key"), t.texts("args"), t.optional_text("server"))
                for t in f.objects("treatments")
            ),
            sweep=_sweep(f),
            stop=None if f.mapping("stop") is None else stop_design(raw["stop"], where),
            host_rule=_host_rule(f),
            sessions=tuple(_planned(s) for s in f.objects("sessions")),
            kind_fields={k: v for k, v in raw.items() if k not in PLAN_FIELDS},
        )


def _bounded_settings(analysis: Fields) -> dict[str, Any]:
    """The kind's part of the analysis block; a setting the ladder bounds (`ladder.model.BOUNDS`)
    outside those bounds is no value the tool wrote, and is refused naming the field."""
    settings = {k: v for k, v in analysis.raw.items() if k not in ANALYSIS_FIELDS}
    for name, value in settings.items():
        bound = BOUNDS.get(f"analysis.{name}")
        if bound is not None and not bound.holds(value):
            raise analysis.bad(name, value, f"a value a ladder can set ({bound.fix})")
    return settings


def _planned(s: Fields) -> PlannedSession:
    """One planned session; a cycle outside the ladder's bounds is refused naming the field."""
    session = PlannedSession(
        s.integer("ordinal"),
        s.text("treatment"),
        s.integer("cycle"),
        s.text("session"),
        s.flag("selected", True),
        s.integer("measurements"),
    )
    if "cycle" in s.raw and not BOUNDS["cycles"].holds(session.cycle):
        raise s.bad("cycle", session.cycle, f"a cycle from 1 to {MAX_CYCLES}")
    for name in ("ordinal", "measurements"):
        if getattr(session, name) < 0:
            raise s.bad(name, getattr(session, name), "a whole number of 0 or more")
    return session


def stop_json(d: StopDesign) -> dict[str, Any]:
    return {
        "rule": d.rule,
        "looks": list(d.looks),
        "spending": d.spending,
        "confidence": list(d.confidence),
        "equivalence_confidence": list(d.equivalence_confidence),
        "width_pct": d.width_pct,
        "cells": list(d.cells),
    }


def stop_design(doc: Any, where: str = "plan.json") -> StopDesign:
    """plan.json's `stop` block; RunReadError naming the field when it is malformed."""

    def bad(name: str, value: Any, want: str) -> RunReadError:
        return RunReadError(
            f"{where}: `stop.{name}` is {value!r}, not {want}; restore it from the run"
        )

    if not isinstance(doc, Mapping):
        raise RunReadError(f"{where}: `stop` is {doc!r}, not the object the protocol writes")

    def levels(name: str) -> tuple[float, ...]:
        value = doc.get(name)
        if not isinstance(value, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1 for v in value
        ):
            raise bad(name, value, "a list of levels in (0, 1)")
        return tuple(float(v) for v in value)

    looks = doc.get("looks")
    if (
        not isinstance(looks, list)
        or not looks
        or not all(BOUNDS["cycles"].holds(c) and isinstance(c, int) for c in looks)
        or looks != sorted(set(looks))
    ):
        raise bad("looks", looks, f"rising cycle counts from 1 to {MAX_CYCLES}")
    rule, spending, width = doc.get("rule"), doc.get("spending"), doc.get("width_pct")
    if rule not in STOP_RULES:
        raise bad("rule", rule, f"one of {', '.join(STOP_RULES)}")
    if spending not in SPENDINGS:
        raise bad("spending", spending, f"one of {', '.join(SPENDINGS)}")
    if width is not None and not BOUNDS["stop.width_pct"].holds(width):
        raise bad(
            "width_pct", width, f"a half-width a ladder can set ({BOUNDS['stop.width_pct'].fix})"
        )
    cells = doc.get("cells", [])  # absent in a plan written before cells existed: every one
    if (
        not isinstance(cells, list)
        or len(cells) > MAX_CELLS
        or not all(isinstance(c, str) for c in cells)
    ):
        raise bad("cells", cells, f"a list of at most {MAX_CELLS} cell names")
    design = StopDesign(
        str(rule),
        tuple(looks),
        str(spending),
        levels("confidence"),
        levels("equivalence_confidence"),
        None if width is None else float(width),
        tuple(cells),
    )
    if not len(design.looks) == len(design.confidence) == len(design.equivalence_confidence):
        raise RunReadError(
            f"{where}: `stop.confidence`, `stop.equivalence_confidence` and `stop.looks` differ "
            "in length; restore it from the run"
        )
    return design


def _sweep_json(s: SweepPlan) -> dict[str, Any]:
    return {
        "setting": s.setting,
        "axes": [{"flag": a.flag, "values": list(a.values)} for a in s.axes],
        "shared_args": list(s.shared_args),
        "from": s.start,
        "arms": list(s.arms),
        "order": s.order,
    }


def _sweep(f: Fields) -> SweepPlan | None:
    raw = f.mapping("sweep")
    if raw is None:
        return None
    s = Fields(raw, f.where, "sweep.")
    axes = tuple(SweepAxis(a.text("flag"), a.texts("values")) for a in s.objects("axes"))
    plan = SweepPlan(
        s.text("setting"),
        axes,
        s.texts("shared_args"),
        s.text("from") or "high",
        s.texts("arms"),
        s.text("order") or "mirrored Williams",
    )
    # the arms a [sweep] makes: at most MAX_SWEEP_ARMS, along at most two axes, stepped down
    # from one end; anything else no ladder could have written
    if len(plan.arms) > MAX_SWEEP_ARMS:
        raise s.bad("arms", f"a list of {len(plan.arms)}", f"at most {MAX_SWEEP_ARMS} arms")
    if len(axes) > 2 or plan.start not in ("high", "low"):
        raise s.bad("axes", len(axes), "one or two axes, stepped down from high or low")
    return plan


def host_json(h: HostRulePlan) -> dict[str, Any]:
    return {"enabled": h.enabled, "applied": h.applied, **h.thresholds, "why": h.why}


def _host_rule(f: Fields) -> HostRulePlan | None:
    raw = f.mapping("host_rule")
    if raw is None:
        return None
    h = Fields(raw, f.where, "host_rule.")
    limits = {k: v for k, v in raw.items() if k not in ("enabled", "applied", "why")}
    for name, value in limits.items():
        top = HOST_BOUNDS.get(name, (math.inf, ""))[0]
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= top:
            raise h.bad(name, value, f"a number from 0 to {top:g}")
    return HostRulePlan(h.flag("enabled", True), h.flag("applied", True), h.text("why"), limits)
