"""report.html's cells, turn by turn, from the records and the conversation files the analysis
read: a model's reply, its artefact and the checker's output are text on the page, whole; a
record naming a file outside the run shows nothing of it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.analysis.io import analyse_dir
from pytest_mtpsweep.report.assets import ERRORS_JS, PAGE_JS
from tests.kinds.authoring.analysis.test_findings import write
from tests.report.dom import parse

HOSTILE = '</script><script>alert(1)</script> "><img src=x onerror=alert(1)> \u2028 end'
CODE = f"def f():\n    return {HOSTILE!r}\n"
REPLY = f"{HOSTILE}\n```python\n{CODE}```\n"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def rewrite(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_hostile_reply_artefact_and_checker_output_are_text_in_their_cell(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    write(run, copies=False)
    cells_file = run / records.CELLS_DIR / "01_s_c1.jsonl"
    turns_file = run / records.TURNS_DIR / "01_s_c1.jsonl"
    cells, turns = lines(cells_file), lines(turns_file)
    held, outside = cells[0], cells[1]
    conversation = f"conversations/01_s_c1/{held['cell']}.json"
    (run / conversation).parent.mkdir(parents=True)
    messages = [{"role": "user", "content": "Write f."}, {"role": "assistant", "content": REPLY}]
    (run / conversation).write_text(json.dumps({"messages": messages}))
    (tmp_path / "outside.json").write_text(json.dumps({"messages": messages}))  # not the run's
    held |= {"conversation": conversation, "attempt": 0}
    outside |= {"conversation": "../outside.json", "attempt": 0}
    rewrite(cells_file, [held, outside, *cells[2:]])
    first = next(t for t in turns if t["cell"] == held["cell"])
    first |= {"artefact_sha256": hashlib.sha256(CODE.encode()).hexdigest(), "verdict": "fail",
              "error_first_line": HOSTILE}  # fmt: skip
    rewrite(turns_file, turns)
    analyse_dir(run, "a", 1000, 42, pooled=False)
    page = parse((run / schema.ANALYSIS_DIR / "report.html").read_text(encoding="utf-8"))
    assert not page.find("img")
    scripts = [s.text() for s in page.find("script") if s.attrs.get("type") != "application/json"]
    assert scripts == [ERRORS_JS, PAGE_JS]
    cell = page.by_id(f"cell-{held['cell']}")
    assert [p.text() for p in cell.find("pre")] == ["Write f.", REPLY, CODE, HOSTILE]
    assert "its sha256 matches the turn record" in cell.words()
    gone = page.by_id(f"cell-{outside['cell']}")
    assert not gone.find("pre") and "No conversation file: ../outside.json." in gone.words()
    [facets] = [s for s in page.find("script") if s.attrs.get("data-for") == "cells"]
    assert json.loads(facets.text())["keys"] == ["subject", "cohort", "task", "outcome"]
