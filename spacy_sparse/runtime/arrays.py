"""numpy helpers for the prediction path.

`np.unique` imports `numpy.ma` on its first call (15-25 ms here), which was
part of every cold start: labelling the first sentence after a load met new
word types (the lexicon, the cluster rows) and made the word-row slots.
`unique` gives the same values in one sort without that import.
"""
from typing import Tuple, Union

import numpy as np


def unique(a: np.ndarray, return_inverse: bool = False) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """np.unique of a 1-d array of integers: the sorted distinct values and,
    with return_inverse, each element's index among them."""
    a = np.asarray(a).reshape(-1)
    order = np.argsort(a, kind="stable")
    ranked = a[order]
    first = np.ones(ranked.shape[0], dtype=bool)
    np.not_equal(ranked[1:], ranked[:-1], out=first[1:])
    values = ranked[first]
    if not return_inverse:
        return values
    inverse = np.empty(a.shape[0], dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return values, inverse


def find_sorted(keys: np.ndarray, wanted: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(position, found) of each wanted value in the sorted, non-empty array
    `keys`: where found, keys[position] == the value. np.minimum, not
    ndarray.clip, keeps the position in range: clip's Python wrapper costs
    more than the search on a short sentence's few values."""
    at = np.searchsorted(keys, wanted)
    np.minimum(at, keys.shape[0] - 1, out=at)
    return at, keys[at] == wanted
