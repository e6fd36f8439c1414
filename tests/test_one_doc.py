"""A component called on one doc (what nlp(text) does) labels a doc that is its own view without the batch
wrappers (SparsePipe._label_one); it must write what predict + set_annotations write, honour the component's
settings, and hand errors to the component's error handler."""
import pytest

import spacy_sparse
from spacy_sparse.pipeline.base import SparsePipe

COMPONENTS = ["sparse_tagger", "sparse_senter", "sparse_parser", "sparse_upos", "sparse_morphologizer",
              "sparse_lemmatizer"]


def annotations(doc):
    return [(t.tag_, t.pos_, t.head.i, t.dep_, t.lemma_, str(t.morph), t.is_sent_start) for t in doc]


@pytest.fixture(scope="module")
def nlp():
    return spacy_sparse.load_default()


@pytest.fixture(scope="module")
def texts(ewt_refs):
    sents = [s.text for ref in ewt_refs["dev"][:12] for s in ref.sents]
    # whitespace tokens take the views' way; a paragraph doc has several sentences; one-word and empty docs
    return sents + [ewt_refs["dev"][3].text, "Thanks.\n\nSee you  tomorrow", "Hi", "", "  "]


@pytest.mark.parametrize("name", COMPONENTS)
def test_one_doc_labels_as_the_batch_path_does(nlp, texts, name):
    proc = nlp.get_pipe(name)
    before = nlp.pipe_names[:nlp.pipe_names.index(name)]
    labelled_one = 0
    for text in texts:
        doc = nlp.make_doc(text)
        for other in before:
            doc = nlp.get_pipe(other)(doc)
        batch = doc.copy()
        if isinstance(proc, SparsePipe):
            proc.set_annotations([batch], proc.predict([batch]))
            labelled_one += proc._label_one(doc.copy())
        else:
            proc.set_annotations([batch])
        assert proc(doc) is doc
        assert annotations(doc) == annotations(batch), text
    if isinstance(proc, SparsePipe):  # most of these docs have no whitespace token: the short way ran
        assert labelled_one >= len(texts) - 3


def test_a_lemmatizer_that_keeps_lemmas_keeps_them_on_one_doc(nlp):
    lemmatizer = nlp.get_pipe("sparse_lemmatizer")
    assert not lemmatizer.overwrite
    doc = nlp.make_doc("The geese were flying south")
    for name in nlp.pipe_names[:nlp.pipe_names.index("sparse_lemmatizer")]:
        doc = nlp.get_pipe(name)(doc)
    doc[1].lemma_ = "gander"
    lemmatizer(doc)
    assert doc[1].lemma_ == "gander"
    assert doc[2].lemma_ == "be" and doc[3].lemma_ == "fly"


def test_errors_on_one_doc_go_to_the_error_handler(nlp, monkeypatch):
    tagger = nlp.get_pipe("sparse_tagger")
    seen = []

    def broken(*args, **kwargs):
        raise RuntimeError("broken kernel")

    def handler(name, proc, docs, e):
        seen.append((name, proc, len(docs), str(e)))

    monkeypatch.setattr(tagger, "_predict", broken)
    doc = nlp.make_doc("A short sentence.")
    with pytest.raises(RuntimeError, match="broken kernel"):
        tagger(doc)
    monkeypatch.setattr(tagger, "error_handler", handler, raising=False)  # set_error_handler, undone after
    assert tagger.get_error_handler() is handler
    assert tagger(doc) is None  # as spaCy's components leave it when the handler does not raise
    assert seen == [("sparse_tagger", tagger, 1, "broken kernel")]


def test_a_doc_a_training_step_just_saw_takes_the_batch_path(nlp, monkeypatch):
    tagger = nlp.get_pipe("sparse_tagger")
    doc = nlp.make_doc("Another short sentence.")
    monkeypatch.setattr(tagger, "_just_trained", [doc])
    assert not tagger._label_one(doc)
    calls = []
    predict = tagger.predict
    monkeypatch.setattr(tagger, "predict", lambda docs: calls.append(1) or predict(docs))
    tagger(doc)
    assert calls == [1] and tagger._just_trained is None and doc[0].tag_
