"""Each record field a kind's analysis publishes is spelled in one module: its records module.

A kind's `records.py` names its endpoint fields (`ENDPOINT_FIELDS`: analysis name -> record
field); the writer and every reader use those names, so no other module of the package holds
the field's name as a string literal (an AST check: comments and docstrings do not count, an
attribute such as `m.decode_rate_tps_primary` is no spelling of the record's key). Fed a small
source first so that it is seen to fail.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent.parent / "pytest_mtpsweep"
KINDS = sorted(p.parent.name for p in (PACKAGE / "kinds").glob("*/records.py"))
# (field, module relative to the package) -> why that module may spell it. Keep it short.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def spellings(source: str, names: frozenset[str]) -> list[str]:
    """`line: name` for each string constant (or f-string part) in `source` that is a name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            out.append(f"{node.lineno}: {node.value}")
    return sorted(out, key=lambda s: int(s.split(":")[0]))


def fields_of(kind: str) -> frozenset[str]:
    module = importlib.import_module(f"pytest_mtpsweep.kinds.{kind}.records")
    return frozenset(getattr(module, "ENDPOINT_FIELDS", {}).values())


def test_the_check_sees_a_field_spelled_as_a_key_and_not_as_an_attribute() -> None:
    names = frozenset({"decode_rate_tps_primary"})
    source = (
        "# decode_rate_tps_primary in a comment\n"
        "x = m.decode_rate_tps_primary\n"
        'row = {"decode_rate_tps_primary": x}\n'
        'y = row.get("decode_rate_tps_interval")\n'
    )
    assert spellings(source, names) == ["3: decode_rate_tps_primary"]


def test_decode_names_its_endpoint_fields() -> None:
    assert fields_of("decode") == {"decode_rate_tps_primary", "decode_rate_tps_interval"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_kinds_record_fields_are_spelled_only_in_its_records_module(kind: str) -> None:
    names = fields_of(kind)
    home = PACKAGE / "kinds" / kind / "records.py"
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if path == home:
            continue
        for hit in spellings(path.read_text(encoding="utf-8"), names):
            if (hit.split(": ")[1], rel) not in EXCEPTIONS:
                found.append(f"{rel}:{hit}")
    assert found == [], (
        f"use the names of kinds/{kind}/records.py (ENDPOINT_FIELDS) instead:\n" + "\n".join(found)
    )
