"""The UPOS lookup of `sparse_upos` (pipeline/upos.py) as one kernel.

A token's UPOS is the value of its (tag, label, word) key if the tables
have one, else of its (tag, label), else of its tag. Done with numpy array
operations this took some thirty calls per batch, and for a one-sentence
`nlp(text)` those calls cost more than labelling the sentence did; here it is
one call whatever the batch.
"""
import numpy as np
from numba import njit

from .layout import UPOS_BEFORE, UPOS_DEP, UPOS_LOWER, UPOS_MUL, UPOS_SPACE, UPOS_TAG


@njit(cache=True, nogil=True)
def sorted_find(keys, values, key):
    """The value of key in sorted `keys`, 0 where it is absent."""
    i = np.searchsorted(keys, key)
    if i < keys.shape[0] and keys[i] == key:
        return values[i]
    return np.uint64(0)


@njit(cache=True, nogil=True)
def upos_lookup(columns, keys0, values0, keys1, values1, keys2, values2, space, out):
    """out[i]: the UPOS of row i of `columns` by (tag, label, word), else by
    (tag, label), else by tag (keys and values sorted by key, per level);
    the POS the token had where it has no tag or one the tables never saw;
    `space` for a whitespace token."""
    for i in range(columns.shape[0]):
        if columns[i, UPOS_SPACE] != 0:
            out[i] = space
            continue
        tag = columns[i, UPOS_TAG]
        pair = tag * UPOS_MUL + columns[i, UPOS_DEP]
        value = sorted_find(keys2, values2, pair * UPOS_MUL + columns[i, UPOS_LOWER])
        if value == 0:
            value = sorted_find(keys1, values1, pair)
        if value == 0:
            value = sorted_find(keys0, values0, tag)
        out[i] = columns[i, UPOS_BEFORE] if tag == 0 or value == 0 else value
