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
