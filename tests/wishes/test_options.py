"""Options are declared once and shared by pytest and the CLI; RunRequest speaks domain terms.

The shared table is `options.OPTIONS`; each installed kind declares its own (decode's --subset
and --cache-prompt, authoring's --token-budget), and a run reads them all."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import OptionError
from pytest_mtpsweep.interface import registry
from pytest_mtpsweep.wishes import options
from pytest_mtpsweep.wishes.request import RunRequest

TABLE = options.table(registry.options())


def request(**values: object) -> RunRequest:
    base: dict[str, object] = {"ladder": "drafters-cpu"}
    return options.run_request(
        {**base, **values}, search_dirs=[], cwd=Path("/x"), invocation=["pytest"], opts=TABLE
    )


def test_each_flag_and_dest_is_declared_once() -> None:
    flags = [o.flag for o in TABLE]
    dests = [o.dest for o in TABLE]
    assert len(set(flags)) == len(flags) and len(set(dests)) == len(dests)
    assert {"--subset", "--cache-prompt", "--token-budget"} <= set(flags) - {
        o.flag for o in options.OPTIONS
    }


def test_a_kind_may_not_take_a_shared_flag() -> None:
    mine = options.Opt("--seed", "my_seed", "a kind's own seed")
    with pytest.raises(OptionError, match=r"option --seed .* clashes with --seed"):
        options.table([mine])


def test_kind_options_that_override_no_field_reach_the_request_by_name() -> None:
    extra = options.Opt("--probe-depth", "probe_depth", "", int)
    r = options.run_request(
        {"ladder": "x", "probe_depth": 3}, search_dirs=[], cwd=Path("/x"), invocation=[],
        opts=options.table([extra]),
    )  # fmt: skip
    assert r.kind_options == {"probe_depth": 3} and r.overrides == {}


def test_the_cli_uses_the_same_dests_as_pytest() -> None:
    parser = argparse.ArgumentParser()
    options.add_argparse_options(parser, options.PREFLIGHT_CLI)
    args = parser.parse_args(["--ladder", "x", "--port", "9", "--waive", "gpu", "--waive", "ram"])
    values = options.values_from(lambda dest: getattr(args, dest, None))
    assert values["port"] == 9 and values["waive"] == ["gpu", "ram"] and values["ladder"] == "x"


def test_overrides_name_ladder_fields() -> None:
    r = request(max_tokens=16, port=0, model="/m.gguf", subset="prose", seed=None)
    assert r.overrides == {
        "max_tokens": 16,
        "server.port": 0,
        "model.path": "/m.gguf",
        "subset": "prose",
    }


def test_defaults() -> None:
    r = request()
    assert r.warmup and r.calibration and r.analysis.boot == 2000 and r.analysis.seed == 42
    assert r.analysis.enabled and r.preflight.waive == frozenset()
    assert r.analysis.history is None


def test_history_names_a_file_to_append_to(tmp_path: Path) -> None:
    assert (
        request(history=str(tmp_path / "gates.jsonl")).analysis.history == tmp_path / "gates.jsonl"
    )


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"resume": "r", "run_dir": "d"}, "drop --run-dir"),
        ({"boot": 200}, "--boot 200"),
        ({"boot": 0}, "--boot 0"),
        ({"boot_seed": -1}, "--boot-seed -1"),
        ({"history": "/no/such/folder/h.jsonl"}, "its folder /no/such/folder does not exist"),
        ({"history": "/"}, "--history / is a folder; name a file in it"),
    ],
)
def test_bad_combinations_are_one_line(values: dict[str, object], needle: str) -> None:
    with pytest.raises(OptionError) as info:
        request(**values)
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: p.symlink_to("/etc/hostname"), "is a link, which could point anywhere"),
        (lambda p: os.mkfifo(p), "is a FIFO, not a regular file"),
        (lambda p: p.write_text('question = "q"\n'), "holds something other than gate entries"),
        (lambda p: p.write_text('{"run_id": "x"}\n'), "holds something other than gate entries"),
    ],
)
def test_a_history_target_that_is_no_history_is_refused_before_the_run(
    tmp_path: Path, make: Callable[[Path], object], needle: str
) -> None:
    # issue 50: --history appended to a ladder, through a link, and waited on a FIFO
    path = tmp_path / "h.jsonl"
    make(path)
    with pytest.raises(OptionError) as info:
        request(history=str(path))
    assert f"--history {path} {needle}" in str(info.value) and "\n" not in str(info.value)


def test_a_history_inside_a_run_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("{}")
    (tmp_path / "records").mkdir()
    with pytest.raises(OptionError, match="is inside the run directory"):
        request(history=str(tmp_path / "records" / "h.jsonl"))


def test_a_history_of_gate_entries_or_a_new_one_is_taken(tmp_path: Path) -> None:
    old = tmp_path / "h.jsonl"
    old.write_text(json.dumps({k: 1 for k in ("format", "time", "gate", "treatment", "decision")}))
    assert request(history=str(old)).analysis.history == old
    assert request(history=str(tmp_path / "new.jsonl")).analysis.history == tmp_path / "new.jsonl"


def test_temperature_must_be_finite() -> None:
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group()
    opt = options.BY_NAME["temperature"]
    group.add_argument(opt.flag, **opt.kwargs())
    with pytest.raises(SystemExit):
        parser.parse_args(["--temperature", "inf"])


def test_repeats_and_cache_prompt_are_recorded_overrides() -> None:
    assert request(repeats=3, cache_prompt=True).overrides == {
        "repeats": 3,
        "cache_prompt": True,
    }
    # an unset flag leaves a ladder's `cache_prompt = true` alone
    assert request(cache_prompt=False).overrides == {}
