"""The fast tier's list (tests/slow_tests.txt) names tests that exist, so it cannot rot into
leaving nothing out, or something that was renamed in."""

from __future__ import annotations

import ast

from tests.conftest import REPO, SLOW


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


def test_the_list_is_not_empty_and_has_no_duplicates() -> None:
    assert SLOW and len(set(SLOW)) == len(SLOW)
