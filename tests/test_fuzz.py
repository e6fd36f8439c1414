"""Seeded fuzzing: hostile model files and odd inputs.

A model file is data from anywhere. Every corrupted file below either
loads (and then labels text without crashing) or fails with a ValueError,
quickly and without large allocations; bit flips and cuts never load
(the checksum). Random texts and docs with preset annotation go through a
tagger, a segmenter, an NER and a parser without a crash and with valid
output. The seeds are fixed, so a failure reproduces.
"""
import resource
import time
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, Span

from spacy_sparse import codec
from spacy_sparse.model import SparseLinearModel

from conftest import bare, read_conllu_slice, to_examples, EWT, need

N_FILES = 1200
N_TEXTS = 1200


@pytest.fixture(scope="module")
def small_models(conll_refs):
    """A tagger, segmenter, NER and parser trained briefly on real data (small files: fast to fuzz)."""
    need(EWT)
    refs = read_conllu_slice(EWT / "en_ewt-ud-train.conllu", 300)
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger")
    nlp.add_pipe("sparse_senter")
    nlp.add_pipe("sparse_parser", config={"explore_after": 0})
    train = to_examples(nlp, refs)
    nlp.initialize(lambda: train)
    nlp.update(train)
    ner_nlp = spacy.blank("en")
    ner_nlp.add_pipe("sparse_ner")
    from spacy.training import Example

    ner_train = [Example(bare(r), r) for r in conll_refs["train"][:20]]
    ner_nlp.initialize(lambda: ner_train)
    ner_nlp.update(ner_train)
    nlp.add_pipe("sparse_ner", source=ner_nlp)
    return nlp


def _random_value(rng: np.random.Generator) -> Any:
    kinds: List[Callable[[], Any]] = [
        lambda: None, lambda: True, lambda: int(rng.integers(-2 ** 63, 2 ** 63 - 1)), lambda: -1, lambda: 0,
        lambda: 10 ** 12, lambda: float("nan"), lambda: float(rng.normal()), lambda: "",
        lambda: "x" * int(rng.integers(0, 50)), lambda: b"\x00" * int(rng.integers(0, 50)), lambda: [], lambda: {},
        lambda: ["lower@0"] * 3, lambda: ["lower@99999999999"], lambda: ["", "NN"], lambda: ["NN", "NN"],
        lambda: ["S0@lower"], lambda: ["tag@S0"], lambda: {"zlib": b"x", "dtype": "<f4", "size": 3},
        lambda: {"zlib": b"", "dtype": "|O", "size": 1}, lambda: np.zeros(int(rng.integers(0, 5)), dtype=np.int64),
        lambda: np.full(3, -1, dtype=np.int64), lambda: np.arange(7, dtype=np.float32),
        lambda: np.zeros((2, 2), dtype=np.float64), lambda: [[1, 2], [3]],
    ]
    return kinds[int(rng.integers(len(kinds)))]()


PREFIXES = ["SHIFT", "LEFT-", "RIGHT-", "ROOT-", "MOVE-", "ARC-", "O", "B-", "I-", "L-", "U-", "S", ""]


def _plausible_labels(labels: List[Any], rng: np.random.Generator) -> List[Any]:
    """The same number of distinct labels (so the rows still decode), named as some task names its labels but
    shuffled, or with a quarter of them (or every one of one kind) given another kind: what a checksum cannot
    catch, and what a kernel must never meet unchecked."""
    items = [str(x) for x in labels]
    how = int(rng.integers(3))
    if how == 0:
        rng.shuffle(items)
        return items
    kinds = sorted({x.split("-", 1)[0] for x in items})
    kind = kinds[int(rng.integers(len(kinds)))]
    chosen = [k for k, x in enumerate(items) if x.split("-", 1)[0] == kind] if how == 2 else \
        rng.choice(len(items), size=max(1, len(items) // 4), replace=False).tolist()
    for k in chosen:
        prefix = PREFIXES[int(rng.integers(len(PREFIXES)))]
        body = items[k].split("-", 1)[-1]
        items[k] = prefix if prefix in ("SHIFT", "O", "S", "") else prefix + body
    seen: Dict[str, int] = {}
    for k, x in enumerate(items):  # distinct, as a loadable file's labels are
        seen[x] = seen.get(x, 0) + 1
        if seen[x] > 1:
            items[k] = f"{x}-{seen[x]}" if "-" in x else f"{x}{seen[x]}"
    return items


def _mutate(msg: Dict[str, Any], rng: np.random.Generator) -> Dict[str, Any]:
    """One to three structural changes a file with a valid checksum could carry."""
    bad = dict(msg)
    keys = list(bad)
    for _ in range(int(rng.integers(1, 4))):
        key = keys[int(rng.integers(len(keys)))]
        value = bad.get(key)
        choice = int(rng.integers(6))
        if key == "labels" and isinstance(value, list) and value and choice < 3:
            bad[key] = _plausible_labels(value, rng)  # names a task knows, in an order or set its kernels cannot run
        elif choice == 0:
            bad.pop(key, None)
        elif choice == 1 or value is None:
            bad[key] = _random_value(rng)
        elif isinstance(value, np.ndarray) and value.size:
            arr = value.copy()
            if choice == 2:
                arr = arr[: int(rng.integers(0, arr.size))]
            elif choice == 3:
                arr.flat[int(rng.integers(arr.size))] = rng.integers(-2 ** 31, 2 ** 31) if arr.dtype.kind in "iu" \
                    else rng.normal() * 1e30
            else:
                arr = np.concatenate([arr, arr[: int(rng.integers(1, 9))]])
            bad[key] = arr
        elif isinstance(value, list) and value:
            items = list(value)
            if choice == 2:
                items = items[: int(rng.integers(0, len(items)))]
            elif choice == 3:
                items[int(rng.integers(len(items)))] = _random_value(rng)
            else:
                items.append(items[int(rng.integers(len(items)))])
            bad[key] = items
        elif isinstance(value, dict) and value:
            inner = dict(value)
            sub = list(inner)[int(rng.integers(len(inner)))]
            inner[sub] = _random_value(rng) if choice != 2 else (inner[sub][: len(inner[sub]) // 2]
                                                                   if isinstance(inner[sub], bytes) else 0)
            bad[key] = inner
        else:
            bad[key] = _random_value(rng)
    return bad


def test_corrupted_model_files_fail_cleanly_or_load_and_work(small_models):
    """>= 1,000 files per run: bit flips and cuts (never load), and structural changes under a valid checksum
    (a ValueError or a model that labels text). Each within 2 s; the whole run adds < 500 MB of peak RSS."""
    rng = np.random.default_rng(20261123)
    pipes = [small_models.get_pipe(n) for n in ("sparse_tagger", "sparse_ner", "sparse_parser", "sparse_senter")]
    datas = [p.sparse.to_bytes() for p in pipes]
    msgs = [codec.unseal(d) for d in datas]
    text = small_models.make_doc("The ferry left the harbour at dawn , and Maria saw 42 gulls .")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcomes = {"value_error": 0, "loaded": 0}
    for i in range(N_FILES):
        k = i % len(pipes)
        data = datas[k]
        if i % 3 == 0:
            bad = bytearray(data)
            pos = int(rng.integers(len(data) * 8))
            bad[pos // 8] ^= 1 << (pos % 8)
            blob, must_fail = bytes(bad), True
        elif i % 3 == 1 and i % 2:
            blob, must_fail = data[: int(rng.integers(0, len(data)))], True
        else:
            blob, must_fail = codec.seal(_mutate(msgs[k], rng)), False
        start = time.perf_counter()
        try:
            model = SparseLinearModel.from_bytes(blob)
        except ValueError:
            outcomes["value_error"] += 1
        else:
            assert not must_fail, f"case {i}: a damaged file loaded"
            outcomes["loaded"] += 1
            # a file that loads is a model the component can use (or refuse with a ValueError)
            pipe = type(pipes[k])(small_models.vocab, pipes[k].name, **{
                key: val for key, val in pipes[k].cfg.items() if key != "labels"}, scorer=None)
            try:
                pipe._load_model(blob)
            except ValueError:
                pass
            else:
                pipe(text.copy())
            del model
        assert time.perf_counter() - start < 2.0, f"case {i} took {time.perf_counter() - start:.1f}s"
    assert outcomes["value_error"] > N_FILES // 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 500 * 1024  # KiB


def _random_text(rng: np.random.Generator) -> str:
    pieces = ["the", "Dr.", "U.S.", "e-mail", "!!!", "...", "\n", "\n\n", "\t", "  ", "\u00a0", "\u200b", "🙂",
              "😀😀", "ß", "İ", "中文", "العربية", "\u0301", "x" * 300, "$", "42", "3.14", "'s", "n't", "(", ")",
              "@user", "#tag", "http://example.org/a?b=c", "\ufeff", "\x00", "\x1f", "A", "B.", "?"]
    n = int(rng.choice([0, 1, 2, 5, 20, 200, 2000]))
    return "".join(pieces[int(j)] + (" " if rng.random() < 0.7 else "") for j in rng.integers(len(pieces), size=n))


def test_random_inputs_never_crash_and_give_valid_output(small_models):
    """>= 1,000 texts and docs: unicode, whitespace, lengths from 0 to thousands of tokens, preset sentence starts,
    entities and tags; every doc comes back with valid sentences, heads inside the doc and entities that do not
    overlap, presets kept."""
    rng = np.random.default_rng(7)
    nlp = small_models
    texts = [_random_text(rng) for _ in range(N_TEXTS)]
    docs = []
    for i, text in enumerate(texts):
        doc = nlp.make_doc(text)
        if len(doc) > 2 and i % 4 == 1:
            doc[len(doc) // 2].is_sent_start = True
        if len(doc) > 3 and i % 4 == 2:
            doc.set_ents([Span(doc, 1, 2, "PER")], default="unmodified")
        if len(doc) and i % 4 == 3:
            doc[0].tag_ = "NN"
        docs.append(doc)
    presets = [(d.has_annotation("SENT_START") and len(d) > 2 and d[len(d) // 2].is_sent_start, list(d.ents))
               for d in docs]
    for j, doc in enumerate(nlp.pipe(docs, batch_size=64)):
        n = len(doc)
        assert n == len(docs[j])
        if not n:
            continue
        assert sum(len(s) for s in doc.sents) == n
        heads = doc.to_array("HEAD").astype(np.int64) + np.arange(n)
        assert heads.min() >= 0 and heads.max() < n
        ents = list(doc.ents)
        assert all(a.end <= b.start for a, b in zip(ents, ents[1:]))
        kept_start, kept_ents = presets[j]
        if kept_start:
            assert doc[n // 2].is_sent_start
        for ent in kept_ents:
            assert any((e.start, e.end, e.label_) == (ent.start, ent.end, ent.label_) for e in doc.ents)
    # one text at a time, and a doc with no tokens
    assert len(nlp("")) == 0
    assert len(nlp(Doc(nlp.vocab, words=[]))) == 0


def test_relabelled_model_files_load_with_a_value_error_or_label_text(small_models):
    """Files whose labels are renamed, shuffled or all one name (the count kept, so the rows still decode and the
    checksum is valid): each component refuses them or labels text; none sends its kernel outside its arrays."""
    rng = np.random.default_rng(20261129)
    text = small_models.make_doc("The ferry left the harbour at dawn , and Maria saw 42 gulls .")
    refused = 0
    for name in ("sparse_tagger", "sparse_ner", "sparse_parser", "sparse_senter"):
        pipe = small_models.get_pipe(name)
        msg = codec.unseal(pipe.sparse.to_bytes())
        for _ in range(60):
            blob = codec.seal(dict(msg, labels=_plausible_labels(list(msg["labels"]), rng)))
            other = type(pipe)(small_models.vocab, name, **{k: v for k, v in pipe.cfg.items() if k != "labels"},
                               scorer=None)
            try:
                other._load_model(blob)
            except ValueError:
                refused += 1
                continue
            doc = other(text.copy())
            assert len(doc) == len(text)
    assert refused > 100
