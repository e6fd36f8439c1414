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


def test_the_reader_reads_a_corpus_once_per_pipeline(corpus):
    """`spacy train` asks for the corpus once per component's initialize and once per evaluation: a read to the
    end is kept for that pipeline and handed out again; a read cut short is not kept, and a pipeline of its own
    reads the file again."""
    from itertools import islice

    from spacy_sparse.readers import create_gold_token_corpus

    read = create_gold_token_corpus(corpus / "train.spacy", limit=30, tokens="both")
    nlp, other = spacy.blank("en"), spacy.blank("en")
    first_few = list(islice(read(nlp), 3))
    whole = list(read(nlp))
    assert len(whole) == 60 and not any(a is b for a, b in zip(first_few, whole))
    again = list(read(nlp))
    assert all(a is b for a, b in zip(again, whole)) and len(again) == 60
    fresh = list(read(other))
    assert fresh[0].predicted.vocab is other.vocab
    assert [[t.text for t in eg.predicted] for eg in fresh] == [[t.text for t in eg.predicted] for eg in whole]


def test_a_corpus_too_large_to_keep_is_read_again(corpus, monkeypatch):
    from spacy_sparse import readers

    monkeypatch.setattr(readers, "KEEP_TOKENS", 500)  # fewer tokens than 30 EWT docs hold
    read = readers.create_gold_token_corpus(corpus / "train.spacy", limit=30)
    nlp = spacy.blank("en")
    first, second = list(read(nlp)), list(read(nlp))
    assert len(first) == len(second) == 30 and not any(a is b for a, b in zip(first, second))


def test_raw_copies_in_one_case(corpus):
    """`lowercase` / `uppercase` shares of the raw-text copies are in one case, drawn per doc (the same every
    epoch); spaCy's alignment still carries the gold labels onto their tokens."""
    import pytest
    from spacy.tokens import DocBin

    from spacy_sparse.readers import create_gold_token_corpus, recased

    nlp = spacy.blank("en")
    refs = list(DocBin().from_disk(corpus / "train.spacy").get_docs(nlp.vocab))[:200]

    def read(**kw):
        return list(create_gold_token_corpus(corpus / "train.spacy", limit=200, tokens="runtime", **kw)(nlp))

    plain, cased = read(), read(lowercase=0.3, uppercase=0.2)
    assert [eg.predicted.text for eg in read(lowercase=0.3, uppercase=0.2)] == [eg.predicted.text for eg in cased]
    lower = [i for i, eg in enumerate(cased) if eg.predicted.text != refs[i].text and eg.predicted.text.islower()]
    upper = [i for i, eg in enumerate(cased) if eg.predicted.text != refs[i].text and eg.predicted.text.isupper()]
    assert 30 < len(lower) < 90 and 15 < len(upper) < 65
    same = 0
    for i in lower + upper:  # the same words in another case, the gold tags aligned to them
        assert cased[i].predicted.text.lower() == refs[i].text.lower()
        aligned = cased[i].get_aligned("TAG", as_string=True)
        assert sum(tag is not None for tag in aligned) >= 0.9 * len(aligned)
        same += i in lower and aligned == plain[i].get_aligned("TAG", as_string=True)
    # lower case: the same tags as before, but where spaCy's tokenizer cuts a word in one case and not in the
    # other; its exceptions know few upper-case forms (`WON'T` stays whole, `MR.` is cut), so upper case
    # differs more
    assert same >= 0.7 * len(lower)
    assert recased("Straße", upper=True) == "STRAßE"  # no character whose other case is longer changes
    with pytest.raises(ValueError, match="uppercase"):
        create_gold_token_corpus(corpus / "train.spacy", lowercase=0.7, uppercase=0.5)
