"""Corpus readers: CoNLL-2000 chunks as entities over given POS tags."""
import spacy
from conftest import CHUNKS


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


# ---- gold tokens, the raw-text path, or both ------------------------------------------------
def test_token_modes_of_the_gold_token_reader(corpus):
    import pytest
    from spacy.tokens import DocBin

    from spacy_sparse.readers import create_gold_token_corpus

    nlp = spacy.blank("en")
    refs = list(DocBin().from_disk(corpus / "train.spacy").get_docs(nlp.vocab))[:40]

    def read(**kw):
        return list(create_gold_token_corpus(corpus / "train.spacy", limit=40, **kw)(nlp))

    gold, runtime, both = read(sents=True), read(tokens="runtime"), read(sents=True, tokens="both")
    assert len(gold) == len(runtime) == 40 and len(both) == 80
    assert [[t.text for t in eg.predicted] for eg in gold] == [[t.text for t in r] for r in refs]
    assert [[t.text for t in eg.predicted] for eg in runtime] == [[t.text for t in nlp.make_doc(r.text)] for r in refs]
    # spaCy's tokenizer splits some EWT tokens differently: the slice has at least one such doc
    assert any(len(eg.predicted) != len(eg.reference) for eg in runtime)
    assert all(eg.predicted.has_annotation("SENT_START") for eg in gold if len(list(eg.reference.sents)) > 1)
    assert not any(eg.predicted.has_annotation("SENT_START") for eg in runtime)
    assert not any(eg.predicted.has_annotation("SENT_START") for eg in both[1::2])  # raw text: no boundaries
    projected = read(sents=True, tokens="runtime")
    for eg in projected:  # gold sentences carried onto spaCy's tokens
        assert [t.is_sent_start for t in eg.predicted] == [bool(s) for s in eg.get_aligned_sent_starts()]
    with pytest.raises(ValueError, match="tokens"):
        create_gold_token_corpus(corpus / "train.spacy", tokens="raw")
