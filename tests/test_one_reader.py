"""One reader of a run: no module but `state/runread.py` globs a record folder or parses
plan.json or stop.json, and no module looks plan.json's fields up by string: the reader parses
them once into `state/plandoc.PlanDoc` and every caller reads its typed fields (a kind's own
fields, `PlanDoc.kind_fields`, are the kind's to look up).

An AST check of every module of the package (so a comment or a docstring does not count), fed
small sources first so that it is seen to fail on each way of reading around the reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "pytest_mtpsweep"
READER = PACKAGE / "state" / "runread.py"
DOCUMENTS = ("PLAN_FILE", "STOP_FILE")  # the run-wide documents only the reader parses
NAMES = ("plan.json", "stop.json")
GLOBS = {"glob", "rglob", "iglob"}
READS = {"read_text", "read_bytes", "open", "load", "loads", "read_file", "text_lines"}
# what may take plan.json's path without reading it
PATH_ONLY = {"is_file", "exists", "is_dir", "write_json", "write_text", "atomic_write_json"}


def _text(node: ast.AST) -> str:
    """A string constant's value, or an f-string's constant parts ("" for anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) for v in node.values)
    return ""


def _names_plan(node: ast.AST, held: set[str]) -> bool:
    """The expression mentions plan.json or stop.json: `PLAN_FILE`, `STOP_FILE`, the literal,
    or a name assigned from one."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (sub.id in DOCUMENTS or sub.id in held):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in DOCUMENTS:
            return True
        if any(name in _text(sub) for name in NAMES):
            return True
    return False


def _is_plan(node: ast.AST) -> bool:
    """`plan` or `<anything>.plan`: plan.json as a value."""
    return (isinstance(node, ast.Name) and node.id == "plan") or (
        isinstance(node, ast.Attribute) and node.attr == "plan"
    )


def _looks_up_plan(node: ast.AST) -> bool:
    """`plan["x"]`, `plan.get("x")`, `run.plan["x"]`: a field of plan.json by its string."""
    if isinstance(node, ast.Subscript):
        return _is_plan(node.value) and bool(_text(node.slice))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        get = node.func.attr == "get" and _is_plan(node.func.value)
        return get and bool(node.args) and bool(_text(node.args[0]))
    return False


def _plan_path(node: ast.AST, held: set[str]) -> bool:
    """A path to plan.json handed over: `run / PLAN_FILE`, or a name bound to one."""
    if isinstance(node, ast.Name):
        return node.id in held
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _names_plan(node, held)


def _scopes(tree: ast.Module) -> Iterator[list[ast.AST]]:
    """Each scope's own nodes (the module's, each function's), a nested function's left to it."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, functions))]:
        own: list[ast.AST] = []
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop()
            own.append(node)
            if not isinstance(node, functions):
                todo += ast.iter_child_nodes(node)
        yield own


def readings(source: str) -> list[str]:
    """`line: what` for each glob of `*.jsonl` and each read of plan.json in `source`."""
    tree = ast.parse(source)
    found: set[str] = set()
    for nodes in _scopes(tree):
        held: set[str] = set()  # names bound to plan.json's path in this scope
        for node in nodes:
            if isinstance(node, ast.Assign) and _plan_path(node.value, held):
                held |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in nodes:
            if isinstance(node, ast.expr) and _looks_up_plan(node):
                found.add(f"{node.lineno}: looks plan.json's field up by string")
            if not isinstance(node, ast.Call):
                continue
            func, args = node.func, [*node.args, *(k.value for k in node.keywords)]
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in GLOBS and any(".jsonl" in _text(a) for a in args):
                found.add(f"{node.lineno}: globs *.jsonl")
            on = [func.value] if isinstance(func, ast.Attribute) else []
            if name in READS and any(_names_plan(a, held) for a in [*on, *args]):
                found.add(f"{node.lineno}: reads plan.json or stop.json")
            elif name not in PATH_ONLY and any(_plan_path(a, held) for a in args):
                found.add(f"{node.lineno}: hands plan.json's path to {name}()")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


@pytest.mark.parametrize(
    "source",
    [
        'for p in sorted((run / "records").glob("*.jsonl")): pass',
        'any(run.rglob(f"*{x}.jsonl"))',
        "json.loads((run / schema.PLAN_FILE).read_text())",
        'json.load(open(run / "plan.json"))',
        "def f(run):\n    path = run / PLAN_FILE\n    return json.loads(path.read_bytes())",
        "def f(run):\n    path = run / PLAN_FILE\n    return rl.read_file(path, 'plan.json')",
        "plan = _json(run_dir / schema.PLAN_FILE)",
        "def f(run):\n    plan_path = run / PLAN_FILE\n    return _read_json(plan_path, 'plan')",
        "doc = json.loads((run_dir / schema.STOP_FILE).read_text())",
        'json.load(open(run / "stop.json"))',
        'base = plan.get("analysis", {}).get("baseline")',
        'kind = RunReader(run).plan["kind"]',
        'keys = [t["key"] for t in run.plan.get("treatments") or []]',
    ],
)
def test_the_check_finds_each_way_round_the_reader(source: str) -> None:
    assert readings(source), source


@pytest.mark.parametrize(
    "source",
    [
        "def f(run):\n    return RunReader(run).plan",
        "if not RunReader(run).has(schema.PLAN_FILE): raise Error(f'no {PLAN_FILE}')",
        'sorted(d.glob("*.toml"))',
        '"""a docstring that globs *.jsonl and reads plan.json"""',
        "run_dir.write_json(schema.PLAN_FILE, doc)",
        "kind = RunReader(run).plan.kind",  # the typed field
        'load = plan.kind_fields.get("load") or {}',  # the kind's own part, the kind's to parse
        "last = plan[-1]",  # a list of session slots named plan: no field by its string
        # a name bound to plan.json in one function is not the same name in another
        "def f(run):\n    path = run / PLAN_FILE\n\ndef g(path):\n    return path.read_text()",
    ],
)
def test_what_is_not_reading_around_the_reader_passes(source: str) -> None:
    assert readings(source) == [], source


def test_no_module_but_the_reader_globs_records_or_parses_the_plan() -> None:
    assert READER.is_file()  # the one file the rule exempts is where it says
    found = [
        f"{path.relative_to(REPO)}:{where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != READER
        for where in readings(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "read the run through state/runread.RunReader and its typed documents instead:\n"
        + "\n".join(found)
    )
