"""The beam parser (sparse_parser with beam_width > 1): decoding over a greedy model, global training that
fits what it learns from, save/load, threads and bad settings."""
import numpy as np
import pytest
import spacy
from spacy.training import Example

from spacy.tokens import Doc

from spacy_sparse.kernels.layout import MAX_BEAM_TOKENS
from spacy_sparse.pipeline.parser import beam_gap

from test_parser import check_trees, plain, tagged, train_parser


@pytest.fixture(scope="module")
def greedy(trained, ewt_refs):
    """A greedy parser trained on 300 EWT sentences, saved and loaded."""
    nlp, parser = train_parser(trained[0], ewt_refs["train"][:30])
    parser.from_bytes(parser.to_bytes())
    return nlp, parser


def parses(parser, docs):
    return [(t.head.i, t.dep_) for d in parser.pipe([d.copy() for d in docs]) for t in d]


def las(parser, docs, refs):
    out = list(parser.pipe([d.copy() for d in docs]))
    check_trees(out)
    return parser.score([Example(d, r) for d, r in zip(out, refs)])["dep_las"]


@pytest.mark.full  # the beam decoder's first compile takes about 20 s: the slow tier's (CI runs it)
def test_a_beam_that_keeps_only_ties_parses_as_the_greedy_parser(greedy, trained, ewt_refs):
    # density 1: every candidate but the best is dropped, so the beam is one item scored as the greedy parser
    # scores a state (all templates when the margin does not stop it): the same parses, through other code
    _, parser = greedy
    for sents in (True, False):
        docs = tagged(trained[0], ewt_refs["dev"][:20], sents)
        for margin in (None, 20.0):
            parser.margin = margin
            parser.cfg["beam_width"], parser.cfg["beam_density"] = 1, 0.0
            first = parses(parser, docs)
            parser.cfg["beam_width"], parser.cfg["beam_density"] = 4, 1.0
            assert parses(parser, docs) == first
    parser.margin = None
    parser.cfg["beam_width"], parser.cfg["beam_density"] = 1, 0.0


@pytest.mark.full
def test_beam_decoding_gives_trees_and_keeps_given_sentences(greedy, trained, ewt_refs):
    _, parser = greedy
    refs = ewt_refs["dev"][:20]
    parser.cfg["beam_width"] = 4
    try:
        for sents in (True, False):
            docs = list(parser.pipe(tagged(trained[0], refs, sents)))
            check_trees(docs)
            if sents:
                for doc, ref in zip(docs, refs):
                    assert [s.start for s in doc.sents] == [s.start for s in ref.sents]
        assert parser.templates_per_token > 0
    finally:
        parser.cfg["beam_width"] = 1


@pytest.mark.full
def test_edge_docs_with_a_beam(greedy):
    # a doc beyond MAX_BEAM_TOKENS (parsed whole: no sentence starts) takes one item, in bounded time
    nlp, parser = greedy
    vocab = nlp.vocab
    long_doc = Doc(vocab, words=("The committee met on Tuesday and approved the plan . " * 300).split())
    docs = [Doc(vocab, words=[]), Doc(vocab, words=["Hello"]), Doc(vocab, words=["  ", "\n", "ok", " "]),
            Doc(vocab, words=["Yes", "."], sent_starts=[True, True]), long_doc,
            Doc(vocab, words=("Dogs bark . " * 100).split())]
    assert len(long_doc) > MAX_BEAM_TOKENS
    greedy_long = parses(parser, [long_doc])
    parser.cfg["beam_width"] = 4
    try:
        docs = list(parser.pipe(docs))
    finally:
        parser.cfg["beam_width"] = 1
    assert len(docs[0]) == 0 and docs[1][0].head.i == 0
    check_trees(docs[1:])
    assert len(list(docs[3].sents)) == 2
    assert [(t.head.i, t.dep_) for t in long_doc] == greedy_long  # one item: the greedy parser's choices


def beam_trained(tagger_nlp, refs, epochs, seed=0, **config):
    nlp = spacy.blank("en", vocab=tagger_nlp.vocab)
    parser = nlp.add_pipe("sparse_parser", config={"beam_width": 4, "min_updates": 1, "whole_docs": 0.5, **config})
    train = [Example(d, r) for d, r in zip(tagged(tagger_nlp, refs), refs)]
    parser.initialize(lambda: train, nlp=nlp)
    rng = np.random.RandomState(seed)
    for _ in range(epochs):
        order = rng.permutation(len(train))
        for i in range(0, len(train), 8):
            nlp.update([train[k] for k in order[i:i + 8]])
    return nlp, parser


@pytest.mark.full
def test_global_training_fits_its_training_docs(trained, ewt_refs):
    # max-violation updates with restarts go on until the beam's best parse of each training doc (sentences
    # given or not) is its gold tree: on a handful of docs nearly every arc
    refs = ewt_refs["train"][:6]
    _, parser = beam_trained(trained[0], refs, 25)
    parser.from_bytes(parser.to_bytes())
    for sents in (True, False):
        assert las(parser, tagged(trained[0], refs, sents), refs) > 0.97


@pytest.mark.full
def test_global_training_learns_to_parse_unseen_text(trained, ewt_refs):
    # with cost-augmented search (beam_margin), as the recipe trains
    refs = ewt_refs["dev"][:30]
    _, parser = beam_trained(trained[0], ewt_refs["train"][:60], 3, beam_margin=10.0)
    parser.from_bytes(parser.to_bytes())
    assert las(parser, tagged(trained[0], refs), refs) > 0.62


@pytest.mark.full
def test_a_saved_beam_parser_parses_the_same_loaded_in_threads_and_in_processes(greedy, trained, ewt_refs, tmp_path):
    nlp, parser = greedy
    docs = tagged(trained[0], ewt_refs["dev"][:15], sents=False)
    parser.cfg["beam_width"] = 4
    try:
        first = parses(parser, docs)
        nlp.to_disk(tmp_path / "beam")
    finally:
        parser.cfg["beam_width"] = 1
    loaded_nlp = spacy.load(tmp_path / "beam")
    loaded = loaded_nlp.get_pipe("sparse_parser")
    assert loaded.cfg["beam_width"] == 4
    assert parses(loaded, docs) == first
    loaded.n_threads = 2
    assert parses(loaded, docs) == first
    loaded.n_threads = 1
    in_processes = loaded_nlp.pipe([d.copy() for d in docs], n_process=2, batch_size=4)
    assert [(t.head.i, t.dep_) for d in in_processes for t in d] == first


@pytest.mark.full
def test_beam_training_is_deterministic_and_save_load_keeps_the_beam(trained, ewt_refs, tmp_path):
    refs = ewt_refs["train"][:12]
    nlp, parser = beam_trained(trained[0], refs, 2)
    _, again = beam_trained(trained[0], refs, 2)
    assert parser.to_bytes() == again.to_bytes()
    docs = tagged(trained[0], ewt_refs["dev"][:15], sents=False)
    first = parses(parser, docs)
    nlp.to_disk(tmp_path / "beam")
    loaded = spacy.load(tmp_path / "beam").get_pipe("sparse_parser")
    assert loaded.cfg["beam_width"] == 4
    assert parses(loaded, docs) == first


def test_bad_beam_settings_fail_clearly():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="beam_width"):
        nlp.add_pipe("sparse_parser", config={"beam_width": 0})
    with pytest.raises(ValueError, match="beam_density"):
        nlp.add_pipe("sparse_parser", name="p2", config={"beam_density": 1.5})
    with pytest.raises(ValueError, match="beam_density"):
        nlp.add_pipe("sparse_parser", name="p3", config={"beam_density": -0.1})
    with pytest.raises(ValueError, match="beam_margin"):
        nlp.add_pipe("sparse_parser", name="p4", config={"beam_margin": -1.0})
    assert beam_gap(0.0) == float("inf") and beam_gap(1.0) == 0.0


@pytest.mark.full
def test_a_doc_too_long_for_a_beam_is_learned_greedily(trained, ewt_refs):
    k = 1
    while sum(len(r) for r in ewt_refs["train"][:k]) <= MAX_BEAM_TOKENS:
        k += 1
    long_ref = Doc.from_docs(ewt_refs["train"][:k])
    nlp, parser = beam_trained(trained[0], [long_ref] + ewt_refs["train"][k:k + 4], 2)
    assert parser._n_batches > 0 and parser.sparse is not None


def test_beam_training_refuses_split_actions(trained, ewt_refs):
    nlp = spacy.blank("en", vocab=trained[0].vocab)
    templates = ["lower@S0", "lower@B0", "move@S0+tag@S0"]
    parser = nlp.add_pipe("sparse_parser", config={"beam_width": 2, "templates": templates})
    refs = ewt_refs["train"][:2]
    train = [Example(plain(nlp, r), r) for r in refs]
    parser.initialize(lambda: train, nlp=nlp)
    with pytest.raises(ValueError, match="joint actions"):
        nlp.update(train)
