"""The `hist` atom's memory: per doc, the label a word was last given, so a later mention of the word reads
it (a tagger or NER labels a repeated name alike). An open-addressing table sized for the longest doc of a
batch, its slots stamped with the doc's number, so a new doc starts empty without clearing."""
import numpy as np
from numba import njit

from ..codes import SRC_HIST
from .jit import leaf

HIST_NONE = np.uint64(0x3C6EF372FE94F82B)  # the word was not labelled before in this doc


@njit(cache=True, nogil=True)
def uses_history(atom_src):
    for a in range(atom_src.shape[0]):
        if atom_src[a] == SRC_HIST:
            return True
    return False


@njit(cache=True, nogil=True)
def history_state(lex_rows, atom_src, seg_off, seg_new_doc):
    """Whether templates read `hist`, the value each token reads, and the
    per-doc table of words seen (room for the longest doc's words)."""
    with_hist = uses_history(atom_src)
    hist = np.zeros(lex_rows.shape[0] if with_hist else 0, dtype=np.uint64)
    longest = 0
    length = 0
    for d in range(seg_off.shape[0] - 1):
        if seg_new_doc[d]:
            length = 0
        length += seg_off[d + 1] - seg_off[d]
        longest = max(longest, length)
    cap = 8
    while with_hist and cap < 2 * longest + 2:
        cap *= 2
    return with_hist, hist, np.zeros(cap, dtype=np.uint64), np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64)


@leaf
def history_slot(keys, stamp, doc_id, key):
    """Slot of a word in this doc's history (stamped with doc_id + 1, so a
    new doc starts empty without clearing)."""
    cap = keys.shape[0]
    i = np.int64(key & np.uint64(cap - 1))
    while stamp[i] == doc_id + 1 and keys[i] != key:
        i = (i + 1) & (cap - 1)
    return i


@leaf
def recall(keys, vals, stamp, doc_id, key, hist_of):
    """What `hist` reads for a word: hist_of of its last label in this doc."""
    slot = history_slot(keys, stamp, doc_id, key)
    return hist_of[vals[slot]] if stamp[slot] == doc_id + 1 else HIST_NONE


@leaf
def remember(keys, vals, stamp, doc_id, key, label):
    slot = history_slot(keys, stamp, doc_id, key)
    keys[slot] = key
    vals[slot] = label
    stamp[slot] = doc_id + 1
