"""The learner every task shares: the prefix-hinge update of dynamic feature selection (Strubell et al. 2015)
with the perceptron or AdaGrad, averaging, min-update's counting (Goldberg & Elhadad), DC-ADMM's pull toward
its target (Suzuki & Nagata) and the sparseptron's per-template scales (Martins et al. 2011). A task kernel
makes the keys of a decision and calls prefix_train_step; the scores it adds are scoring.py's."""
import numpy as np
from numba import njit

from ..codes import FULL, PREFIX_TRUNCATED  # training objectives
from .hashing import table_put, table_slot
from .scoring import NEG_INF, add_row, best_valid, find_entry
from .structs import TrainScratch

# prefix_train_step: the loss-augmented argmax must be computed again
STALE = -2


@njit(cache=True, nogil=True)
def latent_gold(scores, valid, neg):
    """The label a decision annotated "not neg" learns towards: the best
    valid label other than neg (-1: none). The update then pushes neg down
    only while it is within the margin of that label."""
    best = -1
    for y in range(scores.shape[0]):
        if valid[y] and y != neg and (best < 0 or scores[y] > scores[best]):
            best = y
    return best


@njit(cache=True, nogil=True)
def loss_augmented(scores, valid, gold, margin):
    """argmax_y' scores[y'] - margin * [y' == gold] over valid labels.

    It differs from gold exactly when gold does not lead by the margin, i.e.
    when the hinge h(P, gold) of Strubell et al. (2015) is positive.
    """
    best = -1
    best_val = NEG_INF
    for y in range(scores.shape[0]):
        if valid[y]:
            v = scores[y] - margin if y == gold else scores[y]
            if best < 0 or v > best_val:
                best = y
                best_val = v
    return best


@njit(cache=True, nogil=True)
def add_row_loss_augmented(scores, W, row, valid, gold, margin):
    """add_row, then loss_augmented of the new scores, in one pass."""
    best = -1
    best_val = NEG_INF
    for y in range(scores.shape[0]):
        s = scores[y] + W[row, y]
        scores[y] = s
        if valid[y]:
            v = s - margin if y == gold else s
            if best < 0 or v > best_val:
                best = y
                best_val = v
    return best


@njit(cache=True, nogil=True)
def take_update(tab, tab_off, tab_count, row_tpl, n_rows, pending, updates, t, key, min_updates):
    """Count one more update of a feature that has no row, and return the
    row it gets at its min_updates-th update (-1 before that).

    Min-update (Goldberg & Elhadad) ignores a feature until it took part in
    min_updates updates. Only the count is kept until then, in the
    feature's table slot (-1 - count), not a weight row: most features never
    get there (about 4 in 5 parser features at min_updates 12 on EWT), and rows as wide as
    the label set are what training memory is made of. The row starts at
    zero with this update. `pending[c]` counts the features waiting with c
    updates, which bounds the rows a batch can make (model.reserve). Python
    reserved a slot and a row for this beforehand, so nothing overflows."""
    off = tab_off[t]
    slot = table_slot(tab, off, tab_off[t + 1] - off, key)
    count = 0
    if tab[2 * slot] == key:
        v = np.int64(tab[2 * slot + 1])
        if v >= 0:
            return v
        count = -1 - v
        pending[count] -= 1
    else:
        tab_count[t] += 1
    count += 1
    if count < min_updates:
        table_put(tab, slot, key, -1 - count)
        pending[count] += 1
        return np.int64(-1)
    row = n_rows[0]
    n_rows[0] += 1
    table_put(tab, slot, key, row)
    row_tpl[row] = t
    updates[row] = count - 1  # the caller counts this update
    return row


@njit(cache=True, nogil=True)
def add_row_scaled(scores, W, row, scale):
    """Add a weight row times its template's scale (sparseptron's w = c v)."""
    for y in range(scores.shape[0]):
        scores[y] += scale * W[row, y]


@njit(cache=True, nogil=True)
def catch_up(W, U, target, stamp, row, step, pull):
    """DC-ADMM's w-step regularizer rho/2 |w - target|^2, applied lazily:
    a row read at decision `step` first takes the pull toward its target of
    every decision since it was last read, in closed form (each decision
    multiplies w - target by `pull` = 1 - lr * rho)."""
    k = step - stamp[row]
    if k > 0.0:
        f = pull ** k
        for y in range(W.shape[1]):
            old = W[row, y]
            new = target[row, y] + (old - target[row, y]) * f
            W[row, y] = new
            U[row, y] += step * (new - old)
    stamp[row] = step


@njit(cache=True, nogil=True)
def apply_gradient(W, U, G, row, grad, touched, n_touched, step, adagrad, lr, scale):
    """Apply one template's summed hinge gradient (`grad` over the labels in
    `touched`) to its feature row; returns the change of the row's squared
    norm (what the sparseptron keeps per template).

    Perceptron: W += grad. AdaGrad (Duchi et al. 2011, as Strubell et al.
    used): W += lr * grad / sqrt(G), G the running sum of squared gradients
    per weight, so templates that take part in many prefixes (the first
    ones) do not take proportionally larger steps. Either way U accumulates
    step-weighted changes so the average of all past weights is
    W - U / steps, without touching rows that are not updated. A template
    whose weights are stored scaled (w = scale * v) takes the step on v.
    """
    dnorm = 0.0
    for k in range(n_touched):
        y = touched[k]
        g = grad[y]
        if g == 0.0:
            continue
        if adagrad:
            G[row, y] += g * g
            delta = lr * g / np.sqrt(G[row, y])
        else:
            delta = lr * g
        delta /= scale
        old = W[row, y]
        W[row, y] = old + delta
        dnorm += W[row, y] * W[row, y] - old * old
        U[row, y] += step * delta
    return dnorm


@njit(cache=True, nogil=True)
def score_counted(work, t0, t1, learner):
    """Scores (into work.scores) of one decision from the features of
    templates t0..t1-1 that count (as prefix_train_step scores them, without
    updating anything). work.rows receives each template's table entry,
    which prefix_train_step can then take instead of probing again (its
    `known`). All probes come first: they do not depend on each other, so
    their cache misses overlap."""
    keys, rows, scores = work.keys, work.rows, work.scores
    tab, tab_off = learner.tables[0], learner.tables[1]
    W, updates, scale = learner.state[0], learner.state[3], learner.state[4]
    min_updates = learner.params[2]
    scores[:] = 0.0
    for t in range(t0, t1):
        rows[t] = find_entry(tab, tab_off, t, keys[t])
    for t in range(t0, t1):
        r = rows[t]
        if r >= 0 and scale[t] != 0.0 and updates[r] >= min_updates:
            add_row_scaled(scores, W, r, scale[t])


@njit(cache=True, nogil=True)
def train_scratch(n_tpl, n_labels, like):
    """A training step's scratch arrays (structs.TrainScratch) for n_tpl
    templates and n_labels labels; `valid` takes the dtype of `like` (the
    task's mask)."""
    return TrainScratch(np.zeros(n_tpl, dtype=np.uint64), np.zeros(n_tpl, dtype=np.int64),
                        np.zeros(n_labels, dtype=np.float32), np.zeros(n_labels, dtype=like.dtype),
                        np.zeros(n_tpl, dtype=np.int64), np.zeros(n_tpl, dtype=np.int64),
                        np.zeros(n_labels, dtype=np.float32), np.zeros(n_labels + 1, dtype=np.int64))


@njit(cache=True, nogil=True)
def prefix_train_step(work, t0, t1, known, gold, hinge, learner):
    """Score templates t0..t1-1 in order for one decision, update, and
    return the label predicted from the scores computed.

    PREFIX_TRUNCATED: prefixes are scored until gold leads by the margin;
    every prefix i before that point adds its hinge gradient (gold up, the
    loss-augmented argmax down) to templates 1..i.
    PREFIX_ALL: the same hinge for every prefix 1..T, whether or not an
    earlier one already had gold ahead by the margin.
    FULL: one hinge update of all templates on the complete score (margin 0
    is the plain perceptron).

    work (structs.TrainScratch): `rows` receives the row of each template's
    feature (-1: unknown), or with `known` already holds their table
    entries (score_counted's); `grad` (zeros, n_labels) and `touched` are
    scratch space. hinge (structs.Hinge): with `stride` s > 1 the prefixes
    are those of s, 2s, ... templates (and all of them): the ones a margin
    test once per block of s sees at run time. learner (structs.Learner):

    tables = (tab, tab_off, tab_count, row_tpl, n_rows, pending): the
    feature tables.
    state = (W, U, G, updates, scale, norm2, target, stamp): the weights and
    what the sparsity methods keep per feature or template (model.py).
    params = (adagrad, lr, min_updates, closed, pull).
    steps[0]: the decisions seen so far (the averaging's clock).

    Min-update (Goldberg & Elhadad): a feature adds to scores only once it
    took part in `min_updates` updates (1: from its first); until then only
    that count is kept (take_update), and `updates` counts on for rows.
    `closed`: no new features (rare-feature pruning fixed the feature set
    beforehand). A template
    whose `scale` is 0 is switched off. `pull` < 1 runs DC-ADMM's w-step
    regularizer (see catch_up).
    """
    n_viol = score_prefixes(work, t0, t1, known, gold, hinge, learner)
    pred = best_valid(work.scores, work.valid)
    if gold < 0:
        return pred
    if hinge.objective == FULL:
        y = loss_augmented(work.scores, work.valid, gold, hinge.margin)
        if y != gold:
            work.viol_t[0] = t1 - 1
            work.viol_y[0] = y
            n_viol = 1
    if n_viol > 0:
        update_prefixes(work, t0, n_viol, gold, learner)
    return pred


@njit(cache=True, nogil=True)
def score_prefixes(work, t0, t1, known, gold, hinge, learner):
    """prefix_train_step's scoring: add the counted rows of templates
    t0..t1-1 to work.scores, recording in viol_t / viol_y each prefix whose
    hinge is violated and its loss-augmented argmax; returns how many."""
    tab, tab_off = learner.tables[0], learner.tables[1]
    W, U, updates, scale, target, stamp = (learner.state[0], learner.state[1], learner.state[3],
                                           learner.state[4], learner.state[6], learner.state[7])
    min_updates, pull = learner.params[2], learner.params[4]
    step = learner.steps[0]
    margin, objective, stride = hinge.margin, hinge.objective, hinge.stride
    scores, valid, rows = work.scores, work.valid, work.rows
    scores[:] = 0.0
    n_viol = 0
    hinge_on = objective != FULL and gold >= 0
    y = STALE  # the loss-augmented argmax, kept while no row changes the scores
    for t in range(t0, t1):
        r = rows[t] if known else find_entry(tab, tab_off, t, work.keys[t])
        if scale[t] == 0.0:
            r = -1
        rows[t] = r
        if r >= 0 and updates[r] >= min_updates:
            if pull < 1.0:
                catch_up(W, U, target, stamp, r, step, pull)
            if scale[t] != 1.0:
                add_row_scaled(scores, W, r, scale[t])
                y = STALE
            elif hinge_on and stride == 1:
                y = add_row_loss_augmented(scores, W, r, valid, gold, margin)
            else:
                add_row(scores, W, r)
                y = STALE
        if hinge_on and (stride == 1 or (t - t0 + 1) % stride == 0 or t == t1 - 1):
            if y == STALE:
                y = loss_augmented(scores, valid, gold, margin)
            if y == gold:
                if objective == PREFIX_TRUNCATED:
                    break
                continue
            work.viol_t[n_viol] = t
            work.viol_y[n_viol] = y
            n_viol += 1
    return n_viol


@njit(cache=True, nogil=True)
def update_prefixes(work, t0, n_viol, gold, learner):
    """prefix_train_step's update. Template t's gradient sums the hinge
    gradients of the violating prefixes that contain it (those ending at t
    or later): walk templates from the last violation down, adding each
    violation as it is reached."""
    scale = learner.state[4]
    viol_t, viol_y, grad, touched, rows = work.viol_t, work.viol_y, work.grad, work.touched, work.rows
    n_touched = 1
    touched[0] = gold
    v = n_viol - 1
    for t in range(viol_t[n_viol - 1], t0 - 1, -1):
        while v >= 0 and viol_t[v] == t:
            y = viol_y[v]
            if grad[y] == 0.0:
                seen = False
                for k in range(n_touched):
                    if touched[k] == y:
                        seen = True
                if not seen:
                    touched[n_touched] = y
                    n_touched += 1
            grad[gold] += 1.0
            grad[y] -= 1.0
            v -= 1
        if scale[t] != 0.0:
            rows[t] = update_feature(work, t, rows[t], n_touched, learner)
    for k in range(n_touched):
        grad[touched[k]] = 0.0


@njit(cache=True, nogil=True)
def update_feature(work, t, r, n_touched, learner):
    """Apply work.grad (over the labels in work.touched[:n_touched]) to the
    feature of template t whose key is work.keys[t] and whose row is r (-1:
    none yet, so take_update counts the update and makes the row at the
    min_updates-th); returns the feature's row (-1: still waiting, or
    `closed`)."""
    tab, tab_off, tab_count, row_tpl, n_rows, pending = learner.tables
    W, U, G, updates, scale, norm2, target, stamp = learner.state
    adagrad, lr, min_updates, closed, pull = learner.params
    step = learner.steps[0]
    if r < 0:
        if closed:
            return r
        r = take_update(tab, tab_off, tab_count, row_tpl, n_rows, pending, updates, t, work.keys[t], min_updates)
        if r < 0:
            return r
        if pull < 1.0:
            stamp[r] = step
    elif pull < 1.0 and updates[r] < min_updates:
        catch_up(W, U, target, stamp, r, step, pull)
    norm2[t] += apply_gradient(W, U, G, r, work.grad, work.touched, n_touched, step, adagrad, lr, scale[t])
    updates[r] += 1
    return r
