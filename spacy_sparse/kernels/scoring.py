"""The engine every task shares: prefix scoring over ordered templates and
the margin test of dynamic feature selection (the prefix-hinge update that
trains it: learner.py).

A task kernel (sequence.py for taggers, later a parser's) computes a feature
key per template for its current decision and calls these pieces; tasks
differ only in how keys are made, which actions are valid and what a decision
does to the state.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .hashing import prefetch_home, table_find
from .jit import NO_NRT, inline_leaf, leaf
from .layout import HOT, LOOKAHEAD
from .prefetch import prefetch_row, prefetch_rows, prefetch_span
from .rows import widen_span

NEG_INF = np.float32(-3.0e38)


@inline_leaf
def add_row(scores, W, row):
    """Add one feature's weight row to the label scores."""
    if row >= 0:
        for y in range(scores.shape[0]):
            scores[y] += W[row, y]


def add_dense(scores, W, book, row):
    """add_row for dense rows of either kind a prediction reads: float
    weights, or one-byte codes into `book` (SparseLinearModel.coded_weights:
    the same values, a quarter of the bytes). Which one is decided when a
    kernel is compiled, from W's dtype."""
    if row >= 0:
        scores += book[W[row]] if np.issubdtype(W.dtype, np.integer) else W[row]


@overload(add_dense, jit_options={"nogil": True, **NO_NRT})  # a leaf (jit.py)
def _add_dense(scores, W, book, row):
    if isinstance(W.dtype, types.Integer):
        def coded(scores, W, book, row):
            if row >= 0:
                for y in range(scores.shape[0]):
                    scores[y] += book[W[row, y]]
        return coded

    def plain(scores, W, book, row):
        if row >= 0:
            for y in range(scores.shape[0]):
                scores[y] += W[row, y]
    return plain


@leaf
def open_scores(scores, valid, margin):
    """Start a decision's scores: 0 for valid labels, NEG_INF for the rest,
    so the margin test needs no mask (a weight sum never lifts NEG_INF).
    Returns (done, cand): whether the margin test already holds (the lead
    of equal scores is 0, and is unbounded with at most one valid label),
    and the first valid label (the decision when it is the only one)."""
    n = 0
    for y in range(scores.shape[0]):  # branch-free, so it vectorizes
        v = valid[y] != 0
        scores[y] = np.float32(0.0) if v else NEG_INF
        n += v
    cand = 0
    for y in range(scores.shape[0]):
        if valid[y]:
            cand = y
            break
    return n <= 1 or margin == 0.0, cand


@leaf
def top_score(scores):
    """The highest score. Eight running maxima instead of one: a single
    chain of compares waits on the one before it at every label, eight
    chains overlap (numba does not vectorize a float max)."""
    n = scores.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = scores[0]
    y = 0
    while y + 8 <= n:
        v = scores[y]
        m0 = v if v > m0 else m0
        v = scores[y + 1]
        m1 = v if v > m1 else m1
        v = scores[y + 2]
        m2 = v if v > m2 else m2
        v = scores[y + 3]
        m3 = v if v > m3 else m3
        v = scores[y + 4]
        m4 = v if v > m4 else m4
        v = scores[y + 5]
        m5 = v if v > m5 else m5
        v = scores[y + 6]
        m6 = v if v > m6 else m6
        v = scores[y + 7]
        m7 = v if v > m7 else m7
        y += 8
    while y < n:
        v = scores[y]
        m0 = v if v > m0 else m0
        y += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@leaf
def leads(scores, margin):
    """Whether the best label leads every other by `margin` (>= 0), and,
    when it does, the best label (the first of equal best ones; 0 when it
    does not). Three passes without a
    branch that depends on the scores, but the last: the top score, a count
    of the labels within the margin of it (which vectorizes), and where the
    top is. A running best label compared label by label took twice as long
    (its branches follow the scores, and mispredict)."""
    top = top_score(scores)
    lo = top - margin
    close = 0
    for y in range(scores.shape[0]):
        close += scores[y] > lo
    # with margin > 0 the top itself is above lo; the best label is asked for only where the test holds (a
    # decision reads `cand` only then: decided)
    if close > 1:
        return False, 0
    return True, first_holding(scores, top)


@leaf
def margin_at(margin, thr, t):
    """The stop margin after template t: thr[t] with per-template thresholds
    (stop_margins), else the one margin. A kernel that holds thr in a tuple
    asks here, where thr is an argument, so numba drops the branch a None
    rules out."""
    if thr is None:
        return margin
    return thr[t]


@leaf
def has_thresholds(thr):
    """Whether a stop rule has per-template thresholds (see margin_at)."""
    return thr is not None


@leaf
def first_holding(scores, top):
    """The first label whose score is `top` (the last label if none is)."""
    best = 0
    while best < scores.shape[0] - 1 and scores[best] != top:
        best += 1
    return best


@leaf
def best_valid(scores, valid):
    """Index of the best valid label (first on ties), or -1 if none is valid."""
    best = -1
    best_val = NEG_INF
    for y in range(scores.shape[0]):
        if valid[y] and (best < 0 or scores[y] > best_val):
            best = y
            best_val = scores[y]
    return best


@leaf
def decided(scores, valid, margin, done, cand):
    """The label a decision takes. When the margin test stopped it, `cand`
    leads every other label by margin > 0, so it is the best one already
    (no pass over the labels); otherwise the best valid label."""
    if done and margin > 0.0 and valid[cand]:
        return cand
    # The first label holding the top score is best_valid's answer whenever it
    # is valid (every valid label before it scores lower), and with scores
    # opened by open_scores it nearly always is. Found as `leads` finds it:
    # the label-by-label running best mispredicts a branch at each new best.
    if scores.shape[0] > 0:
        best = first_holding(scores, top_score(scores))
        if valid[best]:
            return best
    return best_valid(scores, valid)


@leaf
def find_entry(tab, tab_off, t, key):
    """Table value of (template t, key): its row (>= 0), -1 if absent, or
    -1 - c for a feature still waiting for its row after c updates. A narrow
    span table (uint32: rows.narrow_table) gives its value as the wide one."""
    off = tab_off[t]
    v = table_find(tab, off, tab_off[t + 1] - off, key)
    if tab.itemsize == 4:  # known when compiled: one branch is kept
        return widen_span(v)
    return v


@leaf
def find_row(tab, tab_off, t, key):
    """Row of (template t, key), or -1 when it has none (yet)."""
    r = find_entry(tab, tab_off, t, key)
    return r if r >= 0 else np.int64(-1)


@leaf
def block_end(t0, n_tpl, first):
    """End of the block of templates that starts at t0, when the first
    block holds `first` templates."""
    size = first if t0 < 2 * first else min(t0, LOOKAHEAD)
    return min(t0 + size, n_tpl)


SPAN_BITS = np.int64(16)
SPAN_MASK = np.int64(0xFFFF)


@inline_leaf
def add_span(scores, lv, span):
    """Add one feature's nonzero weights, packed as span = start << 16 |
    count into `lv` (rows of (label, value))."""
    start = span >> SPAN_BITS
    for k in range(start, start + (span & SPAN_MASK)):
        scores[np.int64(lv[k, 0])] += lv[k, 1]


@inline_leaf
def add_coded(scores, lc, book, span):
    """add_span for the coded layout: entries label << 8 | code, the value
    book[code] (a model whose weights take at most 256 values: DC-ADMM's)."""
    start = span >> SPAN_BITS
    for k in range(start, start + (span & SPAN_MASK)):
        e = np.int64(lc[k])
        scores[e >> 8] += book[e & 0xFF]


@leaf
def prefetch_slots(tab, tab_off, keys, t0, t1):
    """Ask for the home slot of each key of templates t0..t1-1 (a key 0 has
    its row already: nothing to ask for)."""
    for t in range(t0, t1):
        if keys[t] != 0:
            prefetch_home(tab, tab_off[t], tab_off[t + 1] - tab_off[t], keys[t])


@leaf
def probe_block(keys, t0, t1, weights, ahead, at):
    """Look up the table entries of templates t0..t1-1 into ahead[at:], and
    ask for the weights each found (a packed layout's: a span of entries,
    or a dense hot row), so that adding them later finds them in cache."""
    tab, tab_off = weights.tab, weights.tab_off
    for t in range(t0, t1):
        r = find_entry(tab, tab_off, t, keys[t])
        ahead[at + t - t0] = r
        if r >= HOT:
            prefetch_row(weights.W, r - HOT)
        elif r >= 0:
            if weights.lc.shape[0] > 0:
                prefetch_span(weights.lc, r)
            else:
                prefetch_span(weights.lv, r)


@inline_leaf
def add_block(scores, weights, ahead, at, n):
    """Add the packed rows ahead[at:at + n] (probe_block's) in order."""
    W, lv, lc, book = weights.W, weights.lv, weights.lc, weights.book
    for j in range(n):
        row = ahead[at + j]
        if row >= HOT:
            add_row(scores, W, row - HOT)
        elif row >= 0:
            if lc.shape[0] > 0:
                add_coded(scores, lc, book, row)
            else:
                add_span(scores, lv, row)


@leaf
def score_block(keys, t0, t1, weights, margin, thr, scores, ahead, done, cand):
    """Add the rows of templates t0..t1-1 (keys in keys[t0:t1], `ahead`
    at least t1 - t0 long) to the scores of a decision (opened by open_scores), in
    order; with margin >= 0, stop once the best label leads by the margin
    (thr None), or by thr[t] after template t (stop_margins).
    Returns (templates scored, done, cand); `done` and `cand` carry the
    margin test from block to block (see leads).

    `weights` (structs.Weights): dense rows `W` (float, or one-byte codes
    into `book`: add_dense), or with `packed`, a table whose values are
    spans of nonzero (label, value) pairs in `lv` (SparseLinearModel.packed):
    a parser's rows hold a few nonzeros among ~100 actions, so that layout
    is smaller, adds fewer numbers and reads one place per feature; with `lc`
    not empty, the pairs are 2-byte codes into `book` instead (add_coded:
    the same values in the same order, a quarter of the bytes). The rows
    of a block are looked up before any is added: the probes are
    independent, so their memory latencies overlap. No key is 0
    (finish_key), so a task marks with key 0 a template whose row it put in
    ahead[t - t0] itself (a tagger's rows cached per word type). The margin
    test runs after every template for dense rows, after the block for
    packed ones (the parser's: testing after every template stopped it too
    early: docs/decisions/measurement-log.md). A task computes the keys of a block just before
    scoring it (the parser one block ahead), so templates after the stop
    cost little.
    """
    tab, tab_off, W, book, packed = weights.tab, weights.tab_off, weights.W, weights.book, weights.packed
    if t1 - t0 > LOOKAHEAD:  # a decision's whole set (no margin): every first slot is asked for before any probe
        prefetch_slots(tab, tab_off, keys, t0, t1)
    for t in range(t0, t1):
        if keys[t] != 0:  # 0: the task put the row in `ahead` already
            # any negative entry (absent, or waiting under min-update) adds nothing below
            ahead[t - t0] = find_entry(tab, tab_off, t, keys[t])
    if packed:
        add_block(scores, weights, ahead, 0, t1 - t0)
        if margin >= 0.0:
            done, cand = leads(scores, margin_at(margin, thr, t1 - 1))
        return t1 - t0, done, cand
    prefetch_rows(W, ahead, t1 - t0)  # dense rows are mostly trips to memory: start them all before adding any
    for t in range(t0, t1):
        row = ahead[t - t0]
        if row >= 0:
            add_dense(scores, W, book, row)
        if margin >= 0.0:
            if thr is None:
                if row >= 0:
                    done, cand = leads(scores, margin)
            # unchanged scores pass or fail a test again, unless the margin shrank
            elif row >= 0 or (t > 0 and thr[t] < thr[t - 1]):
                done, cand = leads(scores, thr[t])
            if done:
                return t - t0 + 1, done, cand
    return t1 - t0, done, cand
