"""Load ladders: every level block of every treatment x cycle, a short warm-up then its
requests on the shared schedule, recorded."""

from pytest_mtpsweep.kinds.load.result import LevelResult


def test_load(load_level: LevelResult) -> None:
    # Passing means every request of the block completed; how fast is data for the analysis.
    assert load_level.valid, load_level.reason
