"""`mtpsweep history FILE`: the trend per comparability group, the drift flag and the exit
status (0 no drift, 1 drift, 2 bad input)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.state.history import GateEntry, append

Z = 1.959964


def gate(i: int, estimate: float, se: float = 2.0, **change: object) -> GateEntry:
    base: dict[str, object] = dict(
        time=f"2026-12-{1 + i // 24:02d}T{i % 24:02d}:00:00Z", run=f"run{i}",
        gate="b:prose:not-slower:3", treatment="b", baseline="a", subset="prose",
        metric="decode_rate_tps_primary", margin_pct=3.0, estimate_pct=estimate,
        lower_pct=estimate - Z * se, upper_pct=estimate + Z * se,
        decision="pass", host="host1", model="m@abc", treatment_build=f"c{i}",
        baseline_build=f"c{i - 1}",
    )  # fmt: skip
    return GateEntry(**{**base, **change})  # type: ignore[arg-type]


def history(tmp_path: Path, entries: list[GateEntry]) -> Path:
    path = tmp_path / "gates.jsonl"
    append(path, entries)
    return path


def test_a_flat_history_is_no_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = history(tmp_path, [gate(i, e) for i, e in enumerate([0.5, -1.0, 1.2, -0.4, 0.3])])
    assert main(["history", str(path)]) == 0
    out = capsys.readouterr().out
    assert "b vs a on prose (decode_rate_tps_primary): host host1, model m@abc; 5 gate(s)" in out
    assert "2026-12-01T01:00:00Z" in out and "-1.00" in out and "[-4.92, +2.92]" in out
    assert "drift: none flagged" in out and "trend: " in out


def test_small_losses_that_no_gate_caught_are_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # every gate passes its 3 % margin, and every one loses about 2 %: 8 in a row
    losses = [gate(i, e) for i, e in enumerate([0.8, -0.2, 0.4])]
    losses += [gate(3 + i, -2.0) for i in range(8)]
    path = history(tmp_path, losses)
    assert main(["history", str(path)]) == 1
    out = capsys.readouterr().out
    assert "drift: FLAGGED" in out and "since 2026-12-01T03:00:00Z (run run3)" in out
    assert out.count("DRIFT") >= 1
    # the same gates up to the fifth loss: not yet
    (tmp_path / "early").mkdir()
    assert main(["history", str(history(tmp_path / "early", losses[:8]))]) == 0


def test_other_hosts_and_models_are_never_pooled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # four losses here and four on another host: pooled, they would be eight in a row
    mixed = [gate(i, -2.0, host="host1" if i % 2 else "host2") for i in range(8)]
    mixed += [gate(8, 0.0, model="other@def")]
    path = history(tmp_path, mixed)
    assert main(["history", str(path)]) == 0
    out = capsys.readouterr().out
    assert "host host1, model m@abc; 4 gate(s)" in out
    assert "host host2, model m@abc; 4 gate(s)" in out
    assert "model other@def; 1 gate(s)" in out
    assert "this gate has entries from 3 host/model groups; each is its own trend" in out


def test_last_bounds_each_trend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = history(
        tmp_path, [gate(i, -2.0) for i in range(8)] + [gate(8 + i, 0.0) for i in range(3)]
    )
    assert main(["history", str(path), "--last", "3"]) == 0
    assert "3 gate(s)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as bad:
        main(["history", str(path), "--last", "1"])
    assert bad.value.code == 2
    assert "not a count of gates from 2 to 1000" in capsys.readouterr().err


def test_unreadable_lines_are_named_and_the_rest_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = history(tmp_path, [gate(0, 1.0)])
    with path.open("a") as f:
        f.write("garbage\n")
    append(path, [gate(1, 0.0, estimate_pct=None, lower_pct=None, upper_pct=None)])
    assert main(["history", str(path)]) == 0
    out = capsys.readouterr().out
    assert "note: 1 line(s): gates.jsonl:2: not JSON unreadable and left out" in out
    assert "1 gate(s) without an interval not counted" in out


@pytest.mark.parametrize("content", [None, "garbage\n{}\n"])
def test_bad_input_is_exit_2_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    path = tmp_path / "gates.jsonl"
    if content is not None:
        path.write_text(content)
    assert main(["history", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mtpsweep: ") and "\n" not in err and "--history wrote" in err


def test_an_empty_history_is_no_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gates.jsonl"
    path.write_text("")
    assert main(["history", str(path)]) == 0
    assert "no gate entries yet" in capsys.readouterr().out


def test_entries_are_ordered_by_their_time_however_written(tmp_path: Path) -> None:
    from pytest_mtpsweep.cli.history_cmd import groups

    late = gate(1, -1.0, time="2026-12-01T10:00:00+00:00")
    early = gate(0, -1.0, time="2026-12-01T09:30:00Z")
    assert [e.run for es in groups([late, early], 20).values() for e in es] == ["run0", "run1"]
