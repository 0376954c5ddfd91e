"""The smoke test: a binary that cannot run here is said in one sentence, before any session.

STUB servers only (tests/crashing.py): a real build that dies by SIGILL cannot be made on
demand on a machine whose CPU runs it. The real build's own smoke test is in
tests/rig/test_build_real.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.rig.smoke import smoke
from tests.crashing import crashing
from tests.sandbox import FAKE_GGUF, STUB_SERVER

FIX = "rebuild it here"


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "model.gguf"
    path.write_bytes(FAKE_GGUF)
    return path


def test_a_server_that_decodes_passes_and_is_remembered(model: Path) -> None:
    first = smoke(STUB_SERVER, model, fix=FIX)
    assert first.ok and not first.remembered and first.observed.startswith("decoded "), first
    again = smoke(STUB_SERVER, model, fix=FIX)
    assert again.ok and again.remembered


def test_sigill_at_load_is_one_sentence_with_signal_place_cause_and_fix(
    tmp_path: Path, model: Path
) -> None:
    binary = crashing(tmp_path, "sigill")
    result = smoke(binary, model, fix=FIX)
    assert not result.ok and result.status == -4
    said = result.observed
    assert "\n" not in said
    assert said.startswith(f"{binary} was killed by SIGILL (illegal instruction"), said
    assert "while loading, after the log line 'llama threadpool init, n_threads = 2'" in said
    assert "built for CPU features this machine lacks" in said and said.endswith(FIX)
    assert not smoke(binary, model, fix=FIX).remembered  # a failure is never remembered


def test_sigkill_at_load_names_the_oom_killer(tmp_path: Path, model: Path) -> None:
    result = smoke(crashing(tmp_path, "sigkill"), model, fix=FIX)
    assert not result.ok and result.status == -9
    assert "was killed by SIGKILL (often the kernel's out-of-memory killer" in result.observed
    assert "CPU features" not in result.observed  # not a CPU's fault


def test_a_server_that_exits_says_its_status(tmp_path: Path, model: Path) -> None:
    wrapper = tmp_path / "exits.sh"
    wrapper.write_text(f'#!/usr/bin/env bash\nexec {STUB_SERVER} "$@" --fault exit-at-start\n')
    wrapper.chmod(0o755)
    result = smoke(wrapper, model, fix=FIX)
    assert not result.ok and result.status == 1
    assert f"{wrapper} exited with status 1 while loading" in result.observed
