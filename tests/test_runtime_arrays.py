"""spacy_sparse.runtime.arrays: np.unique's results without its first-call import; lookups in sorted keys."""
import numpy as np
import pytest

from spacy_sparse.runtime.arrays import find_sorted, unique


@pytest.mark.parametrize("values", [
    np.array([], dtype=np.uint64),
    np.array([7], dtype=np.int64),
    np.array([2 ** 64 - 1, 3, 2 ** 63, 3, 0, 2 ** 64 - 1], dtype=np.uint64),
    np.random.default_rng(0).integers(-50, 50, size=500).astype(np.int32),
    np.random.default_rng(1).integers(0, 2 ** 63, size=300, dtype=np.int64).repeat(3),
])
def test_unique_is_numpys(values):
    expected, inverse = np.unique(values, return_inverse=True)
    got, got_inverse = unique(values, return_inverse=True)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
    assert np.array_equal(got_inverse, inverse.reshape(-1))
    assert np.array_equal(unique(values), expected)


def test_find_sorted_finds_members_and_only_them():
    rng = np.random.default_rng(2)
    keys = np.unique(rng.integers(0, 2 ** 63, size=200, dtype=np.int64)).astype(np.uint64)
    absent = np.array([0, 2 ** 64 - 1, keys[5] + 1], dtype=np.uint64)
    wanted = np.concatenate([keys[rng.permutation(len(keys))[:50]], absent])
    at, found = find_sorted(keys, wanted)
    assert found.tolist() == [True] * 50 + [False] * 3
    assert np.array_equal(keys[at[:50]], wanted[:50])
    assert ((at >= 0) & (at < len(keys))).all()  # in range even past the last key
