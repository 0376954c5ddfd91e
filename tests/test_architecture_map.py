"""ARCHITECTURE.md and its layer pages (docs/architecture/) against the package: every module
has its place, every name exists, the picture draws the layer table, no table row is long."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import layer_of, layer_table

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "pytest_mtpsweep"
ARCH = REPO / "ARCHITECTURE.md"
PAGES = sorted((REPO / "docs" / "architecture").glob("*.md"))
TEXT = "\n".join(p.read_text(encoding="utf-8") for p in [ARCH, *PAGES])
KINDS = ("decode", "authoring", "load")
MAX_ROW = 200  # characters in a table row of these pages


def entries(text: str) -> dict[str, str]:
    """The module map: each bullet `` - `path`: what it holds `` (path relative to the package,
    a folder ending in `/`) -> its line."""
    return {
        m.group(1): m.group(0) for m in re.finditer(r"^- `([\w/]+(?:\.py|/))`: .*$", text, re.M)
    }


def _kind_paragraph(kind: str) -> str | None:
    m = re.search(rf"^\*\*{kind}\*\* \(.*?(?=^\*\*\w+\*\* \(|^#+ |\Z)", TEXT, re.M | re.S)
    return m.group(0) if m else None


def _modules() -> list[Path]:
    return sorted(
        p.relative_to(PKG)
        for p in PKG.rglob("*.py")
        if not (p.name == "__init__.py" and p.parent != PKG)
    )


def unplaced(modules: list[Path], text: str) -> list[str]:
    """The modules the map does not place: a kind's module is named in its kind's paragraph,
    every other one has its own bullet."""
    mapped = entries(text)
    missing = []
    for rel in modules:
        if rel.parts[0] == "kinds" and len(rel.parts) > 2:
            home = _kind_paragraph(rel.parts[1]) or ""
            if not re.search(rf"`(?:[\w/]+/)?{re.escape(rel.stem)}(?:\.py)?[`(: ]", home):
                missing.append(str(rel))
        elif rel.as_posix() not in mapped:
            missing.append(str(rel))
    return missing


def test_every_module_is_in_the_map_where_it_lives() -> None:
    missing = unplaced(_modules(), TEXT)
    assert missing == [], f"the module map (docs/architecture/) misses {missing}"


def test_the_map_check_finds_a_module_that_is_not_there() -> None:
    text = "- `rig/server.py`: spawn\n**load** (the third kind): `frame.py` (tables)\n"
    made_up = [Path("rig/server.py"), Path("rig/no_such.py"), Path("kinds/load/run/gone.py")]
    assert unplaced(made_up, text) == ["rig/no_such.py", "kinds/load/run/gone.py"]


def test_every_module_the_map_names_exists() -> None:
    wrong = [name for name in entries(TEXT) if not (PKG / name).exists()]
    for kind in KINDS:
        text = _kind_paragraph(kind)
        assert text is not None, f"the map has no paragraph for {kind}"
        here = PKG / "kinds" / kind
        for prefix, name in re.findall(r"`([\w]+/)?(\w+)\.py`", text):
            if not (any(here.rglob(f"{name}.py")) or (PKG / prefix / f"{name}.py").exists()):
                wrong.append(f"{kind}: {prefix}{name}.py")
    assert wrong == [], f"the map names modules that are not where it says: {wrong}"


def long_rows(path: Path) -> list[str]:
    return [
        f"{path.name}:{n}: {len(line)} characters"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("|") and len(line) > MAX_ROW
    ]


def test_no_table_row_is_over_200_characters(tmp_path: Path) -> None:
    fake = tmp_path / "fake.md"
    fake.write_text(f"| a | b |\n|---|---|\n| {'x' * MAX_ROW} | y |\n")
    assert long_rows(fake) == [f"fake.md:3: {MAX_ROW + 8} characters"]
    assert [row for p in [ARCH, *PAGES] for row in long_rows(p)] == []


def picture(text: str) -> dict[str, int]:
    """The drawing under "The picture": each name -> the floor it is drawn on (a name drawn on
    a floor's second line belongs to that floor; a line with `|` is an arrow; words in
    parentheses are comments)."""
    block = text.split("## The picture", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    out: dict[str, int] = {}
    floor = 0
    for line in block.splitlines():
        line = re.sub(r"\(.*?\)", "", line)
        if m := re.match(r"\s*(\d+) [a-z ,]+?\s{2,}(.*)$", line):
            floor, names = int(m.group(1)), m.group(2)
        elif line.startswith(" " * 20) and floor and "|" not in line:  # not an arrow
            names = line
        else:
            continue
        out.update((n.strip("/").replace("/", "."), floor) for n in names.split())
    return out


def misdrawn(drawn: dict[str, int], table: dict[str, int]) -> list[str]:
    wrong = [
        f"{name} drawn on {floor}, in layer {layer_of(name, table)}"
        for name, floor in drawn.items()
        if layer_of(name, table) != floor
    ]
    wrong += [  # a package is drawn by its name or by modules of it (`kinds/load`)
        f"{name} (layer {layer}) not drawn"
        for name, layer in table.items()
        if name not in drawn and not any(d.startswith(f"{name}.") for d in drawn)
    ]
    return wrong


def test_the_picture_check_fails_on_a_name_on_the_wrong_floor() -> None:
    text = "## The picture\n```text\n 2 top       b c\n                    d\n 1 base      a\n```\n"
    assert picture(text) == {"b": 2, "c": 2, "d": 2, "a": 1}
    assert misdrawn(picture(text), {"a": 1, "b": 2, "c": 1, "d": 2, "e": 1}) == [
        "c drawn on 2, in layer 1",
        "e (layer 1) not drawn",
    ]


def test_the_picture_draws_the_layer_table() -> None:
    text = ARCH.read_text(encoding="utf-8")
    assert misdrawn(picture(text), layer_table(text)) == []
