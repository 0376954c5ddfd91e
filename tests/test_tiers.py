"""The tiers' lists (tests/slow_tests.txt, tests/quiet_real_tests.txt) name tests that exist, so
they cannot rot into leaving nothing out, or something that was renamed in; a quiet entry is
a real-server test (it has a real-server fixture), or it would not need the list."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import QUIET, REPO, SERVER_FIXTURES, SLOW


def _found(entry: str) -> ast.FunctionDef | None:
    path, *names = entry.split("::")
    file = REPO / path
    if not file.is_file():
        return None
    scope: list[ast.stmt] = ast.parse(file.read_text(encoding="utf-8")).body
    node: ast.stmt | None = None
    for name in names:
        node = next((n for n in scope if isinstance(n, ast.ClassDef | ast.FunctionDef)
                     and n.name == name), None)  # fmt: skip
        if node is None:
            return None
        scope = node.body if isinstance(node, ast.ClassDef) else []
    return node if isinstance(node, ast.FunctionDef) else None


@pytest.mark.parametrize("entry", QUIET)
def test_every_quiet_entry_is_a_real_server_test(entry: str) -> None:
    found = _found(entry)
    assert found is not None, f"{entry} is not a test function"
    marked = any("mark.server" in ast.unparse(d) for d in found.decorator_list)
    fixtures = SERVER_FIXTURES & {a.arg for a in found.args.args}
    assert marked or fixtures, f"{entry} is not a real-server test: it needs no place in the list"


def test_every_slow_entry_names_an_existing_test() -> None:
    missing = []
    for entry in SLOW:
        path, *names = entry.split("::")
        file = REPO / path
        if not file.is_file():
            missing.append(entry)
            continue
        scope: list[ast.stmt] = ast.parse(file.read_text(encoding="utf-8")).body
        for name in names:
            found = [n for n in scope if isinstance(n, ast.ClassDef | ast.FunctionDef)
                     and n.name == name]  # fmt: skip
            if not found:
                missing.append(entry)
                break
            node = found[0]
            scope = node.body if isinstance(node, ast.ClassDef) else []
    assert not missing, missing


def test_the_lists_are_not_empty_and_have_no_duplicates() -> None:
    assert SLOW and len(set(SLOW)) == len(SLOW)
    assert QUIET and len(set(QUIET)) == len(QUIET)
