"""What the kernels' callers need of them without numba: table sizes,
status codes, layout constants, and the numpy helpers that plan a batch.

Loading a pipeline and labelling with kernels compiled ahead of time
(runtime/compiled.py) import this module and no numba one, so a new process does
not pay numba's import; the kernel modules import these names from here.
"""
from typing import Optional, Tuple

import numpy as np

from ..runtime.arrays import unique


def new_table(n_slots: int) -> np.ndarray:
    """An empty table of n_slots (key, value) slots."""
    return np.zeros(2 * n_slots, dtype=np.uint64)


def capacity_for(n: int, max_load: float = 0.5) -> int:
    """Smallest power of two that holds n keys (and one empty slot past
    them) at a load of at most max_load."""
    cap = 8
    while cap * max_load < n + 1:
        cap *= 2
    return cap


# How a template's atoms are folded into its feature key (a model's `key_mix`, kernels/hashing.fold_atom). Every
# model made since there was a choice mixes with one multiply per atom (splitmix64's finalizer is three dependent
# multiplies, and a table key needs one); files of format 4 and older hold splitmix keys.
KEY_MULTIPLY = np.int64(1)  # its index in KEY_MIXES, as a kernel compares it
KEY_MIXES = ("splitmix", "multiply")

# expand_rows statuses (codec.py turns them into errors)
ROWS_OK = 0
ROWS_BAD_LENGTH = 1  # a row is empty or longer than the label set, or lengths and entries disagree
ROWS_BAD_LABEL = 3  # a label beyond the label set, or one named twice in a row
ROWS_BAD_INDEX = 4  # a feature's row index beyond the stored rows

# The narrow span table: the same slots in a uint32 array, a 32-bit key (keys are folded to 32 bits:
# hashing.finish_key) and a 32-bit value, start << 8 | count, or NARROW_HOT + i for dense row i. Half the
# bytes of the wide table, so more of it stays in cache. It holds when rows have at most 255 nonzeros,
# start below 2**23 and fewer than 2**31 dense rows (narrow_fits).
NARROW_HOT = np.int64(1) << np.int64(31)
NARROW_MAX_START = np.int64(1) << np.int64(23)


def narrow_fits(n_labels: int, n_weights: int) -> bool:
    """Whether every span of a model with these labels and nonzero weights fits the narrow table."""
    return n_labels <= 255 and n_weights < int(NARROW_MAX_START)


# A span table value at or above HOT names a dense row (HOT + its index) instead of a span; spans stay
# below it (start << 16 with fewer than 2**40 weights).
HOT = np.int64(1) << np.int64(56)


# A beam parses (and trains on) segments of at most this many tokens; longer ones are parsed with one item and
# trained greedily. A successor copies its parent's arrays up to its buffer front, so a beam's cost grows with
# the square of a segment's length (EWT's longest document has 480 tokens).
MAX_BEAM_TOKENS = 1000

# Templates are scored in blocks whose keys are made and rows looked up
# together (the probes' memory latencies overlap), at most LOOKAHEAD long.
# A tagger's blocks grow 2, 2, 4, 8, 8, ...: half its tokens stop after two
# templates, and keys made past the stop are wasted work. Without a margin
# nothing stops, and a token looks up all its rows in one block. The parser's are 8
# throughout (its margin test runs once a block, see score_block).
LOOKAHEAD = 8


def stop_margins(margin: float, decay: float, n_tpl: int) -> Optional[np.ndarray]:
    """The lead that stops a decision after each template: margin * decay**t
    after template t (0-based). decay = 1 is Strubell et al.'s single margin;
    then, and without a margin (< 0), this is None, and the kernels compile
    a version without the lookups (numba drops branches on a None
    argument). With decay < 1 a word still
    undecided after many templates stops on a smaller lead: the templates
    left can move the scores less, and without it the hardest words always
    run every template (docs/how-it-works.md)."""
    if margin < 0.0 or decay == 1.0:
        return None
    return margin * decay ** np.arange(n_tpl, dtype=np.float64)


UNSET = np.int32(-2)  # word_rows: a word type whose rows are not looked up yet


def word_columns(seeds: np.ndarray, atom_off: np.ndarray, atom_src: np.ndarray, atom_pos: np.ndarray) -> np.ndarray:
    """Column of each one-word template (lexical atoms that all read the
    same word, "suf3@0+shape@0" as well as "lower@0": its key depends on
    that word's type alone) in the per-type row cache; -1 for the others."""
    one_word = np.array([bool(np.all(atom_src[a:b] >= 0)) and bool(np.all(atom_pos[a:b] == atom_pos[a]))
                         for a, b in zip(atom_off[:-1], atom_off[1:])], dtype=bool)
    column = np.full(seeds.shape[0], -1, dtype=np.int32)
    column[one_word] = np.arange(int(one_word.sum()), dtype=np.int32)
    return column


def word_slots(column: np.ndarray, atom_off: np.ndarray, atom_pos: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(slot, slot_pos): one-word templates grouped by the offset of the
    word they read; slot[t] is template t's group (-1: not one-word) and
    slot_pos[k] the offset of group k."""
    pos = atom_pos[atom_off[:-1]]
    slot_pos = unique(pos[column >= 0]).astype(np.int64)
    slot = np.where(column >= 0, np.searchsorted(slot_pos, pos), -1).astype(np.int32)
    return slot, slot_pos


# sparse_upos (pipeline/upos.py, kernels/upos.py): the key of a (tag, label) is tag * UPOS_MUL + label and of a
# (tag, label, word) that times UPOS_MUL plus the word's LOWER, in wrapping uint64 arithmetic, and the kernel
# reads these columns of Doc.to_array([TAG, DEP, LOWER, POS, IS_SPACE]).
UPOS_MUL = np.uint64(0x9E3779B97F4A7C15)
UPOS_TAG, UPOS_DEP, UPOS_LOWER, UPOS_BEFORE, UPOS_SPACE = 0, 1, 2, 3, 4
