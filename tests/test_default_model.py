"""The embedded default model: it ships, loads offline and still tags EWT as well as when it was built."""
import spacy_sparse
from spacy_sparse.bench import bare_docs, read_references
from spacy_sparse.cli import main

from conftest import EWT

# Measured on EWT test when the model was shipped (README, "Benchmarks"); a
# change that loses accuracy in the shipped model fails here.
SHIPPED_TEST_ACCURACY = 0.9441


def test_default_model_loads_and_keeps_its_accuracy(tmp_path):
    from spacy.tokens import DocBin
    from spacy.training.converters import conllu_to_docs

    nlp = spacy_sparse.load_default()
    assert nlp.pipe_names == ["sparse_tagger"]
    refs = list(conllu_to_docs((EWT / "en_ewt-ud-test.conllu").read_text(encoding="utf8"), n_sents=10, no_print=True))
    DocBin(docs=refs).to_disk(tmp_path / "test.spacy")
    refs = read_references(nlp, tmp_path / "test.spacy")
    docs = list(nlp.pipe(bare_docs(nlp, refs)))
    tagger = nlp.get_pipe("sparse_tagger")
    from spacy.training import Example

    acc = tagger.score([Example(d, r) for d, r in zip(docs, refs)])["tag_acc"]
    assert acc >= SHIPPED_TEST_ACCURACY - 0.0005, acc
    assert (spacy_sparse.DEFAULT_MODEL_PATH / "LICENSE").read_text().count("CC BY-SA 4.0") >= 1


def test_demo_command_tags_the_sample(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "The/DT" in out and "harbour/" in out and "words/s" in out
