"""The numba kernels against a slow pure-Python reference."""
import random

import numpy as np
import pytest

from spacy_sparse.kernels.hashing import PAD_LEFT, PAD_RIGHT
from spacy_sparse.pipeline.batching import DocBatch
from spacy_sparse.templates import HISTORY_ATTRS, LEX_ATTRS, parse_template, template_seed

from conftest import to_examples, train_tagger

MASK = (1 << 64) - 1
M1, M2, M3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def py_mix(h, v):
    z = (((h ^ v) * M1) + M2) & MASK
    z = ((z ^ (z >> 30)) * M2) & MASK
    z = ((z ^ (z >> 27)) * M3) & MASK
    return z ^ (z >> 31)


def py_predict(model, batch, margin, decay=1.0, sums_first=True):
    """Greedy left-to-right labelling written out in plain Python; after
    template t (0-based) a lead of margin * decay**t stops a token. With a
    margin and `sums_first`, the one-word templates (lexical atoms of one
    word inside the doc) are scored first, summed per word offset in
    template order, and the lead is tested on them (at margin) before the
    other templates follow in order; they count as scored."""
    table = {}
    for t in range(len(model.templates)):
        for s in range(model.tab_off[t], model.tab_off[t + 1]):
            if model.tab[2 * s]:
                table[(t, int(model.tab[2 * s]))] = int(model.tab[2 * s + 1])
    W = model.weights()
    one_word = [all(a.attr not in HISTORY_ATTRS for a in tpl.atoms) and len({a.pos for a in tpl.atoms}) == 1
                for tpl in model.templates]
    offsets = sorted({tpl.atoms[0].pos for tpl, o in zip(model.templates, one_word) if o})
    preds, used = [], []

    def key(t, tpl, i, start, end):
        h = template_seed(tpl)
        for atom in tpl.atoms:
            p = i + atom.pos
            if p < start:
                v = int(PAD_LEFT) + (start - p)
            elif p >= end:
                v = int(PAD_RIGHT) + (p - end)
            elif atom.attr in HISTORY_ATTRS:
                v = preds[p] + 1
            else:
                v = int(batch.lex[batch.lex_rows[p], LEX_ATTRS.index(atom.attr)])
            h = py_mix(h, v & MASK) if model.key_mix == "splitmix" else ((h ^ v) * M1) & MASK
        if model.key_mix == "splitmix":
            return ((h ^ (h >> 32)) & 0xFFFFFFFF) or 1  # keys are folded to 32 bits
        return (h >> 32) or 1  # a multiply's high half

    def leads(scores, threshold):
        top = np.sort(scores)[::-1]
        return len(top) < 2 or float(top[0] - top[1]) >= threshold

    for d in range(len(batch.doc_off) - 1):
        start, end = int(batch.doc_off[d]), int(batch.doc_off[d + 1])
        for i in range(start, end):
            scores = np.zeros(W.shape[1], dtype=np.float32)
            summed = set()
            stop = False
            if margin is not None and sums_first:
                for off in offsets:
                    if not start <= i + off < end:
                        continue
                    vector = np.zeros(W.shape[1], dtype=np.float32)
                    for t, tpl in enumerate(model.templates):
                        if one_word[t] and tpl.atoms[0].pos == off:
                            summed.add(t)
                            row = table.get((t, key(t, tpl, i, start, end)))
                            if row is not None:
                                vector = vector + W[row]
                    scores = scores + vector
                stop = leads(scores, margin)
            n = len(summed)
            for t, tpl in enumerate(model.templates):
                if stop:
                    break
                if t not in summed:
                    row = table.get((t, key(t, tpl, i, start, end)))
                    if row is not None:
                        scores = scores + W[row]
                    n += 1
                stop = margin is not None and leads(scores, margin * decay ** t)
            preds.append(int(np.argmax(scores)))
            used.append(n)
    return np.array(preds), np.array(used)


def random_templates(rng, n):
    attrs = list(LEX_ATTRS)
    out = set()
    while len(out) < n:
        atoms = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.2:
                atoms.append(f"tag@{rng.randint(-3, -1)}")
            else:
                atoms.append(f"{rng.choice(attrs)}@{rng.randint(-3, 3)}")
        text = "+".join(atoms)
        parse_template(text)
        out.add(text)
    return sorted(out)


@pytest.mark.parametrize("seed,key_mix", [(0, "multiply"), (1, "splitmix")])
def test_kernel_matches_python_reference(ewt_refs, seed, key_mix):
    """Labels and template counts of the kernel equal the reference's, with keys made either way (splitmix:
    the files of format 4 and older, the shipped pipelines)."""
    rng = random.Random(seed)
    templates = random_templates(rng, 12)
    nlp, tagger = train_tagger(ewt_refs["train"][:60], epochs=0, templates=templates)
    tagger.sparse.key_mix = key_mix
    train = to_examples(nlp, ewt_refs["train"][:60])
    for i in range(0, len(train), 16):
        nlp.update(train[i:i + 16])
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:15])]
    batch = DocBatch(docs, tagger.lexicon)
    for margin, decay in [(None, 1.0), (0.0, 1.0), (3.0, 1.0), (25.0, 1.0), (25.0, 0.8), (3.0, 0.5)]:
        tagger.margin, tagger.margin_decay = margin, decay
        tagger.reset_usage()
        pred, _ = tagger.predict(docs)
        ref_pred, ref_used = py_predict(tagger.sparse, batch, margin, decay)
        assert np.array_equal(pred, ref_pred), f"labels differ at margin {margin}, decay {decay}"
        assert tagger.usage["templates"] == int(ref_used.sum())
    assert tagger.sparse.stats()["nonzero_features"] > 100


def test_margin_none_scores_every_template(trained, ewt_refs):
    nlp, tagger = trained
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:20])]
    tagger.margin = None
    tagger.reset_usage()
    tagger.predict(docs)
    assert tagger.templates_per_token == len(tagger.sparse.templates)
    full, _ = tagger.predict(docs)
    # a margin no label ever reaches also scores every template, through the
    # early-stopping path: the labels must be the same
    tagger.margin = 1e30
    tagger.reset_usage()
    assert np.array_equal(tagger.predict(docs)[0], full)
    assert tagger.templates_per_token == len(tagger.sparse.templates)
    # margin 0: every token stops at the first test, which comes after the one-word templates of the words
    # around it, read as summed vectors (they count as scored); the reference counts the same
    tagger.margin = 0.0
    tagger.reset_usage()
    tagger.predict(docs)
    _, ref_used = py_predict(tagger.sparse, DocBatch(docs, tagger.lexicon), 0.0)
    assert tagger.usage["templates"] == int(ref_used.sum())
    assert 1.0 < tagger.templates_per_token < len(tagger.sparse.templates)
    tagger.margin = None


def test_leads_matches_top_two():
    """The margin test agrees with sorting the valid scores, and where it
    holds names the first of the best labels (a decision reads it only
    then), ties and NEG_INF (invalid labels) included, for label counts
    around its eight-way unrolled pass."""
    from spacy_sparse.kernels.scoring import leads, open_scores

    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(2, 60))
        valid = (rng.random(n) < 0.7).astype(np.uint8)
        valid[int(rng.integers(n))] = 1
        scores = np.zeros(n, dtype=np.float32)
        open_scores(scores, valid, 1.0)
        scores += np.round(rng.normal(size=n) * 8).astype(np.float32)  # ties happen
        margin = float(rng.choice([0.0, 0.5, 3.0, 10.0]))
        top = np.sort(scores[valid == 1])[::-1]
        expect = len(top) < 2 or float(top[0] - top[1]) >= margin
        done, cand = leads(scores, margin)
        assert done == expect, (trial, margin)
        if done:
            assert cand == int(np.flatnonzero(scores == top[0])[0]) and valid[cand]


def test_word_type_rows_are_the_rows_keys_find(ewt_refs):
    """The rows cached per word type for one-word templates are the rows
    their keys find, token by token, whatever the template's offset."""
    from spacy_sparse.kernels.scoring import find_row
    from spacy_sparse.kernels.sequence import UNSET, sequence_key

    templates = ["lower@0", "suf3@0", "lower@-2", "shape@1", "tag@-1", "lower@0+lower@1", "tag@-1+suf2@0",
                 "suf3@1+shape@1", "space@0+lower@0"]
    nlp, tagger = train_tagger(ewt_refs["train"][:60], epochs=1, templates=templates)
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:15])]
    batch = DocBatch(docs, tagger.lexicon)
    m = tagger.sparse
    W = m.weights()
    column, rows, _, slot_pos, sums = tagger._word_rows.for_batch(m, batch, W, np.zeros(1, np.float32), True)
    # several atoms of one word count ("suf3@1+shape@1"); a per-token atom ("space") does not
    one_word = [len({a.pos for a in t.atoms}) == 1 and all(a.attr not in ("tag", "space") for a in t.atoms)
                for t in m.templates]
    assert one_word == [c >= 0 for c in column] and sum(one_word) == 5
    pred = np.zeros(batch.n_tokens, dtype=np.int32)
    hist = np.zeros(0, dtype=np.uint64)
    found = 0
    for start, end in zip(batch.seg_off[:-1], batch.seg_off[1:]):
        for i in range(start, end):
            for t in np.flatnonzero(column >= 0):
                p = i + m.atom_pos[m.atom_off[t]]
                if start <= p < end:
                    key = sequence_key(t, i, start, end, m.template_arrays,
                                       (batch.lex_rows, batch.lex, np.zeros((0, 2), np.uint64)), pred, hist)
                    assert rows[batch.lex_rows[p], column[t]] == find_row(m.tab, m.tab_off, t, key)
                    found += rows[batch.lex_rows[p], column[t]] >= 0
    assert found > 500
    # every lexicon row up to the batch's highest was looked up (the lexicon adds rows in order), no row past it
    filled = np.flatnonzero(rows[:, 0] != UNSET)
    assert filled.tolist() == list(range(int(batch.lex_rows.max()) + 1))
    # the summed vectors: per type and offset, the sum of those rows
    assert list(slot_pos) == [-2, 0, 1]
    for w in np.unique(batch.lex_rows):
        for k, offset in enumerate(slot_pos):
            parts = [W[rows[w, column[t]]] for t in np.flatnonzero(column >= 0)
                     if m.atom_pos[m.atom_off[t]] == offset and rows[w, column[t]] >= 0]
            np.testing.assert_allclose(sums[w, k], np.sum(parts, axis=0) if parts else 0.0, rtol=1e-5, atol=1e-6)


def test_the_word_row_cache_follows_the_model_and_the_lexicon(ewt_refs):
    """Rows cached per word type are kept across batches, and dropped when
    training changes the model or the lexicon numbers its rows afresh: the
    labels are always those of a cold cache."""
    nlp, tagger = train_tagger(ewt_refs["train"][:80], epochs=1)
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:20])]
    examples = to_examples(nlp, ewt_refs["train"][80:160])

    def cold(docs):
        tagger._word_rows = type(tagger._word_rows)()
        return tagger.predict(docs)[0]

    for margin in (None, 10.0):
        tagger.margin = margin
        first = tagger.predict(docs[:10])[0]
        warm = tagger.predict(docs)[0]  # half its types are cached already
        assert np.array_equal(warm, cold(docs)) and np.array_equal(first, cold(docs[:10]))
    cache = tagger._word_rows.rows
    tagger.update(examples)  # new features: cached "no row" answers go stale
    after = tagger.predict(docs)[0]
    assert tagger._word_rows.rows is not cache
    assert np.array_equal(after, cold(docs))
    tagger.lexicon.set_classes({1: 2})  # rows renumbered
    renumbered = tagger.predict(docs)[0]
    assert np.array_equal(renumbered, cold(docs))


def test_a_batch_of_known_word_types_fills_nothing(ewt_refs, monkeypatch):
    """The word row cache fills every lexicon row below the highest it has
    met, so a batch whose types are all known calls no filling kernel, and
    one with a new type fills it: the labels stay those of a cold cache."""
    from spacy_sparse.pipeline import sequence

    nlp, tagger = train_tagger(ewt_refs["train"][:80], epochs=1)
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:20])]
    tagger.predict(docs)
    calls = []
    for name in ("word_rows", "word_sums"):
        orig = getattr(sequence, name)
        monkeypatch.setattr(sequence, name, lambda *a, _o=orig, _n=name: calls.append(_n) or _o(*a))
    known = tagger.predict(docs[3:9])[0]
    assert calls == []
    new = nlp.make_doc("Zyxwvut flibbertigibbet " + docs[0].text)
    fresh = tagger.predict([new])[0]
    assert calls == ["word_rows", "word_sums"]
    tagger._word_rows = sequence.WordRowCache()
    assert np.array_equal(known, tagger.predict(docs[3:9])[0])
    assert np.array_equal(fresh, tagger.predict([new])[0])
    # a batch of filled types gets the very arrays of the last call, in the same tuple; a changed model, new ones
    cache, model = tagger._word_rows, tagger.sparse
    batch = DocBatch(docs[3:9], tagger.lexicon)
    W, book = model.weights(), sequence.FLOAT_ROWS
    first = cache.for_batch(model, batch, W, book, True)
    assert cache.for_batch(model, batch, W, book, True) is first
    assert cache.for_batch(model, batch, W, book, False) is not first
    model.changed()
    again = cache.for_batch(model, batch, model.weights(), book, True)
    n = batch.lex_top + 1
    assert again is not first and again[1] is not first[1] and np.array_equal(again[1][:n], first[1][:n])


def test_usage_counts_every_call_however_long_they_wait(trained, ewt_refs, monkeypatch):
    """The template counts of many short calls are summed when read, or once enough tokens wait: the
    totals are those of the calls, read at any point."""
    from spacy_sparse.pipeline import knobs

    nlp, tagger = trained
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:40])]
    monkeypatch.setattr(tagger, "margin", 3.0)
    tagger.reset_usage()
    tagger.predict(docs)
    whole = dict(tagger.usage)
    assert whole["templates"] > whole["tokens"] > 0
    for budget in (10**9, 50):  # nothing summed before a read; summed as the calls come
        monkeypatch.setattr(knobs, "PENDING_TOKENS", budget)
        tagger.reset_usage()
        for i, doc in enumerate(docs):
            tagger.predict([doc])
            if i == 7:
                assert tagger.usage["tokens"] == sum(len(d) for d in docs[:8])
            assert tagger._pending_tokens <= budget
        assert tagger.usage == whole


def test_summed_word_vectors_label_as_the_rows_do(trained, ewt_refs, monkeypatch):
    """Without a margin, the one-word templates are read as one summed vector
    per offset; the labels are those of the row-by-row path up to float
    rounding of near ties, also when the cache holds sums for only some
    types (SUMS_BYTES) and reads rows for the rest."""
    from spacy_sparse.pipeline import sequence

    nlp, tagger = trained
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:60])]
    tagger.margin = None

    def labels(summed, budget=sequence.SUMS_BYTES):
        monkeypatch.setattr(sequence, "SUMS_BYTES", budget)
        tagger._word_rows = sequence.WordRowCache()
        orig = tagger._word_rows.for_batch
        tagger._word_rows.for_batch = lambda m, b, W, book, s: orig(m, b, W, book, s and summed)
        return tagger.predict(docs)[0], tagger._word_rows.sums.shape[0]

    rows, _ = labels(False)
    full, n_full = labels(True)
    part, n_part = labels(True, budget=200 * 5 * 4 * len(tagger.labels))
    assert n_full >= len(np.unique(np.concatenate([d.to_array("ORTH") for d in docs]))) // 2
    assert n_part == 200
    for summed in (full, part):
        assert np.mean(summed == rows) > 0.999


def test_a_stopped_decision_takes_the_best_valid_label():
    """`decided` skips the pass over the labels when the margin test stopped
    a decision; the label must be the one best_valid finds, for every valid
    mask (none, one, many), margin (0 included) and outcome of the test."""
    from spacy_sparse.kernels.scoring import best_valid, decided, leads, open_scores

    rng = np.random.default_rng(1)
    shortcuts = 0
    for trial in range(1000):
        n = int(rng.integers(1, 40))
        valid = (rng.random(n) < rng.choice([0.0, 0.1, 0.7])).astype(np.uint8)
        scores = np.zeros(n, dtype=np.float32)
        margin = float(rng.choice([0.0, 0.5, 3.0, 10.0]))
        done, cand = open_scores(scores, valid, margin)
        for _ in range(int(rng.integers(0, 4))):
            scores += rng.integers(-3, 4, size=n).astype(np.float32)  # ties are common
            if valid.sum() > 1:
                done, cand = leads(scores, margin)
        expect = best_valid(scores, valid)
        assert decided(scores, valid, margin, done, cand) == expect, trial
        shortcuts += bool(done and margin > 0 and valid.sum() > 1)
    assert shortcuts > 50  # the shortcut itself was taken
    # scores not opened by open_scores: an invalid label may hold the top score, tied or alone
    fallbacks = 0
    for trial in range(1000):
        n = int(rng.integers(1, 40))
        valid = (rng.random(n) < rng.choice([0.0, 0.3, 0.9])).astype(np.uint8)
        scores = rng.integers(-3, 4, size=n).astype(np.float32)
        expect = best_valid(scores, valid)
        assert decided(scores, valid, -1.0, False, 0) == expect, trial
        fallbacks += bool(valid.sum() and not valid[int(np.argmax(scores))])
    assert fallbacks > 50


def test_blocks_cover_every_template_once():
    from spacy_sparse.kernels.scoring import LOOKAHEAD, block_end

    for first, expect in ((2, [2, 2, 4, 8, 8]), (LOOKAHEAD, [8, 8, 8, 8, 8])):
        for n_tpl in range(1, 60):
            t, sizes = 0, []
            while t < n_tpl:
                stop = block_end(t, n_tpl, first)
                assert t < stop <= n_tpl and stop - t <= LOOKAHEAD
                sizes.append(stop - t)
                t = stop
            assert sum(sizes) == n_tpl
            if n_tpl >= 40:
                assert sizes[:5] == expect


def test_batch_segments_are_the_sentences_or_the_whole_doc():
    """DocBatch cuts a doc at its sentence starts when it has them, else
    keeps it whole; empty docs take no segment, and each doc's first segment
    is marked as starting a new doc."""
    import spacy
    from spacy.tokens import Doc

    from spacy_sparse.lexicon import Lexicon

    vocab = spacy.blank("en").vocab
    docs = [
        Doc(vocab, words=["a", "b", "c", "d", "e"], sent_starts=[True, False, True, False, True]),
        Doc(vocab, words=[]),
        Doc(vocab, words=["f", "g", "h"]),  # no sentence annotation
        Doc(vocab, words=["i"], sent_starts=[True]),
        Doc(vocab, words=["j", "k", "l"], sent_starts=[True, False, False]),
        Doc(vocab, words=["m", "n"]),
    ]
    batch = DocBatch(docs, Lexicon(vocab))
    assert batch.doc_off.tolist() == [0, 5, 5, 8, 9, 12, 14]
    assert batch.seg_off.tolist() == [0, 2, 4, 5, 8, 9, 12, 14]
    assert batch.seg_new_doc.tolist() == [1, 0, 0, 1, 1, 1, 1]
    words = [t.orth for doc in docs for t in doc]
    assert batch.lex[batch.lex_rows, LEX_ATTRS.index("orth")].tolist() == words
    empty = DocBatch([Doc(vocab, words=[])], Lexicon(vocab))
    assert empty.seg_off.tolist() == [0] and empty.seg_new_doc.tolist() == []
    # a batch of one doc (nlp(text)) takes its own path to the same segments
    for doc, off in zip(docs, batch.doc_off):
        alone = DocBatch([doc], Lexicon(vocab))
        inside = [int(o - off) for o in batch.seg_off if off <= o <= off + len(doc)]
        assert alone.seg_off.tolist() == (inside if len(doc) else [0])
        assert alone.seg_new_doc.tolist() == ([1] + [0] * (len(inside) - 2) if len(doc) else [])
        assert alone.doc_off.tolist() == [0, len(doc)]


def test_doc_columns_answer_as_the_docs_do():
    """DocColumns reads a batch with one array call per doc; what it says of
    each doc's sentence starts is what spaCy's Doc says (has_annotation,
    every start set), for empty docs, one-token docs, partial, complete and
    unset starts, and a doc whose only set start is its first token."""
    import spacy
    from spacy.attrs import ORTH, SENT_START, TAG
    from spacy.tokens import Doc

    from spacy_sparse.pipeline.batching import DocColumns

    vocab = spacy.blank("en").vocab
    docs = [
        Doc(vocab, words=["a", "b", "c"], sent_starts=[True, False, True]),
        Doc(vocab, words=[]),
        Doc(vocab, words=["d", "e"]),
        Doc(vocab, words=["f"]),
        Doc(vocab, words=["g", "h", "i"], sent_starts=[True, None, None]),
        Doc(vocab, words=["j", "k"], sent_starts=[None, True]),
        Doc(vocab, words=["l", "m"], tags=["NN", "VB"]),
    ]
    cols = DocColumns(docs, (TAG,))
    assert cols.sents_set().tolist() == [d.has_annotation("SENT_START") for d in docs]
    complete = [len(d) > 0 and bool(np.all(d.to_array(SENT_START)[1:] != 0)) for d in docs]
    assert cols.sents_complete().tolist() == complete
    assert cols[ORTH].tolist() == [t.orth for d in docs for t in d]
    assert cols[TAG].tolist() == [t.tag for d in docs for t in d]
    assert [cols.rows(i).shape[0] for i in range(len(docs))] == [len(d) for d in docs]
    assert cols.any_per_doc(cols[ORTH] == vocab.strings["g"]).tolist() == [False] * 4 + [True, False, False]


def test_the_codes_python_and_the_kernels_share_agree():
    """Templates compile to the codes the kernels test for (codes.py is the one place they live)."""
    import spacy

    from spacy_sparse import codes, templates
    from spacy_sparse.kernels.history import uses_history
    from spacy_sparse.lexicon import lexical_atoms
    from spacy_sparse.model import SparseLinearModel

    seq = SparseLinearModel(["hist@-1", "tag@-1", "ptag@0", "lower@0", "cshape@1", "space@-1"], ["A"])
    assert seq.atom_src.tolist() == [codes.SRC_HIST, codes.SRC_TAG, codes.SRC_PTAG, codes.LOWER,
                                     codes.LEX_COLUMN["cshape"], codes.SRC_SPACE]
    assert uses_history(seq.atom_src) and not uses_history(seq.atom_src[1:])
    parse = SparseLinearModel(["tag@S0+pos@B0+dep@S0L+lv@S1+rv@S1+lset@B0+rset@S0R2+dist@B3+lower@S2+move@S0"],
                              ["SHIFT"])
    assert parse.atom_src.tolist() == [codes.ST_TAG, codes.ST_POS, codes.ST_DEP, codes.ST_LV, codes.ST_RV,
                                       codes.ST_LSET, codes.ST_RSET, codes.ST_DIST, codes.LOWER, codes.ST_MOVE]
    assert parse.atom_pos.tolist() == [codes.SLOT_CODE[s] for s in ("S0", "B0", "S0L", "S1", "S1", "B0", "S0R2",
                                                                     "B3", "S2", "S0")]
    assert codes.N_SLOTS == len(templates.SLOTS) and templates.LEX_ATTRS is codes.LEX_ATTRS
    # the lexicon's rows keep the column order the kernels index (the `hist` memory reads LOWER)
    atoms = lexical_atoms(spacy.blank("en").vocab, "Ferry")
    assert atoms[codes.LOWER] == spacy.strings.get_string_id("ferry")
    assert len(set(codes.HISTORY_ATTRS.values())) == 4 and len(set(codes.STATE_ATTRS.values())) == 9
    assert max(codes.HISTORY_ATTRS.values()) < 0 and max(codes.STATE_ATTRS.values()) < 0


def test_relayout_keeps_every_key_whether_its_table_grows_or_not():
    """Growing some tables of the flat layout in place moves the others slot for slot and re-inserts the grown
    ones in their old slot order: every key then finds its value, a table that kept its capacity is
    byte-identical, and a grown one is what inserting its keys afresh in that order gives."""
    from spacy_sparse.kernels.hashing import fill_tables, relayout_tables, table_find
    from spacy_sparse.kernels.layout import capacity_for, new_table

    rng = np.random.default_rng(7)
    counts = np.array([5, 300, 40, 2, 900], dtype=np.int64)
    tpl = np.repeat(np.arange(counts.size, dtype=np.int32), counts)
    keys = rng.integers(1, 2 ** 32, size=int(counts.sum()), dtype=np.uint64)
    vals = np.arange(keys.size, dtype=np.int64)
    old_caps = np.array([capacity_for(int(c)) for c in counts])
    old_off = np.concatenate([[0], np.cumsum(old_caps)]).astype(np.int64)
    old = new_table(int(old_off[-1]))
    assert fill_tables(tpl, keys, vals, old_off, old) == 0
    new_caps = old_caps * np.array([2, 4, 1, 1, 2])  # the first, the last and one between grow
    new_off = np.concatenate([[0], np.cumsum(new_caps)]).astype(np.int64)
    tab = np.full(2 * int(new_off[-1]), 99, dtype=np.uint64)  # what lies past the old end is overwritten
    tab[:old.size] = old
    relayout_tables(tab, old_off, new_off, np.zeros(2 * int(old_caps.max()), dtype=np.uint64))
    for t, k, v in zip(tpl, keys, vals):
        assert table_find(tab, new_off[t], new_caps[t], k) == v
    for t in range(counts.size):
        got, was = tab[2 * new_off[t]:2 * new_off[t + 1]], old[2 * old_off[t]:2 * old_off[t + 1]]
        if new_caps[t] == old_caps[t]:
            assert np.array_equal(got, was)
            continue
        fresh = new_table(int(new_caps[t]))
        held = was[0::2] != 0
        fill_tables(np.zeros(int(held.sum()), dtype=np.int32), was[0::2][held], was[1::2][held].astype(np.int64),
                    np.array([0, new_caps[t]], dtype=np.int64), fresh)
        assert np.array_equal(got, fresh)


def test_training_grows_the_tables_in_place(monkeypatch):
    """Tables large enough to be mapped grow without a second copy (the map
    is resized, not replaced), and every feature keeps its row."""
    from spacy_sparse.runtime import mapped
    from spacy_sparse.kernels.hashing import table_find
    from spacy_sparse.model import SparseLinearModel

    monkeypatch.setattr(mapped, "MIN_MAPPED_BYTES", 1 << 10)
    model = SparseLinearModel(["lower@0", "lower@-1+lower@0"], ["A", "B"])
    keys = [np.arange(1, 40, dtype=np.uint64), np.arange(1, 300, dtype=np.uint64)]
    model.preset_features(keys)

    def rows():
        caps = np.diff(model.tab_off)
        return [[table_find(model.tab, model.tab_off[t], caps[t], k) for k in keys[t]] for t in (0, 1)]

    before = rows()
    model._relayout(np.diff(model.tab_off) * np.array([2, 1]))  # the first growth maps the tables
    base = mapped._own_mapping(model.tab)
    assert base is not None and rows() == before
    model._relayout(np.diff(model.tab_off) * np.array([4, 2]))
    assert mapped._own_mapping(model.tab) is base
    assert rows() == before
    with pytest.raises(ValueError):
        model._relayout(np.diff(model.tab_off) // 2)


def test_fuller_training_tables_change_no_weight(ewt_refs, monkeypatch):
    """Training fills its tables to TRAINING_LOAD: a tagger trained with tables kept half empty, as prediction
    keeps its own, saves the same bytes. Saving drops the layouts an evaluation made, and they are made again
    the same."""
    from spacy_sparse import training_rows as model_module

    refs = ewt_refs["train"][:120]
    monkeypatch.setattr(model_module, "TRAINING_LOAD", 0.5)
    half_nlp, half = train_tagger(refs, epochs=1)
    monkeypatch.setattr(model_module, "TRAINING_LOAD", 0.75)
    full_nlp, full = train_tagger(refs, epochs=1)
    assert full.sparse.tab.shape[0] < half.sparse.tab.shape[0]
    dev = [full_nlp.make_doc(r.text) for r in ewt_refs["dev"][:50]]
    tags = [t.tag_ for d in full_nlp.pipe(dev) for t in d]
    assert full.sparse._dense is not None
    assert full.sparse.to_bytes() == half.sparse.to_bytes()
    assert full.sparse._dense is None
    dev = [full_nlp.make_doc(r.text) for r in ewt_refs["dev"][:50]]
    assert [t.tag_ for d in full_nlp.pipe(dev) for t in d] == tags


def _holds_array(numba_type) -> bool:
    from numba.core import types

    if isinstance(numba_type, types.Array):
        return True
    return isinstance(numba_type, types.BaseTuple) and any(_holds_array(t) for t in numba_type.types)


@pytest.mark.full  # compiles both entry kernels afresh: the slow tier's (CI runs it)
def test_leaf_kernels_return_no_array(ewt_refs, monkeypatch):
    """Leaves run without reference counts (kernels/jit.py): one that
    returned an array or a view would hand its caller memory nothing keeps
    alive. Label real text through the jitted kernels, then look at what
    every leaf they compiled returns."""
    from numba import njit

    import spacy_sparse
    from spacy_sparse.kernels import hashing, parser, prefetch, scoring, sequence
    from spacy_sparse.runtime import compiled
    from spacy_sparse.pipeline import parser as parser_pipe
    from spacy_sparse.pipeline import sequence as sequence_pipe

    # entry kernels compiled afresh (not from numba's cache), so the leaves they call are typed in this process
    monkeypatch.setattr(sequence_pipe, "predict_sequence", njit(nogil=True)(compiled.jitted("predict_sequence").py_func))
    monkeypatch.setattr(parser_pipe, "predict_parse", njit(nogil=True)(compiled.jitted("predict_parse").py_func))
    nlp = spacy_sparse.load_default()
    for margin in (None, 40.0):
        nlp.get_pipe("sparse_parser").margin = margin
        docs = list(nlp.pipe([ref.text for ref in ewt_refs["dev"][:20]]))
    assert any(t.dep_ for doc in docs for t in doc) and any(t.tag_ for doc in docs for t in doc)
    compiled_leaves = set()
    for module in (hashing, parser, prefetch, scoring, sequence):
        for name, value in vars(module).items():
            if getattr(value, "targetoptions", {}).get("_nrt", True) is not False:
                continue
            for sig in value.nopython_signatures:
                compiled_leaves.add(name)
                assert not _holds_array(sig.return_type), f"leaf {module.__name__}.{name} returns {sig.return_type}"
    assert {"score_block", "score_decision", "sequence_key", "valid_labels", "add_sum"} <= compiled_leaves
