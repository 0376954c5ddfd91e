"""A module's file name says which one it is: a name repeats only where the kinds mirror one
another (each kind's `records.py`, `analysis/gates.py`: the same part at the same place in
each kind) or where the kind door's sections name what they re-export (`kindapi/ladder.py`)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "pytest_mtpsweep"


def clashes(paths: list[str]) -> list[list[str]]:
    """Groups of modules sharing a file name that neither rule allows."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        by_name[p.rsplit("/", 1)[-1]].append(p)
    out = []
    for group in by_name.values():
        rest = [p for p in group if not p.startswith("kindapi/")]
        if len(rest) < 2:
            continue
        in_kind = {p.split("/", 2)[2] if p.startswith("kinds/") else None for p in rest}
        if None in in_kind or len(in_kind) > 1:
            out.append(sorted(group))
    return sorted(out)


def test_the_rule_finds_a_clash() -> None:
    paths = [
        "kinds/a/gates.py",
        "kinds/b/gates.py",
        "kindapi/records.py",
        "kinds/a/records.py",
        "ladder/sweep.py",
        "kinds/a/analysis/sweep.py",
        "kinds/a/x/plan.py",
        "kinds/b/y/plan.py",
    ]
    assert clashes(paths) == [
        ["kinds/a/analysis/sweep.py", "ladder/sweep.py"],
        ["kinds/a/x/plan.py", "kinds/b/y/plan.py"],
    ]


def test_no_two_modules_share_a_name_by_accident() -> None:
    paths = [p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py") if p.name != "__init__.py"]
    assert clashes(paths) == [], "rename so that the file name says which one it is"
