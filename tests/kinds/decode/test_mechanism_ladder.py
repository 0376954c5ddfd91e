"""The calibration ladder `mechanism-cpu`: what it plants, as its design and its docs say."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.kinds.decode.planted import mean_length, planted_rates
from pytest_mtpsweep.protocol.loader import load_ladder

REPO = Path(__file__).resolve().parents[3]
LADDER = REPO / "experiments" / "ladders" / "mechanism-cpu.toml"
DOCS = REPO / "docs" / "ladders.md"


def curves() -> dict[str, tuple[float, ...]]:
    """Each drafting treatment's planted curve."""
    lad = load_ladder(LADDER)
    out = {}
    for t in lad.treatments:
        rates = planted_rates(t.args, t.key)
        if t.key != lad.baseline:
            assert rates is not None, f"{t.key} plants no curve"
            out[t.key] = rates
    return out


def test_the_ladder_lints() -> None:
    assert main(["lint", str(LADDER)]) == 0


def test_it_plants_four_curves_at_two_n_max_with_both_drafter_costs() -> None:
    planted = curves()
    assert len(set(planted.values())) >= 4
    assert len({len(r) for r in planted.values()}) >= 2
    lad = load_ladder(LADDER)
    types = {t.key: t.args[t.args.index("--spec-type") + 1] for t in lad.treatments if t.args}
    # the model as its own drafter costs what the target costs; an n-gram lookup next to nothing
    assert {"draft-simple", "ngram-simple"} <= set(types.values())
    for t in lad.treatments:
        if types.get(t.key) == "draft-simple":
            assert t.args[t.args.index("-md") + 1] == "{model}"
    assert "planted" in lad.question and "machinery" in lad.question


def test_the_docs_table_gives_each_curves_planted_mean_length() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("### The calibration ladder", 1)[1].split("\n## ", 1)[0]
    for key, rates in curves().items():
        row = re.search(rf"^\| `{key}` \|.*$", section, re.M)
        assert row, f"docs/ladders.md has no row for {key}"
        assert ", ".join(f"{r:g}" for r in rates) in row.group(0)
        assert f"{mean_length(rates):.2f}" in row.group(0)
