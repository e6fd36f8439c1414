"""Word clusters (clusters.py): the shipped table, Liang's format, the clu*
atoms, and taggers that read them, trained on EWT slices."""
import pytest
import spacy

from spacy_sparse import clusters
from spacy_sparse.model import SparseLinearModel
from spacy_sparse.templates import TAGGER_CLUSTER_TEMPLATES, TAGGER_TEMPLATES

from conftest import to_examples


@pytest.fixture(scope="module")
def shipped():
    return clusters.resolve("en_brown_1000")


def test_shipped_table_groups_words_used_alike(shipped):
    assert len(shipped) > 100_000
    day, other_day, noun = (clusters.atoms(shipped, w) for w in ("Tuesday", "Wednesday", "committee"))
    assert day["clu"] and day["clu4"] == other_day["clu4"] and day["clu6"] == other_day["clu6"]
    assert day["clu"] != noun["clu"]
    # case variants fall back to the lowercase and title-case forms the table holds
    assert clusters.atoms(shipped, "TUESDAY") == day
    assert clusters.atoms(shipped, "cOMMITTEE") == noun
    assert clusters.atoms(shipped, "qzxvjkwq") == {name: 0 for name, _ in clusters.PREFIXES}


def test_liang_paths_file(tmp_path):
    path = tmp_path / "paths"
    path.write_text("00100\tapple\t12\n00100\tApple\t3\n00101\tpear\t9\n110\tran\t40\n", encoding="utf8")
    table = clusters.resolve(str(path))
    assert len(table) == 3  # "Apple" is left out: its lowercase has the same path
    apple, pear, ran = (clusters.atoms(table, w) for w in ("Apple", "pear", "ran"))
    assert apple["clu"] != pear["clu"] and apple["clu4"] == pear["clu4"] and apple["clu4"] != ran["clu4"]
    out = tmp_path / "table.msgpack"
    out.write_bytes(clusters.write_table(table))
    assert clusters.resolve(str(out)) == table
    path.write_text("0010\tapple\n01x1\tpear\n", encoding="utf8")
    with pytest.raises(ValueError, match="line 2"):
        clusters.resolve(str(path))
    with pytest.raises(ValueError, match="not one of"):
        clusters.resolve(str(tmp_path / "missing"))


def test_corrupt_table_is_a_value_error(shipped):
    data = bytearray(clusters.write_table(clusters.ClusterTable(shipped.keys[:1000], shipped.paths[:1000])))
    data[len(data) // 2] ^= 0x40
    with pytest.raises(ValueError):
        clusters.read_table(bytes(data))
    msg = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011, 9: 0b11}))
    msg["cluster_paths"] = clusters.encode(clusters.ClusterTable.from_dict({5: 1, 9: 1}))["cluster_paths"]  # no leading 1
    with pytest.raises(ValueError, match="out of range"):
        clusters.decode(msg)
    msg = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011, 9: 0b11}))
    msg["cluster_paths"] = clusters.encode(clusters.ClusterTable.from_dict({5: 0b10}))["cluster_paths"]
    with pytest.raises(ValueError, match="damaged"):  # one path for two keys
        clusters.decode(msg)


def _tagger(refs, templates, cluster_source):
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"templates": list(templates)})
    train = to_examples(nlp, refs["train"][:150])
    if cluster_source:
        nlp.config["initialize"]["components"]["sparse_tagger"] = {"clusters": cluster_source}
    nlp.initialize(lambda: train)
    for _ in range(3):
        nlp.update(train)
    return nlp


def test_tagger_reads_clusters_and_saves_them(ewt_refs):
    templates = list(TAGGER_TEMPLATES[:12]) + list(TAGGER_CLUSTER_TEMPLATES)
    with pytest.raises(ValueError, match="reading word clusters"):
        _tagger(ewt_refs, templates, None)
    nlp = _tagger(ewt_refs, templates, "en_brown_1000")
    tagger = nlp.get_pipe("sparse_tagger")
    dev = to_examples(nlp, ewt_refs["dev"])
    scores = nlp.evaluate(dev)
    assert scores["tag_acc"] > 0.85
    tags = [[t.tag_ for t in doc] for doc in nlp.pipe(eg.predicted.copy() for eg in dev)]

    # the table travels in the model file, and the loaded pipe tags the same
    data = nlp.to_bytes()
    again = spacy.blank("en").from_config(nlp.config)
    again.from_bytes(data)
    assert len(again.get_pipe("sparse_tagger").sparse.lex_clusters) == len(tagger.sparse.lex_clusters) > 100_000
    assert [[t.tag_ for t in doc] for doc in again.pipe(eg.predicted.copy() for eg in dev)] == tags

    # the clu* atoms are read: without the table the tags change
    tagger.lexicon.set_clusters(clusters.ClusterTable())
    assert [[t.tag_ for t in doc] for doc in nlp.pipe(eg.predicted.copy() for eg in dev)] != tags


def test_model_without_clusters_stores_no_table(ewt_refs):
    from spacy_sparse import codec

    nlp = _tagger(ewt_refs, TAGGER_TEMPLATES[:12], None)
    model = nlp.get_pipe("sparse_tagger").sparse
    assert len(model.lex_clusters) == 0
    assert not {"cluster_keys", "cluster_paths"} & set(codec.encode(model))
    assert len(SparseLinearModel.from_bytes(model.to_bytes()).lex_clusters) == 0


def test_template_orders_take_clusters(ewt_refs):
    from spacy_sparse.learn.ordering import group_lasso_order

    nlp = spacy.blank("en")
    train = to_examples(nlp, ewt_refs["train"][:80])
    templates = list(TAGGER_TEMPLATES[:6]) + list(TAGGER_CLUSTER_TEMPLATES[:2])
    with pytest.raises(ValueError, match="reading word clusters"):
        group_lasso_order(train, templates, train_words=1500, epochs=1, log=lambda m: None)
    order = group_lasso_order(train, templates, train_words=1500, epochs=1, clusters="en_brown_1000",
                              log=lambda m: None)
    assert sorted(order) == sorted(templates)
