"""sparse_upos: UPOS from tag, label and word, by tables counted on EWT."""
import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example


def fitted(refs, **config):
    nlp = spacy.blank("en")  # its own vocab: the slices' has no LOWER
    upos = nlp.add_pipe("sparse_upos", config=config)
    upos.initialize(lambda: [Example(r, r) for r in refs], nlp=nlp)
    return nlp, upos


def bare(nlp, ref, pos=False):
    """ref's tokens, tags and labels (its UPOS only if asked)."""
    words = [t.text for t in ref]
    return Doc(nlp.vocab, words=words, tags=[t.tag_ for t in ref], deps=[t.dep_ for t in ref],
               heads=[t.head.i for t in ref], pos=[t.pos_ for t in ref] if pos else None)


def test_gold_tags_and_labels_give_the_gold_upos(ewt_refs):
    """Counted on 3,000 EWT train sentences, the tables give dev's gold UPOS from dev's gold tags and labels
    almost always, and the label and word levels matter: the tag alone is far worse."""
    nlp, upos = fitted(ewt_refs["train"])
    dev = ewt_refs["dev"]
    done = list(upos.pipe([bare(nlp, r) for r in dev]))
    scores = upos.score([Example(d, r) for d, r in zip(done, dev)])
    assert scores["pos_acc"] > 0.98
    tag_only = {r[0]: r[3] for r in upos.table.rows if not r[1]}
    hits = sum(tag_only.get(t.tag_) == t.pos_ for r in dev for t in r)
    assert hits / sum(len(r) for r in dev) < scores["pos_acc"] - 0.04
    doc = upos(Doc(nlp.vocab, words=["It", "is", "n't", "here"], tags=["PRP", "VBZ", "RB", "RB"],
                   deps=["nsubj", "cop", "advmod", "ROOT"], heads=[3, 3, 3, 3]))
    assert [t.pos_ for t in doc] == ["PRON", "AUX", "PART", "ADV"]


def test_two_views_of_a_doc_count_once(ewt_refs):
    """A reader that yields each doc twice (gold tokens, then spaCy's: tokens = "both") counts it once."""
    from spacy_sparse.pipeline.upos import UposTable

    refs = ewt_refs["train"][:300]
    once = UposTable.count(Example(r, r) for r in refs)
    twice = UposTable.count(eg for r in refs for eg in (Example(r, r), Example(r.copy(), r)))
    assert once.rows == twice.rows and any(row[2] for row in once.rows)


def test_tokens_it_cannot_map_keep_their_pos(ewt_refs):
    nlp, upos = fitted(ewt_refs["train"][:200])
    doc = Doc(nlp.vocab, words=["a", "b", "c"], tags=["", "NOT-A-TAG", "NN"], pos=["X", "SYM", "X"])
    assert [t.pos_ for t in upos(doc)] == ["X", "SYM", "NOUN"]
    assert len(upos(Doc(nlp.vocab, words=[]))) == 0
    assert [t.pos_ for t in upos(Doc(nlp.vocab, words=["x"], tags=["NN"]))] == ["NOUN"]  # no parse: the tag's
    with pytest.raises(ValueError, match="TAG, DEP, LOWER, POS, IS_SPACE"):
        upos.table.lookup(np.zeros((3, 4), dtype=np.uint64))  # the kernel would read past each row


def test_round_trip_and_bad_files(ewt_refs, tmp_path):
    nlp, upos = fitted(ewt_refs["train"][:500])
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    docs = [bare(nlp, r) for r in ewt_refs["dev"][:50]]
    first = [[t.pos for t in d] for d in upos.pipe([d.copy() for d in docs])]
    again = [[t.pos for t in d] for d in loaded.get_pipe("sparse_upos").pipe([d.copy() for d in docs])]
    assert first == again and upos.to_bytes() == loaded.get_pipe("sparse_upos").to_bytes()
    table = tmp_path / "p" / "sparse_upos" / "table"
    import gc

    from spacy_sparse import codec

    good = table.read_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x01
    for data in (b"not msgpack \xff", b"\x80", good[:-7], bytes(flipped)):
        table.write_bytes(data)
        with pytest.raises(ValueError, match="Cannot load 'sparse_upos'"):
            spacy.load(tmp_path / "p")
        assert gc.isenabled()  # srsly leaves the collector off when it fails to decode
    table.write_bytes(codec.seal({"format": "spacy-sparse-upos", "version": 1,
                                  "rows": [["NN", "", "", "NOT-UPOS"]]}))
    with pytest.raises(ValueError, match="not valid"):
        spacy.load(tmp_path / "p")
    with pytest.raises(ValueError, match="no tables"):
        spacy.blank("en").add_pipe("sparse_upos")(Doc(nlp.vocab, words=["a"], tags=["NN"]))
    with pytest.raises(ValueError, match="min_word_count"):
        spacy.blank("en").add_pipe("sparse_upos", config={"min_word_count": 0})
