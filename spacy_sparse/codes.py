"""The codes Python and the numba kernels share, in one place.

Templates are compiled (templates.py) into arrays of atom *sources* and
*positions*; the kernels read them back. A source >= 0 is a column of the
lexicon table (an attribute in LEX_ATTRS); a negative source is a
non-lexical atom, whose meaning depends on the task. A parser atom's position
is a slot code (an index into SLOTS). Numba treats these module constants as
compile-time constants, so naming them costs nothing in the kernels.
tests/test_kernels.py checks that both sides agree.
"""
from typing import Dict, Tuple

# Lexical attributes, computed once per word type (lexicon.py); the column of
# an attribute in the lexicon table is its index here.
LEX_ATTRS: Tuple[str, ...] = (
    "orth", "lower", "norm", "shape",
    "pre1", "pre2", "pre3", "pre4",
    "suf1", "suf2", "suf3", "suf4",
    "is_title", "is_upper", "like_num", "has_hyphen", "has_digit", "is_punct",
    "amb", "cshape",
    "clu4", "clu6", "clu10", "clu",  # Brown cluster path prefixes (clusters.py)
    "casefreq",  # usual case and frequency of the lowercase form in a large corpus (clusters.py)
    "wnpos",  # the lowercase form's WordNet readings: parts of speech and inflections (clusters.py)
    "is_space",  # the form is whitespace (spaCy's IS_SPACE): how a batch finds whitespace tokens (views.py)
)
LEX_COLUMN: Dict[str, int] = {name: i for i, name in enumerate(LEX_ATTRS)}
LOWER = LEX_COLUMN["lower"]  # the column the `hist` memory is keyed by
# odd: a (word, tag) pair of hashes -> one 64-bit key of a known-pairs table (pipeline/known_words.py)
KNOWN_PAIR_MUL = 0xD6E8FEB86659FD93

# Sequence tasks (tagger, NER): non-lexical sources.
SRC_TAG = -1   # the label predicted at an earlier position of the segment
SRC_HIST = -2  # the label last predicted for the same lowercase word earlier in the doc
SRC_PTAG = -3  # the token's tag_ as given before the component ran
SRC_SPACE = -4  # whether whitespace follows the token in the text (spaCy's SPACY)
HISTORY_ATTRS: Dict[str, int] = {"tag": SRC_TAG, "hist": SRC_HIST, "ptag": SRC_PTAG, "space": SRC_SPACE}

# Parser: non-lexical sources read at a slot of the state.
ST_TAG = -1    # tag_ set by an earlier component
ST_POS = -3    # pos_ set by an earlier component
ST_DEP = -4    # the label the parser gave the token
ST_LV = -5     # left valency so far
ST_RV = -6     # right valency so far
ST_LSET = -7   # the set of its left dependents' labels
ST_RSET = -8   # the set of its right dependents' labels
ST_DIST = -9   # bucketed distance from the slot's token to B0
ST_MOVE = -10  # the move whose arc is being labelled (split actions: a template with it scores labels)
STATE_ATTRS: Dict[str, int] = {"tag": ST_TAG, "pos": ST_POS, "dep": ST_DEP, "lv": ST_LV, "rv": ST_RV,
                               "lset": ST_LSET, "rset": ST_RSET, "dist": ST_DIST, "move": ST_MOVE}

# Parser state slots (Zhang & Nivre 2011, for the arc-hybrid system); a slot's
# index is its code in the kernels.
SLOTS: Tuple[str, ...] = (
    "S0", "S1", "S2", "B0", "B1", "B2", "B3",
    "S0L", "S0L2", "S0R", "S0R2", "S1L", "S1L2", "S1R", "S1R2",
    "B0L", "B0L2", "S0LL", "S0RR", "B0LL",
    "S0prev", "S0next", "B0prev", "S1next",
)
SLOT_CODE: Dict[str, int] = {name: i for i, name in enumerate(SLOTS)}
N_SLOTS = len(SLOTS)

# Parser action kinds, and what a slot holds when it holds no token.
SHIFT, LEFT, RIGHT, ROOT = 0, 1, 2, 3
NO_TOKEN = -1  # empty stack, no such dependent
AT_ROOT = -2   # the buffer slot holding the root (also a root's head)

# Training objectives (kernels/learner.py prefix_train_step).
PREFIX_TRUNCATED = 0  # Strubell et al. (2015) §4.4 as written: stop at the first prefix gold leads
FULL = 1              # the classic perceptron on the whole score (the baseline)
PREFIX_ALL = 2        # every prefix is its own hinge classifier, no stop
