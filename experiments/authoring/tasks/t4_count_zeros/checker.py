from solution import count_zeros


def test_counts():
    assert count_zeros([]) == 0
    assert count_zeros([0]) == 1
    assert count_zeros([1, 2, 3]) == 0
    assert count_zeros([0, 1, 0, 2, 0]) == 3
    assert count_zeros([-1, 0, 10]) == 1
