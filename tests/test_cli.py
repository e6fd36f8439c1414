"""The documented command lines: spacy train with our config, bench, report, order-templates."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin

from conftest import ROOT, run


@pytest.fixture(scope="module")
def trained_dir(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("training")
    run("spacy", "train", "configs/tagger.cfg", "--output", str(out),
        "--paths.train", str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"),
        "--training.max_epochs", "3", "--training.eval_frequency", "50")
    return out / "model-best"


def test_spacy_train_cli_produces_a_loadable_model(trained_dir):
    nlp = spacy.load(trained_dir)
    assert nlp.pipe_names == ["sparse_tagger"]
    doc = nlp("The results were published yesterday .")
    assert all(t.tag_ for t in doc)
    meta = json.loads((trained_dir / "meta.json").read_text())
    assert meta["performance"]["tag_acc"] > 0.8


def test_bench_cli_writes_the_documented_json(trained_dir, corpus, tmp_path):
    out, plot = tmp_path / "bench.json", tmp_path / "bench.png"
    run("spacy_sparse", "bench", str(trained_dir), str(corpus / "dev.spacy"), "--margins", "none,300,50",
        "--repeat", "1", "--json", str(out), "--compare", str(trained_dir), "--plot", str(plot), "--calls")
    result = json.loads(out.read_text())
    assert result["text"] == "raw" and not result["gold_sentences"]
    meta = result["meta"]
    assert meta["command"].startswith("python -m spacy_sparse bench") and meta["commit"] and meta["date"]
    assert meta["machine"]["cores"] >= 1
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = result["rows"]
    # raw text: the pipeline's own tokenizer makes the docs it sees
    nlp = spacy.load(trained_dir)
    refs = list(DocBin().from_disk(corpus / "dev.spacy").get_docs(nlp.vocab))
    assert result["words"] == sum(len(nlp.make_doc(d.text)) for d in refs)
    assert result["words"] != sum(len(d) for d in refs)  # this slice has tokens it splits differently
    assert result["compare"]["accuracy"] == pytest.approx(rows[0]["accuracy"])
    assert [r["margin"] for r in rows] == [None, 300.0, 50.0]
    for r in rows:
        assert {"margin", "accuracy", "templates_per_token", "words_per_second", "ns_per_template",
                "row_bytes_per_token"} <= set(r)
        assert 0.0 < r["accuracy"] <= 1.0 and r["words_per_second"] > 0
    # margin none scores every template of configs/tagger.cfg (the lean default set and its cluster, casefreq and
    # WordNet templates, less the four it drops)
    assert rows[0]["templates_per_token"] == len(spacy.load(trained_dir).get_pipe("sparse_tagger").sparse.templates) == 47
    assert rows[2]["templates_per_token"] < rows[0]["templates_per_token"]
    assert "ratio_vs_compare" in rows[0]
    # the first pass after loading meets the data's word types: timed once, for both pipelines
    assert 0 < result["first_pass_words_per_second"] and 0 < result["compare"]["first_pass_words_per_second"]
    # --calls: one nlp(text) per sentence of the data, the pipeline and the compared one alike
    calls = result["calls"]
    assert calls["texts"] == sum(len(list(r.sents)) for r in refs)
    assert calls["words_per_second"] > 0 and calls["compare_words_per_second"] > 0
    assert calls["ratio_vs_compare"] == pytest.approx(calls["words_per_second"] / calls["compare_words_per_second"])


def test_bench_compares_with_the_rule_sentencizer(trained_dir, corpus):
    """`--compare sentencizer` times and scores spaCy's rule-based sentence splitter on the same raw text: its
    sentence F is spaCy's scorer's on those docs, computed here again."""
    from spacy.scorer import Scorer
    from spacy.training import Example

    from spacy_sparse.bench import run_bench

    result = run_bench(str(trained_dir), corpus / "dev.spacy", [None], compare="sentencizer", repeat=1)
    other = result["compare"]
    assert other["model"] == "sentencizer" and other["pipeline_bytes"] is None and other["words_per_second"] > 0
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    refs = list(DocBin().from_disk(corpus / "dev.spacy").get_docs(nlp.vocab))
    expected = Scorer(nlp).score([Example(nlp(r.text), r) for r in refs])["sents_f"]
    assert 0.3 < other["scores"]["sents_f"] == pytest.approx(expected)
    assert result["rows"][0]["ratio_vs_compare"] > 0


def test_report_cli_json(trained_dir):
    report = json.loads(run("spacy_sparse", "report", str(trained_dir), "--json"))
    stats = report["sparse_tagger"]
    for key in ("templates", "features", "nonzero_features", "distinct_weights", "bytes"):
        assert stats[key] > 0
    assert stats["bytes"] == (trained_dir / "sparse_tagger" / "model").stat().st_size


@pytest.mark.full
def test_report_takes_the_shipped_names():
    """`report default` as `bench default` does: the embedded pipeline's five sparse components."""
    import spacy_sparse

    report = json.loads(run("spacy_sparse", "report", "default", "--json"))
    assert sorted(report) == ["sparse_lemmatizer", "sparse_morphologizer", "sparse_parser", "sparse_senter",
                              "sparse_tagger"]
    shipped = spacy_sparse.DEFAULT_MODEL_PATH / "sparse_parser" / "model"
    assert report["sparse_parser"]["bytes"] == shipped.stat().st_size


@pytest.mark.full
def test_order_templates_cli_and_config_use(corpus, tmp_path):
    order_file = tmp_path / "order.json"
    run("spacy_sparse", "order-templates", str(corpus / "train.spacy"), str(corpus / "dev.spacy"), str(order_file),
        "--max-steps", "2", "--train-words", "3000", "--dev-words", "1000", "--epochs", "1")
    order = json.loads(order_file.read_text())
    default = spacy.blank("en").add_pipe("sparse_tagger").cfg["templates"]
    assert sorted(order) == sorted(default)
    out = tmp_path / "ordered"
    run("spacy", "train", "configs/tagger.cfg", "--output", str(out),
        "--paths.train", str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"),
        "--paths.order", str(order_file), "--training.max_epochs", "1",
        "--components.sparse_tagger.templates.lean", "false",  # the order covers the whole default set
        "--components.sparse_tagger.templates.drop", "[]")
    nlp = spacy.load(out / "model-last")
    assert nlp.get_pipe("sparse_tagger").sparse.template_names[:2] == order[:2]


def test_bad_model_path_fails_cleanly(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "report", str(tmp_path / "missing")],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr


@pytest.mark.full
def test_jackknife_then_parser_config_then_bench(trained_dir, corpus, tmp_path):
    """The parser workflow on a slice: jackknifed tags, spacy train with
    configs/parser.cfg on top of the trained tagger, bench with LAS."""
    jk = tmp_path / "train_jk.spacy"
    run("spacy_sparse", "jackknife", "configs/tagger.cfg", str(corpus / "train.spacy"), str(corpus / "dev.spacy"),
        str(jk), "--folds", "2", "--max-epochs", "1")
    gold = list(DocBin().from_disk(corpus / "train.spacy").get_docs(spacy.blank("en").vocab))
    tagged = list(DocBin().from_disk(jk).get_docs(spacy.blank("en").vocab))
    pairs = [(g.tag_, t.tag_) for gd, td in zip(gold, tagged) for g, t in zip(gd, td)]
    assert len(gold) == len(tagged) and all(t for _, t in pairs)
    assert 0.5 < sum(g == t for g, t in pairs) / len(pairs) < 1.0  # predicted, not copied
    assert [t.head.i for t in tagged[0]] == [t.head.i for t in gold[0]]  # trees kept
    out = tmp_path / "parser"
    run("spacy", "train", "configs/parser.cfg", "--output", str(out), "--paths.train", str(jk),
        "--paths.dev", str(corpus / "dev.spacy"), "--paths.tagger", str(trained_dir),
        "--training.max_epochs", "2", "--training.eval_frequency", "50")
    nlp = spacy.load(out / "model-last")
    assert nlp.pipe_names == ["sparse_tagger", "sparse_parser"]
    doc = nlp("The committee approved the new budget on Tuesday .")
    assert doc.has_annotation("DEP") and all(t.tag_ for t in doc)
    bench = tmp_path / "bench.json"
    run("spacy_sparse", "bench", str(out / "model-last"), str(corpus / "dev.spacy"), "--gold-sents",
        "--margins", "none,20", "--repeat", "1", "--json", str(bench))
    rows = json.loads(bench.read_text())["rows"]
    assert rows[0]["metric"] == "dep_las" and rows[0]["accuracy"] > 0.3


@pytest.mark.full
def test_joint_tagger_parser_config_trains(corpus, tmp_path):
    out = tmp_path / "joint"
    run("spacy", "train", "configs/tagger_parser.cfg", "--output", str(out),
        "--paths.train", str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"),
        "--training.max_epochs", "2", "--training.eval_frequency", "50")
    meta = json.loads((out / "model-last" / "meta.json").read_text())
    assert meta["performance"]["dep_las"] > 0.2 and meta["performance"]["tag_acc"] > 0.7


@pytest.mark.full
def test_small_pipeline_config_trains_a_coded_parser_over_the_shipped_components(corpus, tmp_path):
    """configs/tagger_parser_small.cfg over the shipped pipeline with its annotators' training margins (`settings`,
    as `retrain-default-parser` runs it): the tagger and segmenter stay byte for byte (sourced, frozen) with the
    margins given, and the parser it trains ends as DC-ADMM's codes (at most 33 distinct weights) with multiply
    keys, beside the sourced splitmix ones, and parses."""
    import spacy_sparse

    shipped = Path(spacy_sparse.__file__).parent / "data" / "en_ewt_sparse"
    source = tmp_path / "annotators"
    run("spacy_sparse", "settings", "default", str(source), "--set", "sparse_tagger.margin=none",
        "--set", "sparse_senter.margin=none", "--set", "sparse_senter.margin_decay=1")
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "settings", "default", str(tmp_path / "x"), "--set",
                           "sparse_tagger.speed=2"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1 and "COMPONENT.SETTING=VALUE" in proc.stdout + proc.stderr
    out = tmp_path / "small"
    run("spacy", "train", "configs/tagger_parser_small.cfg", "--output", str(out),
        "--paths.train", str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"),
        "--paths.pipeline", str(source), "--training.max_epochs", "3", "--training.eval_frequency", "50",
        "--training.before_update.dc_admm.start_epoch", "1", "--training.before_update.dc_admm.max_iterations", "1")
    for name in ("sparse_tagger", "sparse_senter"):
        assert (out / "model-best" / name / "model").read_bytes() == (shipped / name / "model").read_bytes()
    nlp = spacy.load(out / "model-best")
    assert nlp.get_pipe("sparse_tagger").margin is None and nlp.get_pipe("sparse_senter").margin_decay == 1.0
    assert nlp.get_pipe("sparse_tagger").sparse.key_mix == "splitmix"
    assert nlp.get_pipe("sparse_parser").sparse.key_mix == "multiply"
    stats = nlp.get_pipe("sparse_parser").sparse.stats()
    assert 1 < stats["distinct_weights"] <= 33
    meta = json.loads((out / "model-best" / "meta.json").read_text())
    assert meta["performance"]["sparse_compressed"] == 1.0 and meta["performance"]["dep_las"] > 0.4
    doc = nlp("The committee approved the new budget on Tuesday. It takes effect in May.")
    assert doc.has_annotation("DEP") and all(t.tag_ for t in doc)


def test_prune_cli_makes_a_smaller_model_that_still_tags(trained_dir, tmp_path):
    out = tmp_path / "pruned"
    run("spacy_sparse", "prune", str(trained_dir), str(out), "--min-weight", "0.5")
    before = (trained_dir / "sparse_tagger" / "model").stat().st_size
    after = (out / "sparse_tagger" / "model").stat().st_size
    assert after < before
    doc = spacy.load(out)("The results were published yesterday .")
    assert all(t.tag_ for t in doc)


def test_tag_refuses_to_write_over_its_input(tmp_path):
    """`tag X X` (or through a link) would truncate X before reading it."""
    src = tmp_path / "in.txt"
    src.write_text("The ferry left at dawn.\nIt came back at noon.\n", encoding="utf8")
    link = tmp_path / "link.txt"
    link.symlink_to(src)
    for out in (src, link):
        proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", "default", str(src), str(out), "--quiet"],
                              cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 1 and "The output is the input" in proc.stderr
        assert src.read_text(encoding="utf8").count("\n") == 2


def test_bench_rows_label_fresh_docs_and_include_the_pipeline_as_it_loads(corpus):
    """The shipped full pipeline: each row starts from the same unlabelled
    docs (labelling them again, the segmenter kept the parser's sentence
    starts of the row before and the tags moved), and the row of the
    pipeline as it loads (its parser's own margin) is measured even when
    --margins leaves it out."""
    import spacy_sparse
    from spacy_sparse.bench import input_docs, read_references, run_bench, time_pipe

    nlp = spacy_sparse.load_default()
    docs = input_docs(nlp, read_references(nlp, corpus / "dev.spacy"))
    assert time_pipe(nlp, docs, 2) > 0
    assert not any(d.has_annotation(a) for d in docs for a in ("TAG", "DEP", "SENT_START"))
    own, decay = nlp.get_pipe("sparse_parser").margin, nlp.get_pipe("sparse_parser").margin_decay
    assert own not in (None, 10.0)
    result = run_bench("default", corpus / "dev.spacy", [None, 10.0], repeat=1)
    rows = result["rows"]
    # a margin row keeps the parser's own decay; margin None has none
    assert [(r["margin"], r["margin_decay"]) for r in rows] == [(None, 1.0), (10.0, decay), (own, decay)]
    assert (result["own_margin"], result["own_margin_decay"]) == (own, decay)
    # the other components ran at their own margins in every row, and the JSON says so
    assert result["other_margins"] == {n: nlp.get_pipe(n).margin for n in ("sparse_tagger", "sparse_senter",
                                                                            "sparse_morphologizer", "sparse_lemmatizer")}
    assert len({r["scores"]["tag_acc"] for r in rows}) == 1  # the tagger runs before the parser
    assert len({r["scores"]["sents_f"] for r in rows}) == 1  # so does the segmenter
    assert rows[1]["scores"]["dep_las"] < rows[0]["scores"]["dep_las"]


@pytest.mark.full
def test_bench_reads_raw_text_in_one_case(corpus):
    """`bench --case lower|upper`: the docs' text in one case, scored against the gold annotation as it is
    (spaCy's alignment matches tokens whatever their case), so the shipped pipeline's scores stay sensible."""
    import spacy_sparse
    from spacy_sparse.bench import input_docs, read_references, run_bench

    nlp = spacy_sparse.load_default()
    refs = read_references(nlp, corpus / "dev.spacy")[:40]
    lower, upper = input_docs(nlp, refs, "lower"), input_docs(nlp, refs, "upper")
    assert [d.text for d in lower] == [r.text.lower() for r in refs]
    assert all(d.text == d.text.upper() for d in upper) and any(d.text != r.text for d, r in zip(upper, refs))
    scores = {}
    for case in ("raw", "lower", "upper"):
        result = run_bench("default", corpus / "dev.spacy", [None], repeat=1, text=case)
        assert result["text"] == case
        scores[case] = result["rows"][0]["scores"]
    for case in ("lower", "upper"):  # a few points below the cased text, far above chance
        assert 85 < 100 * scores[case]["tag_acc"] <= 100 * scores["raw"]["tag_acc"]
        assert 60 < 100 * scores[case]["sents_f"] and 60 < 100 * scores[case]["dep_las"]


def test_convert_ud_holds_a_genre_out_of_train_and_dev(tmp_path):
    """EWT dev's first email and non-email documents as a small treebank: `--hold-out email` moves every
    email sentence of train and dev (not test) to heldout.spacy, and the rest stays where it was."""
    import argparse
    import re

    from conftest import EWT, need
    from spacy_sparse.cli.convert import cmd_convert_ud

    text = (need(EWT) / "en_ewt-ud-dev.conllu").read_text(encoding="utf8")
    blocks, genre = [], None
    for block in (b for b in text.split("\n\n") if b.strip()):
        doc_id = re.search(r"^# newdoc id = (\w+)-", block, re.M)
        genre = doc_id.group(1) if doc_id else genre
        blocks.append((genre, block))
    email = [b for g, b in blocks if g == "email"][:40]
    other = [b for g, b in blocks if g != "email"][:40]
    # the emails go in between two of the other documents
    cut = next(k for k in range(1, len(other)) if "# newdoc" in other[k])
    assert "# newdoc" in email[0] and "# newdoc" in other[0]
    ud = tmp_path / "ud"
    ud.mkdir()
    mixed = "".join(b + "\n\n" for b in other[:cut] + email + other[cut:])
    for split in ("train", "dev", "test"):
        (ud / f"en_ewt-ud-{split}.conllu").write_text(mixed, encoding="utf8")
    cmd_convert_ud(argparse.Namespace(ud_dir=str(ud), output=str(tmp_path / "out"), hold_out="email"))

    def sents(name):
        docs = DocBin().from_disk(tmp_path / "out" / f"{name}.spacy").get_docs(spacy.blank("en").vocab)
        return [s.text for d in docs for s in d.sents]

    def texts(bs):
        return [re.search(r"^# text = (.*)$", b, re.M).group(1) for b in bs]

    assert sents("train") == sents("dev") == texts(other)
    assert sents("heldout") == texts(email) * 2  # train's and dev's
    assert sents("test") == texts(other[:cut] + email + other[cut:])
    with pytest.raises(SystemExit):
        cmd_convert_ud(argparse.Namespace(ud_dir=str(ud), output=str(tmp_path / "none"), hold_out="poetry"))
    assert not (tmp_path / "none").exists()  # nothing written for a prefix that holds nothing out


def test_boundary_recall_sorts_sentence_starts_by_paragraph_and_mark():
    """A review title without a full stop, a paragraph that ends in one and a sentence inside a paragraph
    without one: each gold start lands in its kind, found or missed as the predicted doc has it, and a
    predicted start the reference lacks is counted apart."""
    from spacy_sparse.boundaries import BOUNDARY_KINDS, boundary_recall
    from spacy_sparse.readers import PARAGRAPHS_KEY

    nlp = spacy.blank("en")
    words = ["Great", "bagels", "We", "went", "twice", ".", '"', "Loved", "it", "!", '"', "Then", "we", "left", "so",
             "sad", "Bye", "now"]
    starts = [i in (0, 2, 6, 11, 16) for i in range(len(words))]
    ref = Doc(nlp.vocab, words=words, spaces=[True] * len(words), sent_starts=starts)
    ref.user_data[PARAGRAPHS_KEY] = [2, 11]  # "We ..." and "Then ..." start paragraphs
    pred = nlp.make_doc(ref.text)
    assert [t.text for t in pred] == words
    for t in pred:  # "Loved" is no gold start (the quote before it is)
        t.is_sent_start = t.i in (0, 2, 7, 16)
    got = boundary_recall([pred], [ref])
    par_mark, par_none, in_mark, in_none = BOUNDARY_KINDS
    assert got["kinds"][par_none] == {"gold": 1, "found": 1}  # "We", after "bagels"
    assert got["kinds"][in_mark] == {"gold": 1, "found": 0}  # the quote after "."
    assert got["kinds"][par_mark] == {"gold": 1, "found": 0}  # "Then", after "!" and a closing quote
    assert got["kinds"][in_none] == {"gold": 1, "found": 1}  # "Bye", after "sad"
    assert got["false_starts"] == 1
    with pytest.raises(ValueError, match="character offset"):
        boundary_recall([nlp.make_doc(ref.text.lower() + " x")], [ref])


@pytest.mark.full
def test_bench_gives_raw_text_the_gold_sentence_starts(corpus):
    """`bench --raw-gold-sents`: the raw text's own tokens carry the gold sentence starts (by character
    offset), the segmenter keeps them, and the parser scores at least what it scores on its own sentences;
    the run records each component's speed and, on raw text without given starts, the starts by kind."""
    import spacy_sparse
    from spacy_sparse.bench import given_sentence_starts, input_docs, read_references, run_bench

    nlp = spacy_sparse.load_default()
    refs = read_references(nlp, corpus / "dev.spacy")
    docs = input_docs(nlp, refs, "raw", sents=True)
    for doc, ref in zip(docs, refs):
        assert doc.text == ref.text
        gold = {t.idx for t in ref if t.is_sent_start}
        assert {t.idx for t in doc if t.is_sent_start} == gold & {t.idx for t in doc}
    with pytest.raises(ValueError, match="reference's text"):
        given_sentence_starts(nlp.make_doc("Another text."), refs[0])
    with pytest.raises(ValueError, match="gold tokens or raw text"):
        input_docs(nlp, refs, "lines", sents=True)
    given = run_bench("default", corpus / "dev.spacy", [None], repeat=1, sents=True)
    plain = run_bench("default", corpus / "dev.spacy", [None], repeat=1)
    assert given["rows"][0]["scores"]["sents_f"] > 0.99 > plain["rows"][0]["scores"]["sents_f"]
    assert given["rows"][0]["scores"]["dep_las"] > plain["rows"][0]["scores"]["dep_las"]
    assert "boundaries" not in given["rows"][0]
    kinds = plain["rows"][0]["boundaries"]["kinds"]
    assert sum(k["gold"] for k in kinds.values()) == sum(t.is_sent_start and t.i > 0 for r in refs for t in r)
    assert all(0 <= k["found"] <= k["gold"] for k in kinds.values())
    assert set(plain["component_words_per_second"]) == set(nlp.pipe_names)
    assert all(v > 0 for v in plain["component_words_per_second"].values())
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "bench", "default", str(corpus / "dev.spacy"),
                           "--raw-gold-sents", "--lines"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1 and "--raw-gold-sents" in proc.stdout + proc.stderr
