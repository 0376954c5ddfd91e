"""ARCHITECTURE.md's module map against the package: every module has its place, every name exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "pytest_mtpsweep"
TEXT = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
FOLDERS = ("ladder", "rig", "preflight", "protocol", "state", "analysis", "report")


def _row(first_cell: str) -> str | None:
    m = re.search(rf"^\| `{re.escape(first_cell)}` \|.*$", TEXT, re.M)
    return m.group(0) if m else None


def _kind_paragraph(kind: str) -> str | None:
    m = re.search(rf"^\*\*{kind}\*\* \(.*?(?=^\*\*\w+\*\* \(|^## )", TEXT, re.M | re.S)
    return m.group(0) if m else None


def _home(rel: Path) -> str | None:
    """The text that places a module: its row, its folder's row, or its kind's paragraph."""
    top = rel.parts[0]
    if len(rel.parts) == 1:
        return _row(top)
    if top == "kinds":
        return _kind_paragraph(rel.parts[1]) if len(rel.parts) > 2 else TEXT
    return _row(f"{top}/")


def _modules() -> list[Path]:
    return sorted(
        p.relative_to(PKG)
        for p in PKG.rglob("*.py")
        if not (p.name == "__init__.py" and p.parent != PKG)
    )


def test_every_module_is_in_the_map_where_it_lives() -> None:
    missing = []
    for rel in _modules():
        home = _home(rel)
        if home is None or not re.search(
            rf"`(?:[\w/]+/)?{re.escape(rel.stem)}(?:\.py)?[`(: ]", home
        ):
            missing.append(str(rel))
    assert missing == [], f"ARCHITECTURE.md's module map misses (or misplaces) {missing}"


def test_every_module_the_map_names_exists_in_its_folder() -> None:
    homes: dict[str, list[Path]] = {f"{f}/": [PKG / f] for f in FOLDERS}
    for kind in ("decode", "authoring", "load"):
        homes[kind] = [PKG / "kinds" / kind, PKG / "kinds" / kind / "analysis"]
    wrong = []
    for key, dirs in homes.items():
        text = _kind_paragraph(key) if key in ("decode", "authoring", "load") else _row(key)
        assert text is not None, f"ARCHITECTURE.md has no place for {key}"
        for prefix, name in re.findall(r"`([\w]+/)?(\w+)\.py`", text):
            if prefix in homes and prefix != key:  # another folder's module, named with its folder
                found = (PKG / prefix / f"{name}.py").exists()
            else:
                found = any(any(d.rglob(f"{name}.py")) for d in dirs)
            if not found:
                wrong.append(f"{key} {prefix}{name}.py")
    assert wrong == [], f"ARCHITECTURE.md names modules that are not where it says: {wrong}"


def test_the_map_check_finds_a_module_that_is_not_there() -> None:
    # The check itself can fail: a made-up module is not placed by the map.
    assert _home(Path("rig/no_such_module.py")) is not None
    home = _home(Path("rig/no_such_module.py")) or ""
    assert not re.search(r"`no_such_module(?:\.py)?[`(: ]", home)
