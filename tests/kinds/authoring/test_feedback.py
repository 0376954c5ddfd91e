"""What goes back to the model after a failed check."""

from __future__ import annotations

from pytest_mtpsweep.kinds.authoring.run.feedback import clean, first_line, message, trim
from pytest_mtpsweep.kinds.authoring.sandbox import Check

FAILED = """F
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________
checker.py:4: in test_add
    assert add(2, 3) == 5
E   assert -1 == 5
E    +  where -1 = add(2, 3)
=========================== short test summary info ============================
FAILED checker.py::test_add - assert -1 == 5
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
1 failed in 0.07s
"""
COLLECTION = """
==================================== ERRORS ====================================
_________________________ ERROR collecting checker.py __________________________
/venv/lib/python3.11/site-packages/_pytest/python.py:528: in importtestmodule
    mod = import_path(
<frozen importlib._bootstrap>:1204: in _gcd_import
    ???
checker.py:1: in <module>
    from solution import add
E     File "./solution.py", line 1
E       def add(a, b) return
E                     ^^^^^^
E   SyntaxError: expected ':'
=========================== short test summary info ============================
ERROR checker.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.65s
"""


def check(output: str, reason: str | None = None) -> Check:
    return Check("fail", 1, 0.1, reason, output)


def test_clean_keeps_the_artefact_and_drops_pytest() -> None:
    text = clean(FAILED)
    assert "assert -1 == 5" in text and "checker.py:4: in test_add" in text
    assert "!!!!" not in text and "1 failed in" not in text and not text.startswith("F")
    text = clean(COLLECTION)
    assert "_pytest" not in text and "frozen" not in text and "import_path(" not in text
    assert "SyntaxError: expected ':'" in text and "from solution import add" in text


def test_first_line() -> None:
    assert first_line(check(FAILED)) == "assert -1 == 5"
    assert first_line(check(COLLECTION)) == "SyntaxError: expected ':'"
    assert first_line(check("", "timed out after 20 s")) == "timed out after 20 s"


def test_message_is_trimmed_to_its_limit() -> None:
    long = check(FAILED * 50)
    text = message(long, 200)
    assert len(text) <= 200 and text.endswith("[trimmed]")
    assert message(check("", "printed more than 256 KiB"), 500).startswith(
        "the check was stopped: printed more than 256 KiB"
    )
    assert trim("abc", 10) == "abc"
