"""Beam search over the greedy parser's arc-hybrid states (Zhang & Clark 2008; Zhang & Nivre 2011), with the
same templates, weights and stop rule (parser.py).

A segment of L tokens takes exactly 2L moves whatever the parse (each token is shifted once and popped once),
so the items of a beam advance in lockstep and are compared after the same number of moves. An item's score is
the sum of the scores of the actions it took. At each step every item scores its valid actions, and the
`width` best (item, action) candidates whose score is within `gap` of the best one are kept.

Confident states stay cheap: while the beam holds one item, it is scored as the greedy parser scores a state,
stopping once the best action leads by the margin; if it stops early, that action is the only successor
(a lone item's score can be reset: scores only rank items against each other). Only a state that is not
confident is scored with every template, and its actions open a beam; while the beam holds several items,
each is scored with every template so that the sums compare like with like. With `gap` small the beam
closes again as soon as one item leads by it.

Each item keeps its own state arrays over its segment (tokens numbered from the segment's start). A
successor is copied from its parent only over the part that can differ from a fresh state (`dirty`: the
tokens up to the furthest buffer front a move has written at), and a lone item moves in place.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from ..codes import AT_ROOT, N_SLOTS, NO_TOKEN, SHIFT
from .arc_hybrid import apply_move, fill_valid, resolve_slots
from .jit import leaf
from .layout import MAX_BEAM_TOKENS
from .parser import lone_valid, score_decision
from .scoring import LOOKAHEAD
from .structs import Arcs, Decision, ParserSpec, Tokens, Weights

# The items of two generations (the beam and its successors), indexed [generation, item, ...]: the
# arc-hybrid arrays of arc_hybrid.new_state and stack membership, and per item its stack depth, buffer
# front, score, how far its arrays may differ from a fresh state's, and (training) the gold arcs it lost.
BeamStates = namedtuple("BeamStates", "stack head lab kids val sets in_stack depth b0 score dirty cost")

# The candidates of one step, best first: score, parent item, action and (training) gold arcs lost.
Candidates = namedtuple("Candidates", "score item act cost")


@njit(cache=True, nogil=True)
def beam_states(width, max_len):
    """Fresh arrays for `width` items of segments up to max_len tokens."""
    return BeamStates(np.zeros((2, width, max_len + 1), dtype=np.int64),
                      np.full((2, width, max_len), NO_TOKEN, dtype=np.int64),
                      np.full((2, width, max_len), -1, dtype=np.int64),
                      np.full((2, width, max_len, 4), NO_TOKEN, dtype=np.int64),
                      np.zeros((2, width, max_len, 2), dtype=np.int64),
                      np.zeros((2, width, max_len, 2), dtype=np.uint64), np.zeros((2, width, max_len), dtype=np.uint8),
                      np.zeros((2, width), dtype=np.int64), np.zeros((2, width), dtype=np.int64),
                      np.zeros((2, width), dtype=np.float64), np.zeros((2, width), dtype=np.int64),
                      np.zeros((2, width), dtype=np.int64))


@njit(cache=True, nogil=True)
def candidates(width):
    return Candidates(np.zeros(width, dtype=np.float64), np.zeros(width, dtype=np.int64),
                      np.zeros(width, dtype=np.int64), np.zeros(width, dtype=np.int64))


@leaf
def reset_item(st, g, i):
    """Make item i of generation g a fresh state (empty stack, buffer at 0)."""
    for t in range(st.dirty[g, i]):
        st.head[g, i, t] = NO_TOKEN
        st.lab[g, i, t] = -1
        st.in_stack[g, i, t] = 0
        for c in range(4):
            st.kids[g, i, t, c] = NO_TOKEN
        for c in range(2):
            st.val[g, i, t, c] = 0
            st.sets[g, i, t, c] = 0
    st.dirty[g, i] = 0
    st.depth[g, i] = 0
    st.b0[g, i] = 0
    st.score[g, i] = 0.0
    st.cost[g, i] = 0


@leaf
def copy_item(st, g, i, to, h, j):
    """Make item j of generation h of `to` a copy of item i of generation g
    of `st` (the same BeamStates, or another as long)."""
    for t in range(max(st.dirty[g, i], to.dirty[h, j])):
        to.head[h, j, t] = st.head[g, i, t]
        to.lab[h, j, t] = st.lab[g, i, t]
        to.in_stack[h, j, t] = st.in_stack[g, i, t]
        for c in range(4):
            to.kids[h, j, t, c] = st.kids[g, i, t, c]
        for c in range(2):
            to.val[h, j, t, c] = st.val[g, i, t, c]
            to.sets[h, j, t, c] = st.sets[g, i, t, c]
    for t in range(st.depth[g, i]):
        to.stack[h, j, t] = st.stack[g, i, t]
    to.dirty[h, j] = st.dirty[g, i]
    to.depth[h, j] = st.depth[g, i]
    to.b0[h, j] = st.b0[g, i]
    to.score[h, j] = st.score[g, i]
    to.cost[h, j] = st.cost[g, i]


@leaf
def move_item(st, g, i, kind, label, n):
    """Apply a move to item i of generation g (a segment of n tokens)."""
    b0, depth = st.b0[g, i], st.depth[g, i]
    st.dirty[g, i] = max(st.dirty[g, i], min(b0 + 1, n))  # a move writes at B0, S0 or S1, all before b0 + 1
    if kind == SHIFT:
        st.in_stack[g, i, b0] = 1
    else:
        st.in_stack[g, i, st.stack[g, i, depth - 1]] = 0
    st.depth[g, i], st.b0[g, i] = apply_move(kind, label, st.stack[g, i], st.depth[g, i], b0, st.head[g, i],
                                             st.lab[g, i], st.kids[g, i], st.val[g, i], st.sets[g, i])


@leaf
def keep_best(cands, n, width, score, item, act, cost):
    """Insert a candidate into the `n` kept (best first, at most `width`);
    returns the new count. Ties keep the earlier candidate first."""
    if n == width and score <= cands.score[n - 1]:
        return n
    k = n if n < width else width - 1
    while k > 0 and cands.score[k - 1] < score:
        cands.score[k] = cands.score[k - 1]
        cands.item[k] = cands.item[k - 1]
        cands.act[k] = cands.act[k - 1]
        cands.cost[k] = cands.cost[k - 1]
        k -= 1
    cands.score[k] = score
    cands.item[k] = item
    cands.act[k] = act
    cands.cost[k] = cost
    return n + 1 if n < width else n


@leaf
def expand(cands, n, width, base, scores, valid, item, base_cost, cost, augment):
    """Offer every valid action of one item as a candidate; `cost`: the
    gold arcs each action loses (training; zeros in prediction), each
    adding `augment` to its score (cost-augmented search: the gold parse
    must win by a margin that grows with the loss)."""
    for a in range(scores.shape[0]):
        if valid[a]:
            n = keep_best(cands, n, width, base + scores[a] + augment * cost[a], item, a, base_cost + cost[a])
    return n


@njit(cache=True, nogil=True)
def segment_at(tokens, seg_off, seg_single, d):
    """Segment d's start, end, whether it is one sentence, and its
    structs.Tokens numbered from its start (views: a beam's items keep
    arrays over their segment only)."""
    start, end = seg_off[d], seg_off[d + 1]
    seg = Tokens(tokens.lex_rows[start:end], tokens.lex, tokens.tags[start:end], tokens.poss[start:end])
    return start, end, seg_single[d] != 0, seg


@njit(cache=True, nogil=True)
def predict_parse_beam(columns, segments, parser, layout, rule, beam, out):
    """Parse every segment with a beam; arguments as parser.predict_parse's
    (columns, segments, parser, layout, rule, out), and beam = (width, gap):
    successors scoring more than `gap` below the best one are dropped."""
    tokens = Tokens(*columns)
    spec = ParserSpec(*parser)
    weights = Weights(*layout)
    seg_off, seg_single = segments
    margin, thr = rule
    width, gap = beam
    heads_out, labels_out, used = out
    kind, alab = spec.kind, spec.alab
    n_act = kind.shape[0]
    n_tpl = spec.templates[0].shape[0]
    short = 1  # the longest segment a beam parses, and the longest of all
    longest = 1
    for d in range(seg_off.shape[0] - 1):
        n = seg_off[d + 1] - seg_off[d]
        longest = max(longest, n)
        if n <= MAX_BEAM_TOKENS:
            short = max(short, n)
    beam_items = beam_states(width, short)
    lone = beam_states(1, longest if longest > MAX_BEAM_TOKENS else 1)
    cands = candidates(width)
    no_cost = np.zeros(n_act, dtype=np.int64)
    slot_tok = np.zeros(N_SLOTS, dtype=np.int64)
    work = Decision(np.zeros(n_tpl, dtype=np.uint64), np.zeros(n_act, dtype=np.float32),
                    np.zeros(n_act, dtype=np.uint8), np.zeros(max(2 * LOOKAHEAD, n_tpl), dtype=np.int64))
    valid = work.valid
    g = 0
    for d in range(seg_off.shape[0] - 1):
        start, end, single, seg = segment_at(tokens, seg_off, seg_single, d)
        n = end - start
        w = width if n <= MAX_BEAM_TOKENS else 1
        st = beam_items if n <= MAX_BEAM_TOKENS else lone
        reset_item(st, g, 0)
        n_items = 1
        for _ in range(2 * n):
            n_c = 0
            for i in range(n_items):
                depth, b0 = st.depth[g, i], st.b0[g, i]
                resolve_slots(slot_tok, st.stack[g, i], depth, b0, 0, n, st.kids[g, i])
                fill_valid(valid, kind, depth, b0, n, single)
                arcs = Arcs(st.lab[g, i], st.val[g, i], st.sets[g, i])
                if n_items == 1:
                    a = lone_valid(valid)
                    k = 0
                    if a < 0:
                        a, k = score_decision(work, 0, n_tpl, -1, slot_tok, b0, spec.templates, seg, arcs, weights,
                                              margin, thr)
                    used[start + (b0 if kind[a] == SHIFT else st.stack[g, i, depth - 1])] += k
                    if k < n_tpl:  # forced, or confident: the one successor, moved in place
                        n_c = -1
                        move_item(st, g, 0, kind[a], alab[a], n)
                        st.score[g, 0] = 0.0
                        break
                else:
                    a, k = score_decision(work, 0, n_tpl, -1, slot_tok, b0, spec.templates, seg, arcs, weights,
                                          np.float32(-1.0), thr)
                    used[start + min(b0, n - 1)] += k
                n_c = expand(cands, n_c, w, st.score[g, i], work.scores, valid, i, 0, no_cost, 0.0)
            if n_c > 0:
                g, n_items = advance(st, g, n_items, cands, n_c, gap, kind, alab, n)
        for t in range(n):  # the best item is the first
            hd = st.head[g, 0, t]
            heads_out[start + t] = start + t if hd == AT_ROOT else start + hd
            labels_out[start + t] = st.lab[g, 0, t]


@leaf
def advance(st, g, n_items, cands, n_c, gap, kind, alab, n):
    """Make the kept candidates within `gap` of the best the next beam;
    returns its generation and size. A lone item's one successor moves in
    place; a beam of one starts its score again from 0."""
    while n_c > 1 and cands.score[n_c - 1] < cands.score[0] - gap:
        n_c -= 1
    if n_c == 1 and n_items == 1:
        move_item(st, g, 0, kind[cands.act[0]], alab[cands.act[0]], n)
        st.score[g, 0] = 0.0
        return g, 1
    h = 1 - g
    for j in range(n_c):
        copy_item(st, g, cands.item[j], st, h, j)
        a = cands.act[j]
        move_item(st, h, j, kind[a], alab[a], n)
        st.score[h, j] = cands.score[j] if n_c > 1 else 0.0
    return h, n_c
