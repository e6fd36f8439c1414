"""The arc-hybrid transition system as arrays: a segment's state (stack, heads, labels, the two outermost
dependents per side, valency, label sets), the slots templates read, which moves are valid, what a move does,
and the dynamic oracle's cost of each move (Goldberg & Nivre 2013). parser.py scores and trains over it."""
import numpy as np
from numba import njit

from ..codes import AT_ROOT, LEFT, NO_TOKEN, RIGHT, ROOT, SHIFT
from .jit import leaf


@njit(cache=True, nogil=True)
def new_state(n):
    """Arrays of a parse over n tokens: stack, heads (absolute, AT_ROOT for
    a root), labels, the two outermost dependents on each side, valency and
    label-set bits."""
    stack = np.zeros(n + 1, dtype=np.int64)
    head = np.full(n, NO_TOKEN, dtype=np.int64)
    lab = np.full(n, -1, dtype=np.int64)
    kids = np.full((n, 4), NO_TOKEN, dtype=np.int64)  # L1, L2, R1, R2
    val = np.zeros((n, 2), dtype=np.int64)        # left, right valency
    sets = np.zeros((n, 2), dtype=np.uint64)      # left, right label bits
    return stack, head, lab, kids, val, sets


@leaf
def attach(h, c, label, head, lab, kids, val, sets):
    """Record the arc h -> c with a label."""
    head[c] = h
    lab[c] = label
    bit = np.uint64(1) << np.uint64(label & 63)
    if c < h:
        val[h, 0] += 1
        sets[h, 0] |= bit
        if kids[h, 0] == NO_TOKEN or c < kids[h, 0]:
            kids[h, 1] = kids[h, 0]
            kids[h, 0] = c
        elif kids[h, 1] == NO_TOKEN or c < kids[h, 1]:
            kids[h, 1] = c
    else:
        val[h, 1] += 1
        sets[h, 1] |= bit
        if kids[h, 2] == NO_TOKEN or c > kids[h, 2]:
            kids[h, 3] = kids[h, 2]
            kids[h, 2] = c
        elif kids[h, 3] == NO_TOKEN or c > kids[h, 3]:
            kids[h, 3] = c


@leaf
def kid(kids, tok, which):
    return kids[tok, which] if tok >= 0 else NO_TOKEN


@leaf
def resolve_slots(slot_tok, stack, depth, b0, start, end, kids):
    """The token at each slot (templates.SLOTS order), NO_TOKEN or AT_ROOT;
    the last four are the words next to S0, B0 and S1 in the text, whatever
    the tree has made of them so far (a window like a CNN's)."""
    s0 = stack[depth - 1] if depth >= 1 else NO_TOKEN
    s1 = stack[depth - 2] if depth >= 2 else NO_TOKEN
    s2 = stack[depth - 3] if depth >= 3 else NO_TOKEN
    slot_tok[0] = s0
    slot_tok[1] = s1
    slot_tok[2] = s2
    for k in range(4):
        p = b0 + k
        slot_tok[3 + k] = p if p < end else (AT_ROOT if p == end else NO_TOKEN)
    bt = b0 if b0 < end else NO_TOKEN
    slot_tok[7] = kid(kids, s0, 0)
    slot_tok[8] = kid(kids, s0, 1)
    slot_tok[9] = kid(kids, s0, 2)
    slot_tok[10] = kid(kids, s0, 3)
    slot_tok[11] = kid(kids, s1, 0)
    slot_tok[12] = kid(kids, s1, 1)
    slot_tok[13] = kid(kids, s1, 2)
    slot_tok[14] = kid(kids, s1, 3)
    slot_tok[15] = kid(kids, bt, 0)
    slot_tok[16] = kid(kids, bt, 1)
    slot_tok[17] = kid(kids, slot_tok[7], 0)
    slot_tok[18] = kid(kids, slot_tok[9], 2)
    slot_tok[19] = kid(kids, slot_tok[15], 0)
    slot_tok[20] = s0 - 1 if s0 > start else NO_TOKEN
    slot_tok[21] = (s0 + 1 if s0 + 1 < end else AT_ROOT) if s0 >= 0 else NO_TOKEN
    slot_tok[22] = b0 - 1 if b0 > start else NO_TOKEN
    slot_tok[23] = s1 + 1 if s1 >= 0 else NO_TOKEN


@leaf
def fill_valid(valid, kind, depth, b0, end, single):
    ok_shift = b0 < end
    ok_left = depth >= 1 and b0 < end
    ok_right = depth >= 2
    ok_root = depth >= 1 and b0 == end and (not single or depth == 1)
    for a in range(kind.shape[0]):
        k = kind[a]
        if k == SHIFT:
            valid[a] = ok_shift
        elif k == LEFT:
            valid[a] = ok_left
        elif k == RIGHT:
            valid[a] = ok_right
        elif k == ROOT:
            valid[a] = ok_root
        else:  # a label column of split actions
            valid[a] = 0


@leaf
def apply_move(k, label, stack, depth, b0, head, lab, kids, val, sets):
    """Do move k, labelling its arc `label`; returns the new (depth, b0)."""
    if k == SHIFT:
        stack[depth] = b0
        return depth + 1, b0 + 1
    s0 = stack[depth - 1]
    if k == LEFT:
        attach(b0, s0, label, head, lab, kids, val, sets)
    elif k == RIGHT:
        attach(stack[depth - 2], s0, label, head, lab, kids, val, sets)
    else:
        head[s0] = AT_ROOT
        lab[s0] = label
    return depth - 1, b0


@njit(cache=True, nogil=True)
def apply_tracked(k, label, stack, depth, b0, in_stack, head, lab, kids, val, sets):
    """apply_move, keeping the stack membership the oracle reads."""
    if k == SHIFT:
        in_stack[b0] = 1
    else:
        in_stack[stack[depth - 1]] = 0
    return apply_move(k, label, stack, depth, b0, head, lab, kids, val, sets)


@njit(cache=True, nogil=True)
def move_costs(stack, depth, b0, end, gold_head, gch_ptr, gch_idx, in_stack):
    """Gold arcs each move makes unreachable (Goldberg & Nivre 2013,
    arc-hybrid): (shift, left, right, root) costs, and S0's gold head.
    gold_head: absolute head, AT_ROOT, or NO_TOKEN when unknown (no cost)."""
    s0 = stack[depth - 1] if depth >= 1 else NO_TOKEN
    s1 = stack[depth - 2] if depth >= 2 else NO_TOKEN
    shift_c = 0
    if b0 < end:
        h = gold_head[b0]
        if h >= 0 and h < b0 and h != s0 and in_stack[h]:
            shift_c += 1
        for j in range(gch_ptr[b0], gch_ptr[b0 + 1]):
            c = gch_idx[j]
            if c < b0 and in_stack[c]:
                shift_c += 1
    left_c = 0
    right_c = 0
    root_c = 0
    h0 = NO_TOKEN
    if s0 >= 0:
        deps_ahead = 0
        for j in range(gch_ptr[s0], gch_ptr[s0 + 1]):
            if gch_idx[j] >= b0:
                deps_ahead += 1
        h0 = gold_head[s0]
        left_c = deps_ahead
        right_c = deps_ahead
        if h0 == AT_ROOT or (h0 >= 0 and h0 != b0 and (h0 == s1 or h0 > b0)):
            left_c += 1
        if h0 == AT_ROOT or (h0 >= 0 and h0 >= b0):
            right_c += 1
        if h0 >= 0 and h0 == s1:
            root_c += 1
    return shift_c, left_c, right_c, root_c, h0


@njit(cache=True, nogil=True)
def action_costs(cost, valid, kind, alab, stack, depth, b0, end, gold, in_stack):
    """move_costs for every valid action (a label column of split actions:
    its move's cost), plus one for a wrong label on a gold arc of a joint
    action; returns the least cost. `gold`: a structs.GoldTree."""
    shift_c, left_c, right_c, root_c, h0 = move_costs(stack, depth, b0, end, gold.head, gold.child_ptr,
                                                      gold.child_idx, in_stack)
    s0 = stack[depth - 1] if depth >= 1 else NO_TOKEN
    s1 = stack[depth - 2] if depth >= 2 else NO_TOKEN
    g = gold.lab[s0] if s0 >= 0 else -1
    best = 1 << 30
    for a in range(kind.shape[0]):
        if not valid[a]:
            continue
        k = kind[a]
        joint = alab[a] >= 0
        if k == SHIFT:
            c = shift_c
        elif k == LEFT:
            c = left_c + (1 if joint and h0 == b0 and g >= 0 and alab[a] != g else 0)
        elif k == RIGHT:
            c = right_c + (1 if joint and h0 == s1 and h0 >= 0 and g >= 0 and alab[a] != g else 0)
        else:
            c = root_c + (1 if joint and h0 == AT_ROOT and g >= 0 and alab[a] != g else 0)
        cost[a] = c
        best = min(best, c)
    return best


@leaf
def write_output(start, end, head, lab, heads_out, labels_out):
    """Heads as absolute indices (a root heads itself) and label indices."""
    for i in range(start, end):
        heads_out[i] = i if head[i] == AT_ROOT else head[i]
        labels_out[i] = lab[i]
