"""`mtpsweep calibrate` on a real A/A run: the embedded model under the real llama-server as
both arms, then the calibration a not-slower gate cites."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_mtpsweep.cli.main import main
from tests.sandbox import MACHINERY_MODEL, copy_experiments, only_run, prompt_dir

AA = f"""
question = "How much does the same build differ from itself here?"
baseline = "none"
cycles = 4
max_tokens = 16
placement = "cpu"
[model]
path = "{MACHINERY_MODEL}"
id = "m"
[server]
args = ["--parallel", "1"]
port = 0
ctx_size = 2048
ready_timeout_s = 120
[[treatments]]
key = "none"
[[treatments]]
key = "aa"
"""


def test_calibrate_reads_a_real_a_a_run(
    pytester: pytest.Pytester,
    server_bin: Path,
    machinery_model: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy_experiments(pytester, {"aa": AA})
    few = prompt_dir(pytester, ["prose_01", "prose_02", "prose_03"])
    result = pytester.runpytest("experiments/", "--ladder=aa", f"--prompts-dir={few}")
    result.assert_outcomes(passed=24)
    run = only_run(pytester.path)
    code = main(["calibrate", str(run), "--margin", "50", "--reps", "200"])
    said = capsys.readouterr().out
    doc = json.loads((run / "calibration.json").read_text())
    assert [c["cell"] for c in doc["cells"]] == ["aa:prose"]
    assert doc["model_sha256"] and doc["build"] == "b11434-515e85511"
    assert math.isfinite(doc["noise_floor_pct"]) and doc["cycles"] == 4
    assert code == (1 if doc["refusal"] else 0)
    assert "aa:prose: noise floor" in said and "false alarms" in said
