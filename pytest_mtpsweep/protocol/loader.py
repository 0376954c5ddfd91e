"""Loading a ladder file: read, override, find its kind's ladder side in the registry,
validate. Above the kind interface, unlike the ladder values (`ladder/`) a kind builds on."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base.errors import LadderError
from ..interface import registry
from ..interface.kind import KindSpec
from ..ladder.attachfields import with_base_url
from ..ladder.load import build, field_errors, merge_overrides, read_toml, validate
from ..ladder.values import Ladder


def load_ladder(
    path: Path,
    overrides: Mapping[str, Any] | None = None,
    said: str = "",
    base_url: str | None = None,
) -> Ladder:
    """Read, override and validate one ladder file.

    `overrides` are dotted ladder fields set on the command line; `said` is how the command
    line said them (`--max-tokens 1`), for the error message; `base_url` (`--base-url`)
    attaches the ladder's one treatment.
    """
    overrides = overrides or {}
    raw = merge_overrides(read_toml(path), overrides)
    if base_url is not None:
        raw = with_base_url(raw, base_url, path)
    said = said or ", ".join(sorted(overrides))
    where: Path | str = f"{path} (with {said} from the command line)" if overrides else path
    spec = kind_spec_of(raw, path)
    raw = {**spec.defaults, **raw, "kind": spec.name}
    problems = field_errors(raw, spec.fields, where)
    if problems:
        raise problems[0]
    if not raw["question"].strip():
        raise LadderError(f"{path}: field 'question' is empty; write the question before the run.")
    if "stop" in raw and registry.kind(spec.name, str(path)).interim is None:
        # before [stop] is parsed: its cycle rules mean nothing to a kind that cannot look
        raise LadderError(
            f"{path}: {spec.name} takes no [stop] (the kind cannot look at its results between "
            "cycles); remove [stop] and set the cycles to run."
        )
    if "sweep" in raw and not registry.kind(spec.name, str(path)).sweeps:
        # before the arms are made: they would become whatever this kind's treatments are
        raise LadderError(
            f"{path}: the {spec.name} kind takes no [sweep] (its arms would become "
            f"{spec.name} treatments nothing sweeps along); remove [sweep] and declare each "
            "setting as its own entry."
        )
    ladder = build(raw, path, spec.treatments(raw, path), where)
    validate(ladder, where)
    settings = spec.settings(ladder, where)  # parsed once: validate and prepare get these
    spec.validate(ladder, settings, where)
    return dataclasses.replace(ladder, kind_settings=settings)


def kind_spec_of(raw: dict[str, Any], path: Path) -> KindSpec:
    """The ladder side of the document's kind (`kind`, else the default kind's)."""
    name = raw.get("kind")
    if name is None:
        name = registry.default_name()
    elif not isinstance(name, str):
        raise LadderError(f"{path}: field 'kind' is {name!r}; write the kind's name as a string.")
    return registry.ladder_spec(name, str(path))
