"""A probe ladder's own fields: `[[targets]]` (each attached by `base_url`), the `path` each
request asks for, and `requests` per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_mtpsweep.errors import LadderError
from pytest_mtpsweep.kindapi import KindSpec
from pytest_mtpsweep.ladder.fields import Spec
from pytest_mtpsweep.ladder.load import parse_treatments
from pytest_mtpsweep.ladder.model import Ladder, Treatment

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


def validate(ladder: Ladder, where: Path | str) -> None:
    if ladder.baseline not in ladder.treatment_keys:
        raise LadderError(
            f"{where}: field 'baseline' is {ladder.baseline!r}, which is not a target "
            f"({', '.join(ladder.treatment_keys)}); name one of them."
        )
    requests = ladder.kind_fields.get("requests", DEFAULT_REQUESTS)
    if requests < 1:
        raise LadderError(f"{where}: field 'requests' is {requests}; use 1 or more.")
    if not str(ladder.kind_fields.get("path", DEFAULT_PATH)).startswith("/"):
        raise LadderError(f"{where}: field 'path' must start with /, e.g. /health.")


SPEC = KindSpec("probe", FIELDS, treatments, validate)
