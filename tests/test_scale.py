"""Corpus-scale processing: threads, the streaming tag command, Dask shards."""
import json
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import DocBin

from conftest import ROOT, to_examples

TEXTS = ["The market rallied after the report .", "She did n't call back .", "Prices fell 3 % in May ."]


def tags(docs):
    return [[t.tag_ for t in d] for d in docs]


def test_two_threads_give_identical_output(trained, ewt_refs):
    nlp, tagger = trained
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"])]
    assert sum(len(d) for d in docs) > 8000  # enough for the batch to be split
    tagger.n_threads = 1
    single = tags(tagger.pipe(docs, batch_size=1000))
    tagger.n_threads = 2
    try:
        assert tags(tagger.pipe([eg.predicted for eg in to_examples(nlp, ewt_refs["dev"])], batch_size=1000)) == single
    finally:
        tagger.n_threads = 1


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts_fail_clearly(value):
    with pytest.raises(ValueError, match="n_threads"):
        spacy.blank("en").add_pipe("sparse_tagger", config={"n_threads": value})


def test_json_lines_are_the_dicts_serialized(ewt_refs, trained_ner):
    """tag's fast writer gives the bytes of json.dumps over doc_to_json: the
    shipped pipeline on EWT dev text, entities, and odd texts."""
    from spacy.tokens import Span

    import spacy_sparse
    from spacy_sparse.jsonl import doc_to_json, json_line

    nlp = spacy_sparse.load_default()
    odd = ["", "   ", "a  \n\t b", 'quote " back \\ ctrl \x01 \u2028 caf\u00e9 \u65e5\u672c', "x" * 30]
    docs = list(nlp.pipe([d.text for d in ewt_refs["dev"][:20]] + odd))
    docs += list(spacy_sparse.load_default("tagger").pipe(odd + [ewt_refs["dev"][0].text]))
    docs.append(nlp.make_doc("No annotation at all ."))
    ner_nlp, _ = trained_ner
    docs += list(ner_nlp.pipe(["Angela Merkel met Boris Johnson in London on Tuesday .", ""]))
    doc = nlp.make_doc("Acme hired Dana Reyes in Oslo")
    doc.ents = [Span(doc, 0, 1, "ORG"), Span(doc, 2, 4, "PERSON"), Span(doc, 5, 6, "GPE")]
    docs.append(doc)
    assert any(d.ents for d in docs) and any(d.has_annotation("DEP") for d in docs)
    for i, doc in enumerate(docs):
        for line in (i + 1, None):
            assert json_line(doc, line) == json.dumps(doc_to_json(doc, line), ensure_ascii=False) + "\n"


def _expected(doc, line):
    from spacy_sparse.jsonl import doc_to_json
    return json.dumps(doc_to_json(doc, line), ensure_ascii=False) + "\n"


def test_json_lines_from_a_table_that_starts_afresh(ewt_refs):
    """A piece table held small starts afresh over and over, grows its
    buffers for a long doc and shrinks them after, and every line stays
    what doc_to_json says (the first line of each call after a reset too)."""
    import spacy_sparse
    from spacy_sparse.jsonl import PieceTable

    nlp = spacy_sparse.load_default()
    docs = list(nlp.pipe([d.text for d in ewt_refs["dev"][:40]]))
    long_doc = nlp(" ".join(d.text for d in ewt_refs["dev"][:300]))
    table = PieceTable(max_pieces=300, max_bytes=20_000)
    resets = 0
    for i, doc in enumerate(docs[:20] + [long_doc] + docs[20:]):
        before = table.count
        assert table.line(doc, i).decode("utf8") == _expected(doc, i)
        resets += table.count < before
        assert table.tokens_out.shape[0] <= 1 << 22
    assert resets >= 3 and len(long_doc) > 3000


def test_json_lines_of_random_annotation():
    """Docs of odd words with random tags, POS, labels, heads, sentence
    starts and entities, each layer present or not: every line is what
    doc_to_json says, through a table that starts afresh now and then."""
    import random

    from spacy.tokens import Doc, Span

    from spacy_sparse.jsonl import PieceTable

    rng = random.Random(7)
    alphabet = ['a', 'Z', '9', '"', '\\', '\x01', '\t', '\u2028', '\u00e9', '\u65e5', '-', "'", '\U0001F600']
    vocab = spacy.blank("en").vocab
    table = PieceTable(max_pieces=200)
    for n_doc in range(150):
        n = rng.choice([1, 2, rng.randint(3, 40)])
        words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) for _ in range(n)]
        layers = {name: rng.random() < 0.6 for name in ("tags", "pos", "deps", "sents", "ents")}
        heads = [rng.randint(0, n - 1) for _ in range(n)] if layers["deps"] else None
        doc = Doc(vocab, words=words, spaces=[rng.random() < 0.7 for _ in range(n)],
                  tags=[rng.choice(["NN", "VB", "X\"Y"]) for _ in range(n)] if layers["tags"] else None,
                  pos=[rng.choice(["NOUN", "VERB", "X"]) for _ in range(n)] if layers["pos"] else None,
                  heads=heads, deps=[rng.choice(["dep", "nsubj", "a\\b"]) for _ in range(n)] if heads else None,
                  sent_starts=[True] + [rng.random() < 0.2 for _ in range(n - 1)]
                  if layers["sents"] and not heads else None)
        if layers["ents"] and n > 2:
            doc.ents = [Span(doc, 1, 2, "ORG"), Span(doc, n - 1, n, "P\u00e9")]
        line = None if n_doc % 3 else n_doc
        assert table.line(doc, line).decode("utf8") == _expected(doc, line)
    empty = Doc(vocab, words=[])
    assert table.line(empty, 1).decode("utf8") == _expected(empty, 1)


def test_json_lines_from_several_threads(ewt_refs):
    """Threads sharing the writer's table (the lock) each get their docs'
    own lines."""
    from concurrent.futures import ThreadPoolExecutor

    import spacy_sparse
    from spacy_sparse.jsonl import json_line

    nlp = spacy_sparse.load_default("tagger")
    docs = list(nlp.pipe([d.text for d in ewt_refs["dev"][:200]]))
    with ThreadPoolExecutor(4) as pool:
        lines = list(pool.map(lambda pair: json_line(pair[1], pair[0]), enumerate(docs)))
    assert lines == [_expected(doc, i) for i, doc in enumerate(docs)]


def test_json_lines_keep_a_user_sentence_hook():
    import spacy_sparse
    from spacy_sparse.jsonl import json_line

    doc = spacy_sparse.load_default("tagger")("One two three. Four five six.")
    doc.user_hooks["sents"] = lambda d: iter([d[0:2], d[2:]])
    assert '"sents": [0, 2]' in json_line(doc, None) and json_line(doc, None) == _expected(doc, None)


def run_tag(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", "default", *args],
                          cwd=ROOT, input=stdin, capture_output=True)


def test_tag_text_from_stdin_to_jsonl(tmp_path):
    out = tmp_path / "out.jsonl"
    proc = run_tag("-", str(out), "--quiet", stdin=("\n".join(TEXTS) + "\n").encode())
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3]
    assert {k: rows[0]["tokens"][0][k] for k in ("text", "ws", "tag", "dep")} == \
        {"text": "The", "ws": True, "tag": "DT", "dep": "det"}  # the default pipeline parses too
    assert all(t["tag"] and t["dep"] for r in rows for t in r["tokens"])


def test_bad_lines_are_reported_and_skipped(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"text": "Good one ."}\nnot json\n{"no": "text"}\n\xff\xfe\n\n{"text": "Last ."}\n')
    out = tmp_path / "out.jsonl"
    proc = run_tag(str(src), str(out))
    assert proc.returncode == 0
    err = proc.stderr.decode()
    assert "line 2: invalid JSON" in err and 'line 3: no "text"' in err and "line 4: invalid UTF-8" in err
    assert [json.loads(x)["line"] for x in out.read_text().splitlines()] == [1, 6]


def test_a_deeply_nested_json_line_costs_only_itself(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"text": "Before it ."}\n' + b"[" * 200_000 + b'\n{"text": "After it ."}\n')
    out = tmp_path / "out.jsonl"
    proc = run_tag(str(src), str(out))
    assert proc.returncode == 0, proc.stderr
    assert "line 2: invalid JSON" in proc.stderr.decode()
    assert [json.loads(x)["line"] for x in out.read_text().splitlines()] == [1, 3]


def test_a_lone_surrogate_costs_only_its_own_line(tmp_path):
    """Valid JSON whose text is not valid Unicode goes through the bad-line path; the docs around it are written."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"text": "Good one ."}\n{"text": "bad \\ud800 escape"}\n{"text": "Last ."}\n')
    out = tmp_path / "out.jsonl"
    proc = run_tag(str(src), str(out))
    assert proc.returncode == 0, proc.stderr
    assert "line 2: the text is not valid Unicode" in proc.stderr.decode()
    assert [json.loads(x)["line"] for x in out.read_text(encoding="utf8").splitlines()] == [1, 3]


def test_an_over_long_text_is_split_not_dropped():
    """A text over nlp.max_length becomes several docs of the same line that hold all of it."""
    import io

    from spacy_sparse.stream import JsonlWriter, RecordReader, annotate

    nlp = spacy_sparse_default()
    nlp.max_length = 60
    long = " ".join(["The ferry left the harbour at dawn."] * 12) + " " + "x" * 150
    lines = ("Short one.\n" + long + "\nLast one.\n").encode()
    out = io.StringIO()
    reader = RecordReader(io.BytesIO(lines), "text", max_length=nlp.max_length)
    stats = annotate(nlp, reader, JsonlWriter(out), batch_size=4)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    middle = [r for r in rows if r["line"] == 2]
    assert len(middle) > 3 and all(len(r["text"]) <= 60 for r in middle)
    assert "".join(r["text"] for r in middle) == long
    assert middle[0]["text"].endswith("dawn.")  # cut at a sentence end
    assert [r["line"] for r in rows][0] == 1 and rows[-1]["line"] == 3 and stats["docs"] == len(rows)


def spacy_sparse_default():
    import spacy_sparse

    return spacy_sparse.load_default()


def test_on_error_fail_keeps_what_came_before(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"text": "First ."}\n{"text": "Second ."}\n{"text": 3}\n{"text": "Never ."}\n')
    out = tmp_path / "out.jsonl"
    proc = run_tag(str(src), str(out), "--on-error", "fail", "--quiet")
    assert proc.returncode == 1
    assert "line 3" in proc.stdout.decode() + proc.stderr.decode()
    assert [json.loads(x)["text"] for x in out.read_text().splitlines()] == ["First .", "Second ."]


def test_tag_to_docbin_shards(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS * 5) + "\n")
    proc = run_tag(str(src), str(tmp_path / "out.spacy"), "--shard-size", "4", "--quiet")
    assert proc.returncode == 0, proc.stderr
    shards = sorted((tmp_path / "out.spacy").glob("part-*.spacy"))
    assert len(shards) == 4
    nlp = spacy.blank("en")
    docs = [d for s in shards for d in DocBin().from_disk(s).get_docs(nlp.vocab)]
    assert [d.text for d in docs] == TEXTS * 5
    assert all(t.tag_ for d in docs for t in d)
    assert [d.user_data["line"] for d in docs] == list(range(1, len(docs) + 1))  # docs still match input lines


@pytest.mark.parametrize("option, value", [("--batch-size", "0"), ("--batch-size", "-5"), ("--n-process", "0"),
                                           ("--n-threads", "0")])
def test_settings_below_one_are_refused_before_reading(tmp_path, option, value):
    src = tmp_path / "in.txt"
    src.write_text("One line.\n")
    proc = run_tag(str(src), str(tmp_path / "out.jsonl"), option, value)
    assert proc.returncode == 1 and f"{option} must be at least 1" in proc.stderr.decode()
    assert b"Traceback" not in proc.stderr and not (tmp_path / "out.jsonl").exists()


def test_stdin_redirected_from_the_output_is_refused(tmp_path):
    target = tmp_path / "x.jsonl"
    target.write_text('{"text": "Keep me."}\n')
    with target.open("rb") as f:
        proc = subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", "default", "-", str(target)], cwd=ROOT,
                              stdin=f, capture_output=True)
    assert proc.returncode == 1 and b"The output is the input" in proc.stderr
    assert target.read_text() == '{"text": "Keep me."}\n'


def test_long_lines_are_cut_in_linear_time():
    from spacy_sparse.records import split_long

    text = "A short sentence here. " * 200_000  # 4.6M characters
    pieces = list(split_long(text, 10_000))
    assert "".join(pieces) == text and all(len(p) <= 10_000 for p in pieces) and pieces[0].endswith("here.")


@pytest.mark.full
def test_dask_local_cluster_matches_single_process(tmp_path, ewt_refs):
    pytest.importorskip("distributed")
    from spacy_sparse.scale import annotate_shards

    lines = [s.text for d in ewt_refs["dev"] for s in d.sents]
    shards = []
    for k in range(3):
        path = tmp_path / f"shard{k}.txt"
        path.write_text("\n".join(lines[k::3]) + "\n")
        shards.append(path)
    results = annotate_shards("default", shards, tmp_path / "out", n_workers=2)
    assert sum(r["docs"] for r in results) == len(lines)
    for path in shards:
        single = tmp_path / f"{path.stem}.single.jsonl"
        assert run_tag(str(path), str(single), "--quiet").returncode == 0
        assert (tmp_path / "out" / f"{path.stem}.jsonl").read_bytes() == single.read_bytes()


@pytest.mark.parametrize("n_process,sig", [("1", "SIGTERM"), ("2", "SIGTERM"), ("2", "SIGINT")])
def test_an_interrupted_tag_leaves_valid_output_and_no_workers(tmp_path, n_process, sig):
    """SIGTERM/SIGINT mid-run: every complete doc is written as whole JSONL lines, the worker processes stop,
    the exit code is non-zero and the message says how many docs were written."""
    import signal
    import time

    import psutil

    src = tmp_path / "in.txt"
    src.write_text("The ferry left the harbour at dawn , and the passengers saw the cliffs .\n" * 100_000)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "spacy_sparse", "tag", "default", str(src), str(out), "--quiet",
                             "--batch-size", "100", "--n-process", n_process], cwd=ROOT, stderr=subprocess.PIPE)
    start = time.time()
    while (not out.exists() or out.stat().st_size < 50_000) and time.time() - start < 120:
        time.sleep(0.2)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) == (2 if n_process == "2" else 0)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    lines = out.read_text(encoding="utf8").splitlines()
    assert lines and all(json.loads(line)["tokens"] for line in lines)
    assert f"Interrupted: {len(lines):,} complete docs" in err.decode()
    time.sleep(0.5)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def test_a_stop_signal_while_a_doc_is_written_waits_until_it_is_counted():
    """A SIGTERM that lands between writing a doc and counting it once made `tag` report one doc fewer than it
    wrote; now the handler waits for both, then stops the run."""
    from spacy_sparse import stream

    stats = {"docs": 0, "words": 0}
    written = []

    def write():
        written.append(1)
        stream.stop_on_signal(15)  # the signal lands mid-write

    with pytest.raises(KeyboardInterrupt):
        stream._counted(write, stats, 1, 7)
    assert written == [1] and stats == {"docs": 1, "words": 7}
    stream._counted(lambda: written.append(2), stats, 1, 3)  # nothing held over: the next doc goes through
    assert written == [1, 2] and stats == {"docs": 2, "words": 10}


def _dev_lines_with_a_bad_one(tmp_path, ewt_refs):
    lines = [r.text.replace("\n", " ").encode() for r in ewt_refs["dev"]]
    lines[7] = b"\xff\xfe broken"
    src = tmp_path / "in.txt"
    src.write_bytes(b"\n".join(lines) + b"\n")
    return src, lines


def test_worker_processes_write_the_same_bytes(tmp_path, ewt_refs):
    """tag --n-process 2 (workers tokenize, annotate and serialize; the parent writes in input order) gives
    the bytes of one process, bad lines reported by line number as before."""
    src, lines = _dev_lines_with_a_bad_one(tmp_path, ewt_refs)
    outs = []
    for n in ("1", "2"):
        out = tmp_path / f"out{n}.jsonl"
        proc = run_tag(str(src), str(out), "--batch-size", "16", "--n-process", n)
        assert proc.returncode == 0, proc.stderr
        assert "line 8: invalid UTF-8" in proc.stderr.decode()
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") == len(lines) - 1


@pytest.mark.full
def test_worker_processes_write_the_same_conllu_and_docbins(tmp_path, ewt_refs):
    """The same for the other output formats: CoNLL-U bytes, and DocBin docs with their line numbers."""
    src, lines = _dev_lines_with_a_bad_one(tmp_path, ewt_refs)
    for n in ("1", "2"):
        assert run_tag(str(src), str(tmp_path / f"out{n}.conllu"), "--batch-size", "16", "--n-process", n).returncode == 0
        assert run_tag(str(src), str(tmp_path / f"out{n}.spacy"), "--batch-size", "16", "--n-process", n).returncode == 0
    assert (tmp_path / "out1.conllu").read_bytes() == (tmp_path / "out2.conllu").read_bytes()
    nlp = spacy.blank("en")
    docs = [[(d.user_data["line"], d.to_json()) for p in sorted((tmp_path / f"out{n}.spacy").glob("*.spacy"))
             for d in DocBin().from_disk(p).get_docs(nlp.vocab)] for n in "12"]
    assert docs[0] == docs[1] and len(docs[0]) == len(lines) - 1


def test_worker_processes_leave_the_parents_collector_as_it_was():
    """The parent freezes its objects before forking workers (so their collections do not copy the pages they
    share) and unfreezes them after, so a program that calls annotate keeps collecting its own garbage."""
    script = (
        "import gc, io, spacy_sparse\n"
        "from spacy_sparse.stream import JsonlWriter, annotate\n"
        "nlp = spacy_sparse.load_default('tagger')\n"
        "out = io.StringIO()\n"
        f"records = [(t, i) for i, t in enumerate({TEXTS!r} * 20, start=1)]\n"
        "stats = annotate(nlp, records, JsonlWriter(out), batch_size=4, n_process=2)\n"
        "print(stats['docs'], out.getvalue().count('\\n'), gc.get_freeze_count())\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["60", "60", "0"]


def test_work_units_are_cut_by_docs_or_by_characters(ewt_refs):
    """The units workers take: at most max_docs records or about max_chars of text each, in input order,
    every record once (so a few long docs cannot become a few huge units and idle a worker)."""
    from spacy_sparse.stream import work_units

    records = [(r.text, i) for i, r in enumerate(ewt_refs["dev"], start=1)]
    units = list(work_units(records, 1000, 5000))
    assert [rec for unit in units for rec in unit] == records
    longest = max(len(t) for t, _ in records)
    assert len(records) < 1000 and len(units) >= sum(len(t) for t, _ in records) // (5000 + longest) > 1
    assert all(sum(len(t) for t, _ in unit) < 5000 + longest for unit in units)
    assert all(len(unit) <= 3 for unit in work_units(records, 3, 10**9))


@pytest.mark.parametrize("name", ["out.jsonl", pytest.param("out.spacy", marks=pytest.mark.full)])
def test_a_dead_worker_ends_tag_with_an_error_not_a_hang(tmp_path, name):
    """A tag worker killed mid-run (OOM killer, say): the command stops with an error naming the cause, the
    output holds whole lines only, and nothing waits forever for the lost batch."""
    import signal
    import time

    import psutil

    src = tmp_path / "in.txt"
    src.write_text("The ferry left the harbour at dawn , and the passengers saw the cliffs .\n" * 100_000)
    out = tmp_path / name
    proc = subprocess.Popen([sys.executable, "-m", "spacy_sparse", "tag", "default-tagger", str(src), str(out),
                             "--quiet", "--batch-size", "100", "--n-process", "2", "--shard-size", "2000"], cwd=ROOT,
                            stderr=subprocess.PIPE)
    start = time.time()

    def written() -> int:
        if not out.exists():
            return 0
        return out.stat().st_size if out.is_file() else sum(p.stat().st_size for p in out.glob("part-*.spacy"))

    while written() < 50_000 and time.time() - start < 120:
        time.sleep(0.2)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert children
    children[0].send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode not in (0, None)
    assert "worker process died" in err.decode()
    if name.endswith(".spacy"):  # every shard written is whole
        docs = [d for p in sorted(out.glob("part-*.spacy")) for d in DocBin().from_disk(p).get_docs(spacy.blank("en").vocab)]
        assert docs and all(t.tag_ for d in docs for t in d)
        return
    lines = out.read_text(encoding="utf8").splitlines()
    assert lines and all(json.loads(line)["tokens"] for line in lines)
