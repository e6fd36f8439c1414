"""sparse_lemmatizer and sparse_morphologizer on EWT slices, and UD noun chunks."""
import pickle

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_sparse.pipeline.lemmatizer import apply_rule, edit_rule, parse_rule


def tagged(nlp, ref):
    """ref's words with its gold tags, as an earlier tagger would give them."""
    return Doc(nlp.vocab, words=[t.text for t in ref], spaces=[bool(t.whitespace_) for t in ref],
               tags=[t.tag_ for t in ref])


@pytest.fixture(scope="module")
def lemma_morph(ewt_refs):
    """A morphologizer and a lemmatizer trained for two epochs on 3,000 EWT sentences (gold tags given), the
    lemmatizer with the shipped word table's dictionary templates, as configs/lemma_morph.cfg trains it."""
    nlp = spacy.blank("en")
    morph = nlp.add_pipe("sparse_morphologizer")
    lemma = nlp.add_pipe("sparse_lemmatizer",
                         config={"templates": {"@misc": "spacy_sparse.lemma_templates.v1", "dictionary": True}})
    train = [Example(tagged(nlp, r), r) for r in ewt_refs["train"]]
    nlp.config["initialize"]["components"]["sparse_lemmatizer"] = {"clusters": "en_brown_1000"}
    nlp.initialize(lambda: train)
    for _ in range(2):
        for i in range(0, len(train), 32):
            nlp.update(train[i:i + 32])
    return nlp, morph, lemma


def test_every_edit_rule_rebuilds_its_lemma(ewt_refs):
    pairs = {(t.text, t.lemma_) for r in ewt_refs["train"] for t in r if t.lemma_}
    for form, lemma in pairs:
        assert apply_rule(form, parse_rule(edit_rule(form, lemma))) == lemma
    assert edit_rule("studies", "study") == "K3|iesy" and edit_rule("The", "the") == "L0|"
    assert edit_rule("KABUL", "Kabul") == "T0|" and edit_rule("MYTHS", "Myth") == "T1|s"
    assert edit_rule("Kabul", "Kabul") == "K0|"  # keeping wins a tie
    assert apply_rule("dog", parse_rule("K3|iesy")) is None  # the form does not end with "ies"
    assert apply_rule("s", parse_rule("K1|s")) is None  # nothing would be left
    for bad in ("", "X0|", "K|", "K5|ab", "Kx|a", "KL0|", "|0|"):
        with pytest.raises(ValueError, match="not a lemma edit rule"):
            parse_rule(bad)


def test_rules_give_way_to_related_ones_whose_lemma_wordnet_knows(lemma_morph):
    from spacy_sparse.pipeline.lemmatizer import dictionary_lemma

    nlp, morph, lemma = lemma_morph
    table = lemma.lexicon.clusters
    assert table.has_senses  # kept for the wnpos templates, and what the check reads
    rules = [parse_rule(label) for label in lemma.labels]
    at = {label: i for i, label in enumerate(lemma.labels)}
    assert dictionary_lemma("provoked", at["K2|ed"], rules, table) == "provoke"
    assert dictionary_lemma("speculating", at["K3|ing"], rules, table) == "speculate"
    assert dictionary_lemma("walked", at["K2|ed"], rules, table) == "walk"
    assert dictionary_lemma("hoped", at["K1|d"], rules, table) == "hope"
    # WordNet does not inflect these: the rule's lemma stays
    assert dictionary_lemma("blorped", at["K2|ed"], rules, table) == "blorp"
    assert dictionary_lemma("us", at["K2|uswe"], rules, table) == "we"
    # a rule that does not apply leaves the form, in the rule's case
    assert dictionary_lemma("Dog", at["K3|iesy"], rules, table) == "Dog"
    # in use: verbs EWT train has once ("provoked") or never ("speculated")
    words = "They provoked him and then speculated .".split()
    doc = nlp(Doc(nlp.vocab, words=words, tags=["PRP", "VBD", "PRP", "CC", "RB", "VBD", "."]))
    assert [t.lemma_ for t in doc] == ["they", "provoke", "he", "and", "then", "speculate", "."]


def test_trained_on_ewt_they_label_dev(ewt_refs, lemma_morph):
    nlp, morph, lemma = lemma_morph
    dev = ewt_refs["dev"]
    examples = [Example(d, r) for d, r in zip(nlp.pipe(tagged(nlp, r) for r in dev), dev)]
    scores = nlp.evaluate(examples)
    # measured at 0.971 and 0.963
    assert scores["lemma_acc"] > 0.96 and scores["morph_acc"] > 0.95
    assert scores["morph_per_feat"]["Number"]["f"] > 0.95
    assert len(lemma.labels) > 100 and "K0|" in lemma.labels and "_" in morph.labels
    doc = nlp(Doc(nlp.vocab, words=["She", "was", "studying", "the", "children", "'s", "books", "."],
                  tags=["PRP", "VBD", "VBG", "DT", "NNS", "POS", "NNS", "."]))
    assert [t.lemma_ for t in doc] == ["she", "be", "study", "the", "child", "'s", "book", "."]
    assert doc[4].morph.get("Number") == ["Plur"] and doc[0].morph.get("Case") == ["Nom"]


def test_every_word_gets_a_lemma_and_a_rule_that_fits(lemma_morph):
    """Words never seen get a lemma; a predicted rule that does not fit the form is not applied."""
    nlp, morph, lemma = lemma_morph
    words = ["Zorblaxes", "qwxj", "x", "ÉCOLES", "3.14", "!!!", "a" * 300]
    doc = nlp(Doc(nlp.vocab, words=words, tags=["NNS", "NN", "NN", "NNS", "CD", ".", "NN"]))
    assert all(token.lemma_ for token in doc)
    assert doc[0].lemma_.lower().startswith("zorblax") and doc[3].lemma_.lower().startswith("école")
    doc = Doc(nlp.vocab, words=["Dog", "ponies", "Ponies"])
    rules = [lemma.labels.index(r) for r in ("K3|iesy", "K3|iesy", "K3|iesy")]
    lemma.set_annotations([doc], (np.array(rules, dtype=np.int32), np.array([0, 3])))
    assert [t.lemma_ for t in doc] == ["Dog", "pony", "Pony"]  # "Dog" does not end with "ies": kept
    other = spacy.blank("en").vocab  # docs of another vocab can read the lemmas written on them
    docs = [Doc(other, words=["Ponies", "was"], tags=["NNS", "VBD"]), Doc(nlp.vocab, words=["dogs"], tags=["NNS"])]
    done = [[t.lemma_ for t in d] for d in lemma.pipe(docs)]
    assert done[0][0].lower().startswith("poni") and done[0][1] == "be" and done[1] == ["dog"]


def test_whitespace_presets_and_overwrite(lemma_morph):
    nlp, morph, lemma = lemma_morph
    words = ["Dogs", "\n\n", "were", "barking", " "]
    doc = Doc(nlp.vocab, words=words, tags=["NNS", "_SP", "VBD", "VBG", "_SP"], lemmas=["DOG", "", "", "", ""])
    doc = nlp(doc)
    assert doc[0].lemma_ == "DOG"  # overwrite = false keeps a lemma set before
    assert [t.lemma_ for t in doc[1:]] == ["\n\n", "be", "bark", " "]
    assert str(doc[1].morph) == "" and str(doc[4].morph) == "" and doc[2].morph.get("Tense") == ["Past"]
    lemma.cfg["overwrite"] = True
    try:
        assert nlp(Doc(nlp.vocab, words=["Dogs"], tags=["NNS"], lemmas=["DOG"]))[0].lemma_ == "dog"
    finally:
        lemma.cfg["overwrite"] = False
    preset = Doc(nlp.vocab, words=["Dogs"], tags=["NNS"], morphs=["Number=Sing"])
    assert str(nlp(preset)[0].morph) == "Number=Plur"  # the morphologizer overwrites, as spaCy's does
    with pytest.raises(ValueError, match="overwrite"):
        spacy.blank("en").add_pipe("sparse_lemmatizer", config={"overwrite": "yes"})
    with pytest.raises(ValueError, match="min_label_count"):
        spacy.blank("en").add_pipe("sparse_lemmatizer", config={"min_label_count": 0})


def test_round_trip_and_pickle_give_the_same_labels(ewt_refs, lemma_morph, tmp_path):
    nlp, morph, lemma = lemma_morph
    docs = [tagged(nlp, r) for r in ewt_refs["dev"][:20]]
    before = [[(t.lemma_, str(t.morph)) for t in d] for d in nlp.pipe(d.copy() for d in docs)]
    nlp.to_disk(tmp_path / "lm")
    loaded = spacy.load(tmp_path / "lm")
    again = [[(t.lemma_, str(t.morph)) for t in d]
             for d in loaded.pipe(Doc(loaded.vocab).from_bytes(d.to_bytes()) for d in docs)]
    assert again == before
    copy = pickle.loads(pickle.dumps(nlp))
    assert [[(t.lemma_, str(t.morph)) for t in d] for d in copy.pipe(d.copy() for d in docs)] == before
    (tmp_path / "lm" / "sparse_lemmatizer" / "model").write_bytes(b"\x93not a model")
    with pytest.raises(ValueError, match="sparse_lemmatizer"):
        spacy.load(tmp_path / "lm")


def ud_doc(nlp, words, heads, deps, pos):
    return Doc(nlp.vocab, words=words, heads=heads, deps=deps, pos=pos)


def test_noun_chunks_read_ud_labels():
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_parser")  # installs the UD chunker on the vocab
    doc = ud_doc(nlp, ["The", "quick", "brown", "fox", "jumped", "over", "the", "lazy", "dog", "'s", "tail", "."],
                 [3, 3, 3, 4, 4, 10, 8, 8, 10, 8, 4, 4],
                 ["det", "amod", "amod", "nsubj", "root", "case", "det", "amod", "nmod:poss", "case", "obl", "punct"],
                 ["DET", "ADJ", "ADJ", "NOUN", "VERB", "ADP", "DET", "ADJ", "NOUN", "PART", "NOUN", "PUNCT"])
    assert [c.text for c in doc.noun_chunks] == ["The quick brown fox", "the lazy dog 's tail"]
    doc = ud_doc(nlp, ["I", "saw", "cats", "and", "dogs"], [1, 1, 1, 4, 2], ["nsubj", "root", "obj", "cc", "conj"],
                 ["PRON", "VERB", "NOUN", "CCONJ", "NOUN"])
    assert [c.text for c in doc.noun_chunks] == ["I", "cats", "dogs"]
    # a ClearNLP parse on the same vocab gets spaCy's English chunker
    doc = ud_doc(nlp, ["She", "ate", "the", "cake"], [1, 1, 3, 1], ["nsubj", "ROOT", "det", "dobj"],
                 ["PRON", "VERB", "DET", "NOUN"])
    assert [c.text for c in doc.noun_chunks] == ["She", "the cake"]
    with pytest.raises(ValueError):
        list(Doc(nlp.vocab, words=["no", "parse"]).noun_chunks)
    assert pickle.loads(pickle.dumps(nlp.vocab)).get_noun_chunks is nlp.vocab.get_noun_chunks


def test_nominal_arguments_of_gold_ewt_parses_head_chunks(ewt_refs):
    """On EWT dev's gold trees, nearly every noun or pronoun attached as a nominal argument or modifier
    heads a chunk, and no two chunks overlap."""
    from spacy_sparse import noun_chunks

    nominal = {"nsubj", "nsubj:pass", "obj", "iobj", "obl", "nmod", "appos", "root"}
    found = total = 0
    for doc in ewt_refs["dev"]:
        chunks = list(noun_chunks.noun_chunks(doc))
        ends = {end - 1 for _, end, _ in chunks}
        for a, b in zip(chunks, chunks[1:]):
            assert a[1] <= b[0]
        for t in doc:
            if t.pos_ in ("NOUN", "PROPN", "PRON") and t.dep_.lower() in nominal:
                total += 1
                found += t.i in ends
    assert total > 1500 and found / total > 0.97


def test_known_pairs_are_fixed_and_checked_on_load(lemma_morph, ewt_refs, tmp_path):
    """Frequent (word, tag) pairs with one label in training are labelled without scoring; a pair the table
    does not hold is scored; a broken table in a saved cfg is refused."""
    import srsly

    from spacy.attrs import ORTH, TAG

    from spacy_sparse.pipeline.batching import DocBatch, DocColumns
    from spacy_sparse.pipeline.known_words import pair_keys
    from spacy_sparse.runtime.arrays import find_sorted

    nlp, morph, lemma = lemma_morph
    docs = [Doc(nlp.vocab, words=["the", "Zorblaxes", "and", "was"], tags=["DT", "NNS", "CC", "VBD"])]
    fixed = {}
    for pipe in (morph, lemma):
        assert len(pipe.cfg["known"]["keys"]) > 500
        batch = DocBatch(docs, pipe.lexicon, pipe.by_sents, DocColumns(docs, pipe._reads(pipe.sparse)))
        fixed[pipe.name] = pipe._fixed(docs, batch)
        assert fixed[pipe.name][0] >= 0 and fixed[pipe.name][1] == -1 and fixed[pipe.name][2] >= 0
    assert lemma.labels[fixed[lemma.name][3]] == "K3|wasbe"
    assert fixed[morph.name][3] == -1  # "was" is first or third person: its subject decides
    # the kernel finds in a batch of EWT docs exactly the pairs the sorted table holds, each with its label
    refs = [Doc(nlp.vocab, words=[t.text for t in d], tags=[t.tag_ for t in d]) for d in ewt_refs["dev"][:200]]
    for pipe in (morph, lemma):
        batch = DocBatch(refs, pipe.lexicon, pipe.by_sents, DocColumns(refs, pipe._reads(pipe.sparse)))
        keys, labels = pipe._known_arrays()
        wanted = pair_keys(batch.columns[ORTH], batch.columns[TAG])
        at, hit = find_sorted(keys, wanted)
        assert 0.3 < hit.mean() < 1.0
        assert np.array_equal(pipe._fixed(refs, batch), np.where(hit, labels[at], -1))
    nlp.to_disk(tmp_path / "lm")
    cfg_path = tmp_path / "lm" / "sparse_lemmatizer" / "cfg"
    cfg = srsly.read_json(cfg_path)
    cfg["known"]["labels"] = cfg["known"]["labels"][:-1]
    srsly.write_json(cfg_path, cfg)
    with pytest.raises(ValueError, match="known"):
        spacy.load(tmp_path / "lm")


def test_made_lemmas_are_found_again_as_the_table_grows_and_start_afresh_when_full(monkeypatch):
    """The cache of lemmas made (MadeLemmas): every pair added is found with its lemma after the table grows, a
    pair never added is not, and past MAX_CACHED pairs it empties before taking more."""
    from spacy_sparse.pipeline import lemmatizer

    made = lemmatizer.MadeLemmas()
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(1, 2 ** 63, size=5000, dtype=np.int64).astype(np.uint64))
    lemmas = rng.integers(1, 2 ** 63, size=len(keys), dtype=np.int64).astype(np.uint64)
    for part in np.array_split(np.arange(len(keys)), 7):  # added in batches: the table grows several times
        made.add(keys[part], lemmas[part])
    found, hit = made.find(keys[::-1].copy())
    assert hit is None and (found == lemmas[::-1]).all()  # every pair found
    found, hit = made.find(np.array([keys[0], 3], dtype=np.uint64))
    assert hit.tolist() == [True, False] and found.tolist() == [lemmas[0], 0]
    found, hit = made.find(np.array([3, 5], dtype=np.uint64))
    assert not hit.any() and (found == 0).all()
    monkeypatch.setattr(lemmatizer, "MAX_CACHED", len(keys) + 10)
    made.add(np.array([7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27], dtype=np.uint64), np.arange(1, 12, dtype=np.uint64))
    assert made.n == 11 and not made.find(keys[:3].copy())[1].any()
    assert made.find(np.array([27], dtype=np.uint64))[0][0] == 11


def test_a_word_with_several_rules_gets_each_rules_lemma_from_the_cache():
    """The cache's key of a (word, rule) pair keeps every bit of both: the same word under neighbouring rules
    (`left` as a verb and as an adjective) must not share a key, made first or found again."""
    import spacy_sparse
    from spacy_sparse.pipeline.lemmatizer import dictionary_lemma

    nlp = spacy_sparse.load_default()
    lemmatizer = nlp.get_pipe("sparse_lemmatizer")
    words = ["left", "saw", "was", "better", "running", "leaves", "'s", "found"]
    n_rules = min(len(lemmatizer.labels), 40)
    orth = np.array([nlp.vocab.strings.add(w) for w in words for _ in range(n_rules)], dtype=np.uint64)
    labels = np.tile(np.arange(n_rules, dtype=np.int32), len(words))
    expected = [dictionary_lemma(w, r, lemmatizer._rules, lemmatizer.lexicon.clusters)
                for w in words for r in range(n_rules)]
    for _ in range(2):  # made, then found in the cache
        got = lemmatizer._lemma_values(nlp.vocab, orth, labels)
        assert [nlp.vocab.strings[int(v)] for v in got] == expected
