"""The parser's action set: its names ("SHIFT", "LEFT-dep", "RIGHT-dep", "ROOT-dep"), or with split actions
the four moves and a label column per arc and root label, read back into (kind, label); and the order of the
labels that the `dep`, `lset` and `rset` atoms read."""
from typing import List, Sequence, Tuple

from ..codes import LEFT, RIGHT, ROOT, SHIFT

KIND_PREFIX = {"SHIFT": SHIFT, "LEFT": LEFT, "RIGHT": RIGHT, "ROOT": ROOT}
# the move columns of split actions, in kind order
MOVES = ["MOVE-SHIFT", "MOVE-LEFT", "MOVE-RIGHT", "MOVE-ROOT"]


def action_names(deps: Sequence[str], root_deps: Sequence[str]) -> List[str]:
    """The action set of a label set: one shift, a left and a right arc per
    label, a root arc per label seen on roots."""
    names = ["SHIFT"]
    names += [f"LEFT-{d}" for d in deps]
    names += [f"RIGHT-{d}" for d in deps]
    names += [f"ROOT-{d}" for d in root_deps]
    return names


def split_action_names(deps: Sequence[str], root_deps: Sequence[str]) -> List[str]:
    """The columns of split actions: the four moves, a label column per
    arc label, and one per label seen on roots."""
    return MOVES + [f"ARC-{d}" for d in deps] + [f"ROOT-{d}" for d in root_deps]


def split_columns(names: Sequence[str]) -> List[Tuple[int, str]]:
    """(move kind, label) of each label column of split actions (LEFT for
    an arc label, which right arcs take too; ROOT for a root label);
    ValueError if `names` are not split columns."""
    if list(names[:4]) != MOVES:
        raise ValueError(f"Not split parser actions: {list(names[:4])}")
    columns = []
    for name in names[4:]:
        prefix, _, dep = name.partition("-")
        if prefix not in ("ARC", "ROOT") or not dep:
            raise ValueError(f"Not a split parser label column: {name!r}")
        columns.append((LEFT if prefix == "ARC" else ROOT, dep))
    return columns


def label_order(kinds: Sequence[int], deps: Sequence[str]) -> List[str]:
    """Label indices (what `dep`, `lset` and `rset` atoms read): the sorted
    labels of the action set the model was made with (SHIFT, LEFT-*,
    RIGHT-*, ROOT-*), then the labels add_label appended after it, in
    order, so a label added to a trained model leaves the others' indices
    as they were."""
    cut = len(kinds)
    after_root = False
    for i, kind in enumerate(kinds):
        if kind == ROOT:
            after_root = True
        elif after_root:
            cut = i
            break
    first = sorted({d for d in deps[:cut] if d})
    return first + [d for d in dict.fromkeys(deps[cut:]) if d and d not in first]


def parse_action(name: str) -> Tuple[int, str]:
    prefix, _, dep = name.partition("-")
    if prefix not in KIND_PREFIX or (prefix == "SHIFT") != (dep == ""):
        raise ValueError(f"Not a parser action: {name!r}")
    return KIND_PREFIX[prefix], dep
