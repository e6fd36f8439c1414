"""The embedded default model: it ships, loads offline and still tags EWT as well as when it was built."""
import spacy_sparse
from spacy_sparse.bench import bare_docs, read_references
from spacy_sparse.cli import main

from conftest import EWT

# Measured on EWT test (gold tokens, whole docs) when the model was shipped (CHANGELOG.md); a
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


def test_the_shipped_pipeline_packages_and_loads_by_name(tmp_path):
    """`spacy package` on the shipped default gives en_ewt_sparse_tagger (not en_en_...), which installs, loads by
    name, tags, and carries the data's licence note."""
    import subprocess
    import sys

    out = tmp_path / "pkg"
    out.mkdir()
    subprocess.run([sys.executable, "-m", "spacy", "package", str(spacy_sparse.DEFAULT_MODEL_PATH), str(out),
                    "--build", "wheel"], check=True, capture_output=True)
    wheels = list(out.glob("*/dist/*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["en_ewt_sparse_tagger"]
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                    str(wheels[0])], check=True, capture_output=True)
    code = ("import spacy; nlp = spacy.load('en_ewt_sparse_tagger'); "
            "print(' '.join(t.tag_ for t in nlp('The ferry left the harbour at dawn.')))")
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    tags = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    assert tags.split()[:3] == ["DT", "NN", "VBD"]
    licences = list(site.glob("en_ewt_sparse_tagger/*/LICENSE"))
    assert licences and "CC BY-SA 4.0" in licences[0].read_text()
