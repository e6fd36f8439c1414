"""Min-update pruning (Goldberg & Elhadad): a feature counts only after k updates."""
import numpy as np
import pytest
import spacy

from conftest import to_examples, train_tagger


@pytest.fixture(scope="module")
def taggers(ewt_refs):
    refs = ewt_refs["train"][:150]
    return {k: train_tagger(refs, epochs=2, min_updates=k) for k in (1, 4)}


def test_rare_features_get_no_row_and_are_not_saved(taggers, tmp_path):
    nlp, tagger = taggers[4]
    model = tagger.sparse
    n = int(model.n_rows[0])
    waiting = int(model.pending.sum())
    # most features never take part in 4 updates: they cost a table slot holding their count, not a row
    assert waiting > n
    assert int(model.tab_count.sum()) == n + waiting
    assert model.updates[:n].min() >= 4
    assert model.keys_of_rows().shape == (n,) and np.all(model.keys_of_rows() != 0)
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m").get_pipe("sparse_tagger")
    assert loaded.sparse.stats()["nonzero_features"] == model.stats()["nonzero_features"]


def test_a_feature_gets_its_row_at_its_kth_update():
    from spacy_sparse.kernels.layout import new_table
    from spacy_sparse.kernels.learner import take_update
    from spacy_sparse.kernels.scoring import find_entry, find_row
    tab, tab_off = new_table(8), np.array([0, 8], dtype=np.int64)
    tab_count, n_rows, pending = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(4, np.int64)
    row_tpl, updates = np.zeros(4, np.int32), np.zeros(4, np.int32)
    key = np.uint64(12345)
    for c in (1, 2):
        assert take_update(tab, tab_off, tab_count, row_tpl, n_rows, pending, updates, 0, key, 3) == -1
        assert find_entry(tab, tab_off, 0, key) == -1 - c and find_row(tab, tab_off, 0, key) == -1
        assert pending.tolist() == [0, 1, 0, 0] if c == 1 else [0, 0, 1, 0]
    assert take_update(tab, tab_off, tab_count, row_tpl, n_rows, pending, updates, 0, key, 3) == 0
    assert find_row(tab, tab_off, 0, key) == 0 and updates[0] == 2 and pending.sum() == 0
    assert n_rows[0] == 1 and tab_count[0] == 1


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
