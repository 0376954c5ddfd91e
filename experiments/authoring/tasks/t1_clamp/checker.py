import pytest
from solution import clamp


def test_inside_and_edges():
    assert clamp(2, 0, 3) == 2
    assert clamp(0, 0, 3) == 0
    assert clamp(3, 0, 3) == 3


def test_outside():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
    assert clamp(-7.5, -2.5, 2.5) == -2.5


def test_bad_range():
    with pytest.raises(ValueError):
        clamp(1, 3, 0)
