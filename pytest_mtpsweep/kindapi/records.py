"""The door's records: the run directory's names (`schema`, whole: its file names, the
session identity and keyed fields, the rig's `Measurement`), record lines read by one rule
(`recordlines`, whole: the field types a kind declares its lines with), the run reader and
atomic files."""

from __future__ import annotations

from ..base import recordlines, schema
from ..base.fileio import atomic_write_json, atomic_write_text, cache_dir
from ..base.redact import redact_url
from ..state.plandoc import PlanDoc
from ..state.rundocs import DroppedArm
from ..state.runread import RunReader

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # its names (`schema`, `recordlines`: whole modules, read as `schema.RECORDS_DIR`)
    "schema",
    "recordlines",
    # writing
    "atomic_write_json",
    "atomic_write_text",
    "cache_dir",
    "redact_url",
    # reading
    "RunReader",
    "PlanDoc",
    "DroppedArm",
]
