"""Key mixing and open-addressing hash tables over numpy arrays.

A table is the slot range [off, off + cap) of one flat uint64 array `tab`
in which slot s holds its key at tab[2s] (0: empty) and its value (a row
number) at tab[2s + 1], so a probe reads one cache line. `cap` is a power of
two; linear probing. All functions are numba kernels over numpy arrays.
"""
import numpy as np
from numba import njit

from .jit import leaf
from .layout import KEY_MULTIPLY
from .prefetch import prefetch_byte

U1 = np.uint64(1)
MUL1 = np.uint64(0x9E3779B97F4A7C15)
MUL2 = np.uint64(0xBF58476D1CE4E5B9)
MUL3 = np.uint64(0x94D049BB133111EB)
SH30 = np.uint64(30)
SH27 = np.uint64(27)
SH31 = np.uint64(31)
SH32 = np.uint64(32)
LOW32 = np.uint64(0xFFFFFFFF)
# Values atoms take past the edges of a doc: one per distance and side, far
# from the small integers that label atoms use.
PAD_LEFT = np.uint64(0x5BD1E9955BD1E995)
PAD_RIGHT = np.uint64(0x27D4EB2F165667C5)


@leaf
def mix(h, v):
    """Fold the 64-bit value v into the running key h (splitmix64 finalizer)."""
    z = (h ^ v) * MUL1 + MUL2
    z = (z ^ (z >> SH30)) * MUL2
    z = (z ^ (z >> SH27)) * MUL3
    return z ^ (z >> SH31)


@leaf
def fold_atom(h, v, key_mix):
    """Fold atom value v into the running key h the way the model's keys
    were made (layout.KEY_MIXES): splitmix64's finalizer per atom, or one
    multiply per atom, whose high half key_of keeps (a multiply carries
    every input bit upward, so the high half depends on all of them; the
    low half is never used)."""
    if key_mix == KEY_MULTIPLY:
        return (h ^ v) * MUL1
    return mix(h, v)


@leaf
def key_of(h, key_mix):
    """The feature key of a running key made by fold_atom: 32 bits, never 0."""
    if key_mix == KEY_MULTIPLY:
        k = h >> SH32
        return k if k != 0 else U1
    return finish_key(h)


@leaf
def finish_key(h):
    """The feature key of a running key h: folded to 32 bits, so a model
    file spends four bytes a feature on keys, not eight (two features of one
    template share a key with odds n / 2**32; they then share a row, as with
    the hashing trick). 0 marks an empty slot, so it becomes 1."""
    k = (h ^ (h >> SH32)) & LOW32
    return k if k != 0 else U1


@njit(cache=True, nogil=True)
def _finish_all(keys, out):
    for i in range(keys.shape[0]):
        out[i] = finish_key(keys[i])


def fold_keys(keys: np.ndarray) -> np.ndarray:
    """finish_key over an array of 64-bit keys (files written before keys
    were folded)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64).reshape(-1)
    out = np.empty_like(keys)
    _finish_all(keys, out)
    return out


@leaf
def table_find(tab, off, cap, key):
    """Value stored for key in the table at slots [off, off+cap), or -1."""
    i = np.int64(key & np.uint64(cap - 1))
    for _ in range(cap):
        s = 2 * (off + i)
        k = tab[s]
        if k == key:
            return np.int64(tab[s + 1])
        if k == 0:
            return -1
        i = (i + 1) & (cap - 1)
    return -1


@leaf
def prefetch_home(tab, off, cap, key):
    """Start fetching the slot where table_find's probe for key begins."""
    prefetch_byte(tab, 2 * (off + np.int64(key & np.uint64(cap - 1))) * tab.itemsize)


@njit(cache=True, nogil=True)
def table_slot(tab, off, cap, key):
    """Slot of key, or the empty slot where it would go (-1 if full)."""
    i = np.int64(key & np.uint64(cap - 1))
    for _ in range(cap):
        k = tab[2 * (off + i)]
        if k == key or k == 0:
            return off + i
        i = (i + 1) & (cap - 1)
    return -1


@njit(cache=True, nogil=True)
def table_put(tab, slot, key, value):
    # value before key: a concurrent reader that sees the key sees its value
    tab[2 * slot + 1] = np.uint64(value)
    tab[2 * slot] = key


@njit(cache=True, nogil=True)
def relayout_tables(tab, old_off, new_off, scratch):
    """Give every table of a flat layout its new capacity inside `tab`
    itself (already long enough for the new layout), so that growing the
    tables holds one copy of them, not two. Capacities only grow, so a
    table's new slots start at or after its old ones; going from the last
    table to the first, each is written over its own old slots or over
    slots already moved. A table whose capacity stays is moved slot for
    slot (a key's slot depends only on the capacity, relative to the
    table's start); a grown one is copied to `scratch` (as long as the
    largest grown table's old slots) and its keys put back in slot order."""
    for t in range(old_off.shape[0] - 2, -1, -1):
        start, old_cap, cap = new_off[t], old_off[t + 1] - old_off[t], new_off[t + 1] - new_off[t]
        src = 2 * old_off[t]
        if cap == old_cap:
            if start != old_off[t]:
                for j in range(2 * cap - 1, -1, -1):  # from the end: the ranges may overlap
                    tab[2 * start + j] = tab[src + j]
            continue
        scratch[:2 * old_cap] = tab[src:src + 2 * old_cap]
        tab[2 * start:2 * (start + cap)] = 0
        for s in range(old_cap):
            k = scratch[2 * s]
            if k != 0:
                table_put(tab, table_slot(tab, start, cap, k), k, scratch[2 * s + 1])


@njit(cache=True, nogil=True)
def fill_tables(table_of, keys_in, vals_in, off, tab):
    """Insert (table_of[i], keys_in[i]) -> vals_in[i]; returns how many keys
    were already present (duplicates), which a loader treats as corruption."""
    dupes = 0
    for i in range(keys_in.shape[0]):
        t = table_of[i]
        slot = table_slot(tab, off[t], off[t + 1] - off[t], keys_in[i])
        if tab[2 * slot] == keys_in[i]:
            dupes += 1
        table_put(tab, slot, keys_in[i], vals_in[i])
    return dupes


@njit(cache=True, nogil=True)
def find_words(tab, cap, table, values, space_col, out):
    """The lexicon's rows of the word types whose ORTH hashes are column 0
    of `table` (a batch's token columns: pipeline/batching.DocColumns), -1
    for a type it has not met. Returns (types not met, tokens whose row
    marks them as whitespace in values[:, space_col], the highest row met):
    what a batch asks of its rows besides the rows themselves, counted in
    the same pass (three numpy passes over a short sentence cost more than
    the lookup)."""
    n_miss = 0
    n_space = 0
    top = -1
    for i in range(table.shape[0]):
        r = out[i] = find_at_zero(tab, cap, table[i, 0])
        if r < 0:
            n_miss += 1
        else:
            n_space += values[r, space_col] != 0
            top = max(top, r)
    return n_miss, n_space, top


@njit(cache=True, nogil=True)
def find_many(tab, cap, queries, out):
    """Look up many keys in one table at slot 0; -1 for a miss. Returns the
    number of misses."""
    n_miss = 0
    for i in range(queries.shape[0]):
        out[i] = find_at_zero(tab, cap, queries[i])
        n_miss += out[i] < 0
    return n_miss


@leaf
def find_at_zero(tab, cap, query):
    """table_find in a table of one range at slot 0; a query 0 is asked as
    1 (0 marks an empty slot: lexicon.add_keys puts such a key as 1)."""
    return table_find(tab, 0, cap, query if query != 0 else U1)
