from solution import is_palindrome


def test_palindromes():
    assert is_palindrome("A man, a plan, a canal: Panama") is True
    assert is_palindrome("") is True
    assert is_palindrome("No 'x' in Nixon") is True
    assert is_palindrome("12321") is True


def test_not_palindromes():
    assert is_palindrome("abc") is False
    assert is_palindrome("ab1") is False
