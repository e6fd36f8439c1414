"""The sparsity callbacks through `spacy train` and spaCy's loop: every config runs, bad settings fail."""
import pytest
import spacy
from conftest import ROOT, run, spacy_train


def assert_finished(model_dir, name="sparse_tagger", budget=None, zeta=None, k=None):
    """A checkpoint of a sparsity recipe keeps the recipe's promises: at most `budget` templates, at most 2 * zeta
    distinct nonzero weights, the min-update threshold k, and it was taken in the last phase."""
    import json

    nlp = spacy.load(model_dir)
    pipe = nlp.get_pipe(name)
    stats = pipe.sparse.stats()
    if budget is not None:
        assert len(pipe.sparse.templates) <= budget, model_dir
    if zeta is not None:
        assert 0 < stats["distinct_weights"] <= 2 * zeta, model_dir
        assert pipe.sparse.to_dict()["weights"] == "grouped"
    if k is not None:
        assert pipe.cfg["min_updates"] == k, model_dir
    meta = json.loads((model_dir / "meta.json").read_text())
    assert meta["performance"]["sparse_compressed"] == 1.0, model_dir
    return stats


@pytest.mark.full
def test_composed_tagger_config_runs_every_method(corpus, tmp_path):
    log = spacy_train(ROOT / "configs/tagger_composed.cfg", corpus / "train.spacy", corpus / "dev.spacy",
                       tmp_path, "--training.max_epochs", "6", "--training.before_update.sparseptron.every", "100",
                       "--training.before_update.sparseptron.epochs", "1",
                       "--training.before_update.dc_admm.start_epoch", "2", "--training.eval_frequency", "5",
                       # strong L0 terms: the finished model scores below the float checkpoints before it
                       "--training.before_update.dc_admm.lambda0_feature", "20",
                       "--training.before_update.dc_admm.max_iterations", "1")
    methods = spacy.util.load_config(ROOT / "configs/tagger_composed.cfg")["training"]["before_update"]
    k, budget = methods["min_update"]["k"], methods["sparseptron"]["budget"]
    assert "refit (debias) on" in log and f"min-update k = {k}" in log and "ADMM iteration 1" in log
    assert "ADMM iteration 2" not in log  # max_iterations = 1: the epochs after it keep the finished model
    # model-best is a finished checkpoint too, though earlier ones scored on accuracy alone (every 5 steps)
    for out in ("model-best", "model-last"):
        assert_finished(tmp_path / out, budget=budget, zeta=methods["dc_admm"]["zeta"], k=k)
    nlp = spacy.load(tmp_path / "model-last")
    model = nlp.get_pipe("sparse_tagger").sparse
    stats = model.stats()
    assert len(model.templates) <= budget < 48 and 0 < stats["distinct_weights"] <= 8
    assert model.to_dict()["weights"] == "grouped"
    doc = nlp("The results were published yesterday .")
    assert all(t.tag_ for t in doc)


@pytest.mark.full
def test_dc_admm_configs_run_and_l0_terms_drop_features(corpus, tmp_path):
    """configs/tagger_dc_admm.cfg (the paper's settings) and configs/tagger_small.cfg (what the package ships:
    kappa 2 and the L0 terms), trained alike: both end with at most 8 values, and the L0 terms keep fewer
    features and weights."""
    stats = {}
    for name in ("tagger_dc_admm.cfg", "tagger_small.cfg"):
        log = spacy_train(ROOT / "configs" / name, corpus / "train.spacy", corpus / "dev.spacy", tmp_path / name,
                           "--training.max_epochs", "4", "--training.before_update.dc_admm.start_epoch", "1",
                           "--training.eval_frequency", "5", "--training.before_update.dc_admm.max_iterations", "2")
        assert "ADMM iteration 2" in log
        assert_finished(tmp_path / name / "model-best", zeta=4)
        stats[name] = assert_finished(tmp_path / name / "model-last", zeta=4)
    plain, small = stats["tagger_dc_admm.cfg"], stats["tagger_small.cfg"]
    assert small["nonzero_features"] < 0.5 * plain["nonzero_features"]
    assert small["nonzero_weights"] < 0.5 * plain["nonzero_weights"]


@pytest.mark.full
@pytest.mark.parametrize("config", ["chunker.cfg", "chunker_sparseptron.cfg", "chunker_min_update.cfg"])
def test_chunker_configs_run(config, chunk_corpus, tmp_path):
    overrides = ["--training.max_epochs", "3", "--training.eval_frequency", "10"]
    if "sparseptron" in config:
        overrides += ["--training.before_update.sparseptron.every", "200",
                      "--training.before_update.sparseptron.epochs", "1",
                      "--training.before_update.sparseptron.budget", "12"]
    spacy_train(ROOT / "configs" / config, chunk_corpus / "train.spacy", chunk_corpus / "test.spacy", tmp_path,
                 *overrides)
    nlp = spacy.load(tmp_path / "model-last")
    model = nlp.get_pipe("chunker").sparse
    if config != "chunker.cfg":
        for out in ("model-best", "model-last"):
            assert_finished(tmp_path / out, "chunker", budget=12 if "sparseptron" in config else None,
                            k=5 if "min_update" in config else None)
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
            acc = json.loads(out.read_text())["rows"][0]["accuracy"]
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


@pytest.mark.full
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
    log = spacy_train(tmp_path / "config.cfg", corpus / "train.spacy", corpus / "dev.spacy", tmp_path / "out")
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
