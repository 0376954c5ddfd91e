"""Before the run directory exists: the model's identity is keyed, its shards are listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.cli.analyse import run_cli
from pytest_mtpsweep.preflight.artefacts import check_models
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.protocol.setup import model_files
from tests.protocol.test_session import all_records, run_stub, stub_project
from tests.sandbox import FAKE_GGUF

LADDER = """
question = "q"
baseline = "a"
[model]
path = "{model}"
id = "m"
[server]
[[treatments]]
key = "a"
[[treatments]]
key = "b"
args = ["-md", "{draft}"]
"""


def test_every_shard_of_a_split_model_is_listed_in_preflight(tmp_path: Path) -> None:
    parts = [tmp_path / f"big-{i:05d}-of-00003.gguf" for i in (1, 2, 3)]
    for p in parts:
        p.write_bytes(FAKE_GGUF + p.name.encode())
    draft = tmp_path / "draft.gguf"
    draft.write_bytes(FAKE_GGUF)
    ladder_file = tmp_path / "l.toml"
    ladder_file.write_text(LADDER.format(model=parts[0], draft=draft))
    files = model_files(load_ladder(ladder_file), {}, parts[0])
    assert files == (*parts, draft)
    items = check_models(files, cache=None)
    assert [i.name for i in items] == [f"model:{p.name}" for p in files]
    assert all(i.verdict == "pass" and "bytes, mtime" in i.observed for i in items)


def test_runs_on_two_model_files_never_pool(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    few = stub_project(pytester, [], prompts=1)
    other = pytester.path / "other.gguf"
    other.write_bytes(FAKE_GGUF + b" another")
    for extra in ([], [f"--model={other}"]):
        run_stub(pytester, few, "--no-calibration", "--no-analysis", "-k", "c1", *extra)
    runs = sorted((pytester.path / "runs" / "stub").iterdir())
    assert len(runs) == 2
    shas = [{r["model_sha256"] for r in all_records(run)} for run in runs]
    plans = [json.loads((run / "plan.json").read_text()) for run in runs]
    assert [p["keyed"]["model_sha256"] for p in plans] == [s.pop() for s in shas]
    assert plans[0]["keyed"]["model_sha256"] != plans[1]["keyed"]["model_sha256"]
    capsys.readouterr()
    assert run_cli(["analyse", "--pool", *map(str, runs), "--boot", "1000"]) == 2
    err = capsys.readouterr().err
    assert "refusing to pool" in err and "different model files" in err
    assert "model.gguf" in err and "other.gguf" in err and "model_sha256" in err
