"""Kernels of `tag`'s JSON lines writer (`spacy_sparse/jsonl.py`): a token's
JSON comes from a table of pieces kept per (flags, ORTH, SPACY, TAG, POS,
DEP), found and joined here, so writing a doc runs no Python per token.

The table is open addressing with linear probing over `cap` slots (a power
of two). It compares whole keys, unlike the folded 32-bit feature keys of
hashing.py, whose rare collisions share a row: here a collision would write
another token's text. Slot s holds its key in keys[s] (KEY_WIDTH words) and its piece's
id in ids[s], -1 when the slot is empty. Piece i is
arena[bounds[0, i]:bounds[1, i]] (the token's JSON object up to its head, or
whole) followed by arena[bounds[1, i]:bounds[2, i]] (its text with
whitespace, escaped for a JSON string).
"""
import numpy as np
from numba import njit

from .hashing import mix

KEY_WIDTH = 6
COMMA = np.uint8(ord(","))
SPACE = np.uint8(ord(" "))
CLOSE = np.uint8(ord("}"))
ZERO = np.uint8(ord("0"))


@njit(cache=True, nogil=True)
def _home(keys, i, cap):
    h = np.uint64(0)
    for j in range(KEY_WIDTH):
        h = mix(h, keys[i, j])
    return np.int64(h & np.uint64(cap - 1))


@njit(cache=True, nogil=True)
def _slot(table_keys, ids, keys, i):
    """The slot holding keys[i], or the empty slot where it would go
    (-1 if the table is full)."""
    cap = ids.shape[0]
    s = _home(keys, i, cap)
    for _ in range(cap):
        if ids[s] < 0:
            return s
        same = True
        for j in range(KEY_WIDTH):
            if table_keys[s, j] != keys[i, j]:
                same = False
                break
        if same:
            return s
        s = (s + 1) & (cap - 1)
    return -1


@njit(cache=True, nogil=True)
def find_pieces(table_keys, ids, keys, out):
    """out[i] = the id of the piece kept for keys[i], or -1; returns the
    number of misses."""
    misses = 0
    for i in range(keys.shape[0]):
        s = _slot(table_keys, ids, keys, i)
        out[i] = ids[s] if s >= 0 else -1
        if out[i] < 0:
            misses += 1
    return misses


@njit(cache=True, nogil=True)
def put_pieces(table_keys, ids, keys, new_ids):
    """Keep keys[i] -> new_ids[i]; returns how many could not be placed (a
    full table; the caller keeps the load at most half)."""
    lost = 0
    for i in range(keys.shape[0]):
        s = _slot(table_keys, ids, keys, i)
        if s < 0:
            lost += 1
            continue
        for j in range(KEY_WIDTH):
            table_keys[s, j] = keys[i, j]
        ids[s] = new_ids[i]
    return lost


@njit(cache=True, nogil=True)
def _digits(value):
    n = 1
    while value >= 10:
        value //= 10
        n += 1
    return n


@njit(cache=True, nogil=True)
def join_pieces(pieces, heads, arena, bounds, tokens_out, text_out, used):
    """Write the tokens' JSON objects, ", "-separated, into tokens_out (each
    closed by its head and "}" when `heads` has one per token) and their
    escaped texts into text_out, and the bytes written to each into used.
    Returns False, having written nothing, when either is too small; used
    then holds the sizes they need."""
    n = pieces.shape[0]
    with_heads = heads.shape[0] == n
    need_t = 2 * max(n - 1, 0)
    need_x = 0
    for i in range(n):
        p = pieces[i]
        need_t += bounds[1, p] - bounds[0, p]
        need_x += bounds[2, p] - bounds[1, p]
        if with_heads:
            need_t += _digits(heads[i]) + 1
    used[0] = need_t
    used[1] = need_x
    if need_t > tokens_out.shape[0] or need_x > text_out.shape[0]:
        return False
    t = 0
    x = 0
    for i in range(n):
        p = pieces[i]
        if i > 0:
            tokens_out[t] = COMMA
            tokens_out[t + 1] = SPACE
            t += 2
        for b in range(bounds[0, p], bounds[1, p]):
            tokens_out[t] = arena[b]
            t += 1
        if with_heads:
            head = heads[i]
            width = _digits(head)
            for d in range(width - 1, -1, -1):
                tokens_out[t + d] = ZERO + np.uint8(head % 10)
                head //= 10
            t += width
            tokens_out[t] = CLOSE
            t += 1
        for b in range(bounds[1, p], bounds[2, p]):
            text_out[x] = arena[b]
            x += 1
    return True
