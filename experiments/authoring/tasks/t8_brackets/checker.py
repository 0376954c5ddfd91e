from solution import balanced


def test_balanced():
    assert balanced("") is True
    assert balanced("f(a[1]) {x}") is True
    assert balanced("{[()()]}") is True


def test_unbalanced():
    assert balanced("(]") is False
    assert balanced("([)]") is False
    assert balanced("((") is False
    assert balanced(")(") is False
