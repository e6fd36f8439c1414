"""Shared fixtures: slices of the real corpora in ../shared/data."""
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from spacy.training.converters import conllu_to_docs

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
EWT = SHARED / "ud-english-ewt"
sys.path.insert(0, str(ROOT))  # benchmarks/ (not installed) is importable by the tests


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="also run the slow tier (@pytest.mark.full): complete trainings through spacy train and "
                          "the commands, the ahead-of-time build, cold starts")


def pytest_configure(config):
    config.addinivalue_line("markers", "full: the slow tier, run with --full (CI runs it too)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--full"):
        return
    slow = pytest.mark.skip(reason="slow tier: run with --full")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(slow)


def need(path: Path) -> Path:
    """Skip the test, saying why, when a corpus of ../shared/data is absent."""
    if not path.exists():
        pytest.skip(f"needs the corpus at {path} (../shared/data beside the repository)")
    return path


def read_conllu_slice(path: Path, n_sents: int):
    """The first n_sents sentences of a CoNLL-U file as reference docs (10 sentences per doc)."""
    lines, count = [], 0
    with path.open(encoding="utf8") as f:
        for line in f:
            lines.append(line)
            if not line.strip():
                count += 1
                if count >= n_sents:
                    break
    return list(conllu_to_docs("".join(lines), n_sents=10, no_print=True))


def run(*args, cwd=ROOT):
    """`python -m ARGS`; fails the test with the output's tail if it fails."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def to_examples(nlp, refs):
    return [Example(Doc(nlp.vocab, words=[t.text for t in r], spaces=[bool(t.whitespace_) for t in r]), r) for r in refs]


@pytest.fixture(scope="session")
def ewt_refs():
    need(EWT)
    return {
        "train": read_conllu_slice(EWT / "en_ewt-ud-train.conllu", 3000),
        "dev": read_conllu_slice(EWT / "en_ewt-ud-dev.conllu", 600),
    }


@pytest.fixture(scope="session")
def corpus(ewt_refs, tmp_path_factory):
    """120 EWT training docs and 30 dev docs as .spacy files, for spacy train."""
    from spacy.tokens import DocBin

    out = tmp_path_factory.mktemp("corpus")
    DocBin(docs=ewt_refs["train"][:120]).to_disk(out / "train.spacy")
    DocBin(docs=ewt_refs["dev"][:30]).to_disk(out / "dev.spacy")
    return out


def train_tagger(refs, epochs=3, **config):
    """A sparse_tagger trained on `refs`; templates reading word clusters get the shipped table."""
    from spacy_sparse.clusters import atoms_read
    from spacy_sparse.templates import parse_templates

    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("sparse_tagger", config=config)
    train = to_examples(nlp, refs)
    if atoms_read(parse_templates(tagger.cfg["templates"])):
        nlp.config["initialize"]["components"]["sparse_tagger"] = {"clusters": "en_brown_1000"}
    nlp.initialize(lambda: train)
    for epoch in range(epochs):
        for i in range(0, len(train), 16):
            nlp.update(train[i:i + 16])
    return nlp, tagger


@pytest.fixture(scope="session")
def trained(ewt_refs):
    """A sparse_tagger trained on 3,000 EWT sentences."""
    return train_tagger(ewt_refs["train"])


CONLL = SHARED / "conll2003-en"


@pytest.fixture(scope="session")
def conll_refs():
    """The first 150 training articles and 40 dev articles of CoNLL-2003, one doc per article."""
    from itertools import islice

    from spacy_sparse.readers import conll_ner_docs

    need(CONLL)
    vocab = spacy.blank("en").vocab
    return {
        "train": list(islice(conll_ner_docs(vocab, CONLL / "train.txt"), 150)),
        "dev": list(islice(conll_ner_docs(vocab, CONLL / "dev.txt"), 40)),
    }


@pytest.fixture(scope="session")
def trained_ner(conll_refs):
    nlp = spacy.blank("en", vocab=conll_refs["train"][0].vocab)
    ner = nlp.add_pipe("sparse_ner")
    train = [Example(bare(r), r) for r in conll_refs["train"]]
    nlp.initialize(lambda: train)
    for _ in range(3):
        for i in range(0, len(train), 8):
            nlp.update(train[i:i + 8])
    return nlp, ner


def bare(ref, sents=True):
    from spacy_sparse.readers import bare_copy

    return bare_copy(ref, sents)


CHUNKS = SHARED / "conll2000-chunking"


@pytest.fixture(scope="module")
def small_tagger(ewt_refs):
    """A tagger trained for one epoch on 120 EWT docs."""
    return train_tagger(ewt_refs["train"][:120], epochs=1)


def run_epochs(nlp, callback, train, epochs, after_epoch=None):
    """spaCy's loop in small: the callback before every update, `epoch` as spaCy counts it."""
    for epoch in range(epochs):
        for i in range(0, len(train), 16):
            callback(nlp, {"epoch": epoch, "step": i})
            nlp.update(train[i:i + 16])
        if after_epoch is not None:
            after_epoch(epoch)


def spacy_train(config, train, dev, out, *overrides):
    """`python -m spacy train CONFIG` on these paths; returns its output."""
    return run("spacy", "train", str(config), "--output", str(out), "--paths.train", str(train),
               "--paths.dev", str(dev), *overrides)


@pytest.fixture(scope="module")
def chunk_corpus(tmp_path_factory):
    """600 training and 150 test sentences of CoNLL-2000 as .spacy files."""
    from itertools import islice

    from spacy.tokens import DocBin

    from spacy_sparse.readers import chunk_docs

    need(CHUNKS)
    out = tmp_path_factory.mktemp("chunk")
    vocab = spacy.blank("en").vocab
    DocBin(docs=list(islice(chunk_docs(vocab, CHUNKS / "train.txt"), 600))).to_disk(out / "train.spacy")
    DocBin(docs=list(islice(chunk_docs(vocab, CHUNKS / "test.txt"), 150))).to_disk(out / "test.spacy")
    return out
