"""Global training of the beam parser: the structured perceptron's max-violation update (Huang, Fayong & Guo
2012) over beam.py's search, with the learner every task shares (learner.py).

A segment is searched with the beam and, beside it, followed along the gold path: at each step the
gold state takes the best-scoring of its least-cost actions (the dynamic oracle's costs, arc_hybrid.py), so
the gold path is one of the correct derivations, the one the model likes best. After the segment, the step at
which the best beam item leads the gold path by most (its violation) is found, among the steps where that
item is not the gold path itself; if it leads there, the features of the gold path's states up to that step
are pushed toward the gold actions and those of the best item's path toward its actions. Both paths are
replayed from the point where they part: before it their states and actions are the same and the two pushes
would cancel.

Training scores every template of every state with the features that count (min-update), as the greedy
learner's oracle does (learner.score_counted).
"""
from collections import namedtuple

import numpy as np
from numba import njit

from ..codes import N_SLOTS
from .arc_hybrid import action_costs, apply_tracked, fill_valid, new_state, resolve_slots
from .beam import beam_states, candidates, copy_item, expand, move_item, reset_item, segment_at
from .learner import score_counted, train_scratch, update_feature
from .parser import gold_action, state_keys
from .scoring import find_entry
from .structs import Arcs, GoldTree, Learner, ParserSpec, Tokens

# A segment's search so far: each step's items' parents and actions, the gold path's actions, and room
# for the actions of a path traced back through the parents.
History = namedtuple("History", "parent act gold pred")


@njit(cache=True, nogil=True)
def push_state(work, n_tpl, action, sign, learner):
    """Add `sign` to the weight of `action` in the row of every template's
    feature (keys in work.keys): one state's share of a perceptron update.
    Features without a row count the update (min-update, take_update)."""
    tab, tab_off, scale = learner.tables[0], learner.tables[1], learner.state[4]
    grad, touched = work.grad, work.touched
    grad[action] = sign
    touched[0] = action
    for t in range(n_tpl):
        if scale[t] != 0.0:
            update_feature(work, t, find_entry(tab, tab_off, t, work.keys[t]), 1, learner)
    grad[action] = 0.0


@njit(cache=True, nogil=True)
def replay(acts, first, last, sign, seg, spec, work, learner):
    """Walk a segment's action sequence acts[0..last] from a fresh state
    (`seg`: the segment's tokens) and push each state from step `first` on
    toward the action taken."""
    n = seg.lex_rows.shape[0]
    stack, head, lab, kids, val, sets = new_state(n)
    in_stack = np.zeros(n, dtype=np.uint8)
    arcs = Arcs(lab, val, sets)
    slot_tok = np.zeros(N_SLOTS, dtype=np.int64)
    n_tpl = spec.templates[0].shape[0]
    depth = 0
    b0 = 0
    for s in range(last + 1):
        a = acts[s]
        if s >= first:
            resolve_slots(slot_tok, stack, depth, b0, 0, n, kids)
            state_keys(work.keys, 0, n_tpl, slot_tok, b0, spec.templates, seg, arcs, -1)
            push_state(work, n_tpl, a, sign, learner)
        depth, b0 = apply_tracked(spec.kind[a], spec.alab[a], stack, depth, b0, in_stack, head, lab, kids, val, sets)


@njit(cache=True, nogil=True)
def local_gold(gold, start, end):
    """The gold tree of segment [start, end) with its tokens numbered from
    its start (no gold arc crosses a segment's edge: parser._gold)."""
    head = gold.head[start:end].copy()
    for i in range(head.shape[0]):
        if head[i] >= 0:
            head[i] -= start
    ptr = gold.child_ptr[start:end + 1] - gold.child_ptr[start]
    idx = gold.child_idx[gold.child_ptr[start]:gold.child_ptr[end]] - start
    return GoldTree(head, gold.lab[start:end], ptr, idx, gold.arc_col, gold.root_col)


@njit(cache=True, nogil=True)
def train_parse_beam(columns, segments, tree, parser, learning, beam):
    """One pass of max-violation training over a batch with a beam of
    beam = (width, augment): `augment` is added to a candidate's score per
    gold arc it loses. columns, segments, tree, parser and learning as
    parser.train_parse's. Returns the number of updates."""
    tokens = Tokens(*columns)
    gold = GoldTree(*tree)
    spec = ParserSpec(*parser)
    learner = Learner(*learning)
    seg_off, seg_single = segments
    width, augment = beam
    kind, alab = spec.kind, spec.alab
    n_tpl = spec.templates[0].shape[0]
    n_act = kind.shape[0]
    max_len = 1
    for d in range(seg_off.shape[0] - 1):
        max_len = max(max_len, seg_off[d + 1] - seg_off[d])
    st = beam_states(width, max_len)
    path = beam_states(1, max_len)  # the gold path, an item of its own
    cands = candidates(width)
    hist = History(np.zeros((2 * max_len, width), dtype=np.int64), np.zeros((2 * max_len, width), dtype=np.int64),
                   np.zeros(2 * max_len, dtype=np.int64), np.zeros(2 * max_len, dtype=np.int64))
    slot_tok = np.zeros(N_SLOTS, dtype=np.int64)
    work = train_scratch(n_tpl, n_act, np.zeros(1, dtype=np.uint8))
    cost = np.zeros(n_act, dtype=np.int64)
    updates = 0
    g = 0
    for d in range(seg_off.shape[0] - 1):
        start, end, single, seg = segment_at(tokens, seg_off, seg_single, d)
        ln = end - start
        local = local_gold(gold, start, end)
        reset_item(path, 0, 0)
        reset_item(st, g, 0)
        n_items = 1
        since = 0  # the step the beam last (re)started from the gold path's state
        worst = 0.0
        worst_at = -1
        for s in range(2 * ln):
            # the gold path's step: its best-scoring least-cost action
            score_item(path, 0, 0, slot_tok, single, seg, spec, work, learner)
            least = action_costs(cost, work.valid, kind, alab, path.stack[0, 0], path.depth[0, 0], path.b0[0, 0],
                                 ln, local, path.in_stack[0, 0])
            ga = gold_action(work.scores, work.valid, cost, least)
            hist.gold[s] = ga
            path.score[0, 0] += work.scores[ga]
            move_item(path, 0, 0, kind[ga], alab[ga], ln)
            learner.steps[0] += 1.0
            # the beam's step
            n_c = 0
            for i in range(n_items):
                score_item(st, g, i, slot_tok, single, seg, spec, work, learner)
                action_costs(cost, work.valid, kind, alab, st.stack[g, i], st.depth[g, i], st.b0[g, i], ln, local,
                             st.in_stack[g, i])
                n_c = expand(cands, n_c, width, st.score[g, i], work.scores, work.valid, i, st.cost[g, i], cost, augment)
            right = successors(st, g, cands, n_c, kind, alab, ln, hist, s)
            g = 1 - g
            n_items = n_c
            # the best item, when it is wrong, by how much it outscores the gold path
            if cands.cost[0] > 0 and cands.score[0] - path.score[0, 0] >= worst:
                worst = cands.score[0] - path.score[0, 0]
                worst_at = s
            if not right or s == 2 * ln - 1:
                # the beam lost every right item (or the segment ends): learn from its worst step, and go on
                # from the gold path's state (Daume & Marcu's LaSO)
                if worst_at >= 0:
                    learn_violation(hist, since, worst_at, seg, spec, work, learner)
                    updates += 1
                copy_item(path, 0, 0, st, g, 0)
                st.score[g, 0] = path.score[0, 0] = 0.0
                st.cost[g, 0] = 0
                n_items = 1
                since = s + 1
                worst = 0.0
                worst_at = -1
    return updates


@njit(cache=True, nogil=True)
def successors(st, g, cands, n_c, kind, alab, n, hist, s):
    """Make the candidates of step s generation 1 - g, noting each one's
    parent and action; returns whether one of them lost no gold arc (is a
    derivation of the gold tree)."""
    h = 1 - g
    right = False
    for j in range(n_c):
        i, a = cands.item[j], cands.act[j]
        copy_item(st, g, i, st, h, j)
        move_item(st, h, j, kind[a], alab[a], n)
        st.score[h, j] = cands.score[j]
        st.cost[h, j] = cands.cost[j]
        hist.parent[s, j] = i
        hist.act[s, j] = a
        right = right or cands.cost[j] == 0
    return right


@njit(cache=True, nogil=True)
def score_item(st, g, i, slot_tok, single, seg, spec, work, learner):
    """Valid actions and scores (by the counted features) of one item."""
    n = seg.lex_rows.shape[0]
    depth, b0 = st.depth[g, i], st.b0[g, i]
    resolve_slots(slot_tok, st.stack[g, i], depth, b0, 0, n, st.kids[g, i])
    fill_valid(work.valid, spec.kind, depth, b0, n, single)
    state_keys(work.keys, 0, spec.templates[0].shape[0], slot_tok, b0, spec.templates, seg,
               Arcs(st.lab[g, i], st.val[g, i], st.sets[g, i]), -1)
    score_counted(work, 0, spec.templates[0].shape[0], learner)


@njit(cache=True, nogil=True)
def learn_violation(hist, since, at, seg, spec, work, learner):
    """The update for the best item at step `at` of a beam started at step
    `since` from the gold path: its actions are the gold path's before
    `since` and its ancestors' from there."""
    j = 0
    for s in range(at, since - 1, -1):
        hist.pred[s] = hist.act[s, j]
        j = hist.parent[s, j]
    for s in range(since):
        hist.pred[s] = hist.gold[s]
    first = since
    while first <= at and hist.pred[first] == hist.gold[first]:
        first += 1
    replay(hist.gold, first, at, 1.0, seg, spec, work, learner)
    replay(hist.pred, first, at, -1.0, seg, spec, work, learner)
