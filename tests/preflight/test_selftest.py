"""The harness's own fast self-test as a preflight item."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_mtpsweep.ladder import runplan as plan
from pytest_mtpsweep.preflight import PreflightInputs, item_names, run_preflight
from pytest_mtpsweep.preflight.items import FAIL, PASS
from pytest_mtpsweep.preflight.selftest import CHECKS, check_self_test


def test_every_check_passes_on_this_harness() -> None:
    item = check_self_test()
    assert item.verdict == PASS
    assert item.observed.startswith(f"{len(CHECKS)} tests / OK (")
    assert item.stable == f"{len(CHECKS)} tests / OK"


def test_a_broken_harness_fails_naming_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    # a plan that forgot to reverse its even cycles
    monkeypatch.setattr(
        plan, "run_plan", lambda keys, cycles: [plan.SessionSlot(1, k, 1) for k in keys] * cycles
    )
    item = check_self_test()
    assert item.verdict == FAIL
    assert item.observed.startswith(f"1 of {len(CHECKS)} FAILED: ABC CBA session order:")
    assert "Reinstall" in item.fix


def test_a_check_that_raises_anything_is_a_failure_not_a_crash() -> None:
    def boom() -> None:
        raise RuntimeError("numbers drifted")

    item = check_self_test({"ok": lambda: None, "boom": boom})
    assert item.observed == "1 of 2 FAILED: boom: RuntimeError numbers drifted"


def test_the_item_runs_only_when_the_ladder_asks(inputs: PreflightInputs) -> None:
    assert "self_test" not in item_names(inputs)
    wanted = replace(inputs, self_test=True)
    assert "self_test" in item_names(wanted)
    items = {i.name: i for i in run_preflight(wanted, digest_cache=None)}
    assert items["self_test"].verdict == PASS
