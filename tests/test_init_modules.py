"""Logic lives in named modules: a package's `__init__.py` holds at most a docstring, imports,
re-exports and declarations (a kind's `KIND`), never a function or a class. The package root's
`__getattr__` is the one exception: it is how the root re-exports lazily (import cost)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "pytest_mtpsweep"
LAZY = "__getattr__"  # allowed in the package root's __init__ alone


def defined(path: Path, *, root: bool = False) -> list[str]:
    """`line: name` of each function and class an `__init__.py` defines at module level (those
    under an `if` or a `try`, e.g. TYPE_CHECKING, included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nested = (n.body + n.orelse for n in tree.body if isinstance(n, ast.If | ast.Try))
    return [
        f"{node.lineno}: {node.name}"
        for block in (tree.body, *nested)
        for node in block
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not (root and node.name == LAZY)
    ]


def test_the_check_fails_on_an_init_that_defines_a_function(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(
        '"""Doc."""\nfrom .x import y\nKIND = 1\ndef f(): ...\nclass C: ...\n'
        "if y:\n    def g(): ...\ndef __getattr__(name): ...\n"
    )
    assert defined(init) == ["4: f", "5: C", "8: __getattr__", "7: g"]
    assert defined(init, root=True) == ["4: f", "5: C", "7: g"]


def test_no_init_in_the_package_defines_a_function_or_a_class() -> None:
    found = [
        f"{p.relative_to(PKG.parent)}:{d}"
        for p in sorted(PKG.rglob("__init__.py"))
        for d in defined(p, root=p.parent == PKG)
    ]
    assert found == [], f"move the logic into a named module: {found}"
