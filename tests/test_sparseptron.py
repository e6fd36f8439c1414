"""Sparseptron (Martins et al. 2011): prox operators, budget-driven shrinkage, selection and refit."""
import numpy as np
import pytest
import spacy
from conftest import run_epochs, to_examples, train_tagger

from spacy_sparse.learn.sparseptron import (
    SparseptronSettings,
    budget_gravity,
    group_lasso_prox,
    group_prox_factor,
    group_weights,
    prox_step,
    soft_threshold,
    start_selection,
    survivors,
    template_norms,
)


# ---- prox operators ---------------------------------------------------------------
def test_soft_threshold_is_the_l1_prox():
    """Eq. 13: at the prox point p of w, w - p is a subgradient of tau*|.|_1 at p."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        w, tau = rng.normal(size=200), float(rng.uniform(0.05, 1.5))
        p = soft_threshold(w, tau)
        g = w - p
        nz = p != 0
        assert np.allclose(g[nz], tau * np.sign(p[nz]))
        assert np.all(np.abs(g[~nz]) <= tau + 1e-12)
        # and it beats nearby points on the prox objective
        obj = lambda x: 0.5 * np.sum((x - w) ** 2) + tau * np.abs(x).sum()  # noqa: E731
        for _ in range(5):
            assert obj(p) <= obj(p + rng.normal(scale=0.01, size=p.shape)) + 1e-12


def test_group_lasso_prox_is_the_group_prox():
    """Eq. 14: a group survives iff |w_m| > tau_m, scaled by 1 - tau_m/|w_m|,
    and the result satisfies the optimality conditions of the prox."""
    rng = np.random.default_rng(1)
    groups = rng.integers(0, 12, size=300)
    for _ in range(20):
        w = rng.normal(size=300)
        tau = rng.uniform(0.5, 6.0, size=12)
        p = group_lasso_prox(w, groups, tau)
        for m in range(12):
            wm, pm = w[groups == m], p[groups == m]
            norm = np.linalg.norm(wm)
            if norm <= tau[m]:
                assert np.all(pm == 0)
            else:
                # w - p = tau * p / |p|
                assert np.allclose(wm - pm, tau[m] * pm / np.linalg.norm(pm))
    assert np.array_equal(group_prox_factor(np.array([0.0, 2.0]), np.array([1.0, 1.0])), [0.0, 0.5])


def test_budget_gravity_leaves_budget_groups():
    rng = np.random.default_rng(2)
    for budget in (0, 1, 5, 17):
        norms = rng.exponential(size=40)
        norms[rng.integers(0, 40, 5)] = 0.0
        d = group_weights(rng.integers(1, 5000, size=40), "log2")
        tau = budget_gravity(norms, d, budget)
        factor = group_prox_factor(norms, tau * d)
        assert np.count_nonzero(factor) == min(budget, np.count_nonzero(norms))
    assert budget_gravity(np.array([1.0, 0.0]), np.ones(2), 3) == 0.0


# ---- sparseptron on a trained model --------------------------------------------------


def test_budget_step_on_a_model_keeps_at_most_budget_templates(ewt_refs):
    nlp, tagger = train_tagger(ewt_refs["train"][:60], epochs=1)
    model = tagger.sparse
    start_selection(model)
    n = int(model.n_rows[0])
    before = template_norms(model)
    assert np.count_nonzero(before) > 8
    # the scaled step must equal Eq. 14 applied to the flat weights
    w = model.W[:n] * model.groups.scale[model.row_tpl[:n]][:, None]
    d = group_weights(model.tab_count, "log2")
    tau = budget_gravity(before, d, 8)
    expect = group_lasso_prox(w.reshape(-1), np.repeat(model.row_tpl[:n], w.shape[1]), tau * d).reshape(w.shape)
    keys = model.keys_of_rows()
    report = prox_step(model, SparseptronSettings(budget=8))
    assert report["templates_alive"] == 8 == len(survivors(model))
    after = model.W[: int(model.n_rows[0])] * model.groups.scale[model.row_tpl[: int(model.n_rows[0])]][:, None]
    kept = np.isin(keys, model.keys_of_rows())
    assert np.allclose(after, expect[kept], atol=1e-5)
    assert np.all(expect[~kept] == 0)  # only zeroed groups' features were freed
    assert int(model.n_rows[0]) < n



@pytest.mark.parametrize("refit", ["frozen", "fresh"])
def test_martins_selection_loss_and_frozen_refit(ewt_refs, refit):
    """loss = "perceptron": selection trains the plain perceptron (full score, margin 0: only mistakes enter
    a gradient), and the component's own learner comes back for the refit. refit = "frozen": the refit
    learns weights for exactly the features the selection kept and makes no others; "fresh" makes new ones."""
    from spacy_sparse.callbacks import make_sparsity_callback

    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("sparse_tagger")
    train = to_examples(nlp, ewt_refs["train"][:300])
    nlp.initialize(lambda: train)
    own = {k: tagger.cfg[k] for k in ("mode", "learner", "train_margin")}
    callback = make_sparsity_callback(sparseptron={"budget": 10, "every": 100, "epochs": 1, "loss": "perceptron",
                                                   "refit": refit})
    seen = {}

    def check(epoch):
        if epoch == 0:  # selecting, with the perceptron loss
            assert (tagger.cfg["mode"], tagger.cfg["learner"], tagger.cfg["train_margin"]) == ("full", "perceptron", 0)
            seen["templates"] = survivors(tagger.sparse)
            seen["keys"] = {name: set(keys) for name, keys in
                            zip(seen["templates"], tagger.sparse.feature_keys(seen["templates"]))}

    run_epochs(nlp, callback, train, 3, check)
    model = tagger.sparse
    assert {k: tagger.cfg[k] for k in own} == own
    assert len(model.templates) == 10 and set(model.template_names) <= set(seen["templates"])
    n = int(model.n_rows[0])
    held = {name: set(model.keys_of_rows()[model.row_tpl[:n] == t]) for t, name in enumerate(model.template_names)}
    # the refit's features: a subset of the selection's last ones (frozen), or new ones too (fresh)
    if refit == "frozen":
        assert model.closed and all(held[name] <= seen["keys"][name] for name in held)
    else:
        assert not model.closed and any(held[name] - seen["keys"][name] for name in held)
    assert nlp.evaluate(to_examples(nlp, ewt_refs["dev"][:100]))["tag_acc"] > 0.7


# ---- DC-ADMM ------------------------------------------------------------------------


def test_coarse_to_fine_budget_step_keeps_between_one_and_budget():
    from spacy_sparse.learn.sparseptron import budget_factors, coarse_groups

    names = ["ptag@0", "ptag@1", "ptag@-1+ptag@0", "lower@0", "lower@1", "lower@0+lower@1", "shape@0", "shape@1"]
    coarse = coarse_groups(names)
    assert coarse.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    rng = np.random.default_rng(4)
    for budget in (1, 2, 3, 5):
        for _ in range(30):
            norms = rng.exponential(size=8)
            sizes = rng.integers(10, 10000, size=8)
            d = np.log2(sizes)
            coarse_d = np.log2(np.bincount(coarse, weights=sizes))
            tau, factor = budget_factors(norms, d, budget, coarse, coarse_d)
            assert tau > 0 and 1 <= np.count_nonzero(factor) <= budget


def test_a_budget_of_no_template_is_refused_before_training():
    from spacy_sparse.learn.sparseptron import SparseptronSettings

    with pytest.raises(ValueError, match="sparseptron.budget must be"):
        SparseptronSettings(budget=0)
