"""Every sizing option is bounded before work starts, in one line that states the bound:
bootstrap resamples (pytest's --boot, `mtpsweep analyse/compare/plan --boot`, a plan.json's
registered count) and --time-budget. No case here reads a run before refusing, so a bound that
regressed fails on the message, not on a 43 TiB allocation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.base.constants import BOOT
from pytest_mtpsweep.base.errors import AnalysisError, OptionError
from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.interface import registry
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings
from pytest_mtpsweep.wishes import options

TABLE = options.table(registry.options())
HUGE = 10**12


def request(**values: object) -> object:
    return options.run_request(
        {"ladder": "drafters-cpu", **values},
        search_dirs=[], cwd=Path("/x"), invocation=["pytest"], opts=TABLE,
    )  # fmt: skip


def test_pytest_boot_is_bounded_above() -> None:
    with pytest.raises(OptionError) as info:
        request(boot=HUGE)
    assert str(info.value) == (
        f"--boot {HUGE} is more resamples than the analysis holds in memory; use at most "
        f"{BOOT.max} (default 2000)."
    )
    request(boot=BOOT.max)  # the bound itself is allowed


@pytest.mark.parametrize(
    ("budget", "ok"), [("168h", True), ("169h", False), ("9999999999m", False),
                       ("9" * 5000 + "h", False)]
)  # fmt: skip
def test_a_time_budget_is_at_most_a_week(budget: str, ok: bool) -> None:
    if ok:
        assert options.parse_duration(budget) == 168 * 3600
        return
    with pytest.raises(OptionError) as info:
        request(time_budget=budget)
    said = str(info.value)
    assert "give at most 168h (a week)" in said and len(said) < 200


def test_analysis_settings_refuse_resamples_past_the_bound() -> None:
    with pytest.raises(AnalysisError, match=f"above {BOOT.max}"):
        AnalysisSettings(baseline="a", boot=HUGE)


@pytest.mark.parametrize(
    "argv",
    [
        ["analyse", "RUN", "--boot", str(HUGE)],
        ["compare", "RUN", "OTHER", "--boot", str(HUGE)],
        ["plan", "RUN", "--target-width", "5", "--boot", str(HUGE)],
    ],
)
def test_the_cli_refuses_boot_past_the_bound_before_reading_a_run(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / a) if a in ("RUN", "OTHER") else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the resample count {HUGE} is above {BOOT.max}" in err


def test_an_authoring_plans_registered_resamples_are_bounded_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    plan = {"kind": "authoring", "contrast": {"resamples": HUGE, "seed": 1}}
    (run / "plan.json").write_text(json.dumps(plan))
    assert main(["analyse", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the resample count {HUGE} is above {BOOT.max}" in err


@pytest.mark.parametrize(("seconds", "ok"), [(0.0, True), (86400.0, True), (86401.0, False),
                                              (-1.0, False)])  # fmt: skip
def test_wait_for_quiet_is_at_most_a_day(seconds: float, ok: bool) -> None:
    if ok:
        assert request(wait_for_quiet=seconds).preflight.wait_for_quiet_s == seconds  # type: ignore[attr-defined]
        return
    with pytest.raises(OptionError) as info:
        request(wait_for_quiet=seconds)
    assert str(info.value) == (
        f"--wait-for-quiet {seconds:g} is not a wait this run can make; give 0 to 86400 "
        "seconds (a day)."
    )
