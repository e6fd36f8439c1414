"""The named structures the kernels hand each other.

Numba types a named tuple by its fields, so a kernel that takes one is
compiled for each combination of field types, exactly as for the separate
arguments it replaces: the names only say which array is which. The entry
kernels (those Python calls) take plain tuples, which the ahead-of-time
build describes and checks (runtime/compiled.py), and name them once inside.

A field that may be None (a stop rule's thresholds) is passed on to a leaf
as an argument of its own where a branch tests it: numba drops the branch a
None argument rules out, but not one that tests a field.
"""
from collections import namedtuple

# What templates read of a batch's tokens: each token's row in the lexical table, that table (words x atoms),
# and the tag and UPOS ids a parser reads.
Tokens = namedtuple("Tokens", "lex_rows lex tags poss")

# The parts of a parse state the templates read, per token: its label, its valency (left, right) and label sets.
Arcs = namedtuple("Arcs", "lab val sets")

# A prediction layout as the scoring reads it: per-template offsets into the feature table `tab`, dense rows `W`,
# packed (label, value) spans `lv` or coded spans `lc` into `book`, and whether the table holds spans (`packed`).
Weights = namedtuple("Weights", "tab_off tab W lv lc book packed")

# The scratch arrays of one decision: the templates' keys, the label scores, the valid labels, the rows a block
# looked up.
Decision = namedtuple("Decision", "keys scores valid ahead")

# What a parser's decisions are over: its templates (seeds, atom offsets, sources, positions), the templates
# before `n_move` scoring moves, each label column's allowed moves, and each action's move and label.
ParserSpec = namedtuple("ParserSpec", "templates n_move lab_ok kind alab")

# The gold tree a parser trains towards: heads, labels, each token's gold children (CSR), and each label's
# column for an arc and for a root.
GoldTree = namedtuple("GoldTree", "head lab child_ptr child_idx arc_col root_col")

# The learner's arrays (learner.py): the feature tables, the weights and per-feature state, the settings, and
# `steps` (float64[1]): the decisions seen so far, for averaging.
Learner = namedtuple("Learner", "tables state params steps")

# The hinge a training step checks: its margin, the objective (learner.py) and how many templates a prefix
# grows by between checks.
Hinge = namedtuple("Hinge", "margin objective stride")

# The scratch arrays of one training step.
TrainScratch = namedtuple("TrainScratch", "keys rows scores valid viol_t viol_y grad touched")
