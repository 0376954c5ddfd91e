"""What a load run's records lack is said in its report: requests answered without usage, per
treatment and level, and a block whose level line was cut short."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pytest_mtpsweep.kinds.load.analysis.compute import LoadAnalysis, analyse
from tests.kinds.load.run_fixture import write_run


def _edit(path: Path, change: dict[tuple[str, int], dict[str, object]]) -> None:
    """Update the request lines (level, request) of one records file."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["record"] == "request":
            r |= change.get((r["level"], r["request"]), {})
        out.append(json.dumps(r))
    path.write_text("\n".join(out) + "\n")


def test_requests_without_usage_are_counted_per_treatment_and_level(tmp_path: Path) -> None:
    run = write_run(tmp_path, lagged=False)
    unknown: dict[str, object] = {"usage_status": "unknown"}
    _edit(run / "records" / "02_ngram_c1.jsonl", {("conc1", 1): unknown, ("conc1", 2): unknown})
    _edit(run / "records" / "04_none_c2.jsonl", {("conc4", 0): unknown})
    done = analyse(run, boot=1000)
    assert isinstance(done, LoadAnalysis)
    limits = done.report.read_text().split("## Limitations", 1)[1]
    assert ("- 3 request(s) answered without usage (usage unknown): none/conc4 1 of 12, "
            "ngram/conc1 2 of 12.") in limits  # fmt: skip
    assert any("3 request(s) answered without usage" in x for x in done.lines)
    with (run / "analysis" / "load_levels.csv").open() as f:
        counts = {(r["treatment"], r["level"]): int(r["usage_unknown"]) for r in csv.DictReader(f)}
    assert counts == {("none", "conc1"): 0, ("none", "conc4"): 1, ("ngram", "conc1"): 2,
                      ("ngram", "conc4"): 0}  # fmt: skip


def test_a_block_whose_level_line_is_torn_is_named(tmp_path: Path) -> None:
    run = write_run(tmp_path, lagged=False)
    path = run / "records" / "04_none_c2.jsonl"  # its last block's level line, cut short
    text = path.read_text().rstrip("\n")
    path.write_text(text[: text.rindex("\n") + 40])
    done = analyse(run, boot=1000)
    assert isinstance(done, LoadAnalysis)
    limits = done.report.read_text().split("## Limitations", 1)[1]
    assert "records/04_none_c2.jsonl:14: not JSON: the file's last line, cut short" in limits
    assert "1 block(s) have request lines but no readable level line (04_none_c2/conc1)" in limits
    with (run / "analysis" / "load_blocks.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 7  # 8 blocks, one without its level line


def test_a_short_design_says_first_whom_its_figures_speak_for(tmp_path: Path) -> None:
    # Issue 43, finding 3: a 2-cycle headline's first sentence says it holds for its sessions.
    short = analyse(write_run(tmp_path / "two", lagged=False, cycles=2), boot=1000)
    assert isinstance(short, LoadAnalysis)
    text = (tmp_path / "two" / "run" / "analysis" / "report.md").read_text()
    head = text.split("## Headline", 1)[1].split("\n## ", 1)[0].strip()
    assert head.startswith(
        "- These figures speak only for the server sessions that were run (2 cycle(s)): "
    )
    analyse(write_run(tmp_path / "four", lagged=False, cycles=4), boot=1000)
    text = (tmp_path / "four" / "run" / "analysis" / "report.md").read_text()
    assert "These figures speak only" not in text
