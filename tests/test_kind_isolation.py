"""A broken installed kind changes nothing for a pytest run that does not use it, and is one line
(its distribution, the fix, exit non-zero, no traceback) wherever it is named: `pytest
--ladder`, `mtpsweep kinds`, `mtpsweep lint`.

Every variant of `tests/kind_sites.py` is installed at once, each as its own distribution, as
pip would have (a `*.dist-info` on PYTHONPATH), beside a healthy third-party kind `good`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kind_sites import BROKEN, DECLARATION, LADDER, environment, install
from tests.sandbox import REPO

SPY = "import os\nopen(os.environ['KIND_SPY'], 'w').close()\n"
UNRELATED = """\
def test_tmp(tmp_path):
    (tmp_path / "x").write_text("y")
    assert (tmp_path / "x").read_text() == "y"


def test_measurement_of_its_own(measurement):
    assert measurement == 42


def test_passes():
    assert True
"""
# the project's own fixture shares its name with a shipped kind's
CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef measurement():\n    return 42\n"


def run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False, cwd=cwd, env=env,
        timeout=120,
    )  # fmt: skip


def pytest_run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(cwd, env, "-m", "pytest", "-p", "no:cacheprovider", *args)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """An unrelated project with a ladder per installed kind, every broken kind installed."""
    root = tmp_path_factory.mktemp("isolation")
    site, project = root / "site", root / "project"
    (project / "ladders").mkdir(parents=True)
    kinds = {**BROKEN, "good": DECLARATION.format(name="good", fixture="good", fields="")}
    for name, module in kinds.items():
        install(site, name, module)
        (project / "ladders" / f"{name}.toml").write_text(LADDER.format(name=name))
    install(site, "spy", SPY + DECLARATION.format(name="spy", fixture="spy", fields=""))
    (project / "test_unrelated.py").write_text(UNRELATED)
    (project / "conftest.py").write_text(CONFTEST)
    env = {**environment(site, REPO), "KIND_SPY": str(root / "spy-imported")}
    return project, env


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout.strip().splitlines()[-1].split(" in ")[0]


def test_an_unrelated_project_runs_as_it_would_without_them(
    world: tuple[Path, dict[str, str]],
) -> None:
    project, env = world
    spy = Path(env["KIND_SPY"])
    alone = pytest_run(project, {**env, "PYTHONPATH": str(REPO)}, "-q")
    beside = pytest_run(project, env, "-q")
    assert alone.returncode == beside.returncode == 0, beside.stdout + beside.stderr
    assert outcome(beside) == outcome(alone) == "3 passed"
    assert not spy.exists()  # no third party's kind was even imported
    # with a ladder of a healthy kind, the broken ones are set aside and the rest runs
    healthy = pytest_run(project, env, "-q", "--ladder=ladders/good.toml", "-m", "not mtpsweep")
    assert healthy.returncode == 0 and outcome(healthy) == "3 passed", healthy.stdout
    assert "Traceback" not in healthy.stdout + healthy.stderr
    assert not spy.exists()  # --ladder imports the third party's kind it names, no other
    (project / "ladders" / "spy.toml").write_text(LADDER.format(name="spy"))
    named = pytest_run(project, env, "-q", "--ladder=ladders/spy.toml", "-m", "not mtpsweep")
    assert named.returncode == 0, named.stdout + named.stderr
    assert spy.exists()  # ... and that one it does: the spy shows it can tell


def test_a_shipped_ladder_imports_no_third_partys_kind(
    world: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    # round six (issue 50): a kind that ends the process at import (`oexit`) killed decode's
    # lint, run and analyse with no output; a slow one or a thread delayed them all
    project, env = world
    env = {**env, "KIND_SPY": str(tmp_path / "spy-imported")}
    demo = str(REPO / "experiments" / "ladders" / "cpu-demo.toml")
    done = run(project, env, "-m", "pytest_mtpsweep.cli.main", "lint", demo)
    assert done.returncode == 0 and done.stdout.endswith("192 cases)\n"), done.stdout + done.stderr
    # (in a folder of its own: the world's conftest takes decode's fixture name)
    collected = pytest_run(tmp_path, env, "-q", "--co", f"--ladder={demo}", "-m", "not mtpsweep")
    assert collected.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, collected.stdout
    assert "Traceback" not in collected.stdout + collected.stderr
    assert not Path(env["KIND_SPY"]).exists()


def test_a_kind_that_ends_or_outlives_its_import_is_set_aside_in_one_line(
    world: tuple[Path, dict[str, str]],
) -> None:
    project, env = world
    done = run(project, env, "-m", "pytest_mtpsweep.cli.main", "kinds")
    lines = {line.split(":", 1)[0]: line for line in done.stdout.splitlines()}
    assert "importing oexit_kind:KIND ended the process (exit status 0)" in lines["oexit"]
    assert "importing threads_kind:KIND left 1 thread(s) running" in lines["threads"]
    assert lines["good"].startswith("good: ok")  # the probe let the healthy one through


@pytest.mark.parametrize("name", sorted(n for n in BROKEN if n != "nocommands"))
def test_a_ladder_naming_a_broken_kind_is_refused_in_one_line(
    world: tuple[Path, dict[str, str]], name: str
) -> None:
    project, env = world
    done = pytest_run(project, env, f"--ladder=ladders/{name}.toml")
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert len(said) == 1 and said[0].startswith(f"ERROR: {project}/ladders/{name}.toml: "), said
    assert f"{name}-kind 0.1" in said[0] and "pip uninstall" in said[0]
    assert "Traceback" not in done.stdout + done.stderr


def test_mtpsweep_kinds_names_each_broken_kind_its_distribution_and_the_fix(
    world: tuple[Path, dict[str, str]],
) -> None:
    project, env = world
    done = run(project, env, "-m", "pytest_mtpsweep.cli.main", "kinds")
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = {line.split(":", 1)[0]: line for line in done.stdout.splitlines()}
    for name in BROKEN:
        assert f"{name}-kind 0.1" in lines[name] and "pip uninstall" in lines[name], lines[name]
    assert lines["good"].startswith("good: ok (distribution good-kind 0.1; fixture good")
    assert lines["decode"].startswith("decode: ok (distribution pytest-mtpsweep")
    assert "load-kind 0.1" in lines["load"]
    assert "pytest-mtpsweep" in lines["load"]  # a kind of two distributions names both


def test_mtpsweep_lint_refuses_each_ladder_of_a_broken_kind_in_one_line(
    world: tuple[Path, dict[str, str]],
) -> None:
    project, env = world
    done = run(project, env, "-m", "pytest_mtpsweep.cli.main", "lint", "ladders/")
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = {Path(line.split(":", 1)[0]).stem: line for line in done.stdout.splitlines()}
    assert lines["good"].endswith(": ok (good, 2 treatments x 2 cycles, 12 cases)")
    assert lines["nocommands"].endswith("12 cases)")  # its ladders need no commands
    for name in set(BROKEN) - {"nocommands"}:
        assert f"{name}-kind 0.1" in lines[name] and "pip uninstall" in lines[name], lines[name]


def test_a_kind_whose_commands_do_not_load_leaves_the_others_working(
    world: tuple[Path, dict[str, str]],
) -> None:
    project, env = world
    done = run(project, env, "-m", "pytest_mtpsweep.cli.main", "tasks", "--help")
    assert done.returncode == 0, done.stderr  # the authoring kind's command is there
    missing = run(project, env, "-m", "pytest_mtpsweep.cli.main", "nocommand")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "note: kind 'nocommands' of distribution nocommands-kind 0.1" in missing.stderr


def test_a_real_ctrl_c_while_a_kind_imports_still_interrupts(tmp_path: Path) -> None:
    """The kind's own KeyboardInterrupt is the `interrupts` variant; this is the user's."""
    ctrl_c = "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n"
    install(tmp_path / "site", "ctrlc", ctrl_c)
    (tmp_path / "good.toml").write_text(LADDER.format(name="ctrlc"))
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    env = environment(tmp_path / "site", REPO)
    done = pytest_run(tmp_path, env, "--ladder=good.toml")
    assert done.returncode != 0 and "passed" not in done.stdout
    assert "KeyboardInterrupt" in done.stderr and "does not load" not in done.stdout + done.stderr


def test_kind_sites_install_as_pip_would(tmp_path: Path) -> None:
    install(tmp_path, "demo", "KIND = None\n")
    sys.path.insert(0, str(tmp_path))
    try:
        from importlib.metadata import entry_points

        (found,) = [e for e in entry_points(group="pytest_mtpsweep.kinds") if e.name == "demo"]
        assert found.value == "demo_kind:KIND" and found.dist is not None
        assert found.dist.name == "demo-kind" and os.path.isfile(tmp_path / "demo_kind.py")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_kind_named_like_a_shipped_one_is_named_as_the_clash(tmp_path: Path) -> None:
    # round six (issue 50): a decode ladder (no `kind` field) was refused with "none say so"
    install(tmp_path / "site", "decode", DECLARATION.format(name="decode", fixture="d2", fields=""))
    env = environment(tmp_path / "site", REPO)
    demo = str(REPO / "experiments" / "ladders" / "cpu-demo.toml")
    done = run(tmp_path, env, "-m", "pytest_mtpsweep.cli.main", "lint", demo)
    said = done.stdout.strip().splitlines()
    assert done.returncode == 1 and len(said) == 1, done.stdout + done.stderr
    assert "kind 'decode' is declared by 2 installed distributions" in said[0]
    assert "decode-kind 0.1" in said[0] and "pip uninstall decode-kind" in said[0]
    assert "a shipped kind" in said[0] and "Traceback" not in done.stderr
