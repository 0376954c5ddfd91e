from solution import longest_word_length


def test_words():
    assert longest_word_length("a bb ccc") == 3
    assert longest_word_length("hello,   world!") == 6
    assert longest_word_length("one\ttwo\nthree") == 5


def test_no_words():
    assert longest_word_length("") == 0
    assert longest_word_length("   \n\t ") == 0
