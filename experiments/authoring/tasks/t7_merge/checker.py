from solution import merge_intervals


def test_merges():
    assert merge_intervals([(5, 6), (1, 3), (2, 4)]) == [(1, 4), (5, 6)]
    assert merge_intervals([(1, 2), (2, 3)]) == [(1, 3)]
    assert merge_intervals([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]


def test_edges():
    assert merge_intervals([]) == []
    assert merge_intervals([(3, 3)]) == [(3, 3)]
    assert merge_intervals([(4, 5), (1, 2)]) == [(1, 2), (4, 5)]
