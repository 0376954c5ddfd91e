"""The run's documents as frozen values, each with the `format` its writer stamped on it:
plan.json (`plandoc.PlanDoc`), a session file (`SessionDoc`) and stop.json (`StopDoc`).

The run directory's one writer writes each document from its value (`to_json`, which stamps
`FORMAT`); the one reader (`runread.RunReader`) parses each once (`from_json`). The shared part
of each is typed; what a kind adds is a typed extension point, a mapping the kind parses itself:
`PlanDoc.kind_fields` (its `plan_fields()`), `AnalysisPlan.kind_settings` (its part of the
analysis block), `SessionDoc.facts` (everything the session file holds).

Formats. 0: what pytest-mtpsweep 0.x wrote before documents carried a `format` (no field); it
is read as format 1 (the same fields; its stop.json repeated the stop design, which is now read
from plan.json only). 1: the `format` field; the stop design in plan.json's `stop` alone. A
document of a later format than `FORMAT` is refused in one line naming both versions.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .._version import __version__
from ..base.errors import RunReadError
from ..ladder.values import BOUNDS

FORMAT = 1  # the run documents' format this version writes and reads (see the module)
FORMAT_FIELD = "format"


class Fields:
    """One JSON object's fields read by type; a wrong type is a RunReadError naming the field."""

    def __init__(self, raw: Mapping[str, Any], where: str, prefix: str = "") -> None:
        self.raw, self.where, self.prefix = raw, where, prefix

    def bad(self, name: str, value: Any, want: str) -> RunReadError:
        return RunReadError(
            f"{self.where}: `{self.prefix}{name}` is {value!r}, not {want}; restore it from the run"
        )

    def text(self, name: str) -> str:
        value = self.raw.get(name)
        if value is None:
            return ""
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.bad(name, value, "text")
        return str(value)

    def optional_text(self, name: str) -> str | None:
        return None if self.raw.get(name) is None else self.text(name)

    def integer(self, name: str, default: int = 0) -> int:
        value = self.raw.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.bad(name, value, "a whole number")
        return value

    def cycle(self, name: str, low: int = 1) -> int:
        """A cycle count or a look's number: within what a ladder can run (`BOUNDS["cycles"]`)."""
        value = self.integer(name, low)
        if not low <= value <= BOUNDS["cycles"].high:
            raise self.bad(name, value, f"a whole number from {low} to {BOUNDS['cycles'].high:g}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise self.bad(name, value, "true or false")
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        value = self.raw.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(name, value, "a list of text")
        return tuple(value)

    def mapping(self, name: str) -> Mapping[str, Any] | None:
        value = self.raw.get(name)
        if value is not None and not isinstance(value, Mapping):
            raise self.bad(name, value, "an object")
        return None if value is None else dict(value)

    def objects(self, name: str) -> list[Fields]:
        value = self.raw.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self.bad(name, value, "a list of objects")
        return [Fields(v, self.where, f"{self.prefix}{name}[{i}].") for i, v in enumerate(value)]


def check_format(raw: Mapping[str, Any], where: str, wrote: str = "") -> int:
    """The document's format (0 when it has none: the previous release's); a later format than
    this version reads, or one that is no format at all, is refused in one line."""
    value = raw.get(FORMAT_FIELD, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RunReadError(
            f"{where}: `format` is {value!r}, not a format number; restore it from the run"
        )
    if value > FORMAT:
        by = f" (it was written by pytest-mtpsweep {wrote})" if wrote else ""
        raise RunReadError(
            f"{where} is run-document format {value}{by}, and pytest-mtpsweep {__version__} "
            f"reads format {FORMAT} at most; analyse it with pytest-mtpsweep "
            f"{wrote or 'the version that wrote it'} or later."
        )
    return value


@dataclass(frozen=True)
class SessionDoc:
    """sessions/<session>.json: the protocol's identity fields typed, the rest as written."""

    session: str  # the file's stem: 01_none_c1
    format: int = FORMAT
    run_id: str = ""
    preregistration_sha256: str = ""
    ordinal: int = 0
    treatment: str = ""
    cycle: int = 0
    complete: bool = True  # False: --resume runs it again (a kind's own cases left)
    host_spoiled: str = ""  # why the host rule kept a spoiled session ("" when it did not)
    # everything the file holds, `session` first (the kind's fields, the protocol's facts)
    facts: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, session: str, raw: Mapping[str, Any], where: str) -> SessionDoc:
        """A session file parsed; RunReadError naming the field that is wrong."""
        f = Fields(raw, where)
        return cls(
            session,
            check_format(raw, where),
            f.text("run_id"),
            f.text("preregistration_sha256"),
            f.integer("ordinal"),
            f.text("treatment"),
            f.cycle("cycle", 0),
            f.flag("complete", True),
            f.text("host_spoiled"),
            {"session": session, **raw},
        )


@dataclass(frozen=True)
class LookCell:
    """A headline cell as a look saw it."""

    cell: str
    decision: str
    half_width_pct: float | None = None


@dataclass(frozen=True)
class Look:
    """One look of the stop rule: when, whether the rule was met, why, and the cells."""

    look: int
    after_cycle: int
    at: str = ""
    met: bool = False
    why: str = ""
    cells: tuple[LookCell, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "cells": [asdict(c) for c in self.cells]}


@dataclass(frozen=True)
class DroppedArm:
    """A sweep's arm that left at a look, and why."""

    arm: str
    look: int
    after_cycle: int
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StopDoc:
    """stop.json: every look a `[stop]` run took and the one that stopped it. The design is
    plan.json's `stop` (`PlanDoc.stop`), never repeated here."""

    format: int = FORMAT
    looks: tuple[Look, ...] = ()
    stopped_at: int | None = None  # the look that met the rule (None: none did)
    dropped: tuple[DroppedArm, ...] | None = None  # a sweep's arms that left (None: no sweep)

    def to_json(self) -> dict[str, Any]:
        return {
            FORMAT_FIELD: FORMAT,
            "looks": [e.to_json() for e in self.looks],
            "stopped_at": self.stopped_at,
            **(
                {"dropped": [d.to_json() for d in self.dropped]} if self.dropped is not None else {}
            ),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str = "stop.json") -> StopDoc:
        """stop.json parsed (format 0's `design` is passed over: plan.json holds it)."""
        f = Fields(raw, where)
        version = check_format(raw, where)
        stopped = raw.get("stopped_at")
        if stopped is not None:
            stopped = f.cycle("stopped_at")
        top = int(BOUNDS["cycles"].high)  # a look at most after every cycle
        for name in ("looks", "dropped"):
            if isinstance(raw.get(name), list) and len(raw[name]) > top:
                raise f.bad(name, f"a list of {len(raw[name])}", f"a list of at most {top}")
        looks = tuple(
            Look(
                e.cycle("look"),
                e.cycle("after_cycle"),
                e.text("at"),
                e.flag("met"),
                e.text("why"),
                tuple(_cell(c) for c in e.objects("cells")),
            )
            for e in f.objects("looks")
        )
        dropped = (
            tuple(
                DroppedArm(
                    d.text("arm"), d.cycle("look", 0), d.cycle("after_cycle", 0), d.text("why")
                )
                for d in f.objects("dropped")
            )
            if "dropped" in raw
            else None
        )
        return cls(version, looks, stopped, dropped)


def _cell(c: Fields) -> LookCell:
    width = c.raw.get("half_width_pct")
    if width is not None and (
        not isinstance(width, int | float)
        or isinstance(width, bool)
        or not 0 <= width <= sys.float_info.max
    ):
        raise c.bad("half_width_pct", width, "a finite number of 0 or more")
    return LookCell(c.text("cell"), c.text("decision"), None if width is None else float(width))
