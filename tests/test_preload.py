"""Weights decoded in a background thread while spacy.load builds the pipeline (runtime/preload.py): the same pipeline,
and any file that changed or is damaged is read again by its component."""
import os
import shutil
import sys
import threading

import pytest
import spacy

import spacy_sparse
from spacy_sparse.runtime import preload
from spacy_sparse.loading import default_path, load_pipeline

from conftest import EWT, need, read_conllu_slice


@pytest.fixture
def taken(monkeypatch):
    """What each component's preload.take gave it: (file's component, decoded ahead or not)."""
    seen = []
    real = preload.take

    def take(path):
        model = real(path)
        seen.append((path.parent.name, model is not None))
        return model

    monkeypatch.setattr(preload, "take", take)
    return seen


def test_load_default_takes_its_weights_decoded_ahead_and_labels_as_a_plain_load(taken):
    refs = read_conllu_slice(need(EWT / "en_ewt-ud-dev.conllu"), 40)
    interval = sys.getswitchinterval()
    nlp = spacy_sparse.load_default()
    assert sorted(taken) == [("sparse_lemmatizer", True), ("sparse_morphologizer", True), ("sparse_parser", True),
                             ("sparse_senter", True), ("sparse_tagger", True)]
    assert not preload._pending and sys.getswitchinterval() == interval
    assert not [t for t in threading.enumerate() if t.name.startswith(preload.THREAD_NAME)]
    taken.clear()
    plain = spacy.load(default_path("full"))
    assert sorted(taken) == [("sparse_lemmatizer", False), ("sparse_morphologizer", False), ("sparse_parser", False),
                             ("sparse_senter", False), ("sparse_tagger", False)]
    texts = [r.text for r in refs]
    for a, b in zip(nlp.pipe(texts), plain.pipe(texts)):
        assert [(t.tag_, t.pos_, t.head.i, t.dep_, t.is_sent_start) for t in a] == \
               [(t.tag_, t.pos_, t.head.i, t.dep_, t.is_sent_start) for t in b]


def test_excluded_components_are_not_decoded(monkeypatch):
    decoded = []
    real = preload._decode
    monkeypatch.setattr(preload, "_decode", lambda path: decoded.append(path.parent.name) or real(path))
    nlp = spacy_sparse.load_default(exclude=["sparse_parser"])
    assert "sparse_parser" not in nlp.pipe_names
    assert sorted(decoded) == ["sparse_lemmatizer", "sparse_morphologizer", "sparse_senter", "sparse_tagger"]


def test_a_file_changed_after_it_was_read_is_read_again(tmp_path, taken):
    """The thread decodes the small tagger; then the file is replaced by the full pipeline's tagger. The
    component finds the file changed and loads what is on disk now."""
    pipeline = tmp_path / "tagger"
    shutil.copytree(default_path("tagger"), pipeline)
    model_file = pipeline / "sparse_tagger" / "model"
    with preload.decoding(pipeline):
        preload._pending[str(model_file.resolve())][1].result()  # decoded ahead
        shutil.copyfile(default_path("full") / "sparse_tagger" / "model", model_file)
        os.utime(model_file, ns=(1, 1))
        nlp = spacy.load(pipeline)
    assert taken == [("sparse_tagger", False)]
    full = spacy.load(default_path("full"), exclude=["sparse_senter", "sparse_parser", "sparse_upos"])
    assert nlp.get_pipe("sparse_tagger").sparse.template_names == full.get_pipe("sparse_tagger").sparse.template_names
    assert not preload._pending


def test_a_damaged_weight_file_fails_with_the_components_own_message(tmp_path, taken):
    pipeline = tmp_path / "tagger"
    shutil.copytree(default_path("tagger"), pipeline)
    model_file = pipeline / "sparse_tagger" / "model"
    model_file.write_bytes(model_file.read_bytes()[:-100])
    with pytest.raises(ValueError, match="Cannot load the weights of 'sparse_tagger'") as ahead:
        load_pipeline(pipeline)
    assert taken == [("sparse_tagger", False)]  # the thread failed; the component read the file itself
    with pytest.raises(ValueError) as plain:
        spacy.load(pipeline)
    assert str(ahead.value) == str(plain.value)
    assert not preload._pending


def test_only_sparse_components_weights_are_decoded_ahead(tmp_path):
    """spaCy's own tagger keeps a `model` file too; it is not ours to decode. A pipeline without sparse
    weights starts no thread, and a directory without a config gives no files (spacy.load reports it)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger").add_label("NN")
    nlp.initialize()
    nlp.to_disk(tmp_path / "cnn")
    assert (tmp_path / "cnn" / "tagger" / "model").is_file()
    assert list(preload.weight_files(tmp_path / "cnn")) == []
    with preload.decoding(tmp_path / "cnn"):
        assert not preload._pending
        assert not [t for t in threading.enumerate() if t.name.startswith(preload.THREAD_NAME)]
    assert list(preload.weight_files(tmp_path / "missing")) == []


def test_pipelines_loaded_from_several_threads_at_once_each_get_their_own_weights():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(3) as pool:
        pipelines = list(pool.map(lambda _: spacy_sparse.load_default("tagger"), range(3)))
    models = [nlp.get_pipe("sparse_tagger").sparse for nlp in pipelines]
    assert len({id(m) for m in models}) == 3
    text = "The shipped tagger labels this sentence the same way in every copy."
    assert len({tuple(t.tag_ for t in nlp(text)) for nlp in pipelines}) == 1
    assert not preload._pending
