"""Model files: round trips and clear errors for bad input."""
import numpy as np
import pytest
import spacy
import srsly

from spacy_sparse import codec
from spacy_sparse.model import SparseLinearModel


@pytest.fixture(scope="module")
def model_bytes(trained):
    return trained[1].sparse.to_bytes()


def test_round_trip_keeps_every_weight(trained, model_bytes):
    original = trained[1].sparse
    loaded = SparseLinearModel.from_bytes(model_bytes)
    assert loaded.template_names == original.template_names and loaded.labels == original.labels
    assert loaded.stats()["nonzero_weights"] == original.stats()["nonzero_weights"]
    assert loaded.to_bytes() == model_bytes


@pytest.mark.parametrize("mangle", [
    lambda b: b[: len(b) // 2],
    lambda b: b[:10],
    lambda b: b"",
    lambda b: bytes(len(b)),
    lambda b: np.random.RandomState(0).bytes(5000),
    lambda b: srsly.msgpack_dumps({"format": "something-else", "version": 1}),
    lambda b: srsly.msgpack_dumps([1, 2, 3]),
    lambda b: srsly.json_dumps({"hello": "world"}).encode(),
    lambda b: b"\x80\x04\x95" + b"cos\nsystem\n(S'echo hi'\ntR.",  # a pickle is not a model
])
def test_corrupt_or_foreign_bytes_raise_value_error(model_bytes, mangle):
    with pytest.raises(ValueError):
        SparseLinearModel.from_bytes(mangle(model_bytes))


@pytest.mark.parametrize("field,value", [
    ("version", 99),
    ("templates", "lower@0"),
    ("labels", [1, 2]),
    ("feature_key", np.zeros(3, dtype=np.float64)),
    ("row_label", np.array([250], dtype=np.uint8)),
    ("template_features", None),
    ("row_length", np.array([1], dtype=np.uint8)),
    ("version", 4.0),
    ("version", "4"),
    ("version", True),
    ("labels", []),
    ("templates", ["lower@99999999999"]),
])
def test_inconsistent_fields_raise_value_error(model_bytes, field, value):
    msg = codec.unseal(model_bytes)
    msg[field] = value
    with pytest.raises(ValueError):
        SparseLinearModel.from_dict(msg)


@pytest.mark.parametrize("change", [lambda labels: [""] + labels[1:], lambda labels: [labels[1]] + labels[1:]])
def test_empty_or_repeated_labels_raise_value_error(model_bytes, change):
    msg = codec.unseal(model_bytes)
    msg["labels"] = change(list(msg["labels"]))
    with pytest.raises(ValueError, match="label"):
        SparseLinearModel.from_dict(msg)


def test_templates_of_another_component_kind_fail_on_load(trained, model_bytes):
    """A parser's slots in a tagger's file (or the other way round) load as a model but not into the component."""
    msg = codec.unseal(model_bytes)
    msg["templates"] = ["tag@S0"] + msg["templates"][1:]
    data = codec.seal(msg)
    SparseLinearModel.from_bytes(data)
    with pytest.raises(ValueError, match="templates must read"):
        trained[1]._load_model(data)
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="templates must read"):
        nlp.add_pipe("sparse_parser")._load_model(model_bytes)


def test_weights_out_of_range_labels(model_bytes):
    msg = codec.unseal(model_bytes)
    msg["labels"] = msg["labels"][:2]
    with pytest.raises(ValueError, match="label"):
        SparseLinearModel.from_dict(msg)


def test_corrupt_file_on_disk_gives_clear_error(trained, tmp_path):
    nlp, _ = trained
    nlp.to_disk(tmp_path / "m")
    model_file = tmp_path / "m" / "sparse_tagger" / "model"
    model_file.write_bytes(model_file.read_bytes()[:1000])
    with pytest.raises(ValueError, match="Cannot load the weights"):
        spacy.load(tmp_path / "m")


def test_stats_count_what_is_stored(trained):
    stats = trained[1].sparse.stats()
    assert stats["templates"] <= stats["templates_total"] == len(trained[1].cfg["templates"])
    assert 0 < stats["nonzero_features"] <= stats["features"]
    assert stats["nonzero_weights"] >= stats["nonzero_features"]
    assert stats["bytes"] == len(trained[1].sparse.to_bytes())
    assert sum(stats["features_per_template"].values()) == stats["nonzero_features"]


def test_a_corrupt_file_leaves_the_garbage_collector_on():
    import gc

    from spacy_sparse import codec

    assert gc.isenabled()
    with pytest.raises(ValueError, match="truncated/corrupt"):
        codec.loads(b"\xdc\xff\xff")  # an array header claiming 65,535 items, then nothing
    assert gc.isenabled()


def test_one_check_for_every_setting():
    from spacy_sparse.checks import check_choice, check_number

    assert check_number(3, "x", whole=True, low=1) == 3 and check_number(None, "x", allow_none=True) is None
    assert check_number(0.5, "x", low=0, high=1, low_open=True) == 0.5
    for bad in (True, "2", 2.5, float("nan"), float("inf"), None, 0, 10 ** 6):
        with pytest.raises(ValueError, match="n_threads must be a whole number in 1..256"):
            check_number(bad, "n_threads", whole=True, low=1, high=256)
    with pytest.raises(ValueError, match=r"margin_decay must be a number in \(0, 1\], got 0"):
        check_number(0, "margin_decay", low=0, high=1, low_open=True)
    assert check_choice(True, "flag", (True, False)) is True
    for bad in (1, "true", None):
        with pytest.raises(ValueError, match="flag must be one of True, False"):
            check_choice(bad, "flag", (True, False))


def test_a_saved_cfg_with_a_wrong_value_fails_on_load(trained, tmp_path):
    """Settings are checked when a pipeline loads, with the factory's message."""
    nlp, _ = trained
    nlp.to_disk(tmp_path / "p")
    for key, value in (("n_threads", -1), ("n_threads", "2"), ("mode", "fast"), ("learn_rate", 0), ("learn_rate", 1e38),
                       ("learner", None), ("annotate", "lemma"), ("annotate", 3)):
        cfg = srsly.read_json(tmp_path / "p" / "sparse_tagger" / "cfg")
        cfg[key] = value
        srsly.write_json(tmp_path / "p" / "sparse_tagger" / "cfg", cfg)
        with pytest.raises(ValueError, match=f"Cannot load 'sparse_tagger': {key} must be"):
            spacy.load(tmp_path / "p")
        nlp.to_disk(tmp_path / "p")
    ner = spacy.blank("en")
    ner.add_pipe("sparse_ner").add_label("PER")
    ner.initialize()
    ner.to_disk(tmp_path / "n")
    cfg = srsly.read_json(tmp_path / "n" / "sparse_ner" / "cfg")
    cfg["incorrect_spans_key"] = 5
    srsly.write_json(tmp_path / "n" / "sparse_ner" / "cfg", cfg)
    with pytest.raises(ValueError, match="Cannot load 'sparse_ner': incorrect_spans_key must be"):
        spacy.load(tmp_path / "n")


def test_template_sets_are_bounded_and_duplicates_named():
    from spacy_sparse.templates import MAX_TEMPLATES, parse_templates

    with pytest.raises(ValueError, match="at most 10,000 templates"):
        parse_templates([f"lower@{i}" for i in range(MAX_TEMPLATES + 1)])
    with pytest.raises(ValueError, match="Duplicate templates: lower@0"):
        parse_templates(["lower@0", "suf3@0", "lower@0"])
    assert len(parse_templates([f"lower@{a}+shape@{b}" for a in range(-40, 40) for b in range(-25, 25)])) == 4000
    with pytest.raises(ValueError, match="beyond"):
        parse_templates(["lower@-2000"])


@pytest.mark.parametrize("factory", ["sparse_tagger", "sparse_ner", "sparse_parser"])
def test_an_initialized_untrained_component_round_trips(factory, ewt_refs, tmp_path):
    """Every state a component can be in survives to_bytes, to_disk + spacy.load and pickling."""
    import pickle

    from spacy.training import Example

    from conftest import bare

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(factory)
    refs = [r.copy() for r in ewt_refs["train"][:3]]
    if factory == "sparse_ner":
        from spacy.tokens import Span

        for ref in refs:
            ref.set_ents([Span(ref, 0, 1, label="THING")])
    nlp.initialize(lambda: [Example(bare(r), r) for r in refs])
    assert pipe.sparse is not None and int(pipe.sparse.n_rows[0]) == 0
    again = spacy.blank("en").add_pipe(factory).from_bytes(pipe.to_bytes())
    assert again.labels == pipe.labels
    nlp.to_disk(tmp_path / "p")
    assert spacy.load(tmp_path / "p").get_pipe(factory).labels == pipe.labels
    assert pickle.loads(pickle.dumps(nlp)).get_pipe(factory).labels == pipe.labels
    doc = spacy.load(tmp_path / "p")("The ferry left at dawn .")
    assert len(doc) == 6


def test_row_arrays_grow_in_place_and_keep_their_rows():
    """Large training arrays grow inside an anonymous map enlarged in place; a live view of the old array
    forces a copy instead. Either way the old rows keep their values and the new ones are zero."""
    from spacy_sparse.runtime.mapped import MIN_MAPPED_BYTES, _own_mapping, grow_rows

    class Holder:
        pass

    h = Holder()
    h.W = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)
    rows = MIN_MAPPED_BYTES // 16 + 10
    grow_rows(h, "W", rows)  # a plain array moves into a map
    mm = _own_mapping(h.W)
    assert mm is not None and h.W.shape == (rows, 4)
    assert np.array_equal(h.W[:6].ravel(), np.arange(24)) and not h.W[6:].any()
    h.W[rows - 1] = 7.0
    grow_rows(h, "W", 2 * rows)  # no other view: the same map, enlarged
    assert _own_mapping(h.W) is mm and h.W[rows - 1, 0] == 7.0 and not h.W[rows:].any()
    view = h.W[:2]
    grow_rows(h, "W", 3 * rows)  # a view is alive: copied, and the view still reads the old rows
    assert _own_mapping(h.W) is not mm and h.W[rows - 1, 0] == 7.0 and view[1, 0] == 4.0
    h.U = np.ones(3, dtype=np.int32)
    grow_rows(h, "U", 5)  # small arrays stay plain
    assert _own_mapping(h.U) is None and h.U.tolist() == [1, 1, 1, 0, 0]


def test_training_stops_before_a_model_no_loader_takes(ewt_refs, monkeypatch):
    """Features x labels past the loader's limit: the next update raises with what to change, instead of training
    on (into the memory's limit) and saving a file that is then refused."""
    from conftest import to_examples

    monkeypatch.setattr(codec, "MAX_DENSE_CELLS", 20_000)
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger")
    train = to_examples(nlp, ewt_refs["train"][:20])
    nlp.initialize(lambda: train)
    with pytest.raises(ValueError, match="beyond what a model file may hold"):
        for i in range(0, len(train), 2):
            nlp.update(train[i:i + 2])
