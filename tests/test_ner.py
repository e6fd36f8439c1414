"""sparse_ner on CoNLL-2003: valid spans whatever the weights, presets kept, real F1."""
import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, Span
from spacy.training import Example

from spacy_sparse.pipeline.ner import biluo_mask, biluo_moves, moves_to_spans

from conftest import bare


def valid_sequence(moves, n_types, closing_at):
    allowed = biluo_mask(n_types)
    prev = -1
    for i, m in enumerate(moves):
        if not allowed[1 if i in closing_at else 0, prev + 1, m]:
            return False
        prev = m
    return True


def test_training_on_a_conll_slice_reaches_real_f1(trained_ner, conll_refs):
    nlp, ner = trained_ner
    examples = [Example(bare(r), r) for r in conll_refs["dev"]]
    list(ner.pipe([eg.predicted for eg in examples]))
    scores = ner.score(examples)
    assert scores["ents_f"] > 0.70, scores["ents_f"]
    assert set(scores["ents_per_type"]) == {"PER", "ORG", "LOC", "MISC"}
    assert set(ner.labels) == {"PER", "ORG", "LOC", "MISC"}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spans_are_valid_whatever_the_weights(trained_ner, conll_refs, seed):
    nlp, ner = trained_ner
    model = ner.sparse
    saved = model._dense
    rng = np.random.RandomState(seed)
    model._dense = (rng.randn(*model.weights().shape) * 50).astype(np.float32)
    try:
        for margin in (None, 5.0):
            ner.margin = margin
            docs = [bare(r) for r in conll_refs["dev"][:10]]
            pred, doc_off = ner.predict(docs)
            for i, doc in enumerate(docs):
                moves = pred[doc_off[i]:doc_off[i + 1]]
                ends = {s.end - 1 for s in doc.sents}
                assert valid_sequence(moves, len(ner.labels), ends)
            ner.set_annotations(docs, (pred, doc_off))
            assert any(doc.ents for doc in docs)
    finally:
        model._dense = saved
        ner.margin = None


def test_moves_to_spans():
    types = ["LOC", "PER"]
    moves = biluo_moves(types)
    seq = [moves.index(m) for m in ["O", "B-PER", "I-PER", "L-PER", "U-LOC", "O", "U-PER"]]
    assert moves_to_spans(np.array(seq), types) == [(1, 4, "PER"), (4, 5, "LOC"), (6, 7, "PER")]


def test_preset_entities_survive(trained_ner):
    """Preset entities stay, those of a type the model does not know too;
    unlike spaCy's NER, predicting does not add that type to the model
    (predictions never change a model: threads, saved files)."""
    nlp, ner = trained_ner
    labels = ner.labels
    doc = Doc(nlp.vocab, words="Yesterday John Smith flew from Paris to Acme Widget headquarters in Berlin .".split())
    doc.ents = [Span(doc, 7, 9, label="PRODUCT"), Span(doc, 5, 6, label="ORG")]
    doc = ner(doc)
    assert ner.labels == labels
    ents = {(e.start, e.end, e.label_) for e in doc.ents}
    assert (7, 9, "PRODUCT") in ents and (5, 6, "ORG") in ents
    assert any(e.label_ == "PER" for e in doc.ents)
    starts = [e.start for e in doc.ents]
    assert starts == sorted(starts)


def test_docs_without_entity_marks_get_what_set_ents_gives(trained_ner, conll_refs):
    """A doc with no entity marks yet gets its entities in one array write (ENT_IOB, ENT_TYPE); a doc whose
    tokens are all marked outside already goes through doc.set_ents. Both end the same, token by token."""
    nlp, ner = trained_ner
    fresh = list(ner.pipe([bare(r, sents=False) for r in conll_refs["dev"][:40]]))
    marked = []
    for r in conll_refs["dev"][:40]:
        doc = bare(r, sents=False)
        doc.set_ents([], default="outside")
        assert doc.has_annotation("ENT_IOB")
        marked.append(doc)
    marked = list(ner.pipe(marked))

    def state(docs):
        return ([[(t.ent_iob, t.ent_iob_, t.ent_type_, t.ent_kb_id, t.ent_id) for t in d] for d in docs],
                [[(e.start, e.end, e.label_) for e in d.ents] for d in docs])

    assert state(fresh) == state(marked)
    assert sum(len(d.ents) for d in fresh) > 100 and all(t.ent_iob_ in "BIO" for d in fresh for t in d)


def test_save_load_and_edge_docs(trained_ner, conll_refs, tmp_path):
    nlp, ner = trained_ner
    docs = [bare(r) for r in conll_refs["dev"][:10]]
    expected = [[(e.start, e.end, e.label_) for e in d.ents] for d in nlp.pipe(docs)]
    nlp.to_disk(tmp_path / "ner")
    nlp2 = spacy.load(tmp_path / "ner")
    got = [[(e.start, e.end, e.label_) for e in d.ents] for d in nlp2.pipe([bare(r) for r in conll_refs["dev"][:10]])]
    assert got == expected
    empty, one = nlp2.make_doc(""), Doc(nlp2.vocab, words=["Germany"])
    long_doc = Doc(nlp2.vocab, words=("Peter Blackburn visited Brussels on Monday .".split() * 8000))
    out = list(nlp2.pipe([empty, one, long_doc]))
    assert len(out[0].ents) == 0 and len(out[1]) == 1
    assert len(out[2]) == 56_000 and len(out[2].ents) > 1000


def test_uner_reader_maps_draft_tags_to_outside():
    from itertools import islice

    from spacy_sparse.readers import uner_docs

    from conftest import SHARED

    vocab = spacy.blank("en").vocab
    draft = list(islice(uner_docs(vocab, SHARED / "uner-english-ewt" / "train.draft.iob2"), 60))
    labels = {e.label_ for d in draft for e in d.ents}
    assert labels == {"PER", "LOC", "ORG"}
    raw = (SHARED / "uner-english-ewt" / "train.draft.iob2").read_text(encoding="utf8")
    assert "B-OTH" in raw and ("\tB-O\t" in raw or "\tB-O\n" in raw)
    assert all(len(list(d.sents)) >= 1 for d in draft)


def test_conll_reader_one_doc_per_article(conll_refs):
    assert all(t.text != "-DOCSTART-" for d in conll_refs["train"] for t in d)
    assert conll_refs["train"][0].ents[0].text == "EU" and conll_refs["train"][0].ents[0].label_ == "ORG"


def test_conll_reader_keeps_the_marker_when_asked(conll_refs):
    # as in spaCy's `--converter ner` docs: the marker as a sentence of its own, outside any entity
    from itertools import islice

    from conftest import CONLL
    from spacy_sparse.readers import conll_ner_docs

    marked = list(islice(conll_ner_docs(conll_refs["train"][0].vocab, CONLL / "train.txt", docstart_every=2), 150))
    assert [t.text for t in marked[1]] == [t.text for t in conll_refs["train"][1]]
    for doc, plain in list(zip(marked, conll_refs["train"]))[::2]:
        assert doc[0].text == "-DOCSTART-" and doc[0].ent_iob_ == "O" and doc[1].is_sent_start
        assert [t.text for t in doc[1:]] == [t.text for t in plain]
        assert [(e.start + 1, e.end + 1, e.label_) for e in plain.ents] == [(e.start, e.end, e.label_) for e in doc.ents]
        assert [s.start + 1 for s in plain.sents] == [s.start for s in doc.sents][1:]


@pytest.mark.parametrize("labels", [["B-PER"], ["PER", ""], ["U-LOC", "ORG"]])
def test_move_names_are_not_entity_types(labels):
    ner = spacy.blank("en").add_pipe("sparse_ner")
    with pytest.raises(ValueError, match="Entity types"):
        ner._build_model(labels, None)


def test_a_model_whose_labels_are_not_biluo_moves_is_refused(trained_ner):
    """Labels the move mask cannot be built from (here: the O move dropped, same count) fail on load."""
    from spacy_sparse import codec

    _, ner = trained_ner
    msg = codec.unseal(ner.sparse.to_bytes())
    bad = codec.seal(dict(msg, labels=list(msg["labels"][1:]) + ["O"]))
    before = ner.sparse
    with pytest.raises(ValueError, match="entity recognizer's labels"):
        ner._load_model(bad)
    assert ner.sparse is before
