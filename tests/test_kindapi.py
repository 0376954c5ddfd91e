"""The front door: a kind imports the package through `pytest_mtpsweep.kindapi` alone, and each
part its declaration names as `"module:attribute"` is handed there to `Kind.check_parts` under
TYPE_CHECKING, so mypy checks it. Each check is fed a tiny fake first, so that it is seen to fail."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mtpsweep.interface.kind import PARTS, Kind
from tests.kinds import probe

REPO = Path(__file__).resolve().parent.parent
TOP = "pytest_mtpsweep"
DOOR = f"{TOP}.kindapi"


def kind_packages() -> list[tuple[Path, str]]:
    """(folder, dotted name) of every kind held to the door: the shipped ones and the probe
    kind, the `mtpsweep new-kind` template a third party's kind starts from."""
    shipped = sorted(p for p in (REPO / TOP / "kinds").iterdir() if (p / "__init__.py").is_file())
    return [*((p, f"{TOP}.kinds.{p.name}") for p in shipped), (probe.package_dir(), probe.PACKAGE)]


def imported(path: Path, module: str, is_pkg: bool) -> Iterator[tuple[int, str]]:
    """(line, absolute module) for every import in a file, those inside functions and under
    TYPE_CHECKING included; `from X import y` yields `X.y` (y may be a module of X)."""
    here = module.split(".") if is_pkg else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - (node.level - 1)] if node.level else []
            stem = ".".join([*base, *([node.module] if node.module else [])])
            yield from ((node.lineno, f"{stem}.{a.name}") for a in node.names)


def past_the_door(folder: Path, package: str) -> list[str]:
    """`file:line: module` for each import of the package that is not the front door (a kind's
    own modules are its own; another kind's are not)."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).with_suffix("").parts
        is_pkg = rel[-1] == "__init__"
        module = ".".join([package, *(rel[:-1] if is_pkg else rel)])
        for line, target in imported(path, module, is_pkg):
            ours = target == TOP or target.startswith(f"{TOP}.")
            allowed = target.startswith((f"{DOOR}.", f"{package}.")) or target == package
            if ours and not allowed:
                out.append(f"{path.relative_to(folder.parent)}:{line}: {target}")
    return out


def test_the_door_check_fails_on_a_kind_that_imports_a_private_module(tmp_path: Path) -> None:
    kind = tmp_path / "fake_kind"
    (kind / "run").mkdir(parents=True)
    (kind / "__init__.py").write_text("from pytest_mtpsweep.kindapi import Kind\n")
    (kind / "run" / "__init__.py").write_text("from ..ladder import SPEC\n")  # its own: fine
    (kind / "ladder.py").write_text("from pytest_mtpsweep.kindapi.ladder import Spec\n")
    (kind / "run" / "measure.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_mtpsweep.state.live import LiveSession\n"
        "def f():\n    from pytest_mtpsweep import schema\n"
    )
    assert past_the_door(kind, "fake_kind") == [
        "fake_kind/run/measure.py:3: pytest_mtpsweep.state.live.LiveSession",
        "fake_kind/run/measure.py:5: pytest_mtpsweep.schema",
    ]
    # relative imports are resolved: a shipped kind's `from ...state import live` counts too
    shipped = tmp_path / "pkg" / "x"
    shipped.mkdir(parents=True)
    (shipped / "__init__.py").write_text("from ...state import live\nfrom ...kindapi import Kind\n")
    assert past_the_door(shipped, f"{TOP}.kinds.x") == [f"x/__init__.py:1: {TOP}.state.live"]


# ids by package: the probe kind is rendered into a temp folder per process, and xdist's
# workers must collect the same ids
@pytest.mark.parametrize(
    ("folder", "package"), [pytest.param(f, p, id=p) for f, p in kind_packages()]
)
def test_every_kind_imports_the_package_through_the_door_alone(folder: Path, package: str) -> None:
    assert past_the_door(folder, package) == []


def checked_parts(path: Path, package: str) -> dict[str, str]:
    """part -> `module:attribute` the declaration hands to `Kind.check_parts(part=attribute)`
    under TYPE_CHECKING, the attribute imported there (relative imports resolved)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    blocks = [n.body for n in body if isinstance(n, ast.If)]
    origin: dict[str, str] = {}
    out: dict[str, str] = {}
    for node in (n for block in blocks for n in block):
        if isinstance(node, ast.ImportFrom) and node.module:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            module = ".".join([*(base if node.level else []), node.module])
            origin.update({a.asname or a.name: f"{module}:{a.name}" for a in node.names})
        elif (
            isinstance(node, ast.Expr)
            and isinstance(call := node.value, ast.Call)
            and ast.unparse(call.func) == "Kind.check_parts"
        ):
            for kw in call.keywords:
                if kw.arg and isinstance(kw.value, ast.Name):
                    out[kw.arg] = origin.get(kw.value.id, f"?:{kw.value.id}")
    return out


def unchecked_parts(kind: Kind, checked: dict[str, str]) -> list[str]:
    """`part: module:attr` for each part the kind names (the ladder's `KindSpec` is a value,
    typed where it is made) that its declaration does not hand to `Kind.check_parts`."""
    out = []
    for part in PARTS:
        ref = getattr(kind, part)
        if part == "ladder" or ref is None:
            continue
        if checked.get(part) != ref:
            out.append(f"{part}: {ref} (checked: {checked.get(part)})")
    return out


def test_the_part_check_fails_on_a_part_not_handed_to_mypy(tmp_path: Path) -> None:
    mod = tmp_path / "decl.py"
    mod.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .parts import prepare, other\n"
        "    Kind.check_parts(run=prepare, interim=other)\n"
    )
    kind = Kind(
        "x", "x", ladder="m:SPEC", run="p.parts:prepare", interim="p.parts:interim", plan="p.x:gone"
    )
    assert unchecked_parts(kind, checked_parts(mod, "p")) == [
        "plan: p.x:gone (checked: None)",
        "interim: p.parts:interim (checked: p.parts:other)",
    ]


@pytest.mark.parametrize("package", [p for _, p in kind_packages()])
def test_every_part_a_kind_names_is_checked_by_mypy(package: str) -> None:
    kind = importlib.import_module(package).KIND
    declaration = Path(str(importlib.import_module(package).__file__))
    assert unchecked_parts(kind, checked_parts(declaration, package)) == []


MODULES = ("", ".ladder", ".run", ".rig", ".records", ".analysis", ".report")
PAGE = REPO / "docs" / "architecture" / "10-front-door.md"
# The door's size, every module's __all__ together: 248 before issue 52, which asks for well
# under 100. A ceiling, not a target: lower it as names leave, never raise it without a reason.
MAX_NAMES = 83


def door_names() -> dict[str, list[str]]:
    """Each door module (`kindapi`, `kindapi.ladder`, ...) -> its `__all__`."""
    return {f"kindapi{m}": list(importlib.import_module(f"{DOOR}{m}").__all__) for m in MODULES}


def listed(page: str) -> dict[str, list[str]]:
    """The page's section "The door's names": `### `module`` headings, each with its bullets
    `` - `name`: what it is ``."""
    section = page.split("## The door's names", 1)[-1].split("\n## ", 1)[0]
    out: dict[str, list[str]] = {}
    module = None
    for line in section.splitlines():
        if m := re.match(r"^### `([\w.]+)`", line):
            module = m.group(1)
            out[module] = []
        elif (m := re.match(r"^- `(\w+)`: \S", line)) and module is not None:
            out[module].append(m.group(1))
    return out


def test_the_page_check_fails_on_a_name_missing_or_without_a_line() -> None:
    page = (
        "# x\n## The door's names\n### `kindapi`: root\n- `Kind`: a kind\n- `Gate`:\n"
        "### `kindapi.rig`: rig\n- `fetch`: one read\n## Adding a kind\n- `Other`: no\n"
    )
    assert listed(page) == {"kindapi": ["Kind"], "kindapi.rig": ["fetch"]}


def test_the_front_door_page_lists_exactly_the_doors_names() -> None:
    names = door_names()
    on_page = listed(PAGE.read_text(encoding="utf-8"))
    assert {m: sorted(v) for m, v in on_page.items()} == {m: sorted(v) for m, v in names.items()}
    assert all(len(v) == len(set(v)) for v in on_page.values()), "a name listed twice"


def test_the_door_stays_under_its_ceiling() -> None:
    total = sum(len(v) for v in door_names().values())
    assert total <= MAX_NAMES, f"kindapi exports {total} names, more than {MAX_NAMES}"


def test_every_name_the_door_lists_is_there() -> None:
    for name in MODULES:
        door = importlib.import_module(f"{DOOR}{name}")
        missing = [n for n in door.__all__ if not hasattr(door, n)]
        assert missing == [], f"{DOOR}{name} lists {missing}"
