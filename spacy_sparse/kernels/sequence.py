"""Greedy left-to-right labelling of whole batches of docs (tagging; NER
adds a validity mask over label transitions).

The state of a sequence task is the position and the labels predicted so
far; its atoms are lexical attributes around the position and earlier
labels. Its mask: `allowed[0, prev + 1, y]` says whether label y may follow
label prev (row 0: the start of a segment); `allowed[1]` is the same for a
token that must close whatever it is in: the last of a segment, or the one
before a fixed label. A mask of shape (1, 1, n) allows the same labels
everywhere (a tagger's: a full mask grows with the square of the label
set). `fixed[i] >= 0` is a label given in advance (an entity
already on the doc): it is kept, not predicted (an empty `fixed`: none).
`hist_of[label]` is the value a `hist` atom reads for a word last given that
label earlier in its doc (the NER maps moves to their entity type);
`seg_new_doc[d]` says whether segment d starts a new doc; `inputs` holds per
token its tag_ hash as given before the component ran (column 0, what `ptag`
reads) and the whitespace that follows it (column 1, what `space` reads: none,
spaces, a line break, a blank line; pipeline/views.py).
"""
import numpy as np
from numba import njit

from ..codes import KNOWN_PAIR_MUL, LOWER, SRC_HIST, SRC_PTAG, SRC_TAG
from .hashing import PAD_LEFT, PAD_RIGHT, fold_atom, key_of, prefetch_home
from .history import history_state, recall, remember
from .jit import leaf
from .layout import UNSET
from .prefetch import prefetch_lex, prefetch_sum
from .learner import latent_gold, prefix_train_step, score_counted, train_scratch
from .scoring import (LOOKAHEAD, add_dense, block_end, decided, find_row, has_thresholds, leads, margin_at, open_scores,
                      score_block)
from .structs import Hinge, Learner, Weights


FIRST_BLOCK = 2  # templates in a token's first block (scoring.block_end)


@leaf
def sequence_key(t, i, start, end, templates, tokens, pred, hist):
    """Feature key of template t at token i of the segment [start, end);
    tokens = (lex_rows, lex, inputs)."""
    seeds, atom_off, atom_src, atom_pos, key_mix = templates
    lex_rows, lex, inputs = tokens
    h = seeds[t]
    for a in range(atom_off[t], atom_off[t + 1]):
        p = i + atom_pos[a]
        src = atom_src[a]
        if p < start:
            v = PAD_LEFT + np.uint64(start - p)
        elif p >= end:
            v = PAD_RIGHT + np.uint64(p - end)
        elif src >= 0:
            v = lex[lex_rows[p], src]
        elif src == SRC_TAG:
            v = np.uint64(pred[p] + 1)
        elif src == SRC_HIST:
            v = hist[p]
        elif src == SRC_PTAG:
            v = inputs[p, 0]
        else:  # SRC_SPACE
            v = inputs[p, 1]
        h = fold_atom(h, v, key_mix)
    return key_of(h, key_mix)


NO_CODES = np.zeros(0, dtype=np.uint16)  # score_block: rows are dense
PAIR_MUL = np.uint64(KNOWN_PAIR_MUL)


@njit(cache=True, nogil=True)
def known_labels(keys, labels, table, orth_col, tag_col, fixed):
    """fixed[i]: the label of token i's (ORTH, TAG) pair in the known-pairs
    table (keys sorted, labels beside them: pipeline/known_words.py), -1 if
    the pair is not known; the columns are those of a batch's token table.
    Returns how many tokens have a known pair."""
    hits = 0
    for i in range(table.shape[0]):
        key = table[i, orth_col] * PAIR_MUL + table[i, tag_col]
        at = np.searchsorted(keys, key)
        if at < keys.shape[0] and keys[at] == key:
            fixed[i] = labels[at]
            hits += 1
        else:
            fixed[i] = -1
    return hits


@njit(cache=True, nogil=True)
def word_rows(lex_rows, lex, templates, tab, tab_off, column, rows):
    """Fill rows[w, column[t]], the row (-1: none) of one-word template t's
    feature for the word type in lexicon row w, for the types of a batch
    not filled yet (rows[w, 0] == UNSET). A type recurs (half of running
    text is its ~100 commonest words), so these keys are made and looked up
    once per type and model, not once per token."""
    seeds, atom_off, atom_src, _, key_mix = templates
    for i in range(lex_rows.shape[0]):
        w = lex_rows[i]
        if rows[w, 0] != UNSET:
            continue
        for t in range(seeds.shape[0]):
            c = column[t]
            if c >= 0:
                # sequence_key of a one-word template inside a segment, written out
                h = seeds[t]
                for a in range(atom_off[t], atom_off[t + 1]):
                    h = fold_atom(h, lex[w, atom_src[a]], key_mix)
                rows[w, c] = find_row(tab, tab_off, t, key_of(h, key_mix))


@njit(cache=True, nogil=True)
def word_sums(lex_rows, column, slot, rows, W, book, sums, filled):
    """sums[w, k]: the summed rows of type w's one-word templates in slot k
    (what they add to a decision when that word is inside the segment), for
    the types of a batch not summed yet (those with a lexicon row below
    sums.shape[0]; the others are summed when read: add_word_sum). With all
    templates scored (no margin), a token then reads one vector per offset
    instead of one row per one-word template."""
    for i in range(lex_rows.shape[0]):
        w = lex_rows[i]
        if w >= sums.shape[0] or filled[w]:
            continue
        filled[w] = True
        for k in range(sums.shape[1]):
            type_sum(sums[w, k], w, k, slot, column, rows, W, book)


@leaf
def type_sum(out, w, k, slot, column, rows, W, book):
    """out = the rows of type w's one-word templates in slot k, added in
    template order: the one way a summed vector is made, so a sum kept in
    the cache and one made when read are the same floats."""
    out[:] = 0.0
    for t in range(slot.shape[0]):
        if slot[t] == k:
            add_dense(out, W, book, rows[w, column[t]])


@leaf
def add_word_sum(scores, vec, w, k, slot, column, type_rows, W, book):
    """Add the vector word_sums keeps for type w at offset k, made now (a
    type the cache had no room for): the scores, and so the labels, do not
    depend on which types a process met first."""
    type_sum(vec, w, k, slot, column, type_rows, W, book)
    for y in range(scores.shape[0]):
        scores[y] += vec[y]


@leaf
def word_read(t, i, column, atom_off, atom_pos):
    """The token whose word one-word template t reads at token i (its row
    is then cached per word type), or -1 for any other template."""
    return i + atom_pos[atom_off[t]] if column[t] >= 0 else np.int64(-1)


@leaf
def valid_labels(valid, allowed, pred, fixed, i, start, end):
    """Copy the mask row for token i, given the label before it, into
    `valid` (a copy, not a view: a leaf returns no array)."""
    prev = pred[i - 1] + 1 if i > start and allowed.shape[1] > 1 else 0
    closing = i == end - 1 or (fixed.shape[0] > 0 and fixed[i + 1] >= 0)
    c = 1 if closing and allowed.shape[0] > 1 else 0
    for y in range(valid.shape[0]):
        valid[y] = allowed[c, prev, y]


@leaf
def add_sum(scores, sums, w, k):
    """Add the summed vector sums[w, k] (indexed here, so no view is made)."""
    for y in range(scores.shape[0]):
        scores[y] += sums[w, k, y]


# With sums, the vectors of the token this many places on are asked for while a token is labelled: with a
# margin most tokens stop on their sums, whose five vectors (one per offset, each of another word type) are
# then the trips to memory a token waits on (docs/decisions/measurement-log.md).
AHEAD = 1


@njit(cache=True, nogil=True)
def predict_sequence(tokens, segments, templates, weights, labels, words, rule, out):
    """Label every token; stop adding templates once the best valid label
    leads by `margin` (margin < 0: always use all templates), or by
    thr[t] after template t when thr is not None (stop_margins). W holds
    float rows, or one-byte codes into `book` (scoring.add_dense).

    Plain tuples: tokens (lex_rows, lex, inputs), segments (seg_off,
    seg_new_doc), templates, weights (tab_off, tab, W, book), labels
    (allowed, fixed, hist_of, bias: the module's docstring), words (column,
    type_rows, slot, slot_pos, sums: below), rule (margin, thr) and out
    (pred, used).

    One-word templates read their rows per word type (`column`, and
    `type_rows` indexed by lexicon row: word_rows) inside a segment; past its
    edges, and for every other template, the row is looked up by key.
    With `sums` (not empty) the one-word templates inside the segment are
    read as one summed vector per offset (template t's offset is
    slot_pos[slot[t]], slot -1 for the others: layout.word_slots; word_sums, made on
    the spot, the same way, for a type the cache has no room for:
    add_word_sum) instead: without a margin the same scores, added in
    another order (float rounding can break a near tie the other way). With
    a margin the sums come first and the stop rule is tested on them before
    any other template: a word's own form, affixes and shape, and its
    neighbours', read in a few vector adds, settle most tokens, which the
    learned order reaches only after several row lookups (docs/decisions/measurement-log.md).
    A token whose offsets are all inside the segment starts its blocks
    after the one-word templates that lead the order (a model trained with sums has
    them all first: SequencePipe._arrange_templates) instead of passing them
    one by one. Writes the label into pred and the number of templates
    scored (those in the sums included) into used.
    """
    seeds, atom_off, atom_src, atom_pos, key_mix = templates
    lex_rows, lex, inputs = tokens
    seg_off, seg_new_doc = segments
    tab_off, tab, W, book = weights
    allowed, fixed, hist_of, bias = labels
    column, type_rows, slot, slot_pos, sums = words
    margin, thr = rule
    pred, used = out
    n_tpl = seeds.shape[0]
    rows = Weights(tab_off, tab, W, W, NO_CODES, book, False)  # dense rows
    scores = np.zeros(allowed.shape[2], dtype=np.float32)
    valid = np.zeros(allowed.shape[2], dtype=allowed.dtype)
    keys = np.zeros(n_tpl, dtype=np.uint64)
    ahead = np.zeros(max(LOOKAHEAD, n_tpl), dtype=np.int64)
    in_sum = np.zeros(max(LOOKAHEAD, n_tpl), dtype=np.int64)  # 1: the block's template is read through the sums
    with_hist, hist, h_keys, h_vals, h_stamp = history_state(lex_rows, atom_src, seg_off, seg_new_doc)
    summed = sums.shape[0] > 0
    slot_n = np.zeros(slot_pos.shape[0], dtype=np.int64)  # one-word templates per summed offset
    for t in range(n_tpl):
        if slot[t] >= 0:
            slot_n[slot[t]] += 1
    vec = np.zeros(scores.shape[0], dtype=np.float32)
    lead = 0  # the one-word templates that come first (all of them in a model trained with sums)
    reach = 0  # the furthest offset a template reads: that word's lexicon row is asked for a token earlier
    for a in range(atom_pos.shape[0]):
        reach = max(reach, atom_pos[a])
    while lead < n_tpl and column[lead] >= 0:
        lead += 1
    doc_id = -1
    for d in range(seg_off.shape[0] - 1):
        start = seg_off[d]
        end = seg_off[d + 1]
        if seg_new_doc[d]:
            doc_id += 1
        for i in range(start, end):
            if with_hist:
                hist[i] = recall(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], hist_of)
            if fixed.shape[0] > 0 and fixed[i] >= 0:
                pred[i] = fixed[i]
                used[i] = 0
                if with_hist:
                    remember(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], pred[i])
                continue
            if i + reach + 1 < end:
                prefetch_lex(lex, lex_rows[i + reach + 1])
            valid_labels(valid, allowed, pred, fixed, i, start, end)
            done, cand = open_scores(scores, valid, margin)
            if bias.shape[0] > 0:
                for y in range(scores.shape[0]):
                    if valid[y]:
                        scores[y] += bias[y]
                if margin >= 0.0:
                    done, cand = leads(scores, margin_at(margin, thr, 0))
            in_sums = 0  # templates read through the sums, and those of them the blocks passed
            passed = 0
            n = 0
            if summed:
                for k in range(slot_pos.shape[0]):  # the vectors of the token AHEAD on, while this one is labelled
                    p = i + AHEAD + slot_pos[k]
                    if start <= p < end and lex_rows[p] < sums.shape[0]:
                        prefetch_sum(sums, lex_rows[p], k)
                covered = True  # every offset's word is inside the segment
                for k in range(slot_pos.shape[0]):
                    p = i + slot_pos[k]
                    if start <= p < end:
                        if lex_rows[p] < sums.shape[0]:
                            add_sum(scores, sums, lex_rows[p], k)
                        else:
                            add_word_sum(scores, vec, lex_rows[p], k, slot, column, type_rows, W, book)
                        in_sums += slot_n[k]
                    else:
                        covered = False
                if covered:  # the leading one-word templates are all in the sums: the blocks start after them
                    n = lead
                    passed = lead
                if margin >= 0.0:
                    done, cand = leads(scores, margin_at(margin, thr, 0))
                    if covered and not done and has_thresholds(thr) and lead > 1:
                        # each skipped template adds nothing but would test its own, smaller, margin
                        done, cand = leads(scores, margin_at(margin, thr, lead - 1))
            ready = n  # templates from n to here have their keys made already, and their slots asked for
            while n < n_tpl and not (margin >= 0.0 and (n > 0 or summed) and done):
                stop = block_end(n, n_tpl, FIRST_BLOCK) if margin >= 0.0 else n_tpl
                for t in range(n, stop):
                    in_sum[t - n] = 0
                    p = word_read(t, i, column, atom_off, atom_pos)
                    if start <= p < end:
                        keys[t] = 0  # score_block: the row is in ahead (-1: in the sums)
                        if summed:
                            ahead[t - n] = -1
                            in_sum[t - n] = 1
                        else:
                            ahead[t - n] = type_rows[lex_rows[p], column[t]]
                    elif t >= ready:
                        keys[t] = sequence_key(t, i, start, end, templates, tokens, pred, hist)
                if stop < n_tpl:
                    # the next block's keys (a key reads labels of earlier tokens only) and table slots, asked for
                    # now so that its probes find them while this block's rows are added
                    ready = block_end(stop, n_tpl, FIRST_BLOCK)
                    for t in range(stop, ready):
                        p = word_read(t, i, column, atom_off, atom_pos)
                        if not start <= p < end:
                            keys[t] = sequence_key(t, i, start, end, templates, tokens, pred, hist)
                            prefetch_home(tab, tab_off[t], tab_off[t + 1] - tab_off[t], keys[t])
                k, done, cand = score_block(keys, n, stop, rows, margin, thr, scores, ahead, done, cand)
                for j in range(k):
                    passed += in_sum[j]
                n += k
            pred[i] = decided(scores, valid, margin, done, cand)
            used[i] = n + in_sums - passed
            if with_hist:
                remember(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], pred[i])


@njit(cache=True, nogil=True)
def train_sequence(tokens, segments, targets, templates, learning, labels, loss, pred):
    """One online pass over a batch: predict each token greedily (history
    from the model's own predictions) and update. Returns the number of
    tokens with a gold label that were predicted wrongly.

    gold[i] >= 0 is a label, -1 none, and -2 - y "anything but y" (a
    negative tag): learned towards the best other label while y leads or is
    within the margin of it (latent_gold). With `neg_when` (n x 3, or 0
    rows: none) a negative holds only in some histories: where
    neg_when[i, 0] = s >= 0, only when the labels predicted for s..i-1 are
    neg_when[i, 1] at s and neg_when[i, 2] after it (the NER's incorrect
    span [s, i] of type T forbids L-T at i only when B-T opened it at s).

    Plain tuples: tokens (lex_rows, lex, inputs), segments (seg_off,
    seg_new_doc), targets (gold, neg_when), learning (structs.Learner),
    labels (allowed, hist_of), loss (margin, objective: structs.Hinge
    without a stride, one prefix per template).
    """
    seeds, atom_off, atom_src, atom_pos, key_mix = templates
    lex_rows, lex, inputs = tokens
    seg_off, seg_new_doc = segments
    gold, neg_when = targets
    learner = Learner(*learning)
    allowed, hist_of = labels
    margin, objective = loss
    hinge = Hinge(margin, objective, 1)
    W = learner.state[0]
    n_tpl = seeds.shape[0]
    no_fixed = np.zeros(0, dtype=np.int32)
    work = train_scratch(n_tpl, W.shape[1], allowed)
    keys, scores, valid = work.keys, work.scores, work.valid
    errors = 0
    with_hist, hist, h_keys, h_vals, h_stamp = history_state(lex_rows, atom_src, seg_off, seg_new_doc)
    doc_id = -1
    for d in range(seg_off.shape[0] - 1):
        start = seg_off[d]
        end = seg_off[d + 1]
        if seg_new_doc[d]:
            doc_id += 1
        for i in range(start, end):
            if with_hist:
                hist[i] = recall(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], hist_of)
            valid_labels(valid, allowed, pred, no_fixed, i, start, end)
            g = gold[i]
            if g >= 0 and not valid[g]:
                g = -1
            for t in range(n_tpl):
                keys[t] = sequence_key(t, i, start, end, templates, tokens, pred, hist)
            negative = g <= -2 and holds(neg_when, pred, i)
            if g <= -2 and not negative:
                g = -1
            if negative:
                score_counted(work, 0, n_tpl, learner)
                g = latent_gold(scores, valid, -2 - g)
            p = prefix_train_step(work, 0, n_tpl, negative, g, hinge, learner)
            pred[i] = p
            if with_hist:
                remember(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], p)
            if g >= 0 or negative:  # an annotated decision: it counts for averaging
                learner.steps[0] += 1.0
                if g >= 0 and p != g:
                    errors += 1
    return errors


@njit(cache=True, nogil=True)
def holds(neg_when, pred, i):
    """Whether token i's negative label applies in the history `pred`."""
    if neg_when.shape[0] == 0 or neg_when[i, 0] < 0:
        return True
    s = neg_when[i, 0]
    if pred[s] != neg_when[i, 1]:
        return False
    for j in range(s + 1, i):
        if pred[j] != neg_when[i, 2]:
            return False
    return True


@njit(cache=True, nogil=True)
def gold_keys(tokens, segments, gold, templates, hist_of, out):
    """The feature key of every template at every token, with the gold
    labels as history (out: n_tokens x n_templates): the features training
    would meet on a perfect run, for rare-feature pruning. A token without a
    gold label reads label 0 as history."""
    seeds, atom_off, atom_src, atom_pos, key_mix = templates
    lex_rows, lex, inputs = tokens
    seg_off, seg_new_doc = segments
    pred = np.maximum(gold, 0).astype(np.int32)
    with_hist, hist, h_keys, h_vals, h_stamp = history_state(lex_rows, atom_src, seg_off, seg_new_doc)
    doc_id = -1
    for d in range(seg_off.shape[0] - 1):
        start = seg_off[d]
        end = seg_off[d + 1]
        if seg_new_doc[d]:
            doc_id += 1
        for i in range(start, end):
            if with_hist:
                hist[i] = recall(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], hist_of)
            for t in range(seeds.shape[0]):
                out[i, t] = sequence_key(t, i, start, end, templates, tokens, pred, hist)
            if with_hist:
                remember(h_keys, h_vals, h_stamp, doc_id, lex[lex_rows[i], LOWER], pred[i])
