"""Each record field a kind's analysis publishes is spelled in one module: its records module.

A kind's `records.py` names its endpoint fields (`ENDPOINT_FIELDS`: analysis name -> record
field, and decode's `MECHANISM_FIELDS` likewise); the writer and every reader use those names, so no other module of the kind, nor any
module outside kinds/, holds the field's name as a string literal (an AST check: comments and
docstrings do not count, an attribute such as `m.decode_rate_tps_primary` is no spelling of the
record's key). Another kind's modules are not searched: a kind imports no other kind, so the same
name there is that kind's own field (decode's records hold `completion_tokens` too). Fed a small
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
_USAGE = "the server's usage object (OpenAI's key), read by the kind-neutral rig"
_SLO = "a [slo] key of the load ladder: the user's name for a target, not the record's field"
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("prompt_tokens", "rig/usage.py"): _USAGE,
    ("completion_tokens", "rig/usage.py"): _USAGE,
    ("prompt_tokens", "kinds/load/loadgen/reads.py"): _USAGE,
    ("completion_tokens", "kinds/load/loadgen/reads.py"): _USAGE,
    ("prompt_tokens", "kinds/load/loadgen/chatlevel.py"): _USAGE,
    ("ttft_ms", "kinds/load/ladder.py"): _SLO,
    ("e2e_ms", "kinds/load/ladder.py"): _SLO,
}


def spellings(source: str, names: frozenset[str]) -> list[str]:
    """`line: name` for each string constant (or f-string part) in `source` that is a name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            out.append(f"{node.lineno}: {node.value}")
    return sorted(out, key=lambda s: int(s.split(":")[0]))


def fields_of(kind: str) -> frozenset[str]:
    module = importlib.import_module(f"pytest_mtpsweep.kinds.{kind}.records")
    named = {**getattr(module, "ENDPOINT_FIELDS", {}), **getattr(module, "MECHANISM_FIELDS", {})}
    return frozenset(named.values())


def searched(kind: str) -> list[tuple[str, Path]]:
    """(module relative to the package, path) of every module the check reads for `kind`: each
    of its kind's but its records module, and every module outside a kind's folder."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        other_kind = rel.parts[0] == "kinds" and len(rel.parts) > 2 and rel.parts[1] != kind
        if other_kind or rel.parts == ("kinds", kind, "records.py"):
            continue
        out.append((str(rel), path))
    return out


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
    assert fields_of("decode") == {
        "decode_rate_tps_primary", "decode_rate_tps_interval", "spec_steps", "tokens_per_step",
        "drafted_per_step", "step_ms", "acc_per_pos",
    }  # fmt: skip


def test_load_names_its_endpoint_fields() -> None:
    from pytest_mtpsweep.kinds.load.analysis import contrast
    from pytest_mtpsweep.kinds.load.records import ENDPOINT_FIELDS

    assert fields_of("load") == {
        "ttft_ms", "itl_mean_ms", "e2e_ms", "output_tok_s", "req_s", "goodput_req_s",
        "j_per_token",
    }  # fmt: skip
    # every endpoint the contrast estimates, by the field it reads
    assert set(ENDPOINT_FIELDS) == {*contrast.REQUEST_ENDPOINTS, *contrast.LEVEL_ENDPOINTS}
    assert {k: ENDPOINT_FIELDS[k] for k in contrast.REQUEST_ENDPOINTS} == contrast.REQUEST_ENDPOINTS


def test_authoring_names_its_endpoint_fields() -> None:
    from pytest_mtpsweep.kinds.authoring.analysis import contrast
    from pytest_mtpsweep.kinds.authoring.records import ENDPOINT_FIELDS

    assert fields_of("authoring") == {"outcome", "prompt_tokens", "completion_tokens"}
    assert set(ENDPOINT_FIELDS) == set(contrast.ENDPOINTS)  # every endpoint the contrast estimates


def test_every_exception_is_still_needed() -> None:
    stale = [
        (field, rel)
        for field, rel in EXCEPTIONS
        if not spellings((PACKAGE / rel).read_text(encoding="utf-8"), frozenset({field}))
    ]
    assert stale == [], f"drop these from EXCEPTIONS: {stale}"


def test_the_check_reads_its_kind_and_the_modules_outside_kinds() -> None:
    read = {rel for rel, _ in searched("load")}
    assert {"kinds/load/run/energy.py", "rig/usage.py", "kinds/__init__.py"} <= read
    assert not read & {"kinds/load/records.py", "kinds/decode/analysis/frame.py"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_kinds_record_fields_are_spelled_only_in_its_records_module(kind: str) -> None:
    names = fields_of(kind)
    found = []
    for rel, path in searched(kind):
        for hit in spellings(path.read_text(encoding="utf-8"), names):
            if (hit.split(": ")[1], rel) not in EXCEPTIONS:
                found.append(f"{rel}:{hit}")
    assert found == [], (
        f"use the names of kinds/{kind}/records.py (ENDPOINT_FIELDS) instead:\n" + "\n".join(found)
    )
