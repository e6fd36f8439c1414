"""Whitespace tokens (a line break, a second space) as spaCy's own components treat them, and raw text laid out
in lines (pipeline/views.py, readers.in_lines)."""
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from conftest import EWT, need, read_conllu_slice

import spacy_sparse
from spacy_sparse.bench import lines_sentence_f
from spacy_sparse.pipeline.batching import DocColumns
from spacy_sparse.pipeline.views import GAP_BLANK_LINE, GAP_KEY, GAP_LINE, GAP_NONE, GAP_SPACES, Views
from spacy_sparse.readers import PARAGRAPHS_KEY, in_lines, mark_paragraphs


@pytest.fixture(scope="module")
def full():
    return spacy_sparse.load_default()


@pytest.fixture(scope="module")
def dev_texts():
    need(EWT)
    return [d.text for d in read_conllu_slice(EWT / "en_ewt-ud-dev.conllu", 200)]


def words_of(doc):
    """Per word (whitespace tokens left out): text, tag, POS, label, head's word index, sentence start."""
    index = {t.i: k for k, t in enumerate(t for t in doc if not t.is_space)}
    return [(t.text, t.tag_, t.pos_, t.dep_, index[t.head.i], t.is_sent_start) for t in doc if not t.is_space]


def test_a_second_space_changes_nothing_for_the_words(full, dev_texts):
    """Two spaces are whitespace of the same class as one: every word gets what it got before."""
    for text in dev_texts:
        single = full(text)
        double = full(text.replace(" ", "  "))
        assert sum(t.is_space for t in double) > 0
        assert words_of(double) == words_of(single)


def test_whitespace_tokens_get_spacys_values(full):
    doc = full("Thanks for the help\n\nBest regards\nJohn   Smith  ")
    space = [t for t in doc if t.is_space]
    assert len(space) == 4
    for t in space:
        assert (t.tag_, t.pos_, t.dep_) == ("_SP", "SPACE", "dep")
        assert t.head.i == t.i - 1 and not t.head.is_space  # on the word before
        assert not t.is_sent_start
    # trees stay well formed: every sentence has one root, and whitespace belongs to the sentence before it
    for sent in doc.sents:
        assert sum(t.head == t for t in sent) == 1
        assert not sent[0].is_space
    lead = full("\n  Hello there. Bye.")
    assert lead[0].is_space and lead[0].is_sent_start and lead[0].head.i == 1
    assert [t.text for t in list(lead.sents)[0]] == ["\n  ", "Hello", "there", "."]


@pytest.mark.parametrize("text", ["", " ", "\n\n", "  \n \t"])
def test_empty_and_whitespace_only_docs_pass_through(full, text):
    doc = full(text)
    assert doc.text == text
    assert all(t.tag_ == "_SP" and t.pos_ == "SPACE" for t in doc)
    assert len(list(doc.sents)) == (1 if len(doc) else 0)


def test_views_fold_whitespace_into_gap_classes(full):
    doc = full.make_doc("One two  three\nfour\n\nfive.\r\nsix")
    views = Views([doc])
    view = views.docs[0]
    assert [t.text for t in view] == ["One", "two", "three", "four", "five", ".", "six"]
    assert view.user_data[GAP_KEY].tolist() == [GAP_SPACES, GAP_SPACES, GAP_LINE, GAP_BLANK_LINE, GAP_NONE,
                                                GAP_LINE, GAP_NONE]
    plain = full.make_doc("No extra whitespace here.")
    assert Views([plain]).docs[0] is plain  # a doc without whitespace tokens is its own view


def test_a_start_set_on_whitespace_stays_and_the_whitespace_opens_its_sentence(full):
    doc = full.make_doc("First part here\n\nsecond part here")
    doc[3].is_sent_start = True  # the blank line
    for t in doc[1:]:
        if t.i != 3:
            t.is_sent_start = False
    done = full(doc)
    assert [t.i for t in done if t.is_sent_start] == [0, 3]
    assert done[3].head.i == 4 and done[3].dep_ == "dep"
    # a start set on the first word after leading whitespace: the whitespace is a sentence of its own
    doc = full.make_doc("  Words follow here.")
    doc[1].is_sent_start = True
    done = full(doc)
    assert [t.i for t in done if t.is_sent_start] == [0, 1]
    assert done[0].head.i == 0


def test_ner_entities_keep_inner_whitespace_and_none_at_their_edges(trained_ner, conll_refs):
    nlp, ner = trained_ner
    checked = 0
    for ref in conll_refs["dev"]:
        plain = nlp(ref.text)
        for ent in plain.ents:
            if len(ent) < 2:
                continue
            # a second space inside the entity and around it: the same words, the same entity
            text = (ref.text[:ent.start_char] + " " + ent.text.replace(" ", "  ", 1) + "  "
                    + ref.text[ent.end_char:])
            doc = nlp(text)
            got = [(e.text.split(), e.label_) for e in doc.ents]
            assert (ent.text.split(), ent.label_) in got
            for e in doc.ents:
                assert not e[0].is_space and not e[-1].is_space
            checked += 1
            break
        if checked >= 10:
            break
    assert checked >= 10


def dev_with_paragraphs(n_sents):
    """The first n_sents sentences of EWT dev as spaCy's converter makes them, with their paragraph starts; and
    the CoNLL-U blocks of those sentences."""
    from spacy.training.converters import conllu_to_docs

    need(EWT)
    text = (EWT / "en_ewt-ud-dev.conllu").read_text(encoding="utf8")
    blocks = [b for b in text.split("\n\n") if b.strip()][:n_sents]
    conllu = "\n\n".join(blocks) + "\n\n"
    return mark_paragraphs(list(conllu_to_docs(conllu, n_sents=10, no_print=True)), conllu), blocks


def test_paragraphs_are_kept_and_laid_out_in_lines(tmp_path):
    docs, blocks = dev_with_paragraphs(300)
    starts = sum(len(d.user_data[PARAGRAPHS_KEY]) for d in docs)
    # every paragraph or document start but those that open a doc of 10 sentences
    flagged = sum(("# newpar" in b or "# newdoc" in b) for k, b in enumerate(blocks) if k % 10)
    assert starts == flagged > 0
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "dev.spacy")
    nlp = spacy.blank("en")
    back = list(DocBin().from_disk(tmp_path / "dev.spacy").get_docs(nlp.vocab))
    assert [list(d.user_data[PARAGRAPHS_KEY]) for d in back] == [list(d.user_data[PARAGRAPHS_KEY]) for d in docs]
    for ref in back:
        laid = in_lines(ref)
        assert laid.split() == ref.text.split()
        assert max(len(line) for line in laid.split("\n")) <= 72 or any(len(t) > 60 for t in ref.text.split())
        assert laid.count("\n\n") == len(ref.user_data[PARAGRAPHS_KEY])
        eg = Example(nlp.make_doc(laid), ref)
        assert sum(eg.alignment.x2y.lengths == 1) >= 0.97 * len(ref)


def test_the_full_pipeline_reads_text_in_lines_about_as_well(full):
    """EWT dev laid out in lines (blank lines between paragraphs, wrapped at 72): tags and LAS within a point of
    the same text on one line, sentence boundaries better (the segmenter learned the blank lines)."""
    from spacy.scorer import Scorer

    refs, _ = dev_with_paragraphs(500)
    scores = {}
    for layout, texts in (("line", [r.text for r in refs]), ("lines", [in_lines(r) for r in refs])):
        docs = list(full.pipe(texts))
        egs = [Example(p, r) for p, r in zip(docs, refs)]
        scores[layout] = {**Scorer.score_token_attr(egs, "tag"),
                          **Scorer.score_deps(egs, "dep", ignore_labels=("p", "punct")),
                          # on the words: spaCy's scorer matches sentences by text, line breaks and all
                          "sents_f": lines_sentence_f(docs, refs)}
    assert scores["lines"]["tag_acc"] > scores["line"]["tag_acc"] - 0.01
    assert scores["lines"]["dep_las"] > scores["line"]["dep_las"] - 0.01
    assert scores["lines"]["sents_f"] > scores["line"]["sents_f"] + 0.01


def test_sentences_of_text_in_lines_are_scored_on_their_words():
    """A sentence with a line break inside is found when its words are; a word hung on whitespace (as a CNN
    parser may hang one) does not stop the scoring."""
    from spacy.scorer import Scorer

    nlp = spacy.blank("en")
    ref = Doc(nlp.vocab, words=["It", "rained", "all", "day", ".", "We", "stayed", "in", "."],
              spaces=[True] * 8 + [False], sent_starts=[1, 0, 0, 0, 0, 1, 0, 0, 0])
    pred = nlp.make_doc("It rained all\nday. We stayed in.")
    heads = [1, 1, 1, 1, 2, 1, 7, 7, 7, 7]  # "day" hangs on the line break
    pred = Doc(nlp.vocab, words=[t.text for t in pred], spaces=[bool(t.whitespace_) for t in pred], heads=heads,
               deps=["dep"] * len(heads))
    assert [t.is_sent_start for t in pred] == [True] + [False] * 5 + [True, False, False, False]
    eg = Example(pred, ref)
    assert Scorer.score_spans([eg], "sents")["sents_f"] == pytest.approx(2 / 3)  # spaCy's scorer misses one
    assert lines_sentence_f([pred], [ref]) == 1.0


def test_views_find_whitespace_through_the_lexicon_as_spacy_does(full, dev_texts):
    """A component's views find whitespace tokens by the lexicon's is_space column; the views, their columns and
    the lexicon rows the batch reuses match spaCy's IS_SPACE flag and a fresh lookup of the views' words."""
    tagger = full.get_pipe("sparse_tagger")
    texts = [t.replace(" ", "  ", 3).replace(". ", ".\n\n") for t in dev_texts[:60]] + ["\t", "", "a \u3000 b", " x"]
    docs = [full.make_doc(t) for t in texts]
    assert sum(t.is_space for d in docs for t in d) > 100
    by_lexicon, by_flag = Views(docs, (), tagger.lexicon), Views(docs)
    assert [None if k is None else k.tolist() for k in by_lexicon.keep] == \
        [None if k is None else k.tolist() for k in by_flag.keep]
    assert [[t.text for t in v] for v in by_lexicon.docs] == [[t.text for t in v] for v in by_flag.docs]
    found = by_lexicon.columns.looked_up[1]
    fresh, fresh_values, _ = tagger.lexicon.lookup(by_lexicon.columns.table[:, 0])
    assert (found.values[found.rows] == fresh_values[fresh]).all()
    assert found.spaces == 0 and found.top == found.rows.max()
    # the lookup of a whole batch counts its whitespace tokens and finds its highest row as the rows say
    whole = tagger.lexicon.find_words(DocColumns(docs).table)
    assert whole.spaces == sum(t.is_space for d in docs for t in d) > 100
    assert whole.top == whole.rows.max() and (whole.rows >= 0).all()
    assert tagger.lexicon.find_words(DocColumns([]).table).top == -1


def annotations(doc):
    return [(t.text, t.tag_, t.pos_, t.dep_, t.head.i, t.is_sent_start, t.lemma_, str(t.morph)) for t in doc]


def test_components_share_a_docs_view_and_read_it_as_a_new_one(full, dev_texts, monkeypatch):
    """The next component reuses the view the last one made of a doc (views.SHARED_VIEWS); every annotation is
    what views made afresh for each component give, also when a component in between changes the doc: a
    retokenized doc gets a new view, and tags changed on the doc reach the view."""
    from spacy.language import Language

    from spacy_sparse.pipeline import views as views_module

    texts = [t.replace(". ", ".\n\n").replace(", ", ",\n") for t in dev_texts[:40]]
    made = []
    real_view = views_module._view
    monkeypatch.setattr(views_module, "_view", lambda doc, keep: made.append(1) or real_view(doc, keep))
    shared = [annotations(d) for d in full.pipe(texts)]
    spaced = sum(any(t.is_space for t in full.make_doc(t)) for t in texts)
    assert spaced >= 20 and len(made) == spaced  # one view per doc, for all five components that read views
    monkeypatch.setattr(views_module.SHARED_VIEWS, "get", lambda doc, words: None)
    assert [annotations(d) for d in full.pipe(texts)] == shared

    def retag(doc):
        for token in doc:
            if token.tag_ == "NN":
                token.tag_ = "NNS"
        return doc

    def merge(doc):
        if len(doc) > 1:
            with doc.retokenize() as retokenizer:  # the doc's first two tokens become one
                retokenizer.merge(doc[0:2])
        return doc

    for name, step, after in (("test_retag", retag, "sparse_tagger"), ("test_merge", merge, "sparse_parser")):
        if name not in Language.factories:
            Language.component(name, func=step)
        full.add_pipe(name, after=after)
    try:
        fresh = [annotations(d) for d in full.pipe(texts)]
        monkeypatch.undo()
        assert [annotations(d) for d in full.pipe(texts)] == fresh
    finally:
        full.remove_pipe("test_retag")
        full.remove_pipe("test_merge")


def test_shared_views_keep_no_doc_alive(full):
    import gc

    from spacy_sparse.pipeline.views import SHARED_VIEWS

    doc = full("A first line\nand a second one\n\nthen a paragraph.")
    assert SHARED_VIEWS._entries
    key = id(doc)
    assert key in SHARED_VIEWS._entries
    del doc
    gc.collect()
    assert key not in SHARED_VIEWS._entries


def test_entity_marks_without_types_pass_through_views(full):
    """doc.ents = [] marks every token O with no entity type (what an NER that found nothing leaves)."""
    doc = full.make_doc("Hello there.\n\nA new  line here.")
    doc.ents = []
    doc = full(doc)
    assert [t.tag_ for t in doc if t.is_space] == ["_SP", "_SP"] and all(t.ent_iob_ == "O" for t in doc)


def test_threads_labelling_text_with_line_breaks_get_what_one_thread_gets(full, dev_texts):
    """Threads share the view cache and the kernels' check memories (runtime/compiled.py): each thread's own
    docs, with whitespace tokens, get exactly what one thread gives them, with nlp.pipe and with nlp(text)."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [t.replace(". ", ".\n").replace(", ", ",  ") for t in dev_texts[:48]]
    expected = [annotations(d) for d in full.pipe(texts)]

    def work(k):
        mine = texts[k::4]
        piped = [annotations(d) for d in full.pipe(mine, batch_size=3)]
        called = [annotations(full(t)) for t in mine]
        return piped, called

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for k, (piped, called) in enumerate(results):
        assert piped == expected[k::4] and called == expected[k::4]
