"""Where an nlp(text) call's time goes (calls.py): the kernels are counted while wrapped, and put back after."""
import pytest

import spacy_sparse
from spacy_sparse.calls import call_split, timed_kernels
from spacy_sparse.pipeline import parser, sequence
from spacy_sparse.runtime import compiled


def test_kernels_are_timed_inside_the_block_and_restored_after(ewt_refs):
    nlp = spacy_sparse.load_default()
    text = ewt_refs["dev"][0].text
    spent = [0.0]
    with timed_kernels(spent):
        assert sequence.predict_sequence is not compiled.predict_sequence
        assert parser.predict_parse is not compiled.predict_parse
        doc = nlp(text)
    assert spent[0] > 0 and any(t.dep_ for t in doc)
    assert sequence.predict_sequence is compiled.predict_sequence and parser.predict_parse is compiled.predict_parse
    assert [t.tag_ for t in nlp(text)] == [t.tag_ for t in doc]


def test_the_split_adds_up(ewt_refs):
    nlp = spacy_sparse.load_default()
    split = call_split(nlp, [ref.text for ref in ewt_refs["dev"][:5]], repeat=1)
    assert set(split) == {"total_us", "tokenizer_us", "kernels_us", "rest_us"}
    assert split["kernels_us"] > 0 and split["tokenizer_us"] > 0
    assert split["rest_us"] == pytest.approx(max(0.0, split["total_us"] - split["tokenizer_us"] - split["kernels_us"]))
