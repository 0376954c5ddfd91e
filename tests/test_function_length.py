"""No function in the package runs over 80 lines (decorators and docstring included): a longer
one is split into named steps. An AST check, fed a small source first so it is seen to fail."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_mtpsweep"
MAX_LINES = 80


def long_functions(source: str, where: str = "<source>") -> list[str]:
    """`where:line name (N lines)` for each function or method over MAX_LINES lines."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        lines = (node.end_lineno or node.lineno) - first + 1
        if lines > MAX_LINES:
            out.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return out


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines))
    return f"{indent}def {name}():\n{body}"


@pytest.mark.parametrize("indent", ["", "    "])
def test_the_check_sees_a_long_function_and_passes_a_short_one(indent: str) -> None:
    head = "class C:\n" if indent else ""
    assert long_functions(head + _function("fits", MAX_LINES - 1, indent)) == []
    assert long_functions(head + _function("over", MAX_LINES, indent)) == [
        f"<source>:{1 + bool(indent)} over ({MAX_LINES + 1} lines)"
    ]


def test_decorators_count() -> None:
    source = "@a\n@b\n" + _function("f", MAX_LINES - 2)
    assert long_functions(source) == ["<source>:3 f (81 lines)"]


def test_no_function_in_the_package_is_over_80_lines() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    ]
    assert found == [], "split these into named steps:\n" + "\n".join(found)
