"""DC-ADMM (Suzuki & Nagata 2013): the value set, the u-step against brute force, weights in the set, QT."""
import re

import numpy as np
import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from conftest import run, to_examples, train_tagger

from spacy_sparse.learn.admm import (
    AdmmSettings,
    DcAdmm,
    nearest_in_set,
    u_step,
    value_set,
)


def test_value_set_shape():
    s = value_set(0.5, 0.25, 4.0, 3)
    assert s.tolist() == sorted(s.tolist()) and len(s) == 7 and 0.0 in s
    assert np.allclose(s[4:], [0.75, 2.25, 8.25]) and np.allclose(s[:3], -s[4:][::-1])


def test_u_step_equals_brute_force_nearest():
    """Fig. 2: argmin over u in S of lambda1|u| + lambda2/2 u^2 + rho/2 (u - (w + alpha))^2,
    plus lambda0 for u != 0 (our L0 term)."""
    rng = np.random.default_rng(3)
    cases = [(1, 0.0, 0.0, 1.0, 0.0), (2, 0.3, 0.0, 1.0, 0.0), (4, 0.1, 0.5, 2.0, 0.0), (3, 0.0, 1.0, 0.5, 0.0),
             (4, 0.0, 0.0, 1.0, 1.0), (3, 0.3, 0.5, 2.0, 4.0), (2, 0.0, 1.0, 0.5, 0.2)]
    for zeta, lam1, lam2, rho, lam0 in cases:
        values = value_set(0.2, 0.1, 4.0, zeta)
        w = rng.normal(scale=3.0, size=2000).astype(np.float32)
        alpha = rng.normal(scale=0.5, size=2000).astype(np.float32)
        got = u_step(w, alpha, values, rho, lam1, lam2, lam0)
        b = (w.astype(np.float64) + alpha)[:, None]
        v = values.astype(np.float64)[None, :]
        obj = lam1 * np.abs(v) + lam2 / 2 * v ** 2 + rho / 2 * (v - b) ** 2 + lam0 * (v != 0)
        best = obj.min(axis=1)
        g = got.astype(np.float64)
        got_obj = lam1 * np.abs(g) + lam2 / 2 * g ** 2 + rho / 2 * (g - b[:, 0]) ** 2 + lam0 * (g != 0)
        assert np.allclose(got_obj, best, atol=1e-6)
        if lam0:  # the L0 term zeroes weights that the plain u-step keeps
            assert (got == 0).sum() > (u_step(w, alpha, values, rho, lam1, lam2) == 0).sum()
    assert nearest_in_set(np.array([0.1, -7.0, 100.0]), value_set(1.0, 0.5, 4.0, 2)).tolist() == [0.0, -4.5, 4.5]


def test_u_step_feature_l0_equals_brute_force():
    """With lambda0_feature, the u-step is the argmin over whole rows (every
    combination of S for 3 labels) with the L0 terms per weight and per row."""
    import itertools

    rng = np.random.default_rng(5)
    values = value_set(0.3, 0.15, 2.0, 2)
    combos = np.array(list(itertools.product(values.astype(np.float64), repeat=3)))  # (125, 3)
    cases = [(0.0, 0.0, 1.0, 0.0, 0.5), (0.0, 0.0, 1.0, 0.2, 1.0), (0.1, 0.5, 2.0, 0.1, 2.0)]
    for lam1, lam2, rho, lam0, lam_f in cases:
        w = rng.normal(scale=1.0, size=(500, 3)).astype(np.float32)
        alpha = rng.normal(scale=0.3, size=(500, 3)).astype(np.float32)
        got = u_step(w, alpha, values, rho, lam1, lam2, lam0, lam_f).astype(np.float64)

        def objective(u, b):
            return (lam1 * np.abs(u) + lam2 / 2 * u ** 2 + rho / 2 * (u - b) ** 2 + lam0 * (u != 0)).sum(-1) \
                + lam_f * np.any(u != 0, axis=-1)

        b = w.astype(np.float64) + alpha
        best = objective(combos[None, :, :], b[:, None, :]).min(axis=1)
        assert np.allclose(objective(got, b), best, atol=1e-6)
        assert np.any(np.all(got == 0, axis=1) & np.any(u_step(w, alpha, values, rho, lam1, lam2, lam0) != 0, axis=1))


def test_u_step_by_slices_equals_one_pass(monkeypatch):
    """The u-step and the residuals run a slice of rows at a time (memory);
    the slicing must not change any weight, including the per-row L0 test."""
    import spacy_sparse.learn.admm as admm

    rng = np.random.default_rng(7)
    w = rng.normal(scale=1.5, size=(1000, 9)).astype(np.float32)
    alpha = rng.normal(scale=0.3, size=(1000, 9)).astype(np.float32)
    values = value_set(0.3, 0.15, 2.0, 4)
    whole = u_step(w, alpha, values, 1.0, 0.1, 0.0, 0.5, 2.0)
    mean = admm._mean_squared_difference(w, whole)
    monkeypatch.setattr(admm, "CHUNK_ROWS", 7)
    assert np.array_equal(u_step(w, alpha, values, 1.0, 0.1, 0.0, 0.5, 2.0), whole)
    assert np.isclose(admm._mean_squared_difference(w, whole), mean, rtol=1e-6)
    assert np.isclose(mean, np.mean((w.astype(np.float64) - whole) ** 2), rtol=1e-5)


def test_auto_eta_does_not_depend_on_row_order():
    from spacy_sparse.learn.admm import auto_eta

    w = np.random.default_rng(3).standard_normal((5000, 40)).astype(np.float32)
    w[np.abs(w) < 0.5] = 0.0
    shuffled = w[np.random.default_rng(4).permutation(w.shape[0])]
    assert auto_eta(w, 4.0, 4, sample=10_000) == auto_eta(shuffled, 4.0, 4, sample=10_000)


def test_cover_eta_clips_no_weight():
    """eta = "cover": the largest value of S is the largest |w| (with delta = eta / 2 or given), so rounding
    moves every weight by less than a step of S; auto_eta's least squares may clip the tail."""
    from spacy_sparse.learn.admm import cover_eta

    w = np.random.default_rng(5).normal(scale=1.5, size=(4000, 30)).astype(np.float32)
    for delta in (None, 0.01):
        values = AdmmSettings(zeta=32, kappa=1.17, eta="cover", delta=delta).values(w)
        assert np.isclose(values[-1], np.abs(w).max(), rtol=1e-5) and np.isclose(values[0], -values[-1])
        u = u_step(w, np.zeros_like(w), values)
        big = np.abs(w) > 0.5
        assert np.all(np.abs(u[big] - w[big]) <= 0.09 * np.abs(w[big]))
    auto = AdmmSettings(zeta=4, kappa=2.0).values(w)
    assert auto[-1] < np.abs(w).max()  # (what cover is for: least squares clips the tail)
    assert cover_eta(np.zeros((3, 3), np.float32), 2.0, 4) == 1.0
    with pytest.raises(ValueError, match="cover"):
        AdmmSettings(eta="widest")


def test_dc_admm_weights_lie_in_the_set(ewt_refs):
    nlp, tagger = train_tagger(ewt_refs["train"][:150], epochs=1)
    model = tagger.sparse
    train = to_examples(nlp, ewt_refs["train"][:150])
    admm = DcAdmm(AdmmSettings(zeta=2))
    admm.begin(model)
    for _ in range(3):
        for i in range(0, len(train), 16):
            nlp.update(train[i:i + 16])
        report = admm.iterate(model)
    assert report["admm_iter"] == 3
    weights = model.averaged()
    nz = np.unique(weights[weights != 0])
    assert 0 < nz.size <= 4
    assert np.all(np.isin(nz, admm.values))
    examples = to_examples(nlp, ewt_refs["dev"][:40])
    list(tagger.pipe([eg.predicted for eg in examples]))
    assert tagger.score(examples)["tag_acc"] > 0.7


def test_closed_dc_admm_compresses_a_loaded_model_without_new_features(ewt_refs):
    """dc_admm.closed: a trained model (reloaded: only its saved features) is compressed by the callback in
    spaCy's loop without growing a feature, and keeps most of its accuracy."""
    from spacy_sparse.callbacks import make_sparsity_callback
    from conftest import run_epochs

    nlp, tagger = train_tagger(ewt_refs["train"][:150], epochs=2)
    reloaded = spacy.blank("en")
    reloaded.add_pipe("sparse_tagger").from_bytes(tagger.to_bytes())
    tagger = reloaded.get_pipe("sparse_tagger")
    n_before = int(tagger.sparse.n_rows[0])
    dev = to_examples(reloaded, ewt_refs["dev"][:40])
    before = reloaded.evaluate(dev)["tag_acc"]
    callback = make_sparsity_callback(dc_admm={"zeta": 4, "kappa": 2.0, "max_iterations": 2, "closed": True})
    run_epochs(reloaded, callback, to_examples(reloaded, ewt_refs["train"][150:300]), 3)
    assert tagger.sparse.closed and int(tagger.sparse.n_rows[0]) == n_before
    weights = tagger.sparse.averaged()
    assert np.unique(weights[weights != 0]).size <= 8
    assert reloaded.evaluate(dev)["tag_acc"] > before - 0.03
    with pytest.raises(ValueError, match="closed"):
        make_sparsity_callback(dc_admm={"closed": "yes"})


# ---- grouped-weight files ---------------------------------------------------------------


@pytest.mark.full
def test_quantize_cli_makes_a_grouped_model(corpus, tmp_path):
    run("spacy", "train", "configs/tagger.cfg", "--output", str(tmp_path / "t"), "--paths.train",
        str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"), "--training.max_epochs", "2")
    out = run("spacy_sparse", "quantize", str(tmp_path / "t" / "model-last"), str(tmp_path / "q"), "--zeta", "2")
    assert "quantized to 4 values" in out
    model = spacy.load(tmp_path / "q").get_pipe("sparse_tagger").sparse
    assert model.to_dict()["weights"] == "grouped" and model.stats()["distinct_weights"] == 4
    report = run("spacy_sparse", "report", str(tmp_path / "q"))
    assert "bytes per part" in report and "codebook" in report
    # a fine set that covers the largest weight keeps the float tagger's dev tags
    out = run("spacy_sparse", "quantize", str(tmp_path / "t" / "model-last"), str(tmp_path / "fine"), "--zeta", "32",
              "--kappa", "1.17", "--eta", "cover")
    assert int(re.search(r"quantized to (\d+) values", out).group(1)) <= 64
    scores = []
    for path in (tmp_path / "t" / "model-last", tmp_path / "fine"):
        nlp = spacy.load(path)
        dev = list(DocBin().from_disk(corpus / "dev.spacy").get_docs(nlp.vocab))
        scores.append(nlp.evaluate([Example(nlp.make_doc(d.text), d) for d in dev])["tag_acc"])
    assert scores[0] > 0.8 and abs(scores[0] - scores[1]) < 0.003, scores
