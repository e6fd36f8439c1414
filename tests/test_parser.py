"""sparse_parser on UD English-EWT: the oracle, well-formed trees for any
weights, real LAS, save/load, edge docs and bad input."""
import numpy as np
import pytest
import spacy
from spacy.pipeline._parser_internals import nonproj
from spacy.tokens import Doc
from spacy.training import Example

from spacy_sparse.codes import AT_ROOT
from spacy_sparse.kernels.parser import oracle_parse
from spacy_sparse.layouts import compress_rows
from spacy_sparse.model import SparseLinearModel
from spacy_sparse.pipeline.batching import DocBatch
from spacy_sparse.pipeline.parser import gold_children

from spacy_sparse.readers import bare_copy


def plain(nlp, ref, sents=True):
    """The tokens of ref (and its sentence starts) in nlp's vocab."""
    return bare_copy(ref, sents, nlp.vocab)


def tagged(tagger_nlp, refs, sents=True):
    """Bare copies of refs with the tags of a trained sparse_tagger."""
    tagger = tagger_nlp.get_pipe("sparse_tagger")
    return list(tagger.pipe([plain(tagger_nlp, r, sents) for r in refs]))


def train_parser(tagger_nlp, refs, **config):
    """A sparse_parser trained for 3 epochs on refs with tags predicted by
    the tagger of tagger_nlp."""
    nlp = spacy.blank("en", vocab=tagger_nlp.vocab)
    parser = nlp.add_pipe("sparse_parser", config={"explore_after": 20000, "whole_docs": 0.5, **config})
    train = [Example(d, r) for d, r in zip(tagged(tagger_nlp, refs), refs)]
    parser.initialize(lambda: train, nlp=nlp)
    for _ in range(3):
        for i in range(0, len(train), 20):
            nlp.update(train[i:i + 20])
    return nlp, parser


def saved_and_loaded(trained_pair):
    """The pair with its parser saved and loaded again: what a user loads,
    without the learner's dense training rows (gigabytes held for the
    module's life otherwise)."""
    nlp, parser = trained_pair
    parser.from_bytes(parser.to_bytes())
    return nlp, parser


@pytest.fixture(scope="module")
def trained_parser(trained, ewt_refs):
    """A sparse_parser trained on the 3,000 EWT sentences of the session; its features count after 4 updates (the
    shipped recipe's after 12), so its dense training rows stay small."""
    return saved_and_loaded(train_parser(trained[0], ewt_refs["train"], min_updates=4))


def check_trees(docs):
    """Every sentence one tree: each token's head in its sentence, one
    root per sentence, no cycles."""
    for doc in docs:
        assert doc.has_annotation("DEP")
        for sent in doc.sents:
            roots = [t for t in sent if t.head.i == t.i]
            assert len(roots) == 1
            for t in sent:
                assert sent.start <= t.head.i < sent.end
                seen, node = 0, t
                while node.head.i != node.i:
                    node = node.head
                    seen += 1
                    assert seen <= len(sent), "cycle"


def gold_arrays(parser, examples, sents=True):
    batch, _, _, single = parser._state_inputs([eg.predicted for eg in examples])
    head, lab = parser._gold(examples, batch)
    return batch, single, head, lab


@pytest.mark.parametrize("sents", [True, False])
def test_static_oracle_rebuilds_every_projectivized_tree(trained_parser, ewt_refs, sents):
    """With gold sentences (one tree each) and on whole docs (several
    trees, the parser's own segmentation), following the oracle rebuilds
    the lifted gold trees exactly, labels included."""
    _, parser = trained_parser
    examples = [Example(plain(parser, r, sents), r) for r in ewt_refs["dev"]]
    batch, single, head, lab = gold_arrays(parser, examples)
    assert bool(single.all()) == sents
    ptr, idx = gold_children(head)
    out_h = np.zeros(batch.n_tokens, dtype=np.int64)
    out_l = np.zeros(batch.n_tokens, dtype=np.int64)
    cost = oracle_parse((batch.seg_off, single), (head, lab, ptr, idx, parser._arc_col, parser._root_col),
                        parser._kind, parser._alab, (out_h, out_l))
    assert cost == 0
    want = np.where(head == AT_ROOT, np.arange(batch.n_tokens), head)
    assert np.array_equal(out_h, want)
    known = lab >= 0
    assert known.mean() > 0.99
    assert np.array_equal(out_l[known], lab[known])


def test_lifted_trees_are_the_nonprojective_ones(ewt_refs):
    refs = [r for r in ewt_refs["train"] if nonproj.is_nonproj_tree([t.head.i for t in r])]
    assert refs, "the slice should hold non-projective trees"
    heads, deps = Example(bare_copy(refs[0], True), refs[0]).get_aligned_parse(projectivize=True)
    assert any(nonproj.DELIMITER in d for d in deps)
    assert not nonproj.is_nonproj_tree(heads)


def test_training_on_an_ewt_slice_reaches_real_las(trained_parser, trained, ewt_refs):
    nlp, parser = trained_parser
    refs = ewt_refs["dev"]
    for sents, floor in ((True, 0.72), (False, 0.68)):
        docs = list(parser.pipe(tagged(trained[0], refs, sents)))
        scores = parser.score([Example(d, r) for d, r in zip(docs, refs)])
        assert scores["dep_las"] > floor, (sents, scores["dep_las"])
        assert scores["dep_uas"] > scores["dep_las"]
        if not sents:  # the parser found sentence boundaries by itself
            assert scores["sents_f"] > 0.35, scores["sents_f"]
        check_trees(docs)
    assert "root" in {d.lower() for d in parser.labels}


@pytest.mark.parametrize("seed", [0, 1])
def test_trees_are_well_formed_whatever_the_weights(trained_parser, trained, ewt_refs, seed):
    _, parser = trained_parser
    model = parser.sparse
    saved = model._compact
    rng = np.random.default_rng(seed)
    # large random weights on about 8 labels per feature (a table full of them would take gigabytes)
    weights = np.zeros((int(model.n_rows[0]), model.n_labels), dtype=np.float32)
    weights.flat[rng.integers(0, weights.size, size=8 * weights.shape[0])] = rng.standard_normal(8 * weights.shape[0]) * 20
    model._compact = compress_rows([weights])
    del weights
    model._packed = None
    try:
        for margin in (None, 3.0):
            parser.margin = margin
            for sents in (True, False):
                refs = ewt_refs["dev"][:12]
                docs = list(parser.pipe(tagged(trained[0], refs, sents)))
                check_trees(docs)
                if sents:  # given sentence boundaries are kept
                    for doc, ref in zip(docs, refs):
                        assert [s.start for s in doc.sents] == [s.start for s in ref.sents]
    finally:
        model._compact = saved
        model._packed = None
        parser.margin = None


def test_margin_scores_fewer_templates(trained_parser, trained, ewt_refs):
    _, parser = trained_parser
    docs = tagged(trained[0], ewt_refs["dev"][:20])
    used = {}
    for margin, decay in ((None, 1.0), (10.0, 1.0), (10.0, 0.9)):
        parser.margin, parser.margin_decay = margin, decay
        parser.reset_usage()
        list(parser.pipe([d.copy() for d in docs]))
        used[margin, decay] = parser.templates_per_token
    parser.margin, parser.margin_decay = None, 1.0
    # two decisions per token, each scoring every template, but for forced moves (lone_valid), which score none
    assert 1.6 * len(parser.sparse.templates) < used[None, 1.0] < 2 * len(parser.sparse.templates)
    parser.reset_usage()
    list(parser.pipe([tagged(trained[0], ewt_refs["dev"][:1])[0][:1].as_doc()]))
    assert parser.templates_per_token == 0  # one token: a shift onto the empty stack, then its root
    assert used[10.0, 1.0] < 0.6 * used[None, 1.0]
    # a decaying margin stops the decisions that never reach the full one
    assert used[10.0, 0.9] < used[10.0, 1.0]


def test_save_load_gives_identical_parses(trained_parser, trained, ewt_refs, tmp_path):
    nlp, parser = trained_parser
    docs = tagged(trained[0], ewt_refs["dev"][:15], sents=False)
    first = [(t.head.i, t.dep_) for d in parser.pipe([d.copy() for d in docs]) for t in d]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    other = loaded.get_pipe("sparse_parser")
    assert other.labels == parser.labels
    again = [(t.head.i, t.dep_) for d in other.pipe(moved(docs, loaded.vocab)) for t in d]
    assert again == first
    blank = spacy.blank("en")
    from_bytes = blank.add_pipe("sparse_parser").from_bytes(parser.to_bytes())
    assert [(t.head.i, t.dep_) for d in from_bytes.pipe(moved(docs, blank.vocab)) for t in d] == first


def moved(docs, vocab):
    """The docs' words and tags in another vocab."""
    return [Doc(vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d], tags=[t.tag_ for t in d])
            for d in docs]


def test_edge_docs(trained_parser, trained):
    nlp, parser = trained_parser
    vocab = nlp.vocab
    words = ("The committee met on Tuesday and approved the plan . " * 5000).split()
    long_doc = Doc(vocab, words=words)
    docs = [Doc(vocab, words=[]), Doc(vocab, words=["Hello"]), Doc(vocab, words=["  ", "\n", "ok", " "]),
            Doc(vocab, words=["Yes", "."], sent_starts=[True, True]), long_doc]
    docs = list(parser.pipe(docs))
    assert len(docs[0]) == 0
    assert docs[1][0].head.i == 0 and docs[1][0].dep_
    check_trees(docs[1:])
    assert len(list(docs[3].sents)) == 2
    assert len(list(long_doc.sents)) > 100


def test_lifted_labels_are_lowered_in_the_output(trained, ewt_refs):
    """A parser that keeps every lifted label still writes only plain UD
    labels (spaCy's deprojectivize)."""
    nlp = spacy.blank("en", vocab=trained[0].vocab)
    # features count after 2 updates: the dense training rows of every lifted label stay small
    parser = nlp.add_pipe("sparse_parser", config={"min_lifted": 1, "min_updates": 2})
    refs = ewt_refs["train"][:100]
    train = [Example(plain(nlp, r), r) for r in refs]
    parser.initialize(lambda: train, nlp=nlp)
    assert any(nonproj.DELIMITER in lab for lab in parser.labels)
    for _ in range(2):
        nlp.update(train)
    docs = list(parser.pipe([plain(nlp, r) for r in refs]))
    assert not any(nonproj.DELIMITER in t.dep_ for d in docs for t in d)
    # one doc a call takes the one-doc path of writing the parse: the same trees
    alone = [parser(plain(nlp, r)) for r in refs]
    assert [[(t.head.i, t.dep_) for t in d] for d in alone] == [[(t.head.i, t.dep_) for t in d] for d in docs]


def test_recipe_setting_learns_lifted_arcs_with_plain_labels(trained, ewt_refs):
    """min_lifted above every count (the EWT recipes): the action set has no
    lifted label, two actions per plain label, and a gold arc that was lifted
    is learned with its plain label, so it still counts as known."""
    nlp = spacy.blank("en", vocab=trained[0].vocab)
    parser = nlp.add_pipe("sparse_parser", config={"min_lifted": 1_000_000})
    refs = ewt_refs["train"][:100]
    train = [Example(plain(nlp, r), r) for r in refs]
    parser.initialize(lambda: train, nlp=nlp)
    assert parser.labels and not any(nonproj.DELIMITER in lab for lab in parser.labels)
    assert parser.sparse.n_labels == 2 * len(parser.labels)
    lifted = [(k, i) for k, eg in enumerate(train)
              for i, d in enumerate(eg.get_aligned_parse(projectivize=True)[1]) if d and nonproj.DELIMITER in d]
    assert lifted, "the slice has no non-projective arc to check"
    batch = DocBatch([eg.predicted for eg in train], parser.lexicon)
    _, lab = parser._gold(train, batch)
    assert all(lab[batch.doc_off[k] + i] >= 0 for k, i in lifted)
    nlp.update(train)
    check_trees(list(parser.pipe([plain(nlp, r) for r in refs[:20]])))


def test_training_is_deterministic(ewt_refs):
    def train_once():
        nlp = spacy.blank("en")
        parser = nlp.add_pipe("sparse_parser", config={"explore_after": 0})
        train = [Example(plain(nlp, r), r) for r in ewt_refs["train"][:40]]
        parser.initialize(lambda: train, nlp=nlp)
        for _ in range(2):
            for i in range(0, len(train), 10):
                nlp.update(train[i:i + 10])
        return parser.to_bytes()

    assert train_once() == train_once()


def test_tag_noise_swaps_tags_for_others_of_the_same_word(trained, ewt_refs):
    """With tag_noise, about that share of the tokens of ambiguous words
    reach the parser's training with another tag their word had in the
    training data, the same ones for the same batch; the docs keep their
    tags, and training with it stays deterministic."""
    from collections import defaultdict

    from spacy.attrs import ORTH, TAG

    refs = ewt_refs["train"][:300]
    docs = tagged(trained[0], refs)
    examples = [Example(d, r) for d, r in zip(docs, refs)]
    nlp = spacy.blank("en", vocab=trained[0].vocab)
    parser = nlp.add_pipe("sparse_parser", config={"tag_noise": 0.2})
    batch, tags, _, _ = parser._state_inputs(docs)
    before = [d.to_array([TAG]).tolist() for d in docs]
    noisy = parser._noisy_tags(examples, batch, tags, np.random.RandomState(3))
    again = parser._noisy_tags(examples, batch, tags, np.random.RandomState(3))
    assert np.array_equal(noisy, again) and [d.to_array([TAG]).tolist() for d in docs] == before
    seen = defaultdict(set)
    for r in refs:
        for orth, tag in r.to_array([ORTH, TAG]).tolist():
            seen[orth].add(tag)
    orths = batch.columns[ORTH].tolist()
    changed = np.flatnonzero(noisy != tags)
    assert all(noisy[i] in seen[orths[i]] and len(seen[orths[i]]) > 1 for i in changed.tolist())
    ambiguous = sum(len(seen.get(o, ())) > 1 for o in orths)
    assert 0.12 * ambiguous < len(changed) < 0.22 * ambiguous
    with pytest.raises(ValueError, match="tag_noise"):
        nlp.add_pipe("sparse_parser", name="p2", config={"tag_noise": -0.1})


def test_bad_settings_and_templates_fail_clearly():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="parser slots"):
        nlp.add_pipe("sparse_parser", config={"templates": ["lower@0"]})
    with pytest.raises(ValueError, match="offsets"):
        nlp.add_pipe("sparse_tagger", config={"templates": ["lower@S0"]})
    with pytest.raises(ValueError, match="explore"):
        nlp.add_pipe("sparse_parser", name="p2", config={"explore": 1.5})
    with pytest.raises(ValueError, match="no weights"):
        nlp.add_pipe("sparse_parser", name="p3")(Doc(nlp.vocab, words=["a"]))


def test_unknown_gold_labels_are_skipped(trained_parser, ewt_refs):
    nlp, parser = trained_parser
    ref = ewt_refs["dev"][0].copy()
    ref[1].dep_ = "no-such-label"
    losses = {}
    before = parser.sparse.n_rows[0]
    parser.update([Example(plain(nlp, ref), ref)], losses=losses)
    assert losses["sparse_parser"] >= 0 and parser.sparse.n_rows[0] >= before


def test_coded_rows_parse_as_the_weight_pairs_do(ewt_refs):
    """A parser whose weights take at most 256 values (the shipped one: DC-ADMM) predicts from 2-byte
    label/code entries and a codebook; the parses are those of the (label, value) pairs, exactly."""
    import numpy as np

    import spacy_sparse

    nlp = spacy_sparse.load_default()
    parser = nlp.get_pipe("sparse_parser")
    model = parser._require_model()
    tab, tab_off, lv, lc, book, dense = model.packed()
    assert lc.size > 0 and lv.size == 0 and book.size <= 256 and lc.nbytes * 4 == model.compact()[1].size * 8
    texts = [r.text for r in ewt_refs["dev"]]
    coded = [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)]
    ptr, lab, val = model.compact()
    pairs = np.empty((lab.shape[0], 2), dtype=np.float32)
    pairs[:, 0], pairs[:, 1] = lab, val
    model._packed = (tab, tab_off, pairs, np.zeros(0, dtype=np.uint16), np.zeros(1, dtype=np.float32), dense)
    assert [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)] == coded


def test_hot_rows_parse_as_the_packed_rows_do(ewt_refs, monkeypatch):
    """The rows with the most nonzeros are read as dense rows (a plain add over the actions instead of a
    scatter of label/code entries): the parses of EWT dev are exactly those of the packed rows alone, and the
    dense rows stay within their byte budget, the fullest rows first."""
    import numpy as np

    import spacy_sparse
    import spacy_sparse.layouts as layouts_module
    from spacy_sparse.kernels.rows import HOT, span_values

    nlp = spacy_sparse.load_default()
    model = nlp.get_pipe("sparse_parser")._require_model()
    texts = [r.text for r in ewt_refs["dev"]]
    tab, _, _, _, _, dense = model.packed()
    spans = span_values(tab)
    n_hot = int((spans >= HOT).sum())
    assert 1000 < n_hot == dense.shape[0] and dense.nbytes <= layouts_module.HOT_BYTES
    ptr = model.compact()[0]
    counts = np.diff(ptr)
    assert np.sort(counts)[-n_hot:].min() >= layouts_module.HOT_NONZEROS  # the fullest rows, none below the floor
    assert np.count_nonzero(dense) == counts[np.argsort(counts)[-n_hot:]].sum()
    with_hot = [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)]
    monkeypatch.setattr(layouts_module, "HOT_BYTES", 0)
    model._packed = None
    assert model.packed()[-1].shape[0] == 1 and not (span_values(model.packed()[0]) >= HOT).any()
    assert [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)] == with_hot
    monkeypatch.setattr(layouts_module, "HOT_BYTES", 200 * model.n_labels * 4)
    model._packed = None
    assert model.packed()[-1].shape[0] <= 200
    assert [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)] == with_hot
    model._packed = None


def test_narrow_span_table_parses_as_the_wide_one(ewt_refs, monkeypatch):
    """The shipped parser's span table is the narrow one (uint32 key and value per slot: half the bytes of the
    wide one), and EWT dev parses exactly as with the wide table (same slots, same spans)."""
    import numpy as np

    import spacy_sparse
    import spacy_sparse.layouts as layouts_module
    from spacy_sparse.kernels.rows import span_values

    nlp = spacy_sparse.load_default()
    model = nlp.get_pipe("sparse_parser")._require_model()
    texts = [r.text for r in ewt_refs["dev"]]
    narrow = model.packed()[0]
    assert narrow.dtype == np.uint32
    parses = [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)]
    monkeypatch.setattr(layouts_module, "narrow_fits", lambda n_labels, n_weights: False)
    model._packed = None
    wide = model.packed()[0]
    assert wide.dtype == np.uint64 and wide.nbytes == 2 * narrow.nbytes
    assert np.array_equal(span_values(wide), span_values(narrow))
    assert [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(texts)] == parses
    model._packed = None


def test_float_rows_parse_as_dense_rows_do(trained_parser, trained, ewt_refs, monkeypatch):
    """A float parser's packed layout ((label, value) pairs) parses EWT dev exactly as every row read dense
    does."""
    import spacy_sparse.layouts as layouts_module

    _, parser = trained_parser
    model = parser.sparse
    docs = tagged(trained[0], ewt_refs["dev"][:150], False)

    def parses(hot_nonzeros: int, hot_bytes: int):
        monkeypatch.setattr(layouts_module, "HOT_NONZEROS", hot_nonzeros)
        monkeypatch.setattr(layouts_module, "HOT_BYTES", hot_bytes)
        model._packed = None
        _, _, lv, lc, _, dense = model.packed()
        layout = (lv.shape[0], lc.size, dense.shape[0])
        return layout, [[(t.head.i, t.dep_) for t in d] for d in parser.pipe([d.copy() for d in docs])]

    try:
        (n_pairs, n_codes, n_dense), sparse = parses(1, 0)
        assert n_pairs > 0 and n_codes == 0 and n_dense == 1  # float values, no dense rows
        (_, _, n_dense), dense = parses(1, 1 << 40)
        assert n_dense == int(model.n_rows[0])  # every row with a weight is dense
        assert dense == sparse
    finally:
        model._packed = None


@pytest.fixture(scope="module")
def split_parser(trained, ewt_refs):
    """The trained_parser recipe with split actions (move, then label)."""
    return saved_and_loaded(train_parser(trained[0], ewt_refs["train"],
                                         templates={"@misc": "spacy_sparse.parser_templates.v1", "split": True}))


@pytest.mark.full
def test_split_actions_parse_as_well_with_narrower_rows(split_parser, trained_parser, trained, ewt_refs, tmp_path):
    """Move first, then the arc's label: rows hold moves + labels instead of every (move, label) pair, and the
    slice's dev LAS stays near the joint parser's."""
    _, parser = split_parser
    _, joint = trained_parser
    assert parser.split and not joint.split
    assert parser.sparse.n_labels < 0.6 * joint.sparse.n_labels
    assert parser._n_move == len(joint.sparse.templates) and len(parser.sparse.templates) > parser._n_move
    assert set(parser.labels) <= set(joint.labels) and "root" in {d.lower() for d in parser.labels}
    refs = ewt_refs["dev"]
    for sents in (True, False):
        las = {}
        for name, pipe in (("split", parser), ("joint", joint)):
            docs = list(pipe.pipe(tagged(trained[0], refs, sents)))
            check_trees(docs)
            las[name] = pipe.score([Example(d, r) for d, r in zip(docs, refs)])["dep_las"]
        assert las["split"] > las["joint"] - 0.02, (sents, las)
    # the label templates score only arcs; a margin still stops early
    parser.margin = 2.0
    parser.reset_usage()
    list(parser.pipe(tagged(trained[0], refs[:40])))
    assert 0 < parser.templates_per_token < parser._n_move
    parser.margin = None
    docs = tagged(trained[0], refs[:40])
    before = [(t.head.i, t.dep_) for d in parser.pipe([d.copy() for d in docs]) for t in d]
    nlp = spacy.blank("en", vocab=parser.vocab)
    nlp.add_pipe("sparse_parser", config={"templates": {"@misc": "spacy_sparse.parser_templates.v1", "split": True}})
    nlp.get_pipe("sparse_parser").from_bytes(parser.to_bytes())
    after = [(t.head.i, t.dep_) for d in nlp.get_pipe("sparse_parser").pipe([d.copy() for d in docs]) for t in d]
    assert after == before
    assert parser.add_label("newdep") == 1 and "ARC-newdep" in parser.sparse.labels and "newdep" in parser.labels
    # a label column added after the root columns is an arc label all the same
    col = parser.sparse.labels.index("ARC-newdep")
    assert col == parser.sparse.n_labels - 1 and parser.sparse.labels[col - 1].startswith("ROOT-")
    assert parser._lab_ok[:, col].tolist() == [0, 1, 1, 0]
    check_trees(list(parser.pipe(tagged(trained[0], refs[:20]))))
    only_labels = spacy.blank("en").add_pipe("sparse_parser", config={"templates": ["move@S0+tag@S0"]})
    with pytest.raises(ValueError, match="move templates and label templates"):
        only_labels.initialize(lambda: [Example(plain(only_labels, r), r) for r in ewt_refs["train"][:5]])


def test_prediction_tables_hold_only_features_with_rows(trained, ewt_refs):
    """Features still counting toward min-update have table entries but no rows; the packed prediction layout
    leaves them out (most of a trained parser's entries), and parses as the saved and loaded model does."""
    nlp, parser = train_parser(trained[0], ewt_refs["train"][:80], min_updates=4)
    model = parser.sparse
    tab = model.packed()[0]
    n_rows = int(model.n_rows[0])
    assert int(np.count_nonzero(tab[0::2])) == n_rows
    assert int(model.tab_count.sum()) > n_rows  # there were waiting features to leave out
    docs = tagged(trained[0], ewt_refs["dev"][:60], False)
    heads = [[t.head.i for t in d] for d in parser.pipe([d.copy() for d in docs])]
    loaded = SparseLinearModel.from_bytes(model.to_bytes())
    parser.sparse = loaded
    try:
        assert [[t.head.i for t in d] for d in parser.pipe([d.copy() for d in docs])] == heads
    finally:
        parser.sparse = model


def test_order_by_weights_ranks_templates_by_their_weight_norm(trained_parser, tmp_path):
    """`order-by-weights` writes every template of the trained parser once, largest weight norm first; the
    norms are recomputed here from the dense weights, one template at a time."""
    import srsly

    from conftest import run

    nlp, parser = trained_parser
    nlp.to_disk(tmp_path / "p")
    run("spacy_sparse", "order-by-weights", str(tmp_path / "p"), str(tmp_path / "order.json"))
    order = srsly.read_json(tmp_path / "order.json")
    model = parser.sparse
    assert sorted(order) == sorted(model.template_names) and len(set(order)) == len(order)
    dense = model.weights()
    n = int(model.n_rows[0])
    norm = {name: float(np.sqrt((dense[:n][model.row_tpl[:n] == t].astype(np.float64) ** 2).sum()))
            for t, name in enumerate(model.template_names)}
    ranked = [norm[name] for name in order]
    assert ranked == sorted(ranked, reverse=True) and ranked[0] > ranked[-1] > 0
    with pytest.raises(AssertionError, match=r"trained sparse component .x."):
        run("spacy_sparse", "order-by-weights", str(tmp_path / "p"), str(tmp_path / "o2.json"), "--component", "x")


def test_window_slots_are_the_words_beside_s0_b0_and_s1_in_the_text():
    """The window slots read the words next to S0, S1 and B0 in the text, never past the segment's ends: before
    its first word they hold no token, after its last the root's place."""
    from spacy_sparse.codes import NO_TOKEN, SLOT_CODE, N_SLOTS
    from spacy_sparse.kernels.arc_hybrid import new_state, resolve_slots

    stack, head, lab, kids, val, sets = new_state(10)
    slot_tok = np.zeros(N_SLOTS, dtype=np.int64)

    def slots(stacked, b0, start=1, end=8):
        stack[:len(stacked)] = stacked
        resolve_slots(slot_tok, stack, len(stacked), b0, start, end, kids)
        return {name: int(slot_tok[SLOT_CODE[name]]) for name in ("S0prev", "S0next", "B0prev", "S1next")}

    # the segment is tokens 1..7 of the batch; S1 = 2, S0 = 4, B0 = 6 (5 hangs under S0 already)
    assert slots([2, 4], 6) == {"S0prev": 3, "S0next": 5, "B0prev": 5, "S1next": 3}
    # at the segment's start nothing lies to the left, and an empty stack has no neighbours
    assert slots([], 1) == {"S0prev": NO_TOKEN, "S0next": NO_TOKEN, "B0prev": NO_TOKEN, "S1next": NO_TOKEN}
    # S0 is the segment's first word and its last: before it nothing, after it the root's place
    assert slots([1], 2)["S0prev"] == NO_TOKEN
    assert slots([3, 7], 8) == {"S0prev": 6, "S0next": AT_ROOT, "B0prev": 7, "S1next": 4}


def test_features_setting_learns_only_a_saved_parsers_features(trained, ewt_refs, tmp_path):
    """`[initialize.components.sparse_parser] features = PIPELINE`: the parser starts from the features that
    the saved pipeline's parser kept, learns only those, and still parses (a refit after pruning)."""
    nlp, parser = train_parser(trained[0], ewt_refs["train"][:80], min_updates=2)
    names = parser.sparse.template_names
    # drop every other feature, as pruning would, and save the pipeline; what its file holds is the set to learn
    n = int(parser.sparse.n_rows[0])
    assert parser.sparse.keep_rows(np.arange(n) % 2 == 0) > 500
    nlp.to_disk(tmp_path / "pruned")
    half = SparseLinearModel.from_bytes((tmp_path / "pruned" / "sparse_parser" / "model").read_bytes()).feature_keys(names)
    again = spacy.blank("en", vocab=trained[0].vocab)
    refit = again.add_pipe("sparse_parser", config={"explore_after": 20000, "whole_docs": 0.5, "min_updates": 1})
    train = [Example(d, r) for d, r in zip(tagged(trained[0], ewt_refs["train"][:80]), ewt_refs["train"][:80])]
    refit.initialize(lambda: train, nlp=again, features=tmp_path / "pruned")
    for i in range(0, len(train), 20):
        again.update(train[i:i + 20])
    learned = refit.sparse.feature_keys(names)
    assert sum(map(len, half)) > 1000
    assert all(np.array_equal(a, b) for a, b in zip(learned, half))  # no feature made, none lost
    assert np.abs(refit.sparse.weights()).sum() > 0
    check_trees(list(refit.pipe(tagged(trained[0], ewt_refs["dev"][:20], False))))
    with pytest.raises(ValueError, match="Cannot take the features"):
        refit.initialize(lambda: train, nlp=again, features=tmp_path / "nowhere")
