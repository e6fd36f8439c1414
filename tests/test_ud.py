"""CoNLL-U in and out, and the shared task's metrics (evaluate-ud), on
hand-made sentences with hand-counted scores and on EWT dev."""
import io
import json
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import Doc

from spacy_sparse.conllu import BadSentence, doc_conllu, read_sentences, ud_text
from spacy_sparse.ud_eval import UDError, evaluate, load

from conftest import EWT, ROOT, need, run


def row(i, form, head="_", rel="_", upos="_", lemma="_", feats="_", misc="_", xpos="_"):
    return "\t".join([str(i), form, lemma, upos, xpos, feats, str(head), rel, "_", misc])


def bank(*sentences):
    """A treebank from sentences given as lists of CoNLL-U lines."""
    return load("\n\n".join("\n".join(s) for s in sentences).splitlines(True) + ["\n"])


def f1(scores, metric):
    return round(scores[metric].f1, 6)


THE_DOG = [row(1, "The", 2, "det", "DET", "the"), row(2, "dog", 3, "nsubj", "NOUN", "dog"),
           row(3, "barks", 0, "root", "VERB", "bark")]


def test_a_file_against_itself_scores_everything_right():
    gold = bank(THE_DOG, ["1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_", row(1, "do", 3, "aux", "AUX", "do"),
                          row(2, "n't", 3, "advmod", "PART", "not"), row(3, "go", 0, "root", "VERB", "go")])
    scores = evaluate(gold, gold)
    assert all(f1(scores, m) == 1.0 for m in scores)
    assert scores["Tokens"].gold == 5 and scores["Words"].gold == 6


def test_split_and_merged_tokens_count_only_equal_spans():
    gold = bank([row(1, "ab", 0, "root", "X"), row(2, "c", 1, "dep", "Y")])
    system = bank([row(1, "a", 0, "root", "X", misc="SpaceAfter=No"), row(2, "b", 1, "dep", "X"),
                   row(3, "c", 1, "dep", "Y")])
    scores = evaluate(gold, system)
    # one of 2 gold and 3 system tokens matches: P 1/3, R 1/2, F1 2*1/(2+3)
    assert (scores["Tokens"].precision, scores["Tokens"].recall, f1(scores, "Tokens")) == (1 / 3, 1 / 2, 0.4)
    assert f1(scores, "Words") == 0.4 and scores["UPOS"].correct == 1 and scores["UPOS"].aligned_accuracy == 1.0
    # c's head is ab in gold and a in the system: a is not aligned to any gold word
    assert scores["UAS"].correct == 0


def test_a_multiword_token_aligns_its_words_by_form():
    gold = bank(["1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_", row(1, "do", 3, "aux", "AUX"), row(2, "n't", 3, "advmod", "PART"),
                 row(3, "go", 0, "root", "VERB")])
    system = bank([row(1, "do", 3, "aux", "AUX", misc="SpaceAfter=No"), row(2, "n't", 3, "advmod", "PART"),
                   row(3, "go", 0, "root", "VERB")])
    scores = evaluate(gold, system)
    assert scores["Tokens"].correct == 1 and (scores["Tokens"].gold, scores["Tokens"].system) == (2, 3)
    assert f1(scores, "Words") == 1.0 and f1(scores, "LAS") == 1.0
    merged = bank([row(1, "don't", 2, "aux", "AUX"), row(2, "go", 0, "root", "VERB")])
    scores = evaluate(gold, merged)  # "don't" as one word: no word of the token aligns
    assert scores["Words"].correct == 1 and (scores["Words"].gold, scores["Words"].system) == (3, 2)


def test_heads_labels_and_relation_subtypes():
    gold = bank([row(1, "a", 2, "nsubj"), row(2, "b", 0, "root"), row(3, "c", 2, "obj"), row(4, ".", 2, "punct")])
    wrong_head = bank([row(1, "a", 2, "nsubj"), row(2, "b", 0, "root"), row(3, "c", 1, "obj"), row(4, ".", 2, "punct")])
    scores = evaluate(gold, wrong_head)
    assert f1(scores, "UAS") == 0.75 and f1(scores, "LAS") == 0.75
    assert (scores["CLAS"].correct, scores["CLAS"].gold) == (2, 3)  # punct is not a content relation
    subtype = bank([row(1, "a", 2, "nsubj:pass"), row(2, "b", 0, "root"), row(3, "c", 2, "iobj"),
                    row(4, ".", 2, "punct")])
    scores = evaluate(gold, subtype)
    assert f1(scores, "UAS") == 1.0 and f1(scores, "LAS") == 0.75  # nsubj:pass counts as nsubj


def test_lemmas_features_and_function_words():
    gold = bank([row(1, "The", 2, "det", "DET", "the", "Definite=Def|PronType=Art"),
                 row(2, "dogs", 3, "nsubj", "NOUN", "_", "Number=Plur"), row(3, "bark", 0, "root", "VERB", "bark")])
    system = bank([row(1, "The", 2, "det", "PRON", "the", "PronType=Art|Definite=Def|Typo=Yes"),
                   row(2, "dogs", 3, "nsubj", "NOUN", "dogs", "Number=Plur"), row(3, "bark", 0, "root", "VERB", "barks")])
    scores = evaluate(gold, system)
    # gold "_" accepts any lemma; "barks" is wrong
    assert scores["Lemmas"].correct == 2
    # features compare as sets of universal features (Typo is not one)
    assert scores["UFeats"].correct == 3 and scores["UPOS"].correct == 2
    # MLAS: "dogs" has a function child whose UPOS is wrong; "bark" is right
    assert (scores["MLAS"].correct, scores["MLAS"].gold) == (1, 2)
    assert scores["CLAS"].correct == 2 and scores["BLEX"].correct == 1


def test_sentences_score_by_span():
    gold = bank(THE_DOG, [row(1, "Yes", 0, "root")])
    system = bank(THE_DOG + [row(4, "Yes", 3, "dep")])
    scores = evaluate(gold, system)
    assert (scores["Sentences"].correct, scores["Sentences"].gold, scores["Sentences"].system) == (0, 2, 1)


@pytest.mark.parametrize("lines, problem", [
    (["1\ta\t_\t_\t_\t_\t0\troot\t_"], "9 tab-separated columns"),
    ([row(2, "a", 0, "root")], "word id '2' where 1 comes next"),
    ([row(1, "a", 2, "dep"), row(2, "b", 1, "dep")], "0 roots"),
    ([row(1, "a", 0, "root"), row(2, "b", 3, "dep"), row(3, "c", 2, "dep")], "a cycle"),
    ([row(1, "a", 0, "root"), row(2, "b", 0, "root")], "2 roots"),
    ([row(1, "a", 0, "root"), row(2, "b", 7, "dep")], "not a word id"),
])
def test_broken_sentences_are_errors_naming_the_line(lines, problem):
    text = "\n".join(THE_DOG) + "\n\n# a comment\n" + "\n".join(lines) + "\n\n"
    with pytest.raises(UDError, match=f"line 5.*{problem}|{problem}.*"):
        load(text.splitlines(True))
    found = list(read_sentences(text.splitlines(True)))
    assert not isinstance(found[0], BadSentence) and isinstance(found[1], BadSentence) and found[1].line == 5


def test_different_texts_are_refused():
    with pytest.raises(UDError, match="different text"):
        evaluate(bank(THE_DOG), bank([row(1, "The", 2), row(2, "cat", 0, "root")]))


def test_a_doc_is_written_with_multiword_tokens_spaces_and_no_whitespace_words():
    nlp = spacy.blank("en")
    words = ["I", "do", "n't", "know", "\n", "it", "!", "\n\n", "Ok", "."]
    spaces = [True, False, True, False, False, False, False, False, False, False]
    heads = [3, 3, 3, 3, 3, 6, 6, 6, 8, 8]
    deps = ["nsubj", "aux", "advmod", "ROOT", "dep", "ROOT", "punct", "dep", "ROOT", "punct"]
    starts = [True, False, False, False, False, True, False, False, True, False]
    doc = Doc(nlp.vocab, words=words, spaces=spaces, heads=heads, deps=deps, sent_starts=starts,
              pos=["PRON", "AUX", "PART", "VERB", "SPACE", "PRON", "PUNCT", "SPACE", "INTJ", "PUNCT"],
              lemmas=["I", "do", "not", "know", "\n", "it", "!", "\n\n", "ok", "."])
    text = doc_conllu(doc, "d1")
    blocks = [b.splitlines() for b in text.strip().split("\n\n")]
    assert blocks[0][:4] == ["# newdoc id = d1", "# newpar", "# sent_id = d1-1", "# text = I don't know"]
    assert blocks[0][4] == "1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_"
    assert blocks[0][5] == "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_"
    assert blocks[0][8].endswith("\t0\troot\t_\tSpacesAfter=\\n")
    assert blocks[1][0] == "# sent_id = d1-2" and blocks[1][-1].endswith("SpacesAfter=\\n\\n")
    assert blocks[2][:2] == ["# newpar", "# sent_id = d1-3"]  # a blank line before it: a new paragraph
    assert all("\t\n" not in line and len(line.split("\t")) == 10 for b in blocks for line in b
               if not line.startswith("#"))
    # what the writer wrote reads back as the same words, tree and lemmas
    back = [s for s in read_sentences(text.splitlines(True))]
    assert [w[1] for s in back for w in s.words] == [t.text for t in doc if not t.is_space]
    assert [w[2] for s in back for w in s.words] == [t.lemma_ for t in doc if not t.is_space]


@pytest.fixture(scope="module")
def dev_slice(tmp_path_factory):
    """The first 300 sentences of EWT dev as CoNLL-U, and its text laid out as UD's."""
    need(EWT)
    out = tmp_path_factory.mktemp("ud")
    blocks = (EWT / "en_ewt-ud-dev.conllu").read_text(encoding="utf8").split("\n\n")[:300]
    gold = out / "gold.conllu"
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf8")
    run("spacy_sparse", "ud-text", str(gold), str(out / "gold.txt"))
    return out


def test_tag_paragraphs_to_conllu_then_evaluate_ud(dev_slice):
    """The UD user's path on real text: paragraphs in, CoNLL-U out, the shared task's metrics."""
    text = (dev_slice / "gold.txt").read_text(encoding="utf8")
    paragraphs = text.strip().split("\n\n")
    assert max(len(line) for line in text.splitlines()) <= 80 and any("\n" in p for p in paragraphs)
    run("spacy_sparse", "tag", "default", str(dev_slice / "gold.txt"), str(dev_slice / "sys.conllu"), "--format",
        "paragraphs", "--quiet")
    out = (dev_slice / "sys.conllu").read_text(encoding="utf8")
    assert out.count("# newpar") >= len(paragraphs) and out.count("# newdoc") == 1
    run("spacy_sparse", "evaluate-ud", str(dev_slice / "gold.conllu"), str(dev_slice / "sys.conllu"), "--json",
        str(dev_slice / "scores.json"))
    scores = json.loads((dev_slice / "scores.json").read_text())
    assert scores["Words"]["f1"] > 0.98 and scores["Tokens"]["f1"] > 0.98
    assert scores["UPOS"]["f1"] > 0.9 and scores["LAS"]["f1"] > 0.7 and scores["Sentences"]["f1"] > 0.75
    assert scores["Lemmas"]["f1"] > 0.9 and scores["UFeats"]["f1"] > 0.9
    # every paragraph is one doc: no sentence of the output crosses a paragraph break
    assert out.count("# newpar") == len(paragraphs)


def test_conllu_in_keeps_tokens_sentences_and_comments_and_scores_as_spacy(dev_slice):
    """Gold tokens and sentences through `tag`: Tokens, Words and Sentences are exact, comments and
    multiword tokens come back as they were, and UPOS equals spaCy's own scorer on the same docs."""
    from spacy.scorer import Scorer
    from spacy.training import Example
    from spacy.training.converters import conllu_to_docs

    import spacy_sparse

    gold = dev_slice / "gold.conllu"
    run("spacy_sparse", "tag", "default", str(gold), str(dev_slice / "given.conllu"), "--quiet")
    given = (dev_slice / "given.conllu").read_text(encoding="utf8")
    original = gold.read_text(encoding="utf8")
    assert [x for x in given.splitlines() if x.startswith("#")] == [x for x in original.splitlines() if x.startswith("#")]
    def ranges(text):
        return [x.split("\t")[:2] for x in text.splitlines() if "-" in x.split("\t")[0] and not x.startswith("#")]

    assert ranges(given) == ranges(original) and len(ranges(given)) > 5
    scores = evaluate(load(original.splitlines(True)), load(given.splitlines(True)))
    assert f1(scores, "Tokens") == f1(scores, "Words") == f1(scores, "Sentences") == 1.0
    # spaCy reads the same output back: its tags and heads are the ones written
    nlp = spacy_sparse.load_default()
    refs = list(conllu_to_docs(original, n_sents=1, no_print=True))
    preds = [nlp(Doc(nlp.vocab, words=[t.text for t in r], spaces=[bool(t.whitespace_) for t in r],
                     sent_starts=[True] + [False] * (len(r) - 1))) for r in refs]
    spacy_scores = Scorer.score_token_attr([Example(p, r) for p, r in zip(preds, refs)], "pos")
    assert abs(spacy_scores["pos_acc"] - scores["UPOS"].f1) < 1e-9
    back = list(conllu_to_docs(given, n_sents=1, no_print=True))
    assert [t.tag_ for d in back for t in d] == [t.tag_ for d in preds for t in d]
    assert [t.head.i - t.i for d in back for t in d] == [t.head.i - t.i for d in preds for t in d]


def test_tag_reads_a_directory_whole_files_and_skips_what_is_not_text(tmp_path):
    src = tmp_path / "texts"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("The ferry left at dawn.\n\nIt came back at noon.\n", encoding="utf8")
    (src / "sub" / "b.txt").write_text("Nobody expected the storm.", encoding="utf8")
    (src / "c.txt").write_bytes(b"\x00\x01binary")
    (src / "notes.md").write_text("not read", encoding="utf8")
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", "default", str(src), str(tmp_path / "o.jsonl"),
                           "--quiet"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text(encoding="utf8").splitlines()]
    assert [r["file"] for r in rows] == ["a.txt", "sub/b.txt"]
    assert rows[0]["text"] == "The ferry left at dawn.\n\nIt came back at noon.\n"
    assert "c.txt" in proc.stderr and "binary" in proc.stderr


def test_paragraphs_and_whole_files_are_docs_with_their_line_breaks(tmp_path):
    from spacy_sparse.records import RecordReader

    data = b"First line of a paragraph\nwrapped here.\n\n\nSecond one.\n  \nThird\n"
    records = list(RecordReader(io.BytesIO(data), "paragraphs", doc_id="f"))
    assert [(t, w.line, w.newdoc) for t, w in records] == [
        ("First line of a paragraph\nwrapped here.", 1, True), ("Second one.", 5, False), ("Third", 7, False)]
    whole = list(RecordReader(io.BytesIO(data), "whole"))
    assert [t for t, _ in whole] == [data.decode()]


def test_ud_text_lays_out_paragraphs_wrapped_at_80(dev_slice):
    with open(dev_slice / "gold.conllu", "rb") as f:
        sentences = list(read_sentences(f))
    paragraphs = list(ud_text(sentences))
    assert len(paragraphs) == sum(s.starts_paragraph() for s in sentences)
    joined = "".join("".join(p.split()) for p in paragraphs)
    assert joined == "".join("".join(form.split()) for s in sentences for form, _ in s.surface())
    assert all(len(line) <= 80 or " " not in line for p in paragraphs for line in p.splitlines())


def test_every_written_sentence_is_one_tree_whatever_the_heads():
    """Words hanging from a whitespace root, or from outside their sentence, hang from the sentence's root."""
    nlp = spacy.blank("en")
    words = ["Hi", "\n", "there", "you", "."]
    doc = Doc(nlp.vocab, words=words, spaces=[False, False, True, False, False], heads=[1, 1, 1, 2, 0],
              deps=["dep", "ROOT", "dep", "dep", "punct"], sent_starts=[True, False, False, False, False])
    text = doc_conllu(doc, "d")
    load(text.splitlines(True))  # one root, no cycle
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    assert [(r[1], r[6], r[7]) for r in rows] == [("Hi", "0", "root"), ("there", "1", "dep"), ("you", "2", "dep"),
                                                   (".", "1", "punct")]


@pytest.mark.parametrize("fmt", ["lines", "paragraphs", "whole"])
def test_a_huge_line_is_read_in_pieces_in_bounded_memory(fmt):
    """A 24 MB line is never held whole: its pieces are those split_long cuts, made as the bytes arrive."""
    import tracemalloc

    from spacy_sparse.records import RecordReader, split_long

    text = "The ferry left the harbour at dawn, and nobody saw it go. " * 400_000
    reader = RecordReader(io.BytesIO(text.encode() + b"\n"), fmt, max_length=50_000)
    tracemalloc.start()
    lengths, joined, first = [], [], None
    for piece, where in reader:
        lengths.append(len(piece))
        first = first or piece
        if len(joined) < 3:
            joined.append(piece)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    expected = list(split_long(text, 50_000))
    assert lengths[:-1] == [len(p) for p in expected][:len(lengths) - 1] and sum(lengths) == len(text) + (fmt == "whole")
    assert joined == expected[:3] and peak < 2_000_000  # a few pieces and chunks, not 24 MB


def test_a_broken_conllu_sentence_costs_only_itself(tmp_path):
    """tag over CoNLL-U: a sentence with ids out of order is reported with its line and skipped, the others are
    annotated; with --on-error fail the run stops there with exit code 1, the sentences before it written."""
    good = "\n".join(THE_DOG) + "\n\n"
    broken = "# sent_id = b\n" + "\n".join([row(1, "Hi", 0, "root"), row(3, "there", 1, "dep")]) + "\n\n"
    src = tmp_path / "in.conllu"
    src.write_text(good + broken + good, encoding="utf8")
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", "default", str(src), str(tmp_path / "o.conllu"),
                           "--quiet"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "sentence at line 5" in proc.stderr and "word id '3'" in proc.stderr
    assert (tmp_path / "o.conllu").read_text(encoding="utf8").count("\tbarks\t") == 2
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", "default", str(src), str(tmp_path / "f.conllu"),
                           "--quiet", "--on-error", "fail"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1 and (tmp_path / "f.conllu").read_text(encoding="utf8").count("\tbarks\t") == 1


def test_bench_ud_runs_the_model_with_runtime_settings(dev_slice):
    """`bench-ud --set`: the shipped pipeline run with other settings over the UD-layout text, scored as the
    shared task does, its settings written beside the scores; a setting that is not one is refused."""
    out = dev_slice / "bench_set.json"
    run("spacy_sparse", "bench-ud", "default", str(dev_slice / "gold.conllu"), "--runs", "1", "--set",
        "sparse_parser.margin=none", "--set", "sparse_tagger.margin=30", "--json", str(out))
    data = json.loads(out.read_text())
    assert data["settings"] == {"sparse_parser.margin": "None", "sparse_tagger.margin": "30.0"}
    assert data["model"]["scores"]["LAS"] > 70 and data["model"]["scores"]["UPOS"] > 90
    proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "bench-ud", "default", str(dev_slice / "gold.conllu"),
                           "--set", "sparse_parser.beam_width=0"], capture_output=True, text=True)
    assert proc.returncode != 0 and "beam_width must be a whole number" in proc.stdout + proc.stderr
