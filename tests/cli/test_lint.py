"""Settings that cannot work together, refused in one line by `mtpsweep lint` and by a run
before any server starts: `[stop] cells` against the ladder and the selection,
`[conversation]` with `[trace]`, and the preflight thresholds that feed the host rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_mtpsweep.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def shipped(tmp_path: Path, name: str, edit: tuple[str, str] = ("", ""), add: str = "") -> Path:
    """A copy of a shipped ladder beside copies of the prompts and traces it names."""
    root = tmp_path / "experiments"
    shutil.copytree(REPO / "experiments", root, ignore=shutil.ignore_patterns("*.py"))
    path = root / "ladders" / f"{name}.toml"
    text = path.read_text()
    if edit[0]:
        assert edit[0] in text
        text = text.replace(edit[0], edit[1])
    path.write_text(text + add)
    return path


def lint_line(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["lint", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1, out
    assert "Traceback" not in out[0]
    return out[0]


CELLS = 'cells = ["ngram-simple:structured"]'


@pytest.mark.parametrize(
    ("cells", "said"),
    [
        # a subset the ladder does not run
        ('cells = ["ngram-simple:prose"]', "'ngram-simple:prose', which this ladder never "
         "measures, so the rule would wait for it to the last cycle; name one of its headline "
         "cells (ngram-simple:structured)."),
        # the analysis' pooled row
        ('cells = ["ngram-simple:pooled"]', "'ngram-simple:pooled', the analysis' pooled row, "
         "which is no headline cell; name the cells themselves (ngram-simple:structured)."),
        # a prompt subset that does not exist
        ('cells = ["ngram-simple:code"]', "'ngram-simple:code', which this ladder never"),
    ],
)  # fmt: skip
def test_stop_cells_the_ladder_never_measures_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cells: str, said: str
) -> None:
    path = shipped(tmp_path, "cpu-demo", ('subset = "both"', 'subset = "structured"'))
    path.write_text(path.read_text().replace(CELLS, cells))
    line = lint_line(path, capsys)
    assert line.startswith(f"{path}: stop.cells names {said}")


def test_a_load_level_the_ladder_lacks_is_refused_and_its_own_are_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # load-cpu runs 2 cycles: its [stop] opts in to a look there (the default first look is 4)
    stop = '\n[stop]\nrule = "decided"\nallow_early_looks = true\ncells = ["ngram:conc8"]\n'
    path = shipped(tmp_path, "load-cpu", add=stop)
    line = lint_line(path, capsys)
    assert line.startswith(f"{path}: stop.cells names 'ngram:conc8', which this ladder never")
    assert line.endswith("(ngram:conc1, ngram:conc2, ngram:conc4, ngram:conc4/conc1).")
    path.write_text(path.read_text().replace("ngram:conc8", "ngram:conc4/conc1"))
    assert main(["lint", str(path)]) == 0


def test_conversation_with_trace_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = (
        '\n[trace]\npath = "../traces/mooncake-conversation-300.jsonl"\nformat = "mooncake"\n'
        "limit = 8\ntime_scale = 0.01\n"
    )
    path = shipped(tmp_path, "load-conversation-cpu", add=trace)
    line = lint_line(path, capsys)
    assert line == (
        f"{path}: a [conversation] ladder runs closed loop (concurrency = conversations in "
        "flight); remove trace, or remove [conversation]."
    )


@pytest.mark.parametrize("value", ["-5", "150"])
@pytest.mark.parametrize("name", ["host_noise_pct", "host_idle_pct"])
def test_host_thresholds_out_of_bounds_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, value: str
) -> None:
    path = shipped(tmp_path, "cpu-demo-fixed", add=f"\n[preflight]\n{name} = {value}\n")
    line = lint_line(path, capsys)
    assert line == (
        f"{path}: field preflight.{name} is {float(value)!r}; use a share of all cores in "
        "percent, from 0 to 100."
    ) or line == (
        f"{path}: field preflight.{name} is {int(value)!r}; use a share of all cores in "
        "percent, from 0 to 100."
    )
