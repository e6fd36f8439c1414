"""How the model file packs a model's rows: identical rows stored once, sorted values stored as steps within
their group, and every index in the smallest unsigned type that holds it (codec.py writes and reads with these).
Plain numpy, no model: each takes and returns arrays."""
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .fields import zipped, zipped_bytes


def len_dtype(n_labels: int):
    return np.uint8 if n_labels < 256 else np.uint16


def index_dtype(top: int):
    """The smallest unsigned type holding 0..top."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return dt
    return np.uint64


def rows_grouped(row_len: np.ndarray, entries: np.ndarray, n_entries: int) -> Dict[str, Dict[str, Any]]:
    """Rows of packed (label step, code) entries, zipped; identical rows
    are stored once (with an index per feature) when that zips smaller."""
    entry_dt = index_dtype(max(0, n_entries - 1))
    len_dt = index_dtype(int(row_len.max()) if row_len.size else 0)
    plain = {"row_length": zipped(row_len.astype(len_dt)), "row_entry": zipped(entries.astype(entry_dt))}
    if row_len.size < 2:
        return plain
    same = same_rows(row_len, entries)
    if same is None:
        return plain
    first, index = same
    # distinct rows in lexicographic order: neighbours then look alike,
    # which zlib rewards (a quarter fewer bytes than hash order)
    starts = row_starts(row_len)
    u_len = row_len[first]
    mat = np.full((first.size, int(u_len.max())), n_entries, dtype=np.int64)
    mat[np.repeat(np.arange(first.size), u_len), positions_in_rows(u_len)] = entries[gather_ranges(starts[first], u_len)]
    order = np.lexsort(mat.T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    first, index = first[order], rank[index]
    u_len = row_len[first]
    merged = {"row_length": zipped(u_len.astype(len_dt)),
              "row_entry": zipped(entries[gather_ranges(starts[first], u_len)].astype(entry_dt)),
              "feature_row": zipped(index.astype(index_dtype(first.size - 1)))}
    return merged if zipped_bytes(merged) < zipped_bytes(plain) else plain


def same_rows(row_len: np.ndarray, entries: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(first, index): the distinct rows (by their first feature) and each
    feature's distinct row. Rows are told apart by a 64-bit hash of their
    entries and then compared in full; None if two rows share a hash (the
    caller then stores every row)."""
    starts = row_starts(row_len)
    _, first, index = np.unique(row_hashes(row_len, entries), return_index=True, return_inverse=True)
    index = index.reshape(-1)
    rep_len = row_len[first][index]
    if np.any(rep_len != row_len) or np.any(entries[gather_ranges(starts[first][index], rep_len)] != entries):
        return None
    return first, index


def row_hashes(row_len: np.ndarray, entries: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each (nonempty) row: its entries times fixed odd
    multipliers by position, summed, plus its length."""
    mults = np.random.default_rng(0x5EED).integers(1, 2 ** 63, size=int(row_len.max()), dtype=np.uint64) | np.uint64(1)
    starts = row_starts(row_len)
    with np.errstate(over="ignore"):
        mixed = (entries.astype(np.uint64) + np.uint64(1)) * mults[positions_in_rows(row_len)]
        return np.add.reduceat(mixed, starts) + row_len.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)


def row_starts(row_len: np.ndarray) -> np.ndarray:
    """Where each row begins in the concatenated entries."""
    starts = np.zeros(row_len.size, dtype=np.int64)
    np.cumsum(row_len[:-1], dtype=np.int64, out=starts[1:])
    return starts


def positions_in_rows(row_len: np.ndarray) -> np.ndarray:
    """0, 1, .., len-1 for each row, concatenated."""
    starts = row_starts(row_len)
    return np.arange(int(row_len.sum())) - np.repeat(starts, row_len)


def steps_within(index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Values sorted within each group (`counts` values a group) -> their
    steps, the first of each group kept whole; all >= 0."""
    steps = np.diff(index, prepend=0)
    starts = np.cumsum(counts)[:-1]
    starts = starts[counts[1:] > 0] if starts.size else starts
    steps[starts] = index[starts]
    return steps.astype(index_dtype(int(steps.max()) if steps.size else 0))


def names_a_label_twice(label_steps: np.ndarray, row_len: np.ndarray) -> bool:
    """Whether a row's label steps (the first whole) repeat a label: a zero
    step anywhere but at a row's start."""
    return bool(label_steps.size and np.any(label_steps[positions_in_rows(row_len) > 0] == 0))


def index_from_steps(steps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Inverse of steps_within."""
    total = np.cumsum(steps)
    starts = np.cumsum(counts) - counts
    # each template's first step is whole: subtract the sum before it
    before = np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0) if total.size else np.zeros_like(counts)
    return total - np.repeat(before, counts)


def gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges [starts[i], starts[i] + lengths[i])."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - row_starts(lengths), lengths)
    return offsets + np.arange(total)
