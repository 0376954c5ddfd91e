"""The happy path against the real llama-server and a real coding model (CPU): the shipped
authoring-cpu ladder, one task, one repeat, both cohorts."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.rig import provision
from tests.sandbox import copy_experiments, only_run, servers_of

# The coding model: the embedded default (scripts/dev provisions it before the tests).
EMBEDDED_CODER = "embedded:qwen2.5-coder-0.5b"


@pytest.fixture(scope="session")
def coder_model() -> Path:
    """A model that really writes Python; a missing one fails loudly instead of skipping."""
    return provision.resolve_model(EMBEDDED_CODER)


@pytest.mark.server
def test_one_task_both_cohorts_against_the_real_server(
    pytester: pytest.Pytester, server_bin: Path, coder_model: Path
) -> None:
    copy_experiments(pytester)
    result = pytester.runpytest(
        "experiments/",
        "--ladder=authoring-cpu",
        f"--model={coder_model}",
        "--max-tokens=256",
        "-k",
        "t4_count_zeros and r1",
    )
    result.assert_outcomes(passed=2, deselected=34)  # 36 cells, -k keeps 2
    rd = only_run(pytester.path)
    cells = [
        json.loads(x) for x in (rd / records.cells_file("01_qwen_c1")).read_text().splitlines()
    ]
    assert [c["cell"] for c in cells] == [
        "qwen-doctest-t4_count_zeros-r1",
        "qwen-plain-t4_count_zeros-r1",
    ]
    for c in cells:
        assert c["valid"] is True and c["outcome"] in records.FINAL_OUTCOMES, c
        assert c["prompt_tokens"] > 0 and c["completion_tokens"] > 0
    turns = [
        json.loads(x) for x in (rd / records.turns_file("01_qwen_c1")).read_text().splitlines()
    ]
    for t in turns:
        assert t["http_status"] == 200 and t["response_model"] == "qwen2.5-coder-0.5b-qwen"
        assert t["verdict"] in ("pass", "fail", "no_artefact") and t["finish_reason"] in (
            "stop",
            "length",
        )
        if t["verdict"] != "no_artefact":
            assert t["artefact_sha256"] and t["exit_code"] is not None and t["check_s"] > 0
    info = json.loads((rd / schema.session_file("01_qwen_c1")).read_text())
    assert info["rig"] == "spawned" and info["released"] is True and info["warmup"]["valid"] is True
    assert info["argv"][info["argv"].index("-m") + 1] == str(coder_model)
    assert info["complete"] is True and info["sandbox"]["network"] in ("namespace", "host")
    assert (rd / schema.RUN_STATUS_FILE).read_text().startswith("ok\n")
    with (rd / records.SCORES_CSV).open() as f:
        assert len(list(csv.DictReader(f))) == 2  # one row per selected cell
    assert (rd / schema.ANALYSIS_DIR / schema.REPORT_MD).is_file()
    assert servers_of(server_bin) == []
