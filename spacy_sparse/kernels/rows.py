"""Weight rows between their saved form and the layouts prediction reads.

Loading a model is on the cold-start path of every process that tags, so the
per-weight work of decoding a file and building the prediction layout runs
here in one pass each, not as a chain of numpy temporaries.
"""
import numpy as np
from numba import njit

from .hashing import table_put, table_slot
from .layout import HOT, NARROW_HOT, ROWS_BAD_INDEX, ROWS_BAD_LABEL, ROWS_BAD_LENGTH, ROWS_OK

@njit(cache=True, nogil=True)
def expand_rows(row_len, entries, n_codes, n_labels, index, label_steps):
    """Stored rows of packed entries (label * n_codes + code) -> (status, ptr, lab, code) per feature.

    `index` gives each feature's stored row (identical rows are stored
    once); an empty `index` means one row per feature. With `label_steps`
    a row's labels are stored as steps, the first whole (format 4), and a
    zero step (a label named twice) is an error. Every length, label, code and index is checked before it is
    used, and the output is at most features x labels entries, which the
    caller has bounded."""
    n_stored = row_len.shape[0]
    empty_i = np.zeros(0, dtype=np.int32)
    starts = np.zeros(n_stored + 1, dtype=np.int64)
    for r in range(n_stored):
        ln = np.int64(row_len[r])
        if ln < 1 or ln > n_labels:
            return ROWS_BAD_LENGTH, starts, empty_i, empty_i
        starts[r + 1] = starts[r] + ln
    if starts[n_stored] != entries.shape[0]:
        return ROWS_BAD_LENGTH, starts, empty_i, empty_i
    # decode every stored row once
    lab_s = np.empty(entries.shape[0], dtype=np.int32)
    code_s = np.empty(entries.shape[0], dtype=np.int32)
    for r in range(n_stored):
        prev = np.int64(-1)
        for i in range(starts[r], starts[r + 1]):
            e = np.int64(entries[i])
            label = e // n_codes
            code = e - label * n_codes
            if label_steps and i > starts[r]:
                if label == 0:  # a label named twice
                    return ROWS_BAD_LABEL, starts, empty_i, empty_i
                label += prev
            if label >= n_labels:
                return ROWS_BAD_LABEL, starts, empty_i, empty_i
            prev = label
            lab_s[i] = label
            code_s[i] = code
    n_feat = index.shape[0] if index.shape[0] > 0 else n_stored
    if index.shape[0] == 0:
        return ROWS_OK, starts, lab_s, code_s
    ptr = np.zeros(n_feat + 1, dtype=np.int64)
    for f in range(n_feat):
        r = np.int64(index[f])
        if r < 0 or r >= n_stored:
            return ROWS_BAD_INDEX, ptr, empty_i, empty_i
        ptr[f + 1] = ptr[f] + starts[r + 1] - starts[r]
    lab = np.empty(ptr[n_feat], dtype=np.int32)
    code = np.empty(ptr[n_feat], dtype=np.int32)
    for f in range(n_feat):
        r = np.int64(index[f])
        k = ptr[f]
        for i in range(starts[r], starts[r + 1]):
            lab[k] = lab_s[i]
            code[k] = code_s[i]
            k += 1
    return ROWS_OK, ptr, lab, code


@njit(cache=True, nogil=True)
def scatter_rows(ptr, lab, val, out):
    """Compressed rows (ptr, lab, val) into the zeroed dense matrix `out`."""
    for r in range(ptr.shape[0] - 1):
        for i in range(ptr[r], ptr[r + 1]):
            out[r, lab[i]] = val[i]


@njit(cache=True, nogil=True)
def span_tables(tab, tab_off, ptr, hot, new_off, out):
    """The hash tables of the features that have rows, laid out at the
    capacities `new_off` in the empty table `out`, each value the span
    (start << 16 | count) of its row in the compressed rows, or HOT + i
    for a row kept dense as row i (hot[row] = i; -1: not dense). Features
    still waiting for a row (negative values, min-update) are left out: in
    training they are most of the parser's entries."""
    for t in range(tab_off.shape[0] - 1):
        cap = new_off[t + 1] - new_off[t]
        for s in range(tab_off[t], tab_off[t + 1]):
            k = tab[2 * s]
            if k != 0:
                v = np.int64(tab[2 * s + 1])
                if v >= 0:
                    value = HOT + hot[v] if hot[v] >= 0 else (ptr[v] << 16) | (ptr[v + 1] - ptr[v])
                    table_put(out, table_slot(out, new_off[t], cap, k), k, np.uint64(value))


@njit(cache=True, nogil=True)
def narrow_table(tab, out):
    """The wide span table `tab` (uint64 pairs, from span_tables) as the
    narrow one in `out` (uint32 pairs, as many slots): every key in the same
    slot, so probes go the same way and find the same rows."""
    for s in range(tab.shape[0] // 2):
        k = tab[2 * s]
        if k != 0:
            v = np.int64(tab[2 * s + 1])
            if v >= HOT:
                v = NARROW_HOT + (v - HOT)
            else:
                v = ((v >> 16) << 8) | (v & 0xFFFF)
            out[2 * s + 1] = np.uint32(v)
            out[2 * s] = np.uint32(k)


@njit(cache=True, nogil=True)
def widen_span(v):
    """A narrow table value as the wide one (HOT + i, or start << 16 | count); negatives pass."""
    if v < 0:
        return v
    if v >= NARROW_HOT:
        return HOT + (v - NARROW_HOT)
    return ((v >> 8) << 16) | (v & 0xFF)


@njit(cache=True, nogil=True)
def _widen_all(values):
    for i in range(values.shape[0]):
        values[i] = widen_span(values[i])


def span_values(tab: np.ndarray) -> np.ndarray:
    """The values of a span table's occupied slots as the wide table has them (HOT + i, or
    start << 16 | count), whichever width the table is."""
    values = tab[1::2][tab[0::2] != 0].astype(np.int64)
    if tab.dtype == np.uint32:
        _widen_all(values)
    return values


@njit(cache=True, nogil=True)
def hot_rows(ptr, lab, val, min_nonzeros, n_labels, max_bytes):
    """The rows with the most nonzero weights, at least `min_nonzeros`, as a
    dense float32 matrix of at most `max_bytes` (when the budget is short,
    the rows with fewer nonzeros are the ones left out), and each row's
    index in it (-1: not there)."""
    n = ptr.shape[0] - 1
    per_count = np.zeros(n_labels + 2, dtype=np.int64)
    for r in range(n):
        per_count[min(ptr[r + 1] - ptr[r], n_labels + 1)] += 1
    cut = n_labels + 2
    kept = 0
    while cut > max(1, min_nonzeros) and (kept + per_count[cut - 1]) * n_labels * 4 <= max_bytes:
        cut -= 1
        kept += per_count[cut]
    hot = np.full(n, -1, dtype=np.int64)
    n_hot = 0
    for r in range(n):
        if ptr[r + 1] - ptr[r] >= cut:
            hot[r] = n_hot
            n_hot += 1
    dense = np.zeros((max(1, n_hot), n_labels), dtype=np.float32)
    for r in range(n):
        if hot[r] >= 0:
            for i in range(ptr[r], ptr[r + 1]):
                dense[hot[r], lab[i]] = val[i]
    return hot, dense


@njit(cache=True, nogil=True)
def gather_rows(ptr, rows, lab, val, lab_out, val_out):
    """The labels and values of the rows `rows`, in that order,
    concatenated into lab_out and val_out (sized for them, the labels in
    the narrowest type that holds them): what saving writes, without an
    index array per weight (a float parser's 5.8M weights made three int64
    temporaries of 46 MB each)."""
    k = 0
    for r in rows:
        for j in range(ptr[r], ptr[r + 1]):
            lab_out[k] = lab[j]
            val_out[k] = val[j]
            k += 1


@njit(cache=True, nogil=True)
def average_rows(W, U, steps, out):
    """The averaged perceptron's weights of rows W, U after `steps` steps,
    W - U / steps, into float32 `out`: numpy's float64 arithmetic for the
    same bits, in one pass without temporaries. Training asks for these
    every few batches (annotating components predict with them), over every
    row of the model, and numpy's chain of temporaries took ten times as
    long."""
    for i in range(W.shape[0]):
        for k in range(W.shape[1]):
            out[i, k] = np.float32(np.float64(W[i, k]) - np.float64(U[i, k]) / steps)
