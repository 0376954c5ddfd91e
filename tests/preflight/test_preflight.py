"""Preflight as a whole: every item in order, waivers, --against, the table and JSON."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from pytest_mtpsweep.base.errors import PreflightError
from pytest_mtpsweep.preflight import PreflightInputs, item_names, run_preflight
from pytest_mtpsweep.preflight.items import (
    FAIL,
    PASS,
    SKIP,
    WAIVED,
    PreflightItem,
    compare_items,
    failures,
    load_preflight_json,
    render_fixes,
    render_table,
    write_preflight_json,
)
from pytest_mtpsweep.preflight.machine import check_disk, check_gpu, check_ram
from tests.fake_pynvml import FakeGpu, FakeNvml
from tests.preflight.helpers import by_name

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


class TestRunPreflight:
    def test_everything_passes_in_table_order(self, inputs: PreflightInputs, cache: Path) -> None:
        items = run_preflight(inputs, digest_cache=cache)
        assert [item.name for item in items] == item_names(inputs)
        assert [item.name for item in items][9:12] == [
            "model:main.gguf",
            "model:draft.gguf",
            "chat_template",
        ]
        # host_quiet reads the host only where the host rule applies (tests/preflight/test_quiet.py)
        assert {item.name: item.verdict for item in items if item.verdict != PASS} == {
            "host_quiet": "skip"
        }
        assert failures(items) == []

    def test_failure_is_reported(self, inputs: PreflightInputs, cache: Path) -> None:
        inputs.run_dir.mkdir(parents=True)
        items = run_preflight(inputs, digest_cache=cache)
        assert [item.name for item in failures(items)] == ["run_dir"]

    def test_waive_turns_fail_into_waived(self, inputs: PreflightInputs, cache: Path) -> None:
        inputs.run_dir.mkdir(parents=True)
        items = run_preflight(inputs, waive=frozenset({"run_dir", "ram"}), digest_cache=cache)
        assert by_name(items)["run_dir"].verdict == WAIVED
        assert by_name(items)["ram"].verdict == PASS  # a waiver does not touch a pass
        assert failures(items) == []

    def test_unknown_waiver_is_refused(self, inputs: PreflightInputs, cache: Path) -> None:
        with pytest.raises(PreflightError, match="run_dri"):
            run_preflight(inputs, waive=frozenset({"run_dri"}), digest_cache=cache)


class TestAgainst:
    @pytest.fixture
    def inputs(self, inputs: PreflightInputs) -> PreflightInputs:
        # Two fixed ports free at the first preflight may be another xdist worker's server's by
        # the second: "not the same" would then be right. The comparison is what is tested here.
        return dataclasses.replace(inputs, ports=())

    @pytest.fixture
    def earlier(self, inputs: PreflightInputs, cache: Path, tmp_path: Path) -> Path:
        run = tmp_path / "earlier-run"
        run.mkdir()
        write_preflight_json(run_preflight(inputs, digest_cache=cache), run / "preflight.json")
        return run

    def test_unchanged_rig_is_same_everywhere(
        self, inputs: PreflightInputs, cache: Path, earlier: Path
    ) -> None:
        items = run_preflight(inputs, against=earlier, digest_cache=cache)
        same = {item.name: item.same_as_against for item in items}
        assert same.pop("run_dir") is None
        assert [name for name, equal in same.items() if not equal] == []

    def test_a_remembered_smoke_pass_is_the_same_rig(
        self, inputs: PreflightInputs, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A cache with no smoke in it: the first preflight decodes, the second remembers the pass.
        # Both are "it runs"; once, the two wordings made an unchanged rig "not the same".
        monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "fresh-cache"))
        first = run_preflight(inputs, digest_cache=cache)
        run = tmp_path / "first-run"
        run.mkdir()
        write_preflight_json(first, run / "preflight.json")
        again = by_name(run_preflight(inputs, against=run, digest_cache=cache))["server_runs"]
        assert by_name(first)["server_runs"].observed.startswith("decoded ")
        assert again.observed.startswith("passed before on this CPU")
        assert again.same_as_against is True

    def test_touched_model_and_changed_launcher_are_not_same(
        self, inputs: PreflightInputs, cache: Path, earlier: Path
    ) -> None:
        main = inputs.model_files[0]
        os.utime(main, ns=(0, main.stat().st_mtime_ns + 1000))
        serve, _ = inputs.launchers["serve"]
        serve.write_text(serve.read_text() + "# edited\n")
        items = by_name(run_preflight(inputs, against=earlier, digest_cache=cache))
        assert items["model:main.gguf"].same_as_against is False
        assert items["model:draft.gguf"].same_as_against is True
        assert items["launcher:serve"].same_as_against is False
        assert items["ladder_file"].same_as_against is True

    def test_item_missing_from_earlier_run_is_not_same(
        self, inputs: PreflightInputs, cache: Path, earlier: Path
    ) -> None:
        extra = inputs.model_files[0].with_name("extra.gguf")
        extra.write_bytes(b"new")
        more = replace(inputs, model_files=(*inputs.model_files, extra))
        items = by_name(run_preflight(more, against=earlier, digest_cache=cache))
        assert items["model:extra.gguf"].same_as_against is False

    def test_volatile_items_compare_only_their_stable_part(self) -> None:
        old = PreflightItem("ram", ">= 1 GB", "160.0 GB available of 270.0 GB", PASS,
                            stable="270.0 GB total; floor met")  # fmt: skip
        now = replace(old, observed="155.2 GB available of 270.0 GB")
        below = replace(now, verdict=FAIL, stable="270.0 GB total; below floor")
        assert compare_items([now], [old])[0].same_as_against is True
        assert compare_items([below], [old])[0].same_as_against is False

    def test_ram_and_disk_ignore_what_is_free_but_not_the_floor(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def host(free_gb: float) -> list[PreflightItem]:
            free, total = int(free_gb * 1e9), 256 * 10**9
            monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(
                available=free, total=total))  # fmt: skip
            monkeypatch.setattr(psutil, "disk_usage", lambda _: SimpleNamespace(
                free=free, total=total))  # fmt: skip
            return [check_ram(100.0), check_disk(tmp_path / "run", 100.0)]

        earlier = host(160.0)
        assert [i.same_as_against for i in compare_items(host(155.0), earlier)] == [True, True]
        assert [i.same_as_against for i in compare_items(host(90.0), earlier)] == [False, False]

    def test_gpu_ignores_memory_in_use_but_not_other_processes(self) -> None:
        earlier = [check_gpu(FakeNvml([FakeGpu(used=900 * 2**20, util=2)]))]
        busier = check_gpu(FakeNvml([FakeGpu(used=1200 * 2**20, util=40)]))
        taken = check_gpu(FakeNvml([FakeGpu(pids=[4242424])]))
        assert busier.observed != earlier[0].observed
        assert compare_items([busier], earlier)[0].same_as_against is True
        assert compare_items([taken], earlier)[0].same_as_against is False

    def test_run_without_preflight_json_is_refused(
        self, inputs: PreflightInputs, tmp_path: Path
    ) -> None:
        with pytest.raises(PreflightError, match=r"preflight\.json"):
            run_preflight(inputs, against=tmp_path / "nowhere")


class TestOutput:
    ITEMS = (
        PreflightItem("gpu", "no other compute processes", "skipped: no NVIDIA driver", SKIP),
        PreflightItem("run_dir", "does not exist yet", "exists: /r", FAIL, fix="Move /r away."),
    )

    def test_table_columns_line_up(self) -> None:
        lines = render_table(list(self.ITEMS)).splitlines()
        assert len(lines) == 4
        start = lines[0].index("observed")
        assert lines[2][start:].startswith("skipped: no NVIDIA driver")
        assert lines[3][start:].startswith("exists: /r")
        assert lines[3].split()[-1] == FAIL
        assert "same as" not in lines[0]

    def test_table_has_same_as_column_after_comparison(self) -> None:
        items = [replace(self.ITEMS[0], same_as_against=True), self.ITEMS[1]]
        lines = render_table(items, against_label="run-0810").splitlines()
        assert lines[0].endswith("same as run-0810")
        assert lines[2].endswith("yes") and lines[3].endswith("-")

    def test_fixes_name_the_waiver(self) -> None:
        assert render_fixes(list(self.ITEMS)) == (
            "run_dir: Move /r away. (Or waive it: --waive run_dir.)"
        )

    def test_json_round_trips(self, tmp_path: Path) -> None:
        items = [replace(self.ITEMS[0], same_as_against=False, stable="s"), self.ITEMS[1]]
        path = tmp_path / "preflight.json"
        write_preflight_json(items, path)
        raw = json.loads(path.read_text())
        assert {"name", "expected", "observed", "verdict", "fix", "same_as_against"} <= set(raw[0])
        assert load_preflight_json(path) == items

    def test_json_is_never_overwritten(self, tmp_path: Path) -> None:
        path = tmp_path / "preflight.json"
        write_preflight_json(list(self.ITEMS), path)
        with pytest.raises(PreflightError, match="never overwritten"):
            write_preflight_json(list(self.ITEMS), path)

    @pytest.mark.parametrize("text", ["{}", "[{}]", '[{"name": "x", "expected": "", '
                                      '"observed": "", "verdict": "maybe"}]', "nope"])  # fmt: skip
    def test_malformed_json_is_refused(self, tmp_path: Path, text: str) -> None:
        path = tmp_path / "preflight.json"
        path.write_text(text)
        with pytest.raises(PreflightError, match=re.escape(str(path))):
            load_preflight_json(path)
