"""The sparsity methods: prox operators, budget steps, DC-ADMM's value set and
u-step, grouped-weight files, and the training callbacks on real data."""
import numpy as np
import pytest
import spacy
from spacy.tokens import DocBin

from conftest import ROOT, SHARED, run, to_examples, train_tagger
from spacy_sparse.learn.admm import AdmmSettings, DcAdmm, nearest_in_set, quantize, u_step, value_set
from spacy_sparse.learn.sparseptron import (
    SparseptronSettings,
    budget_gravity,
    group_lasso_prox,
    group_prox_factor,
    group_weights,
    kept_keys,
    prox_step,
    soft_threshold,
    start_selection,
    survivors,
    template_norms,
)
from spacy_sparse.kernels.hashing import fold_keys
from spacy_sparse.model import SparseLinearModel

CHUNKS = SHARED / "conll2000-chunking"


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
@pytest.fixture(scope="module")
def small_tagger(ewt_refs):
    return train_tagger(ewt_refs["train"][:120], epochs=1)


def test_budget_step_on_a_model_keeps_at_most_budget_templates(ewt_refs):
    nlp, tagger = train_tagger(ewt_refs["train"][:60], epochs=1)
    model = tagger.sparse
    start_selection(model)
    n = int(model.n_rows[0])
    before = template_norms(model)
    assert np.count_nonzero(before) > 8
    # the scaled step must equal Eq. 14 applied to the flat weights
    w = model.W[:n] * model.scale[model.row_tpl[:n]][:, None]
    d = group_weights(model.tab_count, "log2")
    tau = budget_gravity(before, d, 8)
    expect = group_lasso_prox(w.reshape(-1), np.repeat(model.row_tpl[:n], w.shape[1]), tau * d).reshape(w.shape)
    keys = model.keys_of_rows()
    report = prox_step(model, SparseptronSettings(budget=8))
    assert report["templates_alive"] == 8 == len(survivors(model))
    after = model.W[: int(model.n_rows[0])] * model.scale[model.row_tpl[: int(model.n_rows[0])]][:, None]
    kept = np.isin(keys, model.keys_of_rows())
    assert np.allclose(after, expect[kept], atol=1e-5)
    assert np.all(expect[~kept] == 0)  # only zeroed groups' features were freed
    assert int(model.n_rows[0]) < n


def _run_epochs(nlp, callback, train, epochs, after_epoch=None):
    """spaCy's loop in small: the callback before every update, `epoch` as spaCy counts it."""
    for epoch in range(epochs):
        for i in range(0, len(train), 16):
            callback(nlp, {"epoch": epoch, "step": i})
            nlp.update(train[i:i + 16])
        if after_epoch is not None:
            after_epoch(epoch)


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
                            zip(seen["templates"], kept_keys(tagger.sparse, seen["templates"]))}

    _run_epochs(nlp, callback, train, 3, check)
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


# ---- grouped-weight files ---------------------------------------------------------------
def test_grouped_file_round_trips_to_identical_predictions(small_tagger, ewt_refs, tmp_path):
    nlp, tagger = small_tagger
    float_parts = tagger.sparse.part_bytes(grouped=False)
    quantize(tagger.sparse, AdmmSettings(zeta=4))
    msg = tagger.sparse.to_dict()
    assert msg["weights"] == "grouped" and msg["codebook"].size <= 8
    assert "feature_row" in msg  # rows shared by several features are stored once
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:40])]
    before = tagger.predict(docs)[0]
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m")
    after = loaded.get_pipe("sparse_tagger").predict([d.copy() for d in docs])[0]
    assert np.array_equal(before, after)
    stats = loaded.get_pipe("sparse_tagger").sparse.stats()
    assert stats["distinct_weights"] <= 8
    # the weights themselves (not the feature keys) take under half the bytes
    parts = loaded.get_pipe("sparse_tagger").sparse.part_bytes()
    weights = sum(n for k, n in parts.items() if k.startswith(("row_", "feature_row", "codebook")))
    float_weights = sum(n for k, n in float_parts.items() if k.startswith("row_"))
    assert weights < float_weights / 2
    assert stats["bytes"] < sum(float_parts.values())


def _older(msg, version):
    """A version 1-3 float file with the content of a version 4 one: keys
    and ambiguity classes whole, not as zipped steps."""
    from spacy_sparse.codec import _index_from_steps, _unzipped

    keys = _index_from_steps(_unzipped(msg["feature_key"], "k").astype(np.int64), msg["template_features"])
    old = dict(msg, version=version, feature_key=keys.astype(np.uint32 if version == 3 else np.uint64),
               class_keys=np.cumsum(_unzipped(msg["class_keys"], "c"), dtype=np.uint64),
               class_values=_unzipped(msg["class_values"], "v"))
    if version == 1:
        del old["weights"]
    return old


def test_float_files_and_older_versions_still_load(ewt_refs):
    import srsly

    _, tagger = train_tagger(ewt_refs["train"][:40], epochs=1)
    msg = tagger.sparse.to_dict(grouped=False)
    assert msg["weights"] == "float" and msg["version"] == 4
    # files before version 3 hold 64-bit keys; with zero high bits they fold to themselves
    for version in (1, 2, 3):
        again = SparseLinearModel.from_bytes(srsly.msgpack_dumps(_older(msg, version)))
        assert again.to_bytes() == tagger.sparse.to_bytes()
        assert again.lex_classes == tagger.sparse.lex_classes


def test_version_3_grouped_files_still_load():
    import srsly

    from spacy_sparse.codec import _zipped

    # three features of one template; version 3 packed label * n_codes + code,
    # shared rows, and the row index as steps in (row, key) order
    codebook = np.array([-0.5, 0.5], dtype=np.float32)
    v3 = {"format": "spacy-sparse-linear", "version": 3, "templates": ["lower@0"], "labels": ["A", "B", "C"],
          "template_features": np.array([3]), "feature_key": np.array([7, 99, 12], dtype=np.uint32),
          "class_keys": np.zeros(0, np.uint64), "class_values": np.zeros(0, np.uint64),
          "weights": "grouped", "codebook": codebook,
          "row_length": {**_zipped(np.array([1, 2], np.uint8), planes=False)},
          "row_entry": {**_zipped(np.array([1 * 2 + 1, 0 * 2 + 0, 2 * 2 + 1], np.uint8), planes=False)},
          "feature_row": {**_zipped(np.array([0, 0, 1], np.uint8), planes=False)}}
    for field in ("row_length", "row_entry", "feature_row"):
        del v3[field]["planes"]  # version 3 had no such flag
    def weights_by_key(model):
        ptr, lab, val = model.compact()
        return {int(k): list(zip(lab[ptr[r]:ptr[r + 1]].tolist(), val[ptr[r]:ptr[r + 1]].tolist()))
                for r, k in enumerate(model.keys_of_rows())}

    model = SparseLinearModel.from_bytes(srsly.msgpack_dumps(v3))
    assert weights_by_key(model) == {7: [(1, 0.5)], 99: [(1, 0.5)], 12: [(0, -0.5), (2, 0.5)]}
    back = SparseLinearModel.from_bytes(model.to_bytes())
    assert back.to_dict()["version"] == 4 and weights_by_key(back) == weights_by_key(model)


def test_rows_are_merged_exactly_even_when_hashes_collide(monkeypatch):
    from spacy_sparse import model as model_mod

    row_len = np.array([2, 1, 2, 2, 1])
    entries = np.array([3, 5, 7, 3, 5, 1, 2, 7])
    first, index = model_mod._same_rows(row_len, entries)
    assert np.array_equal(index[[0, 2]], [index[0]] * 2) and np.array_equal(index[[1, 4]], [index[1]] * 2)
    assert len(set(index.tolist())) == 3
    # if every row hashed alike, the full comparison must refuse to merge
    monkeypatch.setattr(model_mod, "_row_hashes", lambda lens, _: np.zeros(lens.size, dtype=np.uint64))
    assert model_mod._same_rows(row_len, entries) is None


def test_version_2_keys_that_fold_together_keep_the_first(ewt_refs):
    import srsly

    _, tagger = train_tagger(ewt_refs["train"][:40], epochs=1)
    msg = _older(tagger.sparse.to_dict(grouped=False), 2)
    keys = msg["feature_key"].copy()
    assert msg["template_features"][0] >= 2
    # a 64-bit key whose fold equals the first key of template 0
    high = np.uint64(0xABCDEF)
    keys[1] = (high << np.uint64(32)) | (keys[0] ^ high)
    assert fold_keys(keys[:2])[1] == keys[0]
    loaded = SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, feature_key=keys)))
    back = _older(loaded.to_dict(grouped=False), 2)
    assert back["feature_key"].size == keys.size - 1
    assert back["template_features"][0] == msg["template_features"][0] - 1
    n0 = int(msg["row_length"][0])
    assert np.array_equal(back["row_value"][:n0], msg["row_value"][:n0])  # the first one's weights


def test_corrupt_grouped_file_fails_clearly(small_tagger):
    import srsly

    from spacy_sparse.codec import _unzipped, _zipped

    _, tagger = small_tagger
    quantize(tagger.sparse, AdmmSettings(zeta=4))  # (again, if the round-trip test ran first)
    msg = tagger.sparse.to_dict(grouped=True)
    entries = _unzipped(msg["row_entry"], "row_entry")
    bad = dict(msg, row_entry=_zipped((entries.astype(np.int64) + 10 ** 6).astype(np.uint32)))
    with pytest.raises(ValueError, match="Corrupt model"):
        SparseLinearModel.from_bytes(srsly.msgpack_dumps(bad))
    zipped = msg["row_entry"]
    for field in (dict(zipped, zlib=zipped["zlib"][:-5]),          # truncated
                  dict(zipped, zlib=b"not zlib at all"),
                  dict(zipped, size=zipped["size"] + 1),            # inflates short
                  dict(zipped, size=10 ** 12),                      # a bomb's claim
                  dict(zipped, dtype="<f8")):
        with pytest.raises(ValueError, match="Corrupt model"):
            SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, row_entry=field)))
    n_keys = _unzipped(msg["feature_key"], "feature_key").size
    codes = entries.astype(np.int64) % msg["codebook"].size  # every label step 0: a label named twice
    for field, arr in (("feature_key", np.full(n_keys, 2 ** 31, np.uint32)),  # keys climb past 32 bits
                       ("row_entry", codes.astype(entries.dtype))):
        with pytest.raises(ValueError, match="Corrupt model"):
            SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, **{field: _zipped(arr)})))
    with pytest.raises(ValueError, match="Corrupt model"):
        SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, row_entry=dict(zipped, planes="yes"))))
    bad = dict(msg, weights="zip")
    with pytest.raises(ValueError, match="weight layout"):
        SparseLinearModel.from_bytes(srsly.msgpack_dumps(bad))


# ---- callbacks through spacy train -----------------------------------------------------------
def _spacy_train(config, train, dev, out, *overrides):
    return run("spacy", "train", str(config), "--output", str(out), "--paths.train", str(train),
               "--paths.dev", str(dev), *overrides)


@pytest.fixture(scope="module")
def chunk_corpus(tmp_path_factory):
    from itertools import islice

    from spacy_sparse.readers import chunk_docs

    out = tmp_path_factory.mktemp("chunk")
    vocab = spacy.blank("en").vocab
    DocBin(docs=list(islice(chunk_docs(vocab, CHUNKS / "train.txt"), 600))).to_disk(out / "train.spacy")
    DocBin(docs=list(islice(chunk_docs(vocab, CHUNKS / "test.txt"), 150))).to_disk(out / "test.spacy")
    return out


def test_composed_tagger_config_runs_every_method(corpus, tmp_path):
    log = _spacy_train(ROOT / "configs/tagger_composed.cfg", corpus / "train.spacy", corpus / "dev.spacy",
                       tmp_path, "--training.max_epochs", "6", "--training.before_update.sparseptron.every", "100",
                       "--training.before_update.sparseptron.epochs", "1",
                       "--training.before_update.dc_admm.start_epoch", "2")
    methods = spacy.util.load_config(ROOT / "configs/tagger_composed.cfg")["training"]["before_update"]
    k, budget = methods["min_update"]["k"], methods["sparseptron"]["budget"]
    assert "refit (debias) on" in log and f"min-update k = {k}" in log and "ADMM iteration" in log
    nlp = spacy.load(tmp_path / "model-last")
    model = nlp.get_pipe("sparse_tagger").sparse
    stats = model.stats()
    assert len(model.templates) <= budget < 48 and 0 < stats["distinct_weights"] <= 8
    assert model.to_dict()["weights"] == "grouped"
    doc = nlp("The results were published yesterday .")
    assert all(t.tag_ for t in doc)


def test_dc_admm_configs_run_and_l0_terms_drop_features(corpus, tmp_path):
    """configs/tagger_dc_admm.cfg (the paper's settings) and configs/tagger_small.cfg (what the package ships:
    kappa 2 and the L0 terms), trained alike: both end with at most 8 values, and the L0 terms keep fewer
    features and weights."""
    stats = {}
    for name in ("tagger_dc_admm.cfg", "tagger_small.cfg"):
        log = _spacy_train(ROOT / "configs" / name, corpus / "train.spacy", corpus / "dev.spacy", tmp_path / name,
                           "--training.max_epochs", "4", "--training.before_update.dc_admm.start_epoch", "1")
        assert "ADMM iteration 2" in log
        stats[name] = spacy.load(tmp_path / name / "model-last").get_pipe("sparse_tagger").sparse.stats()
        assert 0 < stats[name]["distinct_weights"] <= 8
    plain, small = stats["tagger_dc_admm.cfg"], stats["tagger_small.cfg"]
    assert small["nonzero_features"] < 0.5 * plain["nonzero_features"]
    assert small["nonzero_weights"] < 0.5 * plain["nonzero_weights"]


@pytest.mark.parametrize("config", ["chunker.cfg", "chunker_sparseptron.cfg", "chunker_min_update.cfg"])
def test_chunker_configs_run(config, chunk_corpus, tmp_path):
    overrides = ["--training.max_epochs", "3"]
    if "sparseptron" in config:
        overrides += ["--training.before_update.sparseptron.every", "200",
                      "--training.before_update.sparseptron.epochs", "1",
                      "--training.before_update.sparseptron.budget", "12"]
    _spacy_train(ROOT / "configs" / config, chunk_corpus / "train.spacy", chunk_corpus / "test.spacy", tmp_path,
                 *overrides)
    nlp = spacy.load(tmp_path / "model-last")
    model = nlp.get_pipe("chunker").sparse
    if "sparseptron" in config:
        assert len(model.templates) <= 12
    if "min_update" in config:
        assert nlp.get_pipe("chunker").cfg["min_updates"] == 5
    from spacy_sparse.readers import gold_token_examples

    examples = list(gold_token_examples(nlp, chunk_corpus / "test.spacy", tags=True))
    f1 = nlp.evaluate(examples)["ents_f"]
    assert f1 > 0.6
    if config == "chunker.cfg":  # the bench reads the same F1 when given the tags, and far less without
        import json

        out = tmp_path / "bench.json"
        for flag in ("--gold-tags", None):
            run("spacy_sparse", "bench", str(tmp_path / "model-last"), str(chunk_corpus / "test.spacy"),
                "--margins", "none", "--repeat", "1", "--json", str(out), *([flag] if flag else []))
            acc = json.loads(out.read_text())[0]["accuracy"]
            assert abs(acc - f1) < 1e-9 if flag else acc < f1 - 0.2


def test_bad_callback_settings_fail_clearly():
    from spacy_sparse.callbacks import make_sparsity_callback

    with pytest.raises(ValueError, match="Unknown sparseptron settings"):
        make_sparsity_callback(sparseptron={"budgett": 3})
    with pytest.raises(ValueError, match="sparseptron.loss must be"):
        make_sparsity_callback(sparseptron={"loss": "hinge"})
    with pytest.raises(ValueError, match="sparseptron.refit must be"):
        make_sparsity_callback(sparseptron={"refit": "thawed"})
    with pytest.raises(ValueError, match="zeta"):
        make_sparsity_callback(dc_admm={"zeta": 0})
    with pytest.raises(ValueError, match="at least one"):
        make_sparsity_callback()
    with pytest.raises(ValueError, match="min_update"):
        make_sparsity_callback(min_update={"k": 3, "x": 1})


# ---- chunking ---------------------------------------------------------------------------
def test_chunk_reader_and_templates():
    from itertools import islice

    from spacy_sparse.readers import chunk_docs
    from spacy_sparse.templates import chunk_templates_v1

    docs = list(islice(chunk_docs(spacy.blank("en").vocab, CHUNKS / "train.txt"), 50))
    assert all(len(d) > 0 and all(t.tag_ for t in d) for d in docs)
    labels = {e.label_ for d in docs for e in d.ents}
    assert {"NP", "VP", "PP"} <= labels
    templates = chunk_templates_v1()
    assert len(templates) == len(set(templates)) > 60
    assert any(t.count("ptag@") == 5 for t in templates) and any(t.count("lower@") == 3 for t in templates)


# ---- template orders ---------------------------------------------------------------------
def test_gomp_first_pick_maximizes_eq4(ewt_refs):
    """With no template chosen the residual is Y - 1/L; the first template
    GOMP adds must maximize Eq. 4, computed here from explicit one-hot
    matrices."""
    from spacy_sparse.learn.ordering import _probe, gomp_order

    nlp = spacy.blank("en")
    train = to_examples(nlp, ewt_refs["train"][:40])
    templates = ["lower@0", "suf3@0", "shape@0", "is_title@0", "lower@-1+lower@0", "pre1@0"]
    order = gomp_order(train, templates, train_words=0, alpha=0.4, log=lambda s: None)
    assert sorted(order) == sorted(templates)
    _, probe, _, _, _ = _probe(train, templates, "sparse_tagger", None, "en")
    keys, gold = probe.gold_feature_keys(train)
    keys, gold = keys[gold >= 0], gold[gold >= 0]
    n_labels = probe.sparse.n_labels
    r = -np.full((len(gold), n_labels), 1.0 / n_labels)
    r[np.arange(len(gold)), gold] += 1.0
    gains = []
    for t in range(len(templates)):
        values, ids = np.unique(keys[:, t], return_inverse=True)
        x = np.zeros((len(gold), len(values)))
        x[np.arange(len(gold)), ids.reshape(-1)] = 1.0
        inv = np.linalg.inv(x.T @ x + len(values) ** 0.4 * np.eye(len(values)))
        gains.append(np.trace(r.T @ x @ inv @ x.T @ r))
    assert order[0] == templates[int(np.argmax(gains))]


def test_group_lasso_order_cli_writes_a_usable_order(corpus, tmp_path):
    import json

    out = tmp_path / "order.json"
    run("spacy_sparse", "order-templates", str(corpus / "train.spacy"), str(corpus / "dev.spacy"), str(out),
        "--method", "group-lasso", "--train-words", "5000")
    order = json.loads(out.read_text())
    default = spacy.util.registry.resolve({"t": {"@misc": "spacy_sparse.tagger_templates.v1"}})["t"]
    assert sorted(order) == sorted(default) and order != default
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("sparse_tagger")
    examples = to_examples(nlp, [d for d in DocBin().from_disk(corpus / "train.spacy").get_docs(nlp.vocab)][:20])
    tagger.initialize(lambda: examples, nlp=nlp, order=str(out))
    assert tagger.sparse.template_names == order


def test_sparsity_plot_writes_figures(tmp_path):
    import srsly

    from benchmarks.sparsity import plot_tables

    with pytest.raises(ValueError, match="No table JSON"):
        plot_tables(tmp_path)
    history = [{"epoch": e, "phase": "select", "features": 1000 * (e + 1), "training_bytes": 1} for e in range(3)]
    srsly.write_json(tmp_path / "martins.json", [{"model": "full", "features": 5000, "history": []},
                                                 {"model": "B = 2", "features": 900, "history": history}])
    srsly.write_json(tmp_path / "strubell.json", [{"model": "all 4", "accuracy": 90.0},
                                                  {"model": "GOMP 2", "accuracy": 85.0}])
    written = plot_tables(tmp_path)
    assert [p.name for p in written] == ["martins_memory.png", "strubell_orders.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


def test_callback_acts_on_tagger_and_parser_alike(corpus, tmp_path):
    """The methods are written against the shared model: a joint tagger +
    parser pipeline gets selection, min-update and DC-ADMM on both."""
    from spacy.util import load_config

    cfg = load_config(ROOT / "configs/tagger_parser.cfg")
    cfg["training"]["before_update"] = {
        "@callbacks": "spacy_sparse.sparsity.v1", "sparseptron": {"budget": 12, "every": 40, "epochs": 1},
        "min_update": {"k": 2}, "dc_admm": {"zeta": 2, "start_epoch": 1}}
    cfg["training"]["max_epochs"] = 4
    cfg.to_disk(tmp_path / "config.cfg")
    log = _spacy_train(tmp_path / "config.cfg", corpus / "train.spacy", corpus / "dev.spacy", tmp_path / "out")
    assert "sparse_parser: refit (debias) on" in log and "sparse_parser epoch 3: ADMM iteration 1" in log
    nlp = spacy.load(tmp_path / "out" / "model-last")
    for name in ("sparse_tagger", "sparse_parser"):
        model = nlp.get_pipe(name).sparse
        assert len(model.templates) <= 12 and 0 < model.stats()["distinct_weights"] <= 4
    doc = nlp("The committee approved the plan on Tuesday .")
    assert all(t.tag_ for t in doc) and sum(t.dep_ == "ROOT" for t in doc) >= 1


def test_callback_names_missing_components_clearly(small_tagger):
    from spacy_sparse.callbacks import make_sparsity_callback

    callback = make_sparsity_callback(min_update={"k": 2}, components=["chunker"])
    nlp, _ = small_tagger
    with pytest.raises(ValueError, match="no sparse component named"):
        callback(nlp, {"epoch": 0})
    with pytest.raises(ValueError, match="has no sparse component"):
        make_sparsity_callback(min_update={"k": 2})(spacy.blank("en"), {"epoch": 0})


def test_quantize_cli_makes_a_grouped_model(corpus, tmp_path):
    run("spacy", "train", "configs/tagger.cfg", "--output", str(tmp_path / "t"), "--paths.train",
        str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"), "--training.max_epochs", "2")
    out = run("spacy_sparse", "quantize", str(tmp_path / "t" / "model-last"), str(tmp_path / "q"), "--zeta", "2")
    assert "quantized to 4 values" in out
    model = spacy.load(tmp_path / "q").get_pipe("sparse_tagger").sparse
    assert model.to_dict()["weights"] == "grouped" and model.stats()["distinct_weights"] == 4
    report = run("spacy_sparse", "report", str(tmp_path / "q"))
    assert "bytes per part" in report and "codebook" in report


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
