"""Imports point one way: down the layer table at the top of ARCHITECTURE.md, never up, never
round in a cycle. Every import of the package counts, those inside functions and under
TYPE_CHECKING too; relative imports are resolved. A small AST check of our own, fed a tiny
fake graph first so that it is seen to fail."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "pytest_mtpsweep"
ROOT = "__init__"  # how the table names the package root

Graph = Mapping[str, set[str]]


def modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name (without the package's) -> (file, is a package)."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts) or ROOT] = (path, is_pkg)
    return out


def _resolve(name: str, known: Iterable[str]) -> str | None:
    """The module an import names, or the package holding the name it imports from it."""
    names = set(known)
    while name and name not in names:
        name = name.rpartition(".")[0]
    return name or (ROOT if ROOT in names else None)


def _entered(target: str, importer: str, mods: Mapping[str, tuple[Path, bool]]) -> set[str]:
    """The packages an import of `target` runs the `__init__` of: its enclosing packages, but
    those that enclose the importer too (they are already running when it runs), and those whose
    `__init__` imports nothing (a docstring alone runs nothing). Without them a cycle through a
    package's re-export (a -> pkg/__init__ -> b -> a) went unseen."""
    mine = importer.split(".")
    parts = target.split(".")
    out = set()
    for i in range(1, len(parts)):
        pkg = ".".join(parts[:i])
        if pkg in mods and mods[pkg][1] and parts[:i] != mine[:i] and _runs(mods[pkg][0]):
            out.add(pkg)
    return out


def _runs(init: Path) -> bool:
    """Whether a package's `__init__` imports anything when it is entered."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    return any(
        isinstance(n, ast.Import) or (isinstance(n, ast.ImportFrom) and n.module != "__future__")
        for n in tree.body
    )


def imports(package: Path) -> dict[str, set[str]]:
    """The package's import graph: module -> the package's modules it imports."""
    mods = modules(package)
    top = package.name
    graph: dict[str, set[str]] = {}
    for mod, (path, is_pkg) in mods.items():
        here = [] if mod == ROOT else mod.split(".")
        base_pkg = here if is_pkg else here[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = base_pkg[: len(base_pkg) - (node.level - 1)]
                    stem = ".".join([top, *base, *([node.module] if node.module else [])])
                else:
                    stem = node.module or ""
                # `from . import x` may import a module x or a name x of the package
                targets = [f"{stem}.{a.name}" for a in node.names]
            for target in targets:
                if target != top and not target.startswith(f"{top}."):
                    continue
                inner = target[len(top) + 1 :] if target != top else ""
                resolved = _resolve(inner, mods) if inner else ROOT
                if resolved is not None and resolved != mod:
                    found.add(resolved)
                    found.update(_entered(resolved, mod, mods))
        graph[mod] = found
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def layer_table(text: str) -> dict[str, int]:
    """ARCHITECTURE.md's "Layers" table: module or package prefix -> its layer (1 = bottom)."""
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    out: dict[str, int] = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*(\d+)\b[^|]*\|([^|]*)\|", line)
        if m:
            for name in re.findall(r"`([^`]+)`", m.group(2)):
                out[name.removesuffix("/").replace("/", ".")] = int(m.group(1))
    return out


def layer_of(module: str, table: Mapping[str, int]) -> int | None:
    """The layer of the longest table entry that is the module or a package above it."""
    name = module
    while True:
        if name in table:
            return table[name]
        if "." not in name:
            return table.get(ROOT) if module == ROOT else None
        name = name.rpartition(".")[0]


def upward(graph: Graph, table: Mapping[str, int]) -> list[str]:
    """`a (n) -> b (m)` for each import of a module from a higher layer (m > n)."""
    out = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            la, lb = layer_of(a, table), layer_of(b, table)
            if la is not None and lb is not None and lb > la:
                out.append(f"{a} ({la}) -> {b} ({lb})")
    return out


def unplaced(graph: Graph, table: Mapping[str, int]) -> list[str]:
    return sorted(m for m in graph if layer_of(m, table) is None)


def test_the_check_fails_on_a_cycle_and_an_upward_import() -> None:
    fake = {"low": {"high"}, "high": {"mid"}, "mid": {"high"}, "lone": set()}
    table = {"low": 1, "mid": 2, "high": 2}
    assert cycles(fake) == [["high", "mid"]]
    assert upward(fake, table) == ["low (1) -> high (2)"]
    assert unplaced(fake, table) == ["lone"]
    assert layer_of("rig.server", {"rig": 3, "rig.server": 4}) == 4  # the longest entry wins


def test_the_graph_resolves_relative_lazy_and_type_only_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pytest_mtpsweep"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("from .. import base\n")
    (pkg / "sub" / "lazy.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..base import X\n"
        "def f():\n    from . import other\n    import pytest_mtpsweep.base\n"
    )
    (pkg / "sub" / "other.py").write_text("import os\n")  # not the package's: no edge
    graph = imports(pkg)
    assert graph["sub"] == {"base"}
    assert graph["sub.lazy"] == {"base", "sub.other"}
    assert graph["sub.other"] == set()


def test_an_import_enters_the_packages_around_its_target(tmp_path: Path) -> None:
    """kinds/authoring once had report/sections -> analysis/__init__ (a re-export of io) -> io
    -> report/findings -> report/sections: importing sections first failed at run time."""
    pkg = tmp_path / "pytest_mtpsweep"
    for sub in ("report", "analysis"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "report" / "__init__.py").write_text("")
    (pkg / "analysis" / "__init__.py").write_text("from .io import run\n")
    (pkg / "analysis" / "io.py").write_text("from ..report.findings import F\nrun = 1\n")
    (pkg / "analysis" / "devices.py").write_text("D = 1\n")
    (pkg / "report" / "findings.py").write_text("from .sections import LABELS\nF = 1\n")
    (pkg / "report" / "sections.py").write_text("from ..analysis import devices\nLABELS = 1\n")
    graph = imports(pkg)
    assert graph["report.sections"] == {"analysis.devices", "analysis"}
    assert graph["report.findings"] == {"report.sections"}  # its own package: already entered
    assert cycles(graph) == [["analysis", "analysis.io", "report.findings", "report.sections"]]


def test_the_package_has_no_cycle_and_no_import_up_a_layer() -> None:
    graph = imports(PACKAGE)
    table = layer_table((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    assert not unplaced(graph, table), "modules missing from ARCHITECTURE.md's layer table"
    problems = [*(f"cycle: {' <-> '.join(c)}" for c in cycles(graph)), *upward(graph, table)]
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, "
          f"{len(cycles(graph))} cycles, {len(upward(graph, table))} imports up a layer")  # fmt: skip
    assert not problems, "\n".join(problems)


def folders(graph: Graph) -> dict[str, set[str]]:
    """The graph between the package's top-level folders and modules (what a reader sees)."""

    def top(module: str) -> str:
        return module.split(".")[0]

    out: dict[str, set[str]] = {}
    for a, bs in graph.items():
        out.setdefault(top(a), set()).update(top(b) for b in bs if top(b) != top(a))
    return out


def test_the_folder_check_fails_on_two_folders_that_import_each_other() -> None:
    graph = {"a.x": {"b.y"}, "b.z": {"a.w"}, "a.w": set(), "b.y": set()}
    assert cycles(folders(graph)) == [["a", "b"]]


def test_folders_import_one_way_too() -> None:
    """A folder whose modules sit on two sides of another folder would draw a loop between
    them: each folder (and top-level module) imports only folders below it."""
    assert not cycles(folders(imports(PACKAGE)))


def kind_entry_points() -> dict[str, str]:
    """pyproject.toml's kind entry-point table (name -> target): the shipped kinds, so a new
    one is covered by this file without an edit here."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"]["pytest_mtpsweep.kinds"])


SHIPPED_KINDS = sorted(kind_entry_points())
# the one line where "load" is another tool's word: xdist's --dist mode of that name
OTHER_MEANING = "# -n alone means xdist's `load`"


@pytest.mark.parametrize("kind", SHIPPED_KINDS)
def test_no_module_outside_kinds_names_a_kind(kind: str) -> None:
    """Only a kind's own package says its name; the rest asks the registry."""
    named = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "kinds" not in path.relative_to(PACKAGE).parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if f'"{kind}"' in line and not line.rstrip().endswith(OTHER_MEANING)
    ]
    assert not named, named


@pytest.mark.parametrize("kind", SHIPPED_KINDS)
def test_no_package_outside_kinds_is_a_kind(kind: str) -> None:
    """A kind's code lives under kinds/<name>/: no folder elsewhere carries its name (an
    analysis/<kind>/ folder would be a kind's code outside its plug-in). Modules are not held
    to it: ladder/load.py loads a ladder, and third-party kinds import it by that name."""
    outside = [
        str(path.relative_to(REPO))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "kinds" not in (folders := path.relative_to(PACKAGE).parts[:-1]) and kind in folders
    ]
    assert not outside, outside


@pytest.mark.parametrize("kind", SHIPPED_KINDS)
def test_each_shipped_kind_is_its_own_package_under_kinds(kind: str) -> None:
    assert kind_entry_points()[kind] == f"pytest_mtpsweep.kinds.{kind}:KIND"
    assert (PACKAGE / "kinds" / kind / "__init__.py").is_file()


# ----------------------------------------------------------------- the shared layers' words

# Names a kind's records share with what others already call them: the OpenAI and llama-server
# replies the rig reads (the decode and load records keep the server's names), the shared
# words of the analysis and the preflight (an equivalence verdict, a preflight verdict, a
# headline cell), pytest's `request` fixture; `cached_tokens` is OpenAI usage's own
# (`usage.prompt_tokens_details.cached_tokens`), which the load client reads.
SPOKEN_ELSEWHERE = frozenset(
    {"content", "model", "timings", "predicted_n", "predicted_ms", "prompt_ms", "cache_n",
     "cached_tokens", "verdict", "cell", "request"}
)  # fmt: skip
# Modules below the kinds that still name a kind's record fields, each with why (what a
# decode record keeps whole is made below the kinds); an entry that no longer names a field
# fails the test below, so the list only shrinks.
ALLOWED = {
    "base/schema.py": "the rig's Measurement, which a decode record keeps whole",
    "protocol/rowtable.py": "the row table's columns are decode's session facts",
    "rig/stream.py": "it makes the Measurement a decode record keeps whole",
}


def string_literals(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module but its docstrings, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def own_fields(
    by_kind: Mapping[str, Iterable[str]], protocol: Iterable[str], spoken: Iterable[str] = ()
) -> dict[str, set[str]]:
    """Each kind's record fields that are its alone: not the protocol's, not another kind's
    too, not a word the servers or the shared layers already use."""
    common = set(protocol) | set(spoken)
    fields = {kind: set(names) for kind, names in by_kind.items()}
    return {
        kind: names - common - set().union(*(v for k, v in fields.items() if k != kind))
        for kind, names in fields.items()
    }


def naming_kind_fields(
    root: Path, paths: Iterable[Path], own: Mapping[str, set[str]]
) -> dict[str, list[str]]:
    """module (relative to `root`) -> `line: 'field' (kind)` for each literal that is a kind's
    own record field."""
    out: dict[str, list[str]] = {}
    for path in paths:
        hits = [
            f"{line}: {value!r} ({kind})"
            for line, value in sorted(string_literals(path))
            for kind, names in sorted(own.items())
            if value in names
        ]
        if hits:
            out[path.relative_to(root).as_posix()] = hits
    return out


def below_the_kinds(package: Path, table: Mapping[str, int]) -> list[Path]:
    """The modules every kind shares: each one in a layer below the kinds'."""
    kinds = table["kinds"]
    return [
        path
        for mod, (path, _) in sorted(modules(package).items())
        if (layer := layer_of(mod, table)) is not None and layer < kinds
    ]


def test_the_field_check_fails_on_a_planted_field(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "ok.py").write_text(
        '"""Mentions green_turn in its docstring only."""\nX = {"valid": 1, "model": 2}\n'
    )
    (tmp_path / "analysis" / "leak.py").write_text('def f(r):\n    return r["green_turn"]\n')
    own = own_fields(
        {"authoring": ("valid", "green_turn", "model"), "decode": ("valid", "decode_rate")},
        protocol=("run_id",),
        spoken=("model",),
    )
    assert own == {"authoring": {"green_turn"}, "decode": {"decode_rate"}}  # valid: both kinds'
    paths = sorted((tmp_path / "analysis").glob("*.py"))
    assert naming_kind_fields(tmp_path, paths, own) == {
        "analysis/leak.py": ["2: 'green_turn' (authoring)"]
    }


def _record_fields(module: object) -> set[str]:
    """The names a kind's records module declares: its `*_FIELDS` and `*_COLUMNS` tuples."""
    return {
        name
        for attr, value in vars(module).items()
        if attr.endswith(("_FIELDS", "_COLUMNS")) and isinstance(value, tuple)
        for name in value
        if isinstance(name, str)
    }


def test_the_shared_layers_name_no_kinds_record_field() -> None:
    """A kind's record fields live in `kinds/<name>/records.py`; the modules below the kinds,
    which every kind shares, spell none of them (an import of one is an import up a layer,
    refused above)."""
    import importlib
    import typing

    from pytest_mtpsweep.base import schema

    protocol = _record_fields(schema) | {
        key
        for value in vars(schema).values()
        if typing.is_typeddict(value)
        for key in typing.get_type_hints(value)
    }
    by_kind = {
        kind: _record_fields(importlib.import_module(f"pytest_mtpsweep.kinds.{kind}.records"))
        for kind in SHIPPED_KINDS
    }
    assert all(by_kind.values()), f"a kind declares no record fields: {by_kind}"
    table = layer_table((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    shared = below_the_kinds(PACKAGE, table)
    assert PACKAGE / "analysis" / "stats.py" in shared and PACKAGE / "base" / "schema.py" in shared
    own = own_fields(by_kind, protocol, SPOKEN_ELSEWHERE)
    found = naming_kind_fields(PACKAGE, shared, own)
    named = {m: hits for m, hits in found.items() if m not in ALLOWED}
    assert not named, "\n".join(f"{m}:{h}" for m, hits in named.items() for h in hits)
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"these name no kind's field any more; drop them from ALLOWED: {stale}"
