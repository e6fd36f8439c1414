"""Weight rows between their saved form and the layouts prediction reads.

Loading a model is on the cold-start path of every process that tags, so the
per-weight work of decoding a file and building the prediction layout runs
here in one pass each, not as a chain of numpy temporaries.
"""
import numpy as np
from numba import njit

from .hashing import table_put, table_slot

# expand_rows statuses (codec.py turns them into errors)
ROWS_OK = 0
ROWS_BAD_LENGTH = 1  # a row is empty or longer than the label set, or lengths and entries disagree
ROWS_BAD_LABEL = 3  # a label beyond the label set, or one named twice in a row
ROWS_BAD_INDEX = 4  # a feature's row index beyond the stored rows


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
def span_tables(tab, tab_off, ptr, new_off, out):
    """The hash tables of the features that have rows, laid out at the
    capacities `new_off` in the empty table `out`, each value the span
    (start << 16 | count) of its row in the compressed rows. Features still
    waiting for a row (negative values, min-update) are left out: in
    training they are most of the parser's entries."""
    for t in range(tab_off.shape[0] - 1):
        cap = new_off[t + 1] - new_off[t]
        for s in range(tab_off[t], tab_off[t + 1]):
            k = tab[2 * s]
            if k != 0:
                v = np.int64(tab[2 * s + 1])
                if v >= 0:
                    table_put(out, table_slot(out, new_off[t], cap, k), k, np.uint64((ptr[v] << 16) | (ptr[v + 1] - ptr[v])))
