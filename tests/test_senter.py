"""sparse_senter on real EWT slices: it learns boundaries from raw text,
keeps preset ones, and the components after it use its sentences."""
import pickle

import pytest
import spacy
from spacy.scorer import Scorer
from spacy.training import Example

from spacy_sparse.pipeline.senter import SparseSenter

from conftest import bare


def runtime_examples(nlp, refs):
    """Examples as users' text gives them: spaCy's tokens, no boundaries."""
    return [Example(nlp.make_doc(r.text), r) for r in refs]


@pytest.fixture(scope="module")
def senter_nlp(ewt_refs):
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_senter")
    train = runtime_examples(nlp, ewt_refs["train"])
    nlp.initialize(lambda: train)
    for _ in range(4):
        for i in range(0, len(train), 16):
            nlp.update(train[i:i + 16])
    return nlp


def test_senter_learns_boundaries_on_raw_dev_text(senter_nlp, ewt_refs):
    dev = runtime_examples(senter_nlp, ewt_refs["dev"])
    scores = senter_nlp.evaluate(dev)
    # 300 training docs; spaCy's rule sentencizer on the same docs is the floor to beat
    rule = spacy.blank("en")
    rule.add_pipe("sentencizer")
    floor = Scorer.score_spans([Example(rule(eg.reference.text), eg.reference) for eg in dev], "sents")["sents_f"]
    assert scores["sents_f"] > 0.7
    assert scores["sents_f"] > floor


def test_preset_boundaries_are_kept(senter_nlp):
    doc = senter_nlp.make_doc("I saw him yesterday . he left and we stayed home all day")
    doc[3].is_sent_start = True  # "." starts a sentence: wrong, but the user's call
    doc[5].is_sent_start = False  # "he" is not a start, although the model would say so
    doc = senter_nlp(doc)
    assert doc[3].is_sent_start and doc[5].is_sent_start is False
    assert doc[0].is_sent_start


def test_edge_cases(senter_nlp):
    assert len(senter_nlp("")) == 0
    for text in ["   ", "\n\n", "hello", "no punctuation at all in this one but it goes on and on"]:
        doc = senter_nlp(text)
        assert doc[0].is_sent_start
        assert doc.has_annotation("SENT_START")
        assert sum(len(s) for s in doc.sents) == len(doc)


def test_labels_are_fixed(senter_nlp):
    senter = senter_nlp.get_pipe("sparse_senter")
    assert senter.labels == ("I", "S")
    assert senter.add_label("S") == 0
    with pytest.raises(ValueError):
        senter.add_label("X")


def test_round_trip_and_pickle(senter_nlp, ewt_refs, tmp_path):
    texts = [r.text for r in ewt_refs["dev"][:20]]
    want = [[t.is_sent_start for t in d] for d in senter_nlp.pipe(texts)]
    senter_nlp.to_disk(tmp_path / "p")
    for nlp in (spacy.load(tmp_path / "p"), pickle.loads(pickle.dumps(senter_nlp))):
        assert isinstance(nlp.get_pipe("sparse_senter"), SparseSenter)
        assert [[t.is_sent_start for t in d] for d in nlp.pipe(texts)] == want


def test_tagger_labels_each_predicted_sentence(senter_nlp, ewt_refs):
    """With a senter first, the tagger's segments are its sentences: a doc
    tagged after the senter equals its sentences tagged one by one."""
    from conftest import train_tagger

    nlp, _ = train_tagger(ewt_refs["train"][:100], epochs=2)
    nlp.add_pipe("sparse_senter", source=senter_nlp, first=True)
    text = " ".join(r.text for r in ewt_refs["dev"][:3])
    doc = nlp(text)
    sents = list(doc.sents)
    assert len(sents) > 3
    for sent in sents:
        alone = nlp.get_pipe("sparse_tagger")(sent.as_doc())
        assert [t.tag_ for t in alone] == [t.tag_ for t in sent]


def test_parser_keeps_the_segmenters_sentences(senter_nlp, ewt_refs):
    """After a senter, the parser makes one tree per predicted sentence, so
    doc.sents stay the senter's; presets and odd docs pass through."""
    from conftest import to_examples

    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_senter", source=senter_nlp)
    parser = nlp.add_pipe("sparse_parser", config={"explore_after": 0})
    train = to_examples(nlp, ewt_refs["train"][:150])
    parser.initialize(lambda: train, nlp=nlp)
    for _ in range(2):
        for i in range(0, len(train), 16):
            parser.update(train[i:i + 16])
    texts = [r.text for r in ewt_refs["dev"][:15]] + ["no final punctuation here just words and more words then more",
                                                      "", "   ", "Hi"]
    alone = [[t.is_sent_start for t in d] for d in senter_nlp.pipe(texts)]
    for doc, starts in zip(nlp.pipe(texts), alone):
        assert [bool(t.is_sent_start) for t in doc] == [bool(s) for s in starts]
        if len(doc):
            assert all(sum(1 for t in sent if t.head == t) == 1 for sent in doc.sents)


def test_start_bias_trades_precision_for_recall(senter_nlp, ewt_refs, tmp_path):
    """A positive start_bias starts more sentences on dev text (more of the
    gold starts found, a smaller share of the predicted ones right), a
    negative one fewer; the setting is checked, saved and loaded."""
    senter = senter_nlp.get_pipe("sparse_senter")
    gold = [{t.i for t in r if t.is_sent_start} for r in ewt_refs["dev"]]

    def starts(bias):
        senter.start_bias = bias
        docs = senter_nlp.pipe([bare(r, sents=False) for r in ewt_refs["dev"]])
        found = [{t.i for t in d if t.is_sent_start} for d in docs]
        right = sum(len(f & g) for f, g in zip(found, gold))
        n = sum(len(f) for f in found)
        return n, right / n, right / sum(len(g) for g in gold)

    try:
        n0, p0, r0 = starts(0.0)
        n_up, p_up, r_up = starts(20.0)
        n_down, p_down, r_down = starts(-20.0)
        assert n_down < n0 < n_up
        assert r_down < r0 < r_up and p_down > p0 > p_up
        with pytest.raises(ValueError, match="start_bias"):
            senter.start_bias = float("nan")
        senter.start_bias = 20.0
        senter_nlp.to_disk(tmp_path / "biased")
        assert spacy.load(tmp_path / "biased").get_pipe("sparse_senter").start_bias == 20.0
    finally:
        senter.start_bias = 0.0


def test_space_atom_reads_the_whitespace_between_tokens(ewt_refs):
    """`space@i` is per token, not per word type: the same tokens with other whitespace give other keys for a
    template that reads it, and the same keys for one that does not; a senter with the `space` set trains
    and segments EWT dev text."""
    from spacy.tokens import Doc

    nlp = spacy.blank("en")
    senter = nlp.add_pipe("sparse_senter", config={"templates": {"@misc": "spacy_sparse.senter_templates.v1",
                                                                  "space": True}})
    train = runtime_examples(nlp, ewt_refs["train"][:200])
    nlp.initialize(lambda: train)
    names = senter.sparse.template_names
    assert "space@-1+shape@0" in names and "orth@-1" in names
    words = ["He", "left", ".", '"', "Yes", "."]
    closing = Doc(nlp.vocab, words=words, spaces=[True, False, False, True, False, False])  # He left." Yes.
    opening = Doc(nlp.vocab, words=words, spaces=[True, False, True, False, False, False])  # He left. "Yes.
    keys = [senter.gold_feature_keys([Example(d, d)])[0] for d in (closing, opening)]
    reads_space = [i for i, name in enumerate(names) if "space@" in name]
    others = [i for i in range(len(names)) if i not in reads_space]
    assert (keys[0][:, others] == keys[1][:, others]).all()
    assert (keys[0][3:5][:, reads_space] != keys[1][3:5][:, reads_space]).any()
    for _ in range(3):
        for i in range(0, len(train), 16):
            nlp.update(train[i:i + 16])
    dev = runtime_examples(nlp, ewt_refs["dev"][:60])
    docs = list(nlp.pipe(eg.predicted for eg in dev))
    assert Scorer.score_spans([Example(d, eg.reference) for d, eg in zip(docs, dev)], "sents")["sents_f"] > 0.6
