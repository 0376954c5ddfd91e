"""Builds as treatments and comparability: a run whose treatments run different builds by
design pairs its own sessions, and two runs pool only when every treatment ran the same build.

The keyed `server_build` of such a run names each treatment's build and binary digest
(protocol/setup.py `server_build_keyed`); its records and plan.json carry it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.errors import AnalysisError
from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
from pytest_mtpsweep.protocol.setup import server_build_keyed
from pytest_mtpsweep.rig.buildid import BuildIdentity
from pytest_mtpsweep.rig.provision import ServerBinary
from tests.strategies import KEYED, Design, make_plan, make_records, noisy, write_run

DESIGN = Design(
    treatments=("old", "new"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
)  # fmt: skip


def build(name: str, sha: str) -> BuildIdentity:
    return BuildIdentity(f"/builds/{name}/llama-server", sha * 64, "", f"version: {name}", name)


def keyed_build(new_sha: str = "b") -> str:
    servers = {
        k: ServerBinary(Path(f"/builds/{k}"), "treatment server_pip") for k in ("old", "new")
    }
    builds = {"old": build("b11401-unknown", "a"), "new": build("b11434-515e85511", new_sha)}
    return server_build_keyed("", servers, builds)


def run(tmp_path: Path, run_id: str, server_build: str) -> Path:
    design = Design(DESIGN.treatments, DESIGN.prompts, run_id=run_id)
    keyed = {**KEYED, "server_build": server_build}
    recs = [{**r, **keyed} for r in make_records(design, noisy(design, {"new": 0.9}, sd=0.02))]
    return write_run(tmp_path / run_id, design, recs, plan=make_plan(design, keyed=keyed))


def analyse(runs: list[Path], **kwargs: Any) -> Any:
    return analyse_run(runs, AnalyseOptions(baseline="old", boot=1000, **kwargs))


def test_the_keyed_build_names_every_treatments_build() -> None:
    assert keyed_build() == f"old=b11401-unknown@{'a' * 12},new=b11434-515e85511@{'b' * 12}"
    assert server_build_keyed("version: x (build 7, commit abcdefa)", {}, {}) == "b7-abcdefa"


def test_a_run_whose_builds_differ_by_design_pairs_its_sessions(tmp_path: Path) -> None:
    result = analyse([run(tmp_path, "run-1", keyed_build())])
    assert len(result.groups) == 1 and result.has_pairs
    cells = result.contrasts.query("endpoint == 'primary' and treatment == 'new'")
    per_subset = dict(zip(cells["subset"], cells["n_pairs"], strict=True))
    assert per_subset["prose"] == per_subset["structured"] == 12  # 6 prompts x 2 cycles


def test_two_runs_pool_only_with_the_very_same_builds(tmp_path: Path) -> None:
    a = run(tmp_path, "run-1", keyed_build())
    same = run(tmp_path, "run-2", keyed_build())
    pooled = analyse([a, same], pool=True, out=tmp_path / "pooled")
    assert pooled.has_pairs
    rebuilt = run(tmp_path, "run-3", keyed_build(new_sha="c"))  # `new` rebuilt: another binary
    with pytest.raises(AnalysisError) as info:
        analyse([a, rebuilt], pool=True)
    assert "their keyed fields differ (server_build:" in str(info.value)
