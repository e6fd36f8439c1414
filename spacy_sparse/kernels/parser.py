"""Greedy arc-hybrid dependency parsing of whole batches of docs.

Why arc-hybrid (Kuhlmann et al. 2011): its three moves give every token
exactly one head, its dynamic oracle is exact and cheap (Goldberg & Nivre
2013: the cost of a move is a count of gold arcs it makes unreachable), and
with the root as the last buffer item the parser can leave several trees in
a segment, so it splits raw text into sentences by itself. Non-projective
trees are handled outside the kernel by pseudo-projective lifting.

The state of a segment [start, end) is a stack, the buffer front `b0`
(the buffer is b0..end-1, then the root, written `end`) and the arcs so far.
Actions: SHIFT pushes b0; LEFT-l makes b0 the head of S0 and pops it;
RIGHT-l makes S1 the head of S0 and pops it; ROOT-l makes S0 a sentence root
(b0 must be the root). A segment whose sentence boundaries were given
(`single`) must end as one tree: ROOT only when S0 is the last stack item.

Everything a template reads is resolved per state into `slot_tok` (the
token at each slot of templates.SLOTS), so atoms cost one array read.

Joint actions score every (move, label) pair at once: a row holds a weight
per action (~140 on EWT). Split actions (a template set with `move` atoms)
score the move first, with the templates before `n_move` over four
columns, and then, for an arc, its label with the templates from `n_move`
on, whose keys include the move; rows are as wide as moves plus labels, and
each template's rows fill only its decision's columns.
"""
import numpy as np
from numba import njit

from .arc_hybrid import (action_costs, apply_move, apply_tracked, fill_valid, new_state, resolve_slots,
                         write_output)
from .hashing import PAD_LEFT, PAD_RIGHT, fold_atom, key_of
from .jit import leaf
from .learner import prefix_train_step, score_counted, train_scratch
from .scoring import (LOOKAHEAD, NEG_INF, add_block, block_end, decided, leads, margin_at, open_scores,
                      prefetch_slots, probe_block, score_block)
from .structs import Arcs, Decision, GoldTree, Hinge, Learner, ParserSpec, Tokens, Weights

from ..codes import (AT_ROOT, LEFT, N_SLOTS, NO_TOKEN, RIGHT, ROOT, SHIFT, ST_DEP, ST_LSET, ST_LV, ST_MOVE,
                     ST_POS, ST_RSET, ST_RV, ST_TAG)


@leaf
def distance_bucket(d):
    d = abs(d)
    if d < 5:
        return d
    return 5 if d < 10 else 6


@leaf
def state_keys(keys, t0, t1, slot_tok, b0, templates, tokens, arcs, move):
    """Feature keys of templates t0..t1-1 in the current state (`move`: the
    move being labelled, for `move` atoms); `tokens` (structs.Tokens) and
    `arcs` (structs.Arcs) are what the atoms read."""
    seeds, atom_off, atom_src, atom_pos, key_mix = templates
    lex_rows, lex, tags, poss = tokens.lex_rows, tokens.lex, tokens.tags, tokens.poss
    lab, val, sets = arcs.lab, arcs.val, arcs.sets
    for t in range(t0, t1):
        h = seeds[t]
        for a in range(atom_off[t], atom_off[t + 1]):
            code = atom_pos[a]
            tok = slot_tok[code]
            src = atom_src[a]
            if tok == NO_TOKEN:
                v = PAD_LEFT + np.uint64(code)
            elif tok == AT_ROOT:
                v = PAD_RIGHT + np.uint64(code)
            elif src >= 0:
                v = lex[lex_rows[tok], src]
            elif src == ST_TAG:
                v = tags[tok]
            elif src == ST_POS:
                v = poss[tok]
            elif src == ST_DEP:
                v = np.uint64(lab[tok] + 1)
            elif src == ST_LV:
                v = np.uint64(val[tok, 0])
            elif src == ST_RV:
                v = np.uint64(val[tok, 1])
            elif src == ST_LSET:
                v = sets[tok, 0]
            elif src == ST_RSET:
                v = sets[tok, 1]
            elif src == ST_MOVE:
                v = np.uint64(move + 1)
            else:  # ST_DIST
                v = np.uint64(distance_bucket(b0 - tok))
            h = fold_atom(h, v, key_mix)
        keys[t] = key_of(h, key_mix)


@leaf
def label_columns(valid, lab_ok, mv):
    """Mark the label columns move mv may take (split actions); returns
    how many there are and the last of them."""
    n = 0
    last = -1
    for c in range(valid.shape[0]):
        valid[c] = lab_ok[mv, c]
        if valid[c]:
            n += 1
            last = c
    return n, last


@njit(cache=True, nogil=True)
def label_target(mv, s0, s1, b0, gold):
    """The column of S0's gold label if move mv makes S0's gold arc, else
    -1 (no label to learn); `gold` is a structs.GoldTree."""
    g = gold.lab[s0]
    if g < 0:
        return -1
    h0 = gold.head[s0]
    if (mv == LEFT and h0 == b0) or (mv == RIGHT and h0 >= 0 and h0 == s1):
        return gold.arc_col[g]
    if mv == ROOT and h0 == AT_ROOT:
        return gold.root_col[g]
    return -1


@njit(cache=True, nogil=True)
def predict_parse(columns, segments, parser, layout, rule, out):
    """Parse every segment greedily; stop adding templates once the best
    valid action leads by the margin. The arguments are plain tuples, named
    as in structs.py: columns (Tokens), segments (offsets, and whether each
    is one sentence), parser (ParserSpec), layout (Weights: dense W, or with
    `packed`, `tab` holds spans of nonzeros in `lv`, or in `lc` and `book`
    when lc is not empty: score_block), rule (margin, < 0: all templates;
    thresholds per template or None: stop_margins) and out (heads, labels,
    used). With split actions (n_move below the number of templates) the
    move is decided first and an arc's label after it among the columns
    lab_ok[move] allows, each with its own templates and the same stop rule.
    used[i] counts the templates scored for the two actions that involve
    token i as S0 (popping it) and as B0 (shifting it)."""
    tokens = Tokens(*columns)
    spec = ParserSpec(*parser)
    weights = Weights(*layout)
    seg_off, seg_single = segments
    margin, thr = rule
    heads_out, labels_out, used = out
    kind = spec.kind
    n = tokens.lex_rows.shape[0]
    n_tpl = spec.templates[0].shape[0]
    stack, head, lab, kids, val, sets = new_state(n)
    arcs = Arcs(lab, val, sets)
    slot_tok = np.zeros(N_SLOTS, dtype=np.int64)
    work = Decision(np.zeros(n_tpl, dtype=np.uint64), np.zeros(kind.shape[0], dtype=np.float32),
                    np.zeros(kind.shape[0], dtype=np.uint8), np.zeros(max(2 * LOOKAHEAD, n_tpl), dtype=np.int64))
    valid = work.valid
    for d in range(seg_off.shape[0] - 1):
        start = seg_off[d]
        end = seg_off[d + 1]
        single = seg_single[d] != 0
        depth = 0
        b0 = start
        while b0 < end or depth > 0:
            resolve_slots(slot_tok, stack, depth, b0, start, end, kids)
            fill_valid(valid, kind, depth, b0, end, single)
            a = lone_valid(valid)
            k = 0
            if a < 0:
                a, k = score_decision(work, 0, spec.n_move, -1, slot_tok, b0, spec.templates, tokens, arcs, weights,
                                      margin, thr)
            mv = kind[a]
            label = spec.alab[a]
            if spec.n_move < n_tpl and mv != SHIFT:
                n_ok, col = label_columns(valid, spec.lab_ok, mv)
                if n_ok > 1:
                    col, k_lab = score_decision(work, spec.n_move, n_tpl, mv, slot_tok, b0, spec.templates, tokens,
                                                arcs, weights, margin, thr)
                    k += k_lab
                label = spec.alab[col]
            used[b0 if mv == SHIFT else stack[depth - 1]] += k
            depth, b0 = apply_move(mv, label, stack, depth, b0, head, lab, kids, val, sets)
        write_output(start, end, head, lab, heads_out, labels_out)


@leaf
def lone_valid(valid):
    """The action when only one is valid, else -1. Such a move is forced
    (a shift onto an empty stack, the last root): nothing need be scored,
    and on EWT dev about one decision in eight is one."""
    n = 0
    for a in range(valid.shape[0]):  # branch-free, so it vectorizes
        n += valid[a] != 0
    if n == 1:
        for a in range(valid.shape[0]):
            if valid[a]:
                return a
    return -1


@leaf
def score_decision(work, t0, t1, move, slot_tok, b0, templates, tokens, arcs, weights, margin, thr):
    """Score one decision with templates t0..t1-1, block by block, until
    the stop rule holds; returns (the column chosen, templates scored).
    `work` (structs.Decision) holds its keys, scores, valid columns and
    looked-up rows. With a margin the work is pipelined over blocks (their
    rows are added, and the stop rule tested, in order, as without it):
    while block k's rows are added, block k + 1 has been looked up and its
    weights asked for, and block k + 2's keys made and its table slots asked
    for, so each trip to memory has a block of work to overlap. At the stop,
    the two blocks after it were prepared in vain."""
    keys, scores, ahead = work.keys, work.scores, work.ahead
    done, cand = open_scores(scores, work.valid, margin)
    if margin < 0.0:  # nothing stops early: one block of all the templates
        state_keys(keys, t0, t1, slot_tok, b0, templates, tokens, arcs, move)
        n, done, cand = score_block(keys, t0, t1, weights, margin, thr, scores, ahead, done, cand)
        return decided(scores, work.valid, margin, done, cand), n
    cur = 0  # where in `ahead` the rows of the block being added are (the next block's: LOOKAHEAD on)
    k = t0
    stop = block_end(k, t1, LOOKAHEAD)
    prepare_keys(keys, k, stop, slot_tok, b0, templates, tokens, arcs, move, weights)
    nxt = block_end(stop, t1, LOOKAHEAD)
    # the first block's slots are asked for before the next block's keys are made, and probed after
    prepare_keys(keys, stop, nxt, slot_tok, b0, templates, tokens, arcs, move, weights)
    probe_block(keys, k, stop, weights, ahead, cur)
    while k < t1 and not (k > t0 and done):
        after = block_end(nxt, t1, LOOKAHEAD)
        prepare_keys(keys, nxt, after, slot_tok, b0, templates, tokens, arcs, move, weights)
        probe_block(keys, stop, nxt, weights, ahead, LOOKAHEAD - cur)
        add_block(scores, weights, ahead, cur, stop - k)
        done, cand = leads(scores, margin_at(margin, thr, stop - 1))
        cur = LOOKAHEAD - cur
        k, stop, nxt = stop, nxt, after
    return decided(scores, work.valid, margin, done, cand), k - t0


@leaf
def prepare_keys(keys, t0, t1, slot_tok, b0, templates, tokens, arcs, move, weights):
    """Make the keys of templates t0..t1-1 and ask for their table slots."""
    if t0 >= t1:
        return
    state_keys(keys, t0, t1, slot_tok, b0, templates, tokens, arcs, move)
    prefetch_slots(weights.tab, weights.tab_off, keys, t0, t1)


@njit(cache=True, nogil=True)
def next_random(state):
    """xorshift64*: the kernel's own generator, so exploration is the same
    for a fixed seed whatever else used numba's random state."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return ((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def train_parse(columns, segments, tree, parser, learning, loss, walk):
    """One online pass over a batch with the dynamic oracle. At each state
    the oracle's action is the best-scoring one among the least-cost valid
    actions; the learner updates towards it when the model's choice costs
    more. The parse then follows the model's choice when it is optimal, and
    with probability `explore` when it is not (error exploration, Goldberg
    & Nivre 2012); otherwise the oracle's. With probability `stray` it
    follows a costly action although the model chose well. With split
    actions the label of an arc the parse makes is a second decision,
    learned when the arc is gold (towards its gold label) and followed like
    a move (a wrong label with probability `explore`). The prefix hinge
    is checked once per block of `stride` templates (LOOKAHEAD): the
    prefixes whose margin test prediction runs (score_block).

    Plain tuples, named as in structs.py: columns (Tokens), segments (as
    predict_parse's), tree (GoldTree), parser (ParserSpec), learning
    (Learner), loss (Hinge), walk (explore, stray, seed). Returns the number
    of costly choices."""
    tokens = Tokens(*columns)
    gold = GoldTree(*tree)
    spec = ParserSpec(*parser)
    learner = Learner(*learning)
    hinge = Hinge(*loss)
    seg_off, seg_single = segments
    explore, stray, seed = walk
    kind, n_move = spec.kind, spec.n_move
    n = tokens.lex_rows.shape[0]
    n_tpl = spec.templates[0].shape[0]
    n_act = kind.shape[0]
    stack, head, lab, kids, val, sets = new_state(n)
    arcs = Arcs(lab, val, sets)
    in_stack = np.zeros(n, dtype=np.uint8)
    slot_tok = np.zeros(N_SLOTS, dtype=np.int64)
    work = train_scratch(n_tpl, n_act, in_stack)
    keys, scores, valid = work.keys, work.scores, work.valid
    cost = np.zeros(n_act, dtype=np.int64)
    rng = np.array([np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)], dtype=np.uint64)
    errors = 0
    for d in range(seg_off.shape[0] - 1):
        start = seg_off[d]
        end = seg_off[d + 1]
        single = seg_single[d] != 0
        depth = 0
        b0 = start
        while b0 < end or depth > 0:
            resolve_slots(slot_tok, stack, depth, b0, start, end, kids)
            state_keys(keys, 0, n_move, slot_tok, b0, spec.templates, tokens, arcs, -1)
            fill_valid(valid, kind, depth, b0, end, single)
            least = action_costs(cost, valid, kind, spec.alab, stack, depth, b0, end, gold, in_stack)
            g = oracle_target(work, n_move, learner, cost, least)
            p = prefix_train_step(work, 0, n_move, True, g, hinge, learner)
            learner.steps[0] += 1.0
            a = p
            if cost[p] > least:
                errors += 1
                if not (explore > 0.0 and next_random(rng) < explore):
                    a = g
            elif stray > 0.0 and next_random(rng) < stray:
                # a right model strays too now and then, so training also visits states after mistakes
                a = best_costly(scores, valid, cost, least, p)
            mv = kind[a]
            label = spec.alab[a]
            if n_move < n_tpl and mv != SHIFT:
                n_ok, col = label_columns(valid, spec.lab_ok, mv)
                if n_ok > 1:
                    s0 = stack[depth - 1]
                    s1 = stack[depth - 2] if depth >= 2 else NO_TOKEN
                    gl = label_target(mv, s0, s1, b0, gold)
                    if gl >= 0 and not valid[gl]:
                        gl = -1
                    state_keys(keys, n_move, n_tpl, slot_tok, b0, spec.templates, tokens, arcs, mv)
                    col = prefix_train_step(work, n_move, n_tpl, False, gl, hinge, learner)
                    learner.steps[0] += 1.0
                    if gl >= 0 and col != gl:
                        errors += 1
                        if not (explore > 0.0 and next_random(rng) < explore):
                            col = gl
                label = spec.alab[col]
            depth, b0 = apply_tracked(mv, label, stack, depth, b0, in_stack, head, lab, kids, val, sets)
    return errors


@njit(cache=True, nogil=True)
def oracle_target(work, n_move, learner, cost, least):
    """The oracle's action: the best-scoring one of the least-cost valid
    actions (scored by the counted features of the move templates). The
    other least-cost actions are then made invalid: they are neither the
    target nor a violation."""
    score_counted(work, 0, n_move, learner)
    scores, valid = work.scores, work.valid
    g = gold_action(scores, valid, cost, least)
    for y in range(scores.shape[0]):
        if y != g and cost[y] == least:
            valid[y] = 0
    return g


@njit(cache=True, nogil=True)
def gold_action(scores, valid, cost, least):
    """The best-scoring least-cost valid action (the first on ties)."""
    g = -1
    best = NEG_INF
    for y in range(scores.shape[0]):
        if valid[y] and cost[y] == least and (g < 0 or scores[y] > best):
            g = y
            best = scores[y]
    return g


@njit(cache=True, nogil=True)
def best_costly(scores, valid, cost, least, chosen):
    """The best-scoring valid action that costs more than the least (the
    first on ties), or `chosen` when none does."""
    a = chosen
    best = NEG_INF
    for y in range(scores.shape[0]):
        if valid[y] and cost[y] > least and (a == chosen or scores[y] > best):
            a = y
            best = scores[y]
    return a


@njit(cache=True, nogil=True)
def oracle_parse(segments, tree, kind, alab, out):
    """Parse by the oracle alone (the first least-cost action: a static
    oracle). On a projective gold tree it must rebuild the tree exactly.
    segments, tree (GoldTree) and out (heads, labels) as train_parse's and
    predict_parse's."""
    seg_off, seg_single = segments
    gold = GoldTree(*tree)
    heads_out, labels_out = out
    n = gold.head.shape[0]
    stack, head, lab, kids, val, sets = new_state(n)
    in_stack = np.zeros(n, dtype=np.uint8)
    valid = np.zeros(kind.shape[0], dtype=np.uint8)
    cost = np.zeros(kind.shape[0], dtype=np.int64)
    total = 0
    for d in range(seg_off.shape[0] - 1):
        start = seg_off[d]
        end = seg_off[d + 1]
        depth = 0
        b0 = start
        while b0 < end or depth > 0:
            fill_valid(valid, kind, depth, b0, end, seg_single[d] != 0)
            least = action_costs(cost, valid, kind, alab, stack, depth, b0, end, gold, in_stack)
            total += least
            a = 0
            while not (valid[a] and cost[a] == least):
                a += 1
            depth, b0 = apply_tracked(kind[a], alab[a], stack, depth, b0, in_stack, head, lab, kids, val, sets)
        write_output(start, end, head, lab, heads_out, labels_out)
    return total
