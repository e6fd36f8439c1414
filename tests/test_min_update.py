"""Min-update pruning (Goldberg & Elhadad): a feature counts only after k updates."""
import numpy as np
import pytest
import spacy

from conftest import to_examples, train_tagger


@pytest.fixture(scope="module")
def taggers(ewt_refs):
    refs = ewt_refs["train"][:150]
    return {k: train_tagger(refs, epochs=2, min_updates=k) for k in (1, 4)}


def test_rare_features_do_not_score_and_are_not_saved(taggers, ewt_refs, tmp_path):
    nlp, tagger = taggers[4]
    model = tagger.sparse
    n = int(model.n_rows[0])
    rare = np.flatnonzero(model.updates[:n] < 4)
    assert len(rare) > 0
    ptr, _, _ = model.compact()
    assert np.all(np.diff(ptr)[rare] == 0)  # no weight of a rare feature reaches prediction or the file
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:20])]
    before = tagger.predict(docs)[0]
    model.W[rare] = 1e6  # whatever a rare feature's weights are, scores do not change
    model.changed()
    assert np.array_equal(tagger.predict(docs)[0], before)
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m").get_pipe("sparse_tagger")
    assert loaded.sparse.stats()["nonzero_features"] == model.stats()["nonzero_features"]


def test_min_update_keeps_fewer_features_at_similar_accuracy(taggers, ewt_refs):
    results = {}
    for k, (nlp, tagger) in taggers.items():
        examples = to_examples(nlp, ewt_refs["dev"][:60])
        list(tagger.pipe([eg.predicted for eg in examples]))
        results[k] = (tagger.score(examples)["tag_acc"], tagger.sparse.stats()["nonzero_features"])
    (acc1, feat1), (acc4, feat4) = results[1], results[4]
    assert feat4 < 0.6 * feat1
    assert acc4 > acc1 - 0.03


def test_bad_min_updates_fails_clearly():
    with pytest.raises(ValueError, match="min_updates"):
        spacy.blank("en").add_pipe("sparse_tagger", config={"min_updates": 0})
