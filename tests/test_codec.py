"""The model file format: grouped weights, older versions, rows merged exactly, corrupt files."""
import numpy as np
import pytest
import spacy
from conftest import to_examples, train_tagger

from spacy_sparse.kernels.hashing import fold_keys
from spacy_sparse.learn.admm import AdmmSettings, quantize
from spacy_sparse.model import SparseLinearModel


def test_grouped_file_round_trips_to_identical_predictions(small_tagger, ewt_refs, tmp_path):
    nlp, tagger = small_tagger
    float_parts = tagger.sparse.part_bytes(grouped=False)
    quantize(tagger.sparse, AdmmSettings(zeta=4))
    msg = tagger.sparse.to_dict()
    assert msg["weights"] == "grouped" and msg["codebook"].size <= 8
    assert "feature_row" in msg  # rows shared by several features are stored once
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:40])]
    before = tagger.predict(docs)[0]
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m")
    after = loaded.get_pipe("sparse_tagger").predict([d.copy() for d in docs])[0]
    assert np.array_equal(before, after)
    stats = loaded.get_pipe("sparse_tagger").sparse.stats()
    assert stats["distinct_weights"] <= 8
    # the weights themselves (not the feature keys) take under half the bytes
    parts = loaded.get_pipe("sparse_tagger").sparse.part_bytes()
    weights = sum(n for k, n in parts.items() if k.startswith(("row_", "feature_row", "codebook")))
    float_weights = sum(n for k, n in float_parts.items() if k.startswith("row_"))
    assert weights < float_weights / 2
    assert stats["bytes"] < sum(float_parts.values())



def test_a_loaded_model_keeps_its_rows_in_the_narrowest_types(small_tagger):
    """A loaded model's compressed rows (kept for saving and statistics, not read when predicting) hold labels as
    bytes and grouped weights as one-byte codes without their float values; whoever asks gets int32 labels and
    float32 values equal to the file's, saving again writes the same bytes, and a label added later keeps every
    weight."""
    nlp, tagger = small_tagger
    quantize(tagger.sparse, AdmmSettings(zeta=4))
    data = tagger.sparse.to_bytes()
    trained = tagger.sparse.compact()
    loaded = SparseLinearModel.from_bytes(data)
    ptr, lab, val = loaded._compact
    book, code = loaded._coded
    assert val is None and lab.dtype == np.uint8 and code.dtype == np.uint8
    got = loaded.compact()
    assert got[1].dtype == np.int32 and got[2].dtype == np.float32
    rows = np.repeat(np.arange(got[0].shape[0] - 1), np.diff(got[0]))
    want = np.zeros((int(loaded.n_rows[0]), loaded.n_labels), dtype=np.float32)
    want[rows, got[1]] = got[2]
    assert np.array_equal(want, loaded.averaged())
    assert np.count_nonzero(want) == np.count_nonzero(trained[2])
    assert loaded.to_bytes() == data
    loaded.add_labels(["NEWTAG"])  # the codes go; their values stay
    assert loaded._coded is None and np.array_equal(loaded.averaged()[:, :-1], want)
    assert not loaded.averaged()[:, -1].any()


def test_a_loaded_parser_keeps_row_keys_not_tables_once_it_predicts():
    """The shipped parser predicts from its own span tables; once those are built it keeps each row's key
    instead of the feature tables, and makes them again slot for slot when saving asks (the same file)."""
    import spacy_sparse
    from spacy_sparse.loading import default_path

    nlp = spacy_sparse.load_default()
    model = nlp.get_pipe("sparse_parser").sparse
    before = model.tab.copy()
    nlp("The parser builds its layout. Then its tables go.")
    assert model._tab is None and model._row_keys.dtype == np.uint32
    assert np.array_equal(model.tab, before) and model._tab is not None
    assert model.to_bytes() == (default_path("full") / "sparse_parser" / "model").read_bytes()
    tagger = nlp.get_pipe("sparse_tagger").sparse  # predicts from its tables: the keys go instead
    assert tagger._tab is not None and tagger._row_keys is None

def _older(msg, version):
    """A version 1-3 float file with the content of a version 4 or 5 one: keys
    and ambiguity classes whole, not as zipped steps."""
    from spacy_sparse.fields import unzipped as _unzipped
    from spacy_sparse.row_groups import index_from_steps

    keys = index_from_steps(_unzipped(msg["feature_key"], "k").astype(np.int64), msg["template_features"])
    old = dict(msg, version=version, feature_key=keys.astype(np.uint32 if version == 3 else np.uint64),
               class_keys=np.cumsum(_unzipped(msg["class_keys"], "c"), dtype=np.uint64),
               class_values=_unzipped(msg["class_values"], "v"))
    old.pop("key_mix", None)  # version 5's
    if version == 1:
        del old["weights"]
    return old


def test_float_files_and_older_versions_still_load(ewt_refs):
    import srsly

    _, tagger = train_tagger(ewt_refs["train"][:40], epochs=1)
    msg = tagger.sparse.to_dict(grouped=False)
    assert msg["weights"] == "float" and msg["version"] == 5
    # the same content as version 4, whose keys the kernels make with splitmix (only the numbers matter here)
    v4 = dict(msg, version=4)
    del v4["key_mix"]
    splitmix = SparseLinearModel.from_bytes(srsly.msgpack_dumps(v4))
    assert splitmix.key_mix == "splitmix" and splitmix.to_dict(grouped=False)["version"] == 4
    # files before version 3 hold 64-bit keys; with zero high bits they fold to themselves
    for version in (1, 2, 3):
        again = SparseLinearModel.from_bytes(srsly.msgpack_dumps(_older(v4, version)))
        assert again.to_bytes() == splitmix.to_bytes()
        assert again.lex_classes == tagger.sparse.lex_classes


def test_a_files_key_mix_is_what_the_kernels_make_keys_with(ewt_refs):
    """A new model folds atoms into keys with one multiply and says so in its file (version 5); the same
    features read as splitmix keys (a version 4 file) find none of their rows, so the mix is no detail; a
    file that names a mix its version cannot hold is refused."""
    import srsly

    nlp, tagger = train_tagger(ewt_refs["train"][:120], epochs=1)
    model = tagger.sparse
    assert model.key_mix == "multiply"
    msg = model.to_dict()
    assert msg["version"] == 5 and msg["key_mix"] == "multiply"
    docs = [eg.predicted for eg in to_examples(nlp, ewt_refs["dev"][:60])]
    before = tagger.predict([d.copy() for d in docs])[0]
    gold = np.array([tagger.labels.index(t.tag_) if t.tag_ in tagger.labels else -1
                     for r in ewt_refs["dev"][:60] for t in r])
    assert (before == gold).mean() > 0.75

    def labels_with(file_msg):
        tagger.sparse = SparseLinearModel.from_dict(file_msg)
        return tagger.predict([d.copy() for d in docs])[0]

    assert np.array_equal(labels_with(msg), before)
    v4 = dict(msg, version=4)
    del v4["key_mix"]
    assert (labels_with(v4) == gold).mean() < 0.5  # no feature's row is found: the labels are guesses
    for bad, why in ((dict(msg, key_mix="splitmix"), "key_mix"), (dict(msg, key_mix="xor"), "key_mix"),
                     ({k: v for k, v in msg.items() if k != "key_mix"}, "key_mix"),
                     (dict(v4, key_mix="multiply"), "holds no key_mix")):
        with pytest.raises(ValueError, match=why):
            SparseLinearModel.from_bytes(srsly.msgpack_dumps(bad))
    # features taken from a splitmix model (a refit, `features = PIPELINE`) keep its keys and its mix
    old = SparseLinearModel.from_dict(v4)
    names = old.template_names
    fresh = SparseLinearModel(msg["templates"], msg["labels"])
    fresh.preset_features(old.feature_keys(names), old.key_mix)
    assert fresh.key_mix == "splitmix"
    assert all(np.array_equal(a, b) for a, b in zip(fresh.feature_keys(names), old.feature_keys(names)))
    with pytest.raises(ValueError, match="once it has features"):
        fresh.key_mix = "multiply"


def test_version_3_grouped_files_still_load():
    import srsly

    from spacy_sparse.fields import zipped as _zipped

    # three features of one template; version 3 packed label * n_codes + code,
    # shared rows, and the row index as steps in (row, key) order
    codebook = np.array([-0.5, 0.5], dtype=np.float32)
    v3 = {"format": "spacy-sparse-linear", "version": 3, "templates": ["lower@0"], "labels": ["A", "B", "C"],
          "template_features": np.array([3]), "feature_key": np.array([7, 99, 12], dtype=np.uint32),
          "class_keys": np.zeros(0, np.uint64), "class_values": np.zeros(0, np.uint64),
          "weights": "grouped", "codebook": codebook,
          "row_length": {**_zipped(np.array([1, 2], np.uint8), planes=False)},
          "row_entry": {**_zipped(np.array([1 * 2 + 1, 0 * 2 + 0, 2 * 2 + 1], np.uint8), planes=False)},
          "feature_row": {**_zipped(np.array([0, 0, 1], np.uint8), planes=False)}}
    for field in ("row_length", "row_entry", "feature_row"):
        del v3[field]["planes"]  # version 3 had no such flag
    def weights_by_key(model):
        ptr, lab, val = model.compact()
        return {int(k): list(zip(lab[ptr[r]:ptr[r + 1]].tolist(), val[ptr[r]:ptr[r + 1]].tolist()))
                for r, k in enumerate(model.keys_of_rows())}

    model = SparseLinearModel.from_bytes(srsly.msgpack_dumps(v3))
    assert weights_by_key(model) == {7: [(1, 0.5)], 99: [(1, 0.5)], 12: [(0, -0.5), (2, 0.5)]}
    back = SparseLinearModel.from_bytes(model.to_bytes())
    assert back.to_dict()["version"] == 4 and weights_by_key(back) == weights_by_key(model)


def test_rows_are_merged_exactly_even_when_hashes_collide(monkeypatch):
    from spacy_sparse import row_groups

    row_len = np.array([2, 1, 2, 2, 1])
    entries = np.array([3, 5, 7, 3, 5, 1, 2, 7])
    first, index = row_groups.same_rows(row_len, entries)
    assert np.array_equal(index[[0, 2]], [index[0]] * 2) and np.array_equal(index[[1, 4]], [index[1]] * 2)
    assert len(set(index.tolist())) == 3
    # if every row hashed alike, the full comparison must refuse to merge
    monkeypatch.setattr(row_groups, "row_hashes", lambda lens, _: np.zeros(lens.size, dtype=np.uint64))
    assert row_groups.same_rows(row_len, entries) is None


def test_version_2_keys_that_fold_together_keep_the_first(ewt_refs):
    import srsly

    _, tagger = train_tagger(ewt_refs["train"][:40], epochs=1)
    msg = _older(tagger.sparse.to_dict(grouped=False), 2)
    keys = msg["feature_key"].copy()
    assert msg["template_features"][0] >= 2
    # a 64-bit key whose fold equals the first key of template 0
    high = np.uint64(0xABCDEF)
    keys[1] = (high << np.uint64(32)) | (keys[0] ^ high)
    assert fold_keys(keys[:2])[1] == keys[0]
    loaded = SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, feature_key=keys)))
    back = _older(loaded.to_dict(grouped=False), 2)
    assert back["feature_key"].size == keys.size - 1
    assert back["template_features"][0] == msg["template_features"][0] - 1
    n0 = int(msg["row_length"][0])
    assert np.array_equal(back["row_value"][:n0], msg["row_value"][:n0])  # the first one's weights


def test_corrupt_grouped_file_fails_clearly(small_tagger):
    import srsly

    from spacy_sparse.fields import unzipped as _unzipped, zipped as _zipped

    _, tagger = small_tagger
    quantize(tagger.sparse, AdmmSettings(zeta=4))  # (again, if the round-trip test ran first)
    msg = tagger.sparse.to_dict(grouped=True)
    entries = _unzipped(msg["row_entry"], "row_entry")
    bad = dict(msg, row_entry=_zipped((entries.astype(np.int64) + 10 ** 6).astype(np.uint32)))
    with pytest.raises(ValueError, match="Corrupt model"):
        SparseLinearModel.from_bytes(srsly.msgpack_dumps(bad))
    zipped = msg["row_entry"]
    for field in (dict(zipped, zlib=zipped["zlib"][:-5]),          # truncated
                  dict(zipped, zlib=b"not zlib at all"),
                  dict(zipped, size=zipped["size"] + 1),            # inflates short
                  dict(zipped, size=10 ** 12),                      # a bomb's claim
                  dict(zipped, dtype="<f8")):
        with pytest.raises(ValueError, match="Corrupt model"):
            SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, row_entry=field)))
    n_keys = _unzipped(msg["feature_key"], "feature_key").size
    codes = entries.astype(np.int64) % msg["codebook"].size  # every label step 0: a label named twice
    for field, arr in (("feature_key", np.full(n_keys, 2 ** 31, np.uint32)),  # keys climb past 32 bits
                       ("row_entry", codes.astype(entries.dtype))):
        with pytest.raises(ValueError, match="Corrupt model"):
            SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, **{field: _zipped(arr)})))
    with pytest.raises(ValueError, match="Corrupt model"):
        SparseLinearModel.from_bytes(srsly.msgpack_dumps(dict(msg, row_entry=dict(zipped, planes="yes"))))
    bad = dict(msg, weights="zip")
    with pytest.raises(ValueError, match="weight layout"):
        SparseLinearModel.from_bytes(srsly.msgpack_dumps(bad))


# ---- callbacks through spacy train -----------------------------------------------------------


def test_every_flipped_bit_is_caught_before_use(small_tagger):
    """Model files carry a CRC-32 of their payload: no single-bit flip or cut loads silently."""
    import gc

    data = small_tagger[1].sparse.to_bytes()
    rng = np.random.default_rng(0)
    for pos in rng.choice(len(data) * 8, size=400, replace=False):
        bad = bytearray(data)
        bad[pos // 8] ^= 1 << (pos % 8)
        with pytest.raises(ValueError):
            SparseLinearModel.from_bytes(bytes(bad))
    for cut in (1, 10, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError):
            SparseLinearModel.from_bytes(data[:cut])
    assert gc.isenabled()
    assert SparseLinearModel.from_bytes(data).to_bytes() == data


def test_a_hostile_file_is_refused_before_it_is_inflated(small_tagger):
    """A field that declares more items than the file's own counts allow, or counts beyond the build's limits,
    fails at once, without inflating or allocating them."""
    import resource
    import time
    import zlib

    from spacy_sparse import codec

    msg = codec.unseal(small_tagger[1].sparse.to_bytes())
    bomb = dict(msg)  # 1 GiB of zeros in a few hundred kilobytes
    packer, chunk = zlib.compressobj(9), bytes(2 ** 20)
    zeros = b"".join(packer.compress(chunk) for _ in range(1024)) + packer.flush()
    bomb["feature_key"] = {"zlib": zeros, "dtype": "|u1", "size": 2 ** 30, "planes": True}
    start, rss = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match="declares"):
        SparseLinearModel.from_bytes(codec.seal(bomb))
    assert time.perf_counter() - start < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 200 * 1024  # KiB: no GiB was allocated
    huge = dict(msg)
    huge["template_features"] = np.full(len(msg["templates"]), 10 ** 17, dtype=np.int64)
    with pytest.raises(ValueError, match="beyond what this build loads"):
        SparseLinearModel.from_bytes(codec.seal(huge))
    many_labels = dict(msg, labels=[f"L{i}" for i in range(70_000)])
    with pytest.raises(ValueError, match="labels"):
        SparseLinearModel.from_bytes(codec.seal(many_labels))


def test_prediction_layouts_built_on_load_match_the_weights():
    """Loading builds the prediction layouts from the file's rows and codes in one pass each (kernels/rows.py);
    they must hold exactly the weights the generic path derives from the decoded values."""
    import spacy_sparse

    nlp = spacy_sparse.load_default()
    for name in ("sparse_parser", "sparse_tagger"):
        model = nlp.get_pipe(name).sparse
        ptr, lab, val = model.compact()
        dense = model.averaged()
        rows = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
        assert np.array_equal(dense[rows, lab], val) and np.count_nonzero(dense) == np.count_nonzero(val)
        tab, tab_off, lv, lc, book, dense = model.packed()
        assert model._coded is not None and lc.size == val.size  # the file's codes were used
        assert np.array_equal(tab_off, model.tab_off)  # a loaded model's tables hold rows only already
        model._compact = model.compact()  # the values themselves, so the codes can go
        model._packed, model._coded = None, None
        tab2, _, lv2, lc2, book2, dense2 = model.packed()  # rebuilt from the values alone
        assert np.array_equal(tab, tab2) and np.array_equal(dense, dense2)
        assert np.array_equal(book[lc & 0xFF], book2[lc2 & 0xFF])
        assert np.array_equal(lc >> 8, lc2 >> 8) and np.array_equal(book[lc & 0xFF], val)


def test_a_loaded_coded_tagger_reads_one_byte_codes_with_the_same_labels(ewt_refs):
    """A tagger whose file holds grouped weights (the shipped one: QT) predicts from dense one-byte codes and
    their book, not float rows four times their size: the same values added in the same order, so the labels
    are those of the float rows, with and without a margin (the summed one-word vectors are made from the
    codes too). A model being trained keeps float rows."""
    import spacy_sparse
    from spacy_sparse.pipeline.sequence import WordRowCache

    nlp = spacy_sparse.load_default("full")
    tagger = nlp.get_pipe("sparse_tagger")
    model = tagger.sparse
    docs = [nlp.make_doc(r.text) for r in ewt_refs["dev"][:80]]
    coded = {}
    for margin in (None, 30.0):
        tagger.margin = margin
        coded[margin] = tagger.predict([d.copy() for d in docs])[0]
    codes, book = model.coded_weights()
    assert codes.dtype == np.uint8 and codes.shape == (int(model.n_rows[0]), model.n_labels)
    assert book[0] == 0.0 and book.size <= 256 and model._dense is None  # no float rows were made
    dense = model.weights()
    assert np.array_equal(book[codes], dense)
    original = SparseLinearModel.coded_weights
    try:
        SparseLinearModel.coded_weights = lambda self: None  # the float rows
        for margin in (None, 30.0):
            tagger.margin, tagger._word_rows = margin, WordRowCache()
            assert np.array_equal(tagger.predict([d.copy() for d in docs])[0], coded[margin])
    finally:
        SparseLinearModel.coded_weights = original
    model.ensure_training_layout()
    assert model.coded_weights() is None
    # the segmenter's rows (2 labels) are codes too: the pipeline needs one version of the kernel
    senter = nlp.get_pipe("sparse_senter").sparse
    assert senter.coded_weights()[0].dtype == np.uint8


def _relabelled(pipe, change):
    """The pipe's model file with its labels changed (same count, so the rows still decode), sealed afresh."""
    from spacy_sparse import codec

    msg = codec.unseal(pipe.sparse.to_bytes())
    return codec.seal(dict(msg, labels=change(list(msg["labels"]))))


def test_model_files_with_labels_no_kernel_can_run_are_refused():
    """A checksum is not validation: relabelled files that would send the kernels outside their arrays fail on
    load with a clear error, and the component keeps the model it had."""
    import spacy_sparse

    nlp = spacy_sparse.load_default()
    parser, senter = nlp.get_pipe("sparse_parser"), nlp.get_pipe("sparse_senter")
    before = parser.sparse
    if parser.split:
        changes = [lambda ls: ls[:4] + ["ARC-" + x.partition("-")[2] for x in ls[4:]]]  # no root label
    else:
        changes = [lambda ls: ["LEFT-x" if x == "SHIFT" else x for x in ls],  # no SHIFT
                   lambda ls: ["SHIFT"] * len(ls),  # only SHIFT
                   lambda ls: [x.replace("ROOT-", "RIGHT-") for x in ls]]  # no ROOT
    for change in changes:
        with pytest.raises(ValueError, match="Cannot load the weights of 'sparse_parser'"):
            parser._load_model(_relabelled(parser, change))
        assert parser.sparse is before
    with pytest.raises(ValueError, match="segmenter's labels"):
        senter._load_model(_relabelled(senter, lambda ls: ls[::-1]))
    doc = nlp("The parser still works. It has its old model.")
    assert len(list(doc.sents)) == 2


def test_a_model_file_that_is_a_device_or_huge_is_refused_unread(tmp_path, monkeypatch):
    import shutil

    from spacy_sparse import codec
    from spacy_sparse.loading import DEFAULT_PIPELINES

    src = tmp_path / "p"
    shutil.copytree(DEFAULT_PIPELINES["tagger"], src)
    model = src / "sparse_tagger" / "model"
    model.unlink()
    model.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="not a regular file"):
        spacy.load(src)
    model.unlink()
    model.write_bytes(b"\0" * 4096)
    monkeypatch.setattr(codec, "MAX_FILE_BYTES", 1024)
    with pytest.raises(ValueError, match="more than a model file may"):
        spacy.load(src)


def test_tiny_settings_survive_saving(tmp_path):
    """Settings are written with every digit: a learn rate of 1e-11 loads back as 1e-11, not as a refused 0.0."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"learn_rate": 1e-11})
    nlp.to_disk(tmp_path / "t")
    assert spacy.load(tmp_path / "t").get_pipe("sparse_tagger").cfg["learn_rate"] == 1e-11
    other = spacy.blank("en").add_pipe("sparse_tagger")
    assert other.from_bytes(nlp.get_pipe("sparse_tagger").to_bytes()).cfg["learn_rate"] == 1e-11


def test_a_saved_parser_cfg_gets_the_factorys_checks(tmp_path):
    import json

    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_parser")
    nlp.to_disk(tmp_path / "p")
    cfg_path = tmp_path / "p" / "sparse_parser" / "cfg"
    cfg = json.loads(cfg_path.read_text())
    cfg["explore"] = 7.0
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="explore"):
        spacy.load(tmp_path / "p")
