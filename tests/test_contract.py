"""spaCy's component contract for labels: what add_label, initialize and
update do in spaCy's built-in tagger, NER and parser, ours do too."""
import pickle

import pytest
import spacy
from spacy.tokens import Span
from spacy.training import Example

from conftest import bare, to_examples, train_tagger

PAIRS = [("sparse_tagger", "tagger", "NN"), ("sparse_ner", "ner", "PER"), ("sparse_parser", "parser", "nsubj")]


@pytest.mark.parametrize("ours,builtin,label", PAIRS)
def test_add_label_then_initialize_without_examples(ours, builtin, label):
    """The built-in keeps the label; so must ours, and the initialized,
    untrained component saves, loads, pickles and runs."""
    reference = spacy.blank("en")
    reference.add_pipe(builtin).add_label(label)
    reference.initialize()
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(ours)
    assert pipe.add_label(label) == 1 and pipe.add_label(label) == 0
    nlp.initialize()
    assert label in pipe.labels
    assert set(pipe.labels) <= set(reference.get_pipe(builtin).labels)
    assert pickle.loads(pickle.dumps(nlp)).get_pipe(ours).labels == pipe.labels
    loaded = spacy.blank("en")
    loaded.add_pipe(ours).from_bytes(pipe.to_bytes())
    assert loaded.get_pipe(ours).labels == pipe.labels
    doc = nlp("Anna sees the river .")
    assert len(doc) == 5


def test_tagger_grows_a_label_after_training(ewt_refs):
    nlp, tagger = train_tagger(ewt_refs["train"][:150], epochs=2)
    before = tagger.labels
    dev = to_examples(nlp, ewt_refs["dev"][:40])
    acc_before = nlp.evaluate(dev)["tag_acc"]
    assert tagger.add_label("XQ") == 1
    assert tagger.labels == before + ("XQ",)
    # the new tag: "the" is re-tagged XQ in a few training docs
    refs = []
    for ref in ewt_refs["train"][150:250]:
        ref = ref.copy()
        for t in ref:
            if t.text.lower() == "the":
                t.tag_ = "XQ"
        refs.append(ref)
    train = to_examples(nlp, refs)
    for _ in range(6):  # the averaged weights trail the current ones: a few epochs
        for i in range(0, len(train), 16):
            nlp.update(train[i:i + 16])
    doc = nlp("I saw the dog near the house .")
    assert doc[2].tag_ == "XQ" and doc[5].tag_ == "XQ"
    assert doc[3].tag_ == "NN"
    # the rest of the tag set is still known (dev has "the" as DT: those tokens are now wrong)
    scores = nlp.evaluate(dev)
    n_the = sum(t.text.lower() == "the" for eg in dev for t in eg.reference)
    n_all = sum(len(eg.reference) for eg in dev)
    assert scores["tag_acc"] > acc_before - n_the / n_all - 0.03
    round_trip = spacy.blank("en")
    round_trip.add_pipe("sparse_tagger").from_bytes(tagger.to_bytes())
    assert round_trip.get_pipe("sparse_tagger").labels == tagger.labels


def test_ner_update_adds_entity_types_it_meets(trained_ner, conll_refs):
    """spaCy's NER adds the labels of the references in update; a new type
    is learned without losing the old ones."""
    nlp, ner = trained_ner
    nlp = pickle.loads(pickle.dumps(nlp))  # a copy: the fixture is shared
    ner = nlp.get_pipe("sparse_ner")
    assert "XMISC" not in ner.labels
    refs = []
    for ref in conll_refs["train"][:60]:
        ref = ref.copy()
        ref.set_ents([ent if ent.label_ != "MISC" else spacy.tokens.Span(ref, ent.start, ent.end, "XMISC")
                      for ent in ref.ents])
        refs.append(ref)
    train = [Example(bare(r), r) for r in refs]
    for _ in range(3):
        for i in range(0, len(train), 8):
            nlp.update(train[i:i + 8])
    assert "XMISC" in ner.labels
    dev = [Example(bare(r), r) for r in conll_refs["dev"]]
    types = nlp.evaluate(dev)["ents_per_type"]
    assert types["PER"]["f"] > 0.6 and types["LOC"]["f"] > 0.6


def test_parser_update_adds_labels_it_meets(ewt_refs):
    nlp = spacy.blank("en")
    parser = nlp.add_pipe("sparse_parser", config={"explore_after": 0, "min_updates": 1})
    first = to_examples(nlp, ewt_refs["train"][:60])
    nlp.initialize(lambda: first)
    unseen = sorted({t.dep_ for r in ewt_refs["train"][60:400] for t in r} - set(parser.labels))
    assert unseen, "the slice should hold a label the first docs lack"
    rest = to_examples(nlp, ewt_refs["train"][60:400])
    nlp.update(rest[:40])
    assert set(unseen) & set(parser.labels)
    assert list(parser.labels) == sorted(parser.labels)
    doc = nlp("She gave him the book yesterday .")
    assert all(t.dep_ for t in doc)


def test_parser_label_indices_stay_when_labels_are_added(ewt_refs):
    """`dep`/`lset`/`rset` atoms read label indices: a new model numbers its
    labels in sorted order (root-only labels such as ROOT included, as
    every saved parser does), and an added label goes after them."""
    nlp = spacy.blank("en")
    parser = nlp.add_pipe("sparse_parser")
    examples = to_examples(nlp, ewt_refs["train"][:30])
    nlp.initialize(lambda: examples)
    before = list(parser._deps)
    assert before == sorted(before) and "ROOT" in before
    parser.add_label("zz_new")
    parser.add_label("aaa_new")
    assert parser._deps == before + ["zz_new", "aaa_new"]
    again = spacy.blank("en")
    again.add_pipe("sparse_parser").from_bytes(parser.to_bytes())
    assert again.get_pipe("sparse_parser")._deps == parser._deps


def test_docs_from_another_vocab_are_labelled_like_our_own(small_tagger):
    """spaCy's components take docs made with another Vocab; ours read the words' strings from the doc's vocab
    when the pipeline's lacks them (before: a KeyError)."""
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    nlp, tagger = small_tagger
    words = ["Zorblax", "quickly", "photographed", "the", "unfamiliar", "harbour", "."]
    other = Doc(Vocab(), words=words)
    own = Doc(nlp.vocab, words=words)
    assert [t.tag_ for t in tagger(other)] == [t.tag_ for t in tagger(own)]


def test_ner_keeps_blocked_tokens_out_of_entities(trained_ner):
    """doc.set_ents(blocked=...) marks tokens no entity may cover: spaCy's NER keeps them so; ours too."""
    nlp, ner = trained_ner
    doc = nlp.make_doc("Peter Blackburn met officials of the European Commission in Brussels on Monday .")
    plain = [(e.start, e.end) for e in ner(doc.copy()).ents]
    assert plain, "the trained NER should find an entity here"
    start = plain[0][0]
    doc.set_ents([], blocked=[Span(doc, start, start + 1)], default="missing")
    out = ner(doc)
    assert all(not (e.start <= start < e.end) for e in out.ents)
    assert out[start].ent_iob_ == "B" and out[start].ent_type_ == ""  # still blocked, as the built-in leaves it


def _retagged(refs, word, tag):
    """Copies of refs where every `word` (case as given) carries `tag`."""
    out = []
    for ref in refs:
        ref = ref.copy()
        for t in ref:
            if t.text == word:
                t.tag_ = tag
        out.append(ref)
    return out


@pytest.mark.parametrize("tag,learned", [("!DT", "not DT"), ("", "DT")])
def test_tagger_learns_negative_tags(ewt_refs, tag, learned):
    """A gold tag "!DT" means "anything but DT" (spaCy's neg_prefix). Trained
    with every "the" annotated "!DT", the tagger does not tag "the" DT; with
    the same tags missing, it generalizes DT to "the" from "The" (they share
    the lowercase form). "!DT" never becomes a label."""
    nlp, tagger = train_tagger(_retagged(ewt_refs["train"][:150], "the", tag), epochs=2)
    doc = nlp("I saw the dog near the house .")
    assert (doc[2].tag_ == "DT") == (learned == "DT") and (doc[5].tag_ == "DT") == (learned == "DT")
    assert doc[3].tag_ == "NN" and doc[6].tag_ == "NN"
    assert "DT" in tagger.labels and not any(label.startswith("!") for label in tagger.labels)
    dev = [eg for eg in to_examples(nlp, ewt_refs["dev"][:40])]
    the = [t.tag_ for eg in dev for t in nlp(eg.reference.text) if t.text == "the"]
    share = sum(t == "DT" for t in the) / len(the)
    assert share == 0.0 if learned != "DT" else share > 0.9


def _loc_as_incorrect(refs, key):
    """Copies of refs where the LOC entities of every other doc are unannotated and listed in spans[key]."""
    from spacy.tokens import Doc

    out = []
    for n, ref in enumerate(refs):
        ref = ref.copy()
        if n % 2:
            wrong = [e for e in ref.ents if e.label_ == "LOC"]
            keep = [e for e in ref.ents if e.label_ != "LOC"]
            ref.set_ents(keep, missing=wrong, default="unmodified")
            ref.spans[key] = [Span(ref, e.start, e.end, "LOC") for e in wrong]
        out.append(ref)
    assert isinstance(out[0], Doc)
    return out


@pytest.mark.parametrize("key", ["incorrect_spans", None])
def test_ner_learns_incorrect_spans(conll_refs, key):
    """spaCy's incorrect_spans_key: spans known not to be entities of their label. With LOC entities of half the
    docs left unannotated and listed as incorrect LOC spans, the NER learns not to tag those exact spans LOC
    (LOC still comes from the other half); with the same spans merely unannotated it tags most of them LOC."""
    from spacy.training import Example

    from conftest import bare

    refs = _loc_as_incorrect(conll_refs["train"], "incorrect_spans")
    nlp = spacy.blank("en", vocab=refs[0].vocab)
    ner = nlp.add_pipe("sparse_ner", config={"incorrect_spans_key": key})
    train = [Example(bare(r), r) for r in refs]
    nlp.initialize(lambda: train)
    for _ in range(4):
        for i in range(0, len(train), 8):
            nlp.update(train[i:i + 8])
    assert "LOC" in ner.labels
    wrong = hits = 0
    for ref in refs[1::2]:
        doc = nlp(bare(ref))
        predicted = {(e.start, e.end, e.label_) for e in doc.ents}
        for span in ref.spans["incorrect_spans"]:
            wrong += 1
            hits += (span.start, span.end, "LOC") in predicted
    assert wrong > 100
    if key:
        assert hits / wrong < 0.25, (hits, wrong)  # 116 of 634 when written (552 without the key)
    else:
        assert hits / wrong > 0.75, (hits, wrong)
    # the LOC entities of the other half are still found
    found = total = 0
    for ref in refs[0::2]:
        doc = nlp(bare(ref))
        predicted = {(e.start, e.end, e.label_) for e in doc.ents}
        gold = [(e.start, e.end, e.label_) for e in ref.ents if e.label_ == "LOC"]
        total += len(gold)
        found += sum(g in predicted for g in gold)
    assert found / total > 0.6
    if key:
        round_trip = spacy.blank("en")
        round_trip.add_pipe("sparse_ner", config={"incorrect_spans_key": key}).from_bytes(ner.to_bytes())
        assert round_trip.get_pipe("sparse_ner").cfg["incorrect_spans_key"] == key


@pytest.mark.parametrize("ours,builtin,label", PAIRS)
@pytest.mark.parametrize("bad", [None, "examples", lambda: ["not an Example"], lambda: None])
def test_initialize_rejects_bad_get_examples_like_the_builtin(ours, builtin, label, bad):
    """spaCy's components raise TypeError for a get_examples that is not a callable giving Examples; ours too."""
    errors = []
    for factory in (builtin, ours):
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe(factory)
        with pytest.raises(Exception) as err:
            pipe.initialize(bad, nlp=nlp)
        errors.append(type(err.value))
    assert errors[0] is errors[1] is TypeError


@pytest.mark.parametrize("name", ["sparse_tagger", "sparse_parser", "sparse_senter", "sparse_morphologizer"])
def test_set_annotations_writes_on_the_docs_it_is_given(name):
    """`set_annotations(docs, predict(copies))` annotates `docs`, as spaCy's components do, and leaves the
    copies `predict` saw as they were."""
    import spacy_sparse

    nlp = spacy_sparse.load_default()
    pipe = nlp.get_pipe(name)
    docs = [nlp.make_doc(t) for t in ["The ferry left at dawn. Nobody saw it go.", "Send me the figures\nby Friday."]]
    for before in nlp.pipe_names[:nlp.pipe_names.index(name)]:  # what the component reads
        docs = [nlp.get_pipe(before)(d) for d in docs]
    expected = [pipe(d.copy()) for d in docs]
    copies = [d.copy() for d in docs]
    untouched = [c.to_bytes() for c in copies]
    pipe.set_annotations(docs, pipe.predict(copies))
    attr = {"sparse_tagger": "tag_", "sparse_parser": "dep_", "sparse_senter": "is_sent_start",
            "sparse_morphologizer": "morph"}[name]
    for doc, want in zip(docs, expected):
        assert [str(getattr(t, attr)) for t in doc] == [str(getattr(t, attr)) for t in want]
    assert [c.to_bytes() for c in copies] == untouched


def test_the_old_negative_entity_notation_is_refused_as_spacy_refuses_it():
    nlp = spacy.blank("en")
    ner = nlp.add_pipe("sparse_ner")
    ner.add_label("PERSON")
    nlp.initialize()
    doc = nlp.make_doc("Who is Shaka Khan?")
    example = Example.from_dict(doc, {"entities": [(7, 17, "!PERSON")]})
    with pytest.raises(ValueError, match="negative sample"):
        nlp.update([example])
    builtin = spacy.blank("en")
    builtin.add_pipe("ner").add_label("PERSON")
    builtin.initialize()
    with pytest.raises(ValueError):
        builtin.update([Example.from_dict(builtin.make_doc("Who is Shaka Khan?"), {"entities": [(7, 17, "!PERSON")]})])


def test_label_sets_no_model_file_holds_are_refused_at_initialize(ewt_refs):
    """A label set the loader would refuse is refused when the component is
    made, not after training saved it; the largest allowed tag set costs
    memory linear in its size (no label x label mask)."""
    import tracemalloc

    from spacy_sparse import codec
    from spacy_sparse.pipeline.ner import MAX_ENTITY_TYPES

    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("sparse_tagger")
    train = to_examples(nlp, ewt_refs["train"][:5])
    with pytest.raises(ValueError, match="at most 65,535 labels"):
        tagger.initialize(lambda: train, nlp=nlp, labels=[f"T{i}" for i in range(codec.MAX_LABELS + 1)])
    tracemalloc.start()
    try:
        tagger.initialize(lambda: train, nlp=nlp, labels=[f"T{i}" for i in range(codec.MAX_LABELS)])
        nlp.update(train)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200e6, peak
    assert len(nlp(ewt_refs["dev"][0].text)) > 0
    ner = spacy.blank("en").add_pipe("sparse_ner")
    with pytest.raises(ValueError, match="at most 1,000 entity types"):
        ner.initialize(lambda: train, labels=[f"E{i}" for i in range(MAX_ENTITY_TYPES + 1)])
