import pytest
from solution import to_roman


def test_numerals():
    assert to_roman(1) == "I"
    assert to_roman(4) == "IV"
    assert to_roman(9) == "IX"
    assert to_roman(58) == "LVIII"
    assert to_roman(1994) == "MCMXCIV"
    assert to_roman(3999) == "MMMCMXCIX"


def test_out_of_range():
    for n in (0, 4000, -3):
        with pytest.raises(ValueError):
            to_roman(n)
