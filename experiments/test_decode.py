"""Streamed decoding, measured on every prompt x treatment x cycle of the chosen ladder."""

from pytest_mtpsweep import Measurement


def test_decode(measurement: Measurement) -> None:
    # Passing means the measurement is valid; how fast it was is data for the analysis.
    assert measurement.valid, measurement.reason
