"""The memory-step witness across session files."""

from __future__ import annotations

from pytest_mtpsweep.protocol.serveridentity import (
    describe,
    memory_steps,
    session_memory_mib,
    startup_error,
)

MIB = 2**20


def info(
    treatment: str, rss_mib: float | None = None, gpu_mib: float | None = None
) -> dict[str, object]:
    return {
        "treatment": treatment,
        "rss_after_load_bytes": rss_mib * MIB if rss_mib is not None else None,
        "gpu_used_mib_after_load": gpu_mib,
    }


def test_gpu_memory_is_preferred_over_rss() -> None:
    assert session_memory_mib(info("a", rss_mib=300, gpu_mib=20_000)) == (20_000.0, "gpu")
    assert session_memory_mib(info("a", rss_mib=300)) == (300.0, "rss")
    assert session_memory_mib(info("a")) == (None, "rss")


def test_step_confirmed_and_flagged() -> None:
    sessions = [
        info("none", 340),
        info("none", 350),
        info("spec", 600),
        info("spec", 610),
        info("flat", 351),
    ]
    steps = {s.treatment: s for s in memory_steps(sessions, {"spec": 100, "flat": 100}, "none")}
    assert steps["spec"].verdict == "confirmed" and steps["spec"].observed_mib == 260
    assert steps["flat"].verdict == "flagged" and steps["flat"].observed_mib == 6
    assert "flagged, +6 MiB over the baseline (rss), expected at least +100 MiB" in describe(
        steps["flat"]
    )


def test_unknown_without_readings() -> None:
    (step,) = memory_steps([info("spec", 600)], {"spec": 100}, "none")
    assert step.verdict == "unknown" and "unknown" in describe(step)


def test_treatment_flags_must_appear_together_in_argv() -> None:
    argv = ["llama-server", "-m", "m.gguf", "--spec-type", "ngram-simple", "--ctx-size", "4096"]
    assert startup_error(argv, ["--spec-type", "ngram-simple"], 4096, 4096) is None
    assert startup_error(argv, [], None, 4096) is None
    split = ["llama-server", "--spec-type", "x", "ngram-simple"]
    assert "lacks the treatment flags" in str(
        startup_error(split, ["--spec-type", "ngram-simple"], None, 1)
    )


def test_served_context_must_match() -> None:
    assert "serves n_ctx 1024, not the requested 4096" in str(startup_error([], [], 1024, 4096))
