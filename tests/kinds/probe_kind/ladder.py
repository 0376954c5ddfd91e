"""A probe ladder's own fields: `[[targets]]` (each attached by `base_url`), the `path` each
request asks for, and `requests` per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mtpsweep.kindapi import KindSpec, LadderError
from pytest_mtpsweep.kindapi.ladder import Ladder, Spec, Treatment, parse_treatments

FIELDS: Spec = {
    "model": (dict, False),  # nothing is launched: no model, no server of ours
    "server": (dict, False),
    "targets": (list, True),
    "path": (str, False),
    "requests": (int, False),
}
DEFAULT_PATH = "/health"
DEFAULT_REQUESTS = 3


def treatments(raw: dict[str, Any], path: Path) -> tuple[Treatment, ...]:
    targets = parse_treatments(raw["targets"], "targets", path)
    local = [t.key for t in targets if not t.attached]
    if local:
        raise LadderError(
            f"{path}: targets {', '.join(local)} have no base_url; a probe target is a server "
            "that already runs: give each one its base_url."
        )
    return targets


@dataclass(frozen=True)
class ProbeSettings:
    """The probe's own fields, parsed once by the loader and handed to `prepare`."""

    path: str = DEFAULT_PATH
    requests: int = DEFAULT_REQUESTS


def settings(ladder: Ladder, where: Path | str) -> ProbeSettings:
    f = ladder.kind_fields
    return ProbeSettings(str(f.get("path", DEFAULT_PATH)), int(f.get("requests", DEFAULT_REQUESTS)))


def validate(ladder: Ladder, s: ProbeSettings, where: Path | str) -> None:
    if ladder.baseline not in ladder.treatment_keys:
        raise LadderError(
            f"{where}: field 'baseline' is {ladder.baseline!r}, which is not a target "
            f"({', '.join(ladder.treatment_keys)}); name one of them."
        )
    if s.requests < 1:
        raise LadderError(f"{where}: field 'requests' is {s.requests}; use 1 or more.")
    if not s.path.startswith("/"):
        raise LadderError(f"{where}: field 'path' must start with /, e.g. /health.")


SPEC = KindSpec("probe", FIELDS, treatments, validate, settings=settings)
