"""Preflight items: one row each (expected, observed, verdict), their table, JSON and waivers.

Comparison with an earlier run (``against``) compares each item's stable part: the whole
observed value for most items; for ``ram`` and ``disk`` only the total size and whether the
floor was met; for ``gpu`` only the driver, device names, total memory and whether other compute
processes were present; ``run_dir`` is never compared (``same_as_against`` stays None), since
every run has a directory of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from ..base import textwidth
from ..base.errors import PreflightError
from ..base.fileio import BadFile, BadJson, load_json_bounded

PASS = "pass"
FAIL = "fail"
SKIP = "skip"
WAIVED = "waived"
VERDICTS = frozenset({PASS, FAIL, SKIP, WAIVED})

_NEVER_COMPARED = frozenset({"run_dir"})


@dataclass(frozen=True)
class PreflightItem:
    """One row of the preflight table.

    ``stable`` is the part of ``observed`` compared with an earlier run (None: all of it).
    """

    # the verdicts a kind's rows give, as `PreflightItem.PASS` (the module's names, too)
    PASS: ClassVar[str] = PASS
    FAIL: ClassVar[str] = FAIL

    name: str
    expected: str
    observed: str
    verdict: str
    fix: str = ""
    same_as_against: bool | None = None
    stable: str | None = None

    @classmethod
    def prompt_set(cls, digest: str) -> PreflightItem:
        """The prompt set's digest, recorded for comparison."""
        observed = f"digest {digest}" if digest else "no digest"
        return make_item("prompt_set", "recorded", observed, PASS)


def failures(items: Iterable[PreflightItem]) -> list[PreflightItem]:
    """Items that stop the run (waived ones do not)."""
    return [item for item in items if item.verdict == FAIL]


def compare_items(
    items: Sequence[PreflightItem], earlier: Sequence[PreflightItem]
) -> list[PreflightItem]:
    """Set ``same_as_against`` on each item from the earlier run's item of the same name."""
    by_name = {item.name: item for item in earlier}
    return [replace(item, same_as_against=_same(item, by_name.get(item.name))) for item in items]


def _same(item: PreflightItem, old: PreflightItem | None) -> bool | None:
    if item.name in _NEVER_COMPARED:
        return None
    if old is None:
        return False
    return _stable_part(item) == _stable_part(old)


def _stable_part(item: PreflightItem) -> str:
    return item.observed if item.stable is None else item.stable


def check_waivers(waive: frozenset[str], names: Sequence[str]) -> None:
    unknown = sorted(waive - set(names))
    if unknown:
        raise PreflightError(
            f"--waive names no preflight item: {', '.join(unknown)}; "
            f"use one of: {', '.join(names)}."
        )


def waived(item: PreflightItem, waive: frozenset[str]) -> PreflightItem:
    if item.verdict == FAIL and item.name in waive:
        return replace(item, verdict=WAIVED)
    return item


def make_item(name: str, expected: str, observed: str, verdict: str, **kw: Any) -> PreflightItem:
    # Table cells are one line; subprocess output may carry newlines.
    return PreflightItem(name, expected, one_line(observed), verdict, **kw)


def one_line(text: str) -> str:
    return " / ".join(part.strip() for part in text.strip().splitlines() if part.strip())


# --------------------------------------------------------------------------- output


def render_table(
    items: Sequence[PreflightItem], *, against_label: str = "against", width: int | None = None
) -> str:
    """Aligned plain-text table; a "same as" column appears when items were compared.

    Fitted to `width` columns if given: long cells (paths, digests) are shortened in the
    middle; preflight.json keeps every value whole."""
    header = ["item", "expected", "observed", "verdict"]
    compared = any(item.same_as_against is not None for item in items)
    if compared:
        header.append(f"same as {against_label}")
    rows = [header]
    for item in items:
        row = [item.name, item.expected, item.observed, item.verdict]
        if compared:
            row.append(_yes_no(item.same_as_against))
        rows.append(row)
    # what was expected gives way first, then the item name, then what was observed
    return textwidth.render(rows, width=width, shrinkable={1: 28, 0: 24, 2: 32}, rule=True)


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def render_fixes(items: Sequence[PreflightItem]) -> str:
    """One line per failing item: its fix, and how to waive it instead."""
    return "\n".join(
        f"{item.name}: {item.fix} (Or waive it: --waive {item.name}.)" for item in failures(items)
    )


def write_preflight_json(items: Sequence[PreflightItem], path: Path) -> None:
    """Write the items as a JSON list; refuses to replace an existing file."""
    text = json.dumps([asdict(item) for item in items], indent=2) + "\n"
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise PreflightError(
            f"{path} already exists; a run's preflight record is never overwritten, "
            "so start a new run directory."
        ) from None


def load_preflight_json(path: Path) -> list[PreflightItem]:
    """Read a preflight.json written by ``write_preflight_json``."""
    try:
        data = load_json_bounded(path)
    except BadJson as exc:
        raise PreflightError(f"{path} {exc}; name another run.") from None
    except BadFile as exc:
        raise PreflightError(
            f"cannot read {path} ({exc}); name a run directory that holds preflight.json."
        ) from None
    except ValueError as exc:
        raise PreflightError(f"{path} is not valid JSON ({exc}); name another run.") from None
    if not isinstance(data, list):
        raise PreflightError(f"{path} holds no list of items; name another run's directory.")
    return [_item_from_json(entry, path) for entry in data]


def _item_from_json(entry: object, path: Path) -> PreflightItem:
    keys = ("name", "expected", "observed", "verdict")
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in keys):
        raise PreflightError(
            f"{path} has an item without string {', '.join(keys)}; name another run's directory."
        )
    if entry["verdict"] not in VERDICTS:
        raise PreflightError(
            f"{path} item {entry['name']} has unknown verdict {entry['verdict']!r}; "
            "name another run's directory."
        )
    same = entry.get("same_as_against")
    stable = entry.get("stable")
    return PreflightItem(
        name=entry["name"],
        expected=entry["expected"],
        observed=entry["observed"],
        verdict=entry["verdict"],
        fix=str(entry.get("fix") or ""),
        same_as_against=same if isinstance(same, bool) else None,
        stable=stable if isinstance(stable, str) else None,
    )


def nearest_existing(path: Path) -> Path:
    """The path itself or its closest existing ancestor."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
