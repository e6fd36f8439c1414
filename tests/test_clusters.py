"""Word clusters (clusters.py): the shipped table, Liang's format, the clu*
atoms, and taggers that read them, trained on EWT slices."""
import pytest
import spacy

from spacy_sparse import clusters, word_codes
from spacy_sparse.model import SparseLinearModel
from spacy_sparse.templates import TAGGER_CLUSTER_TEMPLATES, TAGGER_TEMPLATES

from conftest import to_examples


@pytest.fixture(scope="module")
def shipped():
    return clusters.resolve("en_brown_1000")


def test_shipped_table_groups_words_used_alike(shipped):
    assert len(shipped) > 100_000
    day, other_day, noun = (clusters.atoms(shipped, w) for w in ("Tuesday", "Wednesday", "committee"))
    assert day["clu"] and day["clu4"] == other_day["clu4"] and day["clu6"] == other_day["clu6"]
    assert day["clu"] != noun["clu"]
    # case variants fall back to the lowercase and title-case forms the table holds
    assert clusters.atoms(shipped, "TUESDAY") == day
    assert clusters.atoms(shipped, "cOMMITTEE") == noun
    assert clusters.atoms(shipped, "qzxvjkwq") == {name: 0 for name in [n for n, _ in clusters.PREFIXES] + ["casefreq",
                                                                                                          "wnpos"]}


def test_common_words_make_a_smaller_table(shipped, ewt_refs):
    """ClusterTable.common keeps the forms whose casefreq code puts them
    above a frequency cut: a common word keeps its code, a rare one reads as
    unknown."""
    common = shipped.common(-14.0)
    assert 10_000 < len(common) < len(shipped) // 4
    assert len(common) < len(shipped.common(-16.0)) < len(shipped)
    assert set(common.keys.tolist()) <= set(shipped.keys.tolist()) and common.stats.all()
    words = sorted({t.text for d in ewt_refs["dev"] for t in d})
    kept = 0
    for w in words:
        code = clusters.atoms(shipped, w)["casefreq"]
        small = clusters.atoms(common, w)["casefreq"]
        assert small in (0, code)
        kept += small == code != 0
    assert kept > len(words) // 2  # most words of running text are common
    assert clusters.atoms(common, "the")["clu"] and not clusters.atoms(common, "qzxvjkwq")["clu"]
    for bad in (-13.0, 0, None):
        with pytest.raises(ValueError, match="clusters_min_logprob"):
            shipped.common(bad)
    with pytest.raises(ValueError, match="no casefreq codes"):
        shipped.keeping(["clu"]).common(-14.0)


def test_lookup_reads_the_table_in_place(shipped):
    """A word's lookup copies nothing of the table: numpy 2's searchsorted
    with a Python int made an int64 copy of all the keys first, which
    turned every new word type into a 0.2 ms scan (tracemalloc sees numpy's
    buffers, so the copy shows as a peak the size of the table)."""
    import tracemalloc

    words = ["Tuesday", "committee", "cOMMITTEE", "qzxvjkwq", "e-mail", "Argghhh", "2026"]
    expected = [clusters.atom_values(shipped, w) for w in words]
    tracemalloc.start()
    try:
        got = [clusters.atom_values(shipped, w) for w in words]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == expected
    assert shipped.keys.nbytes > 500_000 and peak < shipped.keys.nbytes // 4
    assert shipped.get(1 << 40) is None and shipped.codes(-1) == (0, 0)  # no 32-bit key: not in the table


def test_lexicon_rows_of_a_batch_are_those_of_each_word_alone(shipped, ewt_refs):
    """A lexicon adds new word types in batches (lexicon.lexical_atom_rows: the cluster table searched once
    for all of them); every row must be what that word gets alone, whatever else the batch holds: words
    whose path comes from the form, the lowercase or the title case, words with codes but no path, none."""
    import numpy as np

    from spacy_sparse.lexicon import lexical_atom_rows
    from spacy_sparse.templates import LEX_ATTRS

    vocab = spacy.blank("en").vocab
    words = sorted({t.text for d in ewt_refs["dev"] for t in d} | {"TUESDAY", "cOMMITTEE", "committee", "lisa", "", " "})
    classes = {clusters.get_string_id("the"): 7, clusters.get_string_id("committee"): 9}
    batch = lexical_atom_rows(vocab, words, classes, shipped)
    alone = np.array([lexical_atom_rows(vocab, [w], classes, shipped)[0] for w in words])
    assert batch.shape == (len(words), len(LEX_ATTRS)) and np.array_equal(batch, alone)
    column = {name: batch[:, i] for i, name in enumerate(LEX_ATTRS)}
    # the table's columns are used, and differ between words (not one row copied everywhere)
    for name in ("clu", "clu4", "casefreq", "wnpos"):
        assert 0.2 < np.mean(column[name] != 0) and len(set(column[name].tolist())) > 5
    assert column["amb"][words.index("the")] == 7 and column["amb"][words.index("committee")] == 9
    assert column["clu"][words.index("TUESDAY")] == column["clu"][words.index("Tuesday")] != 0


def test_lexicons_of_one_vocab_share_the_rows_of_forms(shipped, ewt_refs):
    """The lexicons of one vocab (a pipeline's components) spell a word form out once, in the table their
    FormGroup keeps, and each adds its own ambiguity classes and clusters: every row is the one a lexicon
    computes alone (lexical_atom_rows). A lexicon alone keeps no second table, and the group goes with its
    last lexicon."""
    import gc
    import weakref

    import numpy as np

    from spacy_sparse.lexicon import Lexicon, lexical_atom_rows

    vocab = spacy.blank("en").vocab
    words = sorted({t.text for d in ewt_refs["dev"] for t in d} | {"TUESDAY", "cOMMITTEE", ""})
    orths = np.array([vocab.strings.add(w) for w in words], dtype=np.uint64)
    tagging = Lexicon(vocab, {clusters.get_string_id("the"): 7})
    tagging.set_clusters(shipped)
    assert tagging._group.forms(vocab) is None  # alone: nothing shared, nothing kept twice
    plain = Lexicon(vocab, {clusters.get_string_id("the"): 3})
    assert tagging._group is plain._group and tagging._group.forms(vocab) is not None
    assert Lexicon(spacy.blank("en").vocab)._group is not tagging._group  # another vocab, another group
    for lexicon, classes, table in ((tagging, {clusters.get_string_id("the"): 7}, shipped),
                                    (plain, {clusters.get_string_id("the"): 3}, None)):
        for part in (orths[::2], orths):  # some types met before, some new
            rows, values, _ = lexicon.lookup(part)
            assert np.array_equal(values[rows], lexical_atom_rows(vocab, [vocab.strings[int(o)] for o in part],
                                                                   classes, table))
    assert len(tagging._group.forms(vocab)) == len(words)  # each form spelled out once for both
    group = weakref.ref(tagging._group)
    del tagging, plain, lexicon  # the loop variable holds the last one
    gc.collect()
    assert group() is None


def test_remembered_hashes_stay_short_and_bounded():
    """The lexicon remembers hashes of short strings only (affixes, shapes): long words, e.g. a hostile
    stream of distinct long tokens, are hashed each time and keep nothing, and the memory is cleared when full."""
    from spacy_sparse import lexicon

    vocab = spacy.blank("en").vocab
    long_words = [("aB" * 40) + str(i) for i in range(50)]  # shapes like "aAaA...0", 80+ characters
    before = lexicon.lexical_atom_rows(vocab, long_words)
    assert all(len(k) <= lexicon.SHORT for k in lexicon._SHORT_HASHES)
    assert (lexicon.lexical_atom_rows(vocab, long_words) == before).all()
    try:
        lexicon._SHORT_HASHES.update({f"x{i}": 0 for i in range(lexicon.MAX_SHORT_HASHES)})
        lexicon.lexical_atom_rows(vocab, ["brand-new"])
        assert len(lexicon._SHORT_HASHES) < 20  # cleared, then refilled with the new word's strings
    finally:
        lexicon._SHORT_HASHES.clear()


def test_casefreq_codes_tell_names_from_common_words(shipped):
    logprobs = {"lisa": -15.4, "Lisa": -12.7, "laughter": -11.9, "Laughter": -14.9, "IPO": -14.5, "ipo": -19.0,
                "zyx": -18.5}
    codes = word_codes.casefreq_codes(logprobs)
    assert set(codes) == {"lisa", "laughter", "ipo"}  # "zyx" is rarer than MIN_LOGPROB
    case = {w: (c - 1) // 32 for w, c in codes.items()}
    assert case == {"lisa": 1, "laughter": 0, "ipo": 2}  # Title, lower, UPPER
    assert (codes["lisa"] - 1) % 32 // 8 == 2  # a lead of 2.7 falls in [2.5, 5)
    # the shipped table has the codes of lexeme_prob; every case of a word reads its lowercase form's code
    value = {w: clusters.atoms(shipped, w)["casefreq"] for w in ("lisa", "LISA", "Lisa", "laughter", "Laughter",
                                                                 "Matt", "matt", "committee", "IPO")}
    assert value["lisa"] == value["LISA"] == value["Lisa"] and value["Matt"] == value["matt"]
    assert value["laughter"] == value["Laughter"] and value["laughter"] != value["lisa"]
    usual = {w: (shipped.codes(clusters.key_of(w))[0] - 1) // 32 for w in ("lisa", "matt", "laughter", "committee", "ipo")}
    assert usual == {"lisa": 1, "matt": 1, "laughter": 0, "committee": 0, "ipo": 2}
    assert len({value["committee"], value["IPO"], value["lisa"]}) == 3 and all(value.values())
    paths_only = shipped.keeping(["clu"])
    assert not paths_only.has_stats and not paths_only.has_senses and paths_only.n_clusters == shipped.n_clusters
    assert len(paths_only) < len(shipped.keeping(["clu", "casefreq"])) < len(shipped)
    codes_only = shipped.keeping(["casefreq", "wnpos"])  # what the lemmatizer reads: no paths
    assert codes_only.n_clusters == 0 and codes_only.has_stats and codes_only.has_senses


def test_wordnet_readings_of_new_words(shipped):
    lemmas = word_codes.Lemmas({"noun": frozenset({"clash", "box", "run"}), "verb": frozenset({"clash", "run"}),
                              "adj": frozenset({"big"}), "adv": frozenset()},
                             {"verb": {"ran": ["run"]}, "adj": {"bigger": ["big"]}},
                             {"noun": [["s", ""], ["xes", "x"]], "verb": [["es", ""], ["ed", ""], ["ing", ""]],
                              "adj": [["er", ""]]})
    bits = {w: word_codes.wordnet_readings(lemmas, w) for w in ("clashed", "boxes", "clash", "ran", "bigger", "qq")}
    named = {w: {word_codes.READINGS[i] for i in range(len(word_codes.READINGS)) if b >> i & 1} for w, b in bits.items()}
    assert named["clashed"] == {("verb", "ed")} and named["boxes"] == {("noun", "s")}
    assert named["clash"] == {("noun", "base"), ("verb", "base")} and named["ran"] == {("verb", "irregular")}
    assert named["bigger"] == {("adj", "irregular")} and named["qq"] == set()
    # the shipped table has the readings of spacy-lookups-data's WordNet tables, also for rare words
    value = {w: clusters.atoms(shipped, w)["wnpos"] for w in ("transmittal", "Transmittal", "oolong", "forensic",
                                                              "qzxvjkwq")}
    assert value["transmittal"] == value["Transmittal"] == value["oolong"] != value["forensic"]
    assert value["qzxvjkwq"] == 0 and value["forensic"]


def test_liang_paths_file(tmp_path):
    path = tmp_path / "paths"
    path.write_text("00100\tapple\t12\n00100\tApple\t3\n00101\tpear\t9\n110\tran\t40\n", encoding="utf8")
    table = clusters.resolve(str(path))
    assert len(table) == 3  # "Apple" is left out: its lowercase has the same path
    apple, pear, ran = (clusters.atoms(table, w) for w in ("Apple", "pear", "ran"))
    assert apple["clu"] != pear["clu"] and apple["clu4"] == pear["clu4"] and apple["clu4"] != ran["clu4"]
    out = tmp_path / "table.msgpack"
    out.write_bytes(clusters.write_table(table))
    assert clusters.resolve(str(out)) == table
    path.write_text("0010\tapple\n01x1\tpear\n", encoding="utf8")
    with pytest.raises(ValueError, match="line 2"):
        clusters.resolve(str(path))
    with pytest.raises(ValueError, match="not one of"):
        clusters.resolve(str(tmp_path / "missing"))


def test_corrupt_table_is_a_value_error(shipped):
    data = bytearray(clusters.write_table(clusters.ClusterTable(shipped.keys[:1000], shipped.paths[:1000])))
    data[len(data) // 2] ^= 0x40
    with pytest.raises(ValueError):
        clusters.read_table(bytes(data))
    msg = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011, 9: 0b11}))
    msg["cluster_paths"] = clusters.encode(clusters.ClusterTable.from_dict({5: 1, 9: 1}))["cluster_paths"]  # no leading 1
    with pytest.raises(ValueError, match="out of range"):
        clusters.decode(msg)
    msg = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011, 9: 0b11}))
    msg["cluster_paths"] = clusters.encode(clusters.ClusterTable.from_dict({5: 0b10}))["cluster_paths"]
    with pytest.raises(ValueError, match="damaged"):  # one path for two keys
        clusters.decode(msg)
    msg = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011}, {9: 7}))
    assert clusters.decode(msg).codes(9)[0] == 7 and clusters.decode(msg).get(9) is None
    msg["cluster_stats"] = clusters.encode(clusters.ClusterTable.from_dict({}, {9: 7}))["cluster_stats"]
    with pytest.raises(ValueError, match="damaged"):  # one code for two keys
        clusters.decode(msg)
    msg = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011}, {}, {9: 300}))
    assert clusters.decode(msg).codes(9)[1] == 300 and not clusters.decode(msg).has_stats
    assert clusters.decode(msg) != clusters.ClusterTable.from_dict({5: 0b1011}, {}, {9: 301})  # readings count
    msg["cluster_senses"] = clusters.encode(clusters.ClusterTable.from_dict({5: 0b1011, 9: 0b11}, {}, {5: 1, 9: 2, 7: 3}))["cluster_senses"]
    with pytest.raises(ValueError, match="damaged"):  # three readings for two keys
        clusters.decode(msg)


def _tagger(refs, templates, cluster_source, n_train=150, **init):
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"templates": list(templates)})
    train = to_examples(nlp, refs["train"][:n_train])
    if cluster_source:
        nlp.config["initialize"]["components"]["sparse_tagger"] = {"clusters": cluster_source, **init}
    nlp.initialize(lambda: train)
    for _ in range(3):
        nlp.update(train)
    return nlp


def test_tagger_reads_clusters_and_saves_them(ewt_refs):
    templates = list(TAGGER_TEMPLATES[:12]) + list(TAGGER_CLUSTER_TEMPLATES)
    with pytest.raises(ValueError, match="reading word clusters"):
        _tagger(ewt_refs, templates, None)
    nlp = _tagger(ewt_refs, templates, "en_brown_1000")
    tagger = nlp.get_pipe("sparse_tagger")
    dev = to_examples(nlp, ewt_refs["dev"])
    scores = nlp.evaluate(dev)
    assert scores["tag_acc"] > 0.85
    tags = [[t.tag_ for t in doc] for doc in nlp.pipe(eg.predicted.copy() for eg in dev)]

    # the table travels in the model file, and the loaded pipe tags the same
    data = nlp.to_bytes()
    again = spacy.blank("en").from_config(nlp.config)
    again.from_bytes(data)
    assert len(again.get_pipe("sparse_tagger").sparse.lex_clusters) == len(tagger.sparse.lex_clusters) > 100_000
    assert [[t.tag_ for t in doc] for doc in again.pipe(eg.predicted.copy() for eg in dev)] == tags

    # the clu* atoms are read: without the table the tags change
    tagger.lexicon.set_clusters(clusters.ClusterTable())
    assert [[t.tag_ for t in doc] for doc in nlp.pipe(eg.predicted.copy() for eg in dev)] != tags

    # a model that must be small keeps the common words' entries only (the composed recipe's setting)
    small = _tagger(ewt_refs, templates + ["casefreq@0"], "en_brown_1000", clusters_min_logprob=-16.0)
    table = small.get_pipe("sparse_tagger").sparse.lex_clusters
    assert 30_000 < len(table) < len(tagger.sparse.lex_clusters)
    assert small.evaluate(dev)["tag_acc"] > 0.85
    with pytest.raises(ValueError, match="clusters_min_logprob"):
        _tagger(ewt_refs, templates, "en_brown_1000", clusters_min_logprob=-15.0)


WORDNET_GAIN = 10  # 478 against 463


@pytest.mark.full  # two taggers trained on the whole training slice
def test_tagger_reads_casefreq_where_words_are_new(ewt_refs):
    """On words the training slice never had, the usual case and frequency of
    the word (casefreq) tell names from common words, and WordNet's readings
    (wnpos) the word classes: more of them get the right tag, and the codes
    travel in the model file."""
    from spacy_sparse import codec
    from spacy_sparse.templates import TAGGER_CASEFREQ_TEMPLATES, TAGGER_WORDNET_TEMPLATES

    base = list(TAGGER_TEMPLATES[:12]) + list(TAGGER_CLUSTER_TEMPLATES)
    plain = _tagger(ewt_refs, base, "en_brown_1000", n_train=None)
    with_codes = _tagger(ewt_refs, base + list(TAGGER_CASEFREQ_TEMPLATES), "en_brown_1000", n_train=None)
    assert "cluster_stats" not in codec.encode(plain.get_pipe("sparse_tagger").sparse)
    model = with_codes.get_pipe("sparse_tagger").sparse
    assert model.lex_clusters.has_stats and "cluster_stats" in codec.encode(model)
    assert SparseLinearModel.from_bytes(model.to_bytes()).lex_clusters == model.lex_clusters

    seen = {t.text for doc in ewt_refs["train"] for t in doc}
    dev = ewt_refs["dev"]

    def right_on_new_words(nlp):
        docs = nlp.pipe(nlp.make_doc(d.text) for d in dev)
        return sum(p.tag_ == g.tag_ for doc, ref in zip(docs, dev) for p, g in zip(doc, ref)
                   if len(doc) == len(ref) and g.text not in seen)

    assert right_on_new_words(with_codes) >= right_on_new_words(plain) + 10  # 463 against 449 of 562
    # WordNet's readings (wnpos) on top
    with_readings = _tagger(ewt_refs, base + list(TAGGER_CASEFREQ_TEMPLATES) + list(TAGGER_WORDNET_TEMPLATES),
                            "en_brown_1000", n_train=None)
    table = with_readings.get_pipe("sparse_tagger").sparse.lex_clusters
    assert table.has_senses and not model.lex_clusters.has_senses
    assert right_on_new_words(with_readings) >= right_on_new_words(with_codes) + WORDNET_GAIN


def test_model_without_clusters_stores_no_table(ewt_refs):
    from spacy_sparse import codec

    nlp = _tagger(ewt_refs, TAGGER_TEMPLATES[:12], None)
    model = nlp.get_pipe("sparse_tagger").sparse
    assert len(model.lex_clusters) == 0
    assert not {"cluster_keys", "cluster_paths"} & set(codec.encode(model))
    assert len(SparseLinearModel.from_bytes(model.to_bytes()).lex_clusters) == 0


def test_template_orders_take_clusters(ewt_refs):
    from spacy_sparse.learn.ordering import ProbeSettings, group_lasso_order

    nlp = spacy.blank("en")
    train = to_examples(nlp, ewt_refs["train"][:80])
    templates = list(TAGGER_TEMPLATES[:6]) + list(TAGGER_CLUSTER_TEMPLATES[:2])
    with pytest.raises(ValueError, match="reading word clusters"):
        group_lasso_order(train, templates, ProbeSettings(train_words=1500, log=lambda m: None), epochs=1)
    with_clusters = ProbeSettings(train_words=1500, clusters="en_brown_1000", log=lambda m: None)
    order = group_lasso_order(train, templates, with_clusters, epochs=1)
    assert sorted(order) == sorted(templates)
