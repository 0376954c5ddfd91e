"""Multi-turn authoring: one conversation per subject x cohort x task x repeat of the ladder."""

from pytest_mtpsweep import CellResult


def test_authoring(cell: CellResult) -> None:
    # Passing means the conversation ran to an outcome; which outcome is data for the analysis.
    assert cell.valid, cell.reason
