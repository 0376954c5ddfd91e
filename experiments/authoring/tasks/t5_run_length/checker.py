from solution import run_length


def test_runs():
    assert run_length("aaabcc") == "a3b1c2"
    assert run_length("a") == "a1"
    assert run_length("abab") == "a1b1a1b1"
    assert run_length("zzzzzzzzzzzz") == "z12"


def test_empty():
    assert run_length("") == ""
