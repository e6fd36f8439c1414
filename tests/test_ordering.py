"""Template orders: GOMP's first pick and the group-lasso path through the CLI."""
import numpy as np
import pytest
import spacy
from conftest import run, to_examples
from spacy.tokens import DocBin


@pytest.mark.full
def test_gomp_first_pick_maximizes_eq4(ewt_refs):
    """With no template chosen the residual is Y - 1/L; the first template
    GOMP adds must maximize Eq. 4, computed here from explicit one-hot
    matrices."""
    from spacy_sparse.learn.ordering import ProbeSettings, _probe, gomp_order

    nlp = spacy.blank("en")
    train = to_examples(nlp, ewt_refs["train"][:40])
    templates = ["lower@0", "suf3@0", "shape@0", "is_title@0", "lower@-1+lower@0", "pre1@0"]
    settings = ProbeSettings(train_words=0, log=lambda s: None)
    order = gomp_order(train, templates, settings, alpha=0.4)
    assert sorted(order) == sorted(templates)
    _, probe, _, _, _ = _probe(train, templates, settings)
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
    # the one-word templates first (a margin reads them as sums before the others), each group in the learned order
    def one_word(name):
        atoms = name.split("+")
        return (not any(a.startswith(("tag@", "hist@", "ptag@", "space@")) for a in atoms)
                and len({a.split("@")[1] for a in atoms}) == 1)

    assert tagger.sparse.template_names == [t for t in order if one_word(t)] + [t for t in order if not one_word(t)]
