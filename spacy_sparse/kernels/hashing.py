"""Key mixing and open-addressing hash tables over numpy arrays.

A table is a slice [off, off + cap) of two flat arrays: `keys` (uint64, 0 is
empty) and `vals` (int32, a row number). `cap` is a power of two; linear
probing. All functions are numba kernels that touch no Python object.
"""
import numpy as np
from numba import njit

U1 = np.uint64(1)
MUL1 = np.uint64(0x9E3779B97F4A7C15)
MUL2 = np.uint64(0xBF58476D1CE4E5B9)
MUL3 = np.uint64(0x94D049BB133111EB)
SH30 = np.uint64(30)
SH27 = np.uint64(27)
SH31 = np.uint64(31)
# Values atoms take past the edges of a doc: one per distance and side, far
# from the small integers that label atoms use.
PAD_LEFT = np.uint64(0x5BD1E9955BD1E995)
PAD_RIGHT = np.uint64(0x27D4EB2F165667C5)


@njit(cache=True, nogil=True)
def mix(h, v):
    """Fold the 64-bit value v into the running key h (splitmix64 finalizer)."""
    z = (h ^ v) * MUL1 + MUL2
    z = (z ^ (z >> SH30)) * MUL2
    z = (z ^ (z >> SH27)) * MUL3
    return z ^ (z >> SH31)


@njit(cache=True, nogil=True)
def table_find(keys, vals, off, cap, key):
    """Value stored for key in the table at [off, off+cap), or -1."""
    mask = np.uint64(cap - 1)
    i = np.int64(key & mask)
    for _ in range(cap):
        k = keys[off + i]
        if k == key:
            return vals[off + i]
        if k == 0:
            return -1
        i = (i + 1) & (cap - 1)
    return -1


@njit(cache=True, nogil=True)
def table_slot(keys, off, cap, key):
    """Slot of key, or of the empty slot where it would go (-1 if full)."""
    mask = np.uint64(cap - 1)
    i = np.int64(key & mask)
    for _ in range(cap):
        k = keys[off + i]
        if k == key or k == 0:
            return off + i
        i = (i + 1) & (cap - 1)
    return -1


@njit(cache=True, nogil=True)
def rehash(old_keys, old_vals, old_off, new_off, new_keys, new_vals):
    """Copy every table of a flat layout into a new layout (new capacities)."""
    n_tables = old_off.shape[0] - 1
    for t in range(n_tables):
        cap = new_off[t + 1] - new_off[t]
        for s in range(old_off[t], old_off[t + 1]):
            k = old_keys[s]
            if k != 0:
                slot = table_slot(new_keys, new_off[t], cap, k)
                new_keys[slot] = k
                new_vals[slot] = old_vals[s]


@njit(cache=True, nogil=True)
def fill_tables(table_of, keys_in, vals_in, off, keys, vals):
    """Insert (table_of[i], keys_in[i]) -> vals_in[i] into empty tables."""
    for i in range(keys_in.shape[0]):
        t = table_of[i]
        slot = table_slot(keys, off[t], off[t + 1] - off[t], keys_in[i])
        # value before key: a concurrent reader that sees the key sees its value
        vals[slot] = vals_in[i]
        keys[slot] = keys_in[i]


@njit(cache=True, nogil=True)
def find_many(keys, vals, cap, queries, out):
    """Look up many keys in one table starting at 0; -1 for a miss."""
    n_miss = 0
    for i in range(queries.shape[0]):
        q = queries[i]
        if q == 0:
            q = U1
        r = table_find(keys, vals, 0, cap, q)
        out[i] = r
        if r < 0:
            n_miss += 1
    return n_miss


def capacity_for(n: int) -> int:
    """Smallest power of two that holds n keys at a load of at most one half."""
    cap = 8
    while cap < 2 * n + 2:
        cap *= 2
    return cap
