"""The model file format: SparseLinearModel <-> a msgpack-able dict.

Format 5 (what `encode` writes for a model whose keys are made with one
multiply per atom; one with splitmix keys is written as format 4, which
older builds read; `decode` reads versions 1-5):

- `format`, `version`, `templates` (names), `labels`, `template_features`
  (features per template, in template order);
- `key_mix` (format 5: "multiply"): how the atoms were folded into the
  feature keys (kernels/hashing.fold_atom); formats 1-4 hold splitmix keys;
- `feature_key`: each template's 32-bit keys, sorted, stored as steps (the
  first whole), zipped;
- weights, either `weights = "float"`: `row_length`, `row_label`,
  `row_value` (each nonzero row's labels and float values), or
  `weights = "grouped"`: a `codebook` of at most MAX_CODEBOOK values and
  `row_entry`, one integer per weight packing the label's step within its
  row with the weight's code; identical rows may be stored once, with
  `feature_row` giving each feature's row;
- `class_keys`, `class_values`: the ambiguity classes of the `amb` atom;
- `cluster_keys`, `cluster_paths` (only in a model whose templates read
  word clusters): its cluster table (clusters.py).

Integer arrays are zlib-compressed byte plane by byte plane. Decoding is
data only: every field's type, length and range is checked, and declared
sizes bound what is inflated, so a corrupt or hostile file is a ValueError.
"""
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import numpy as np

from . import clusters as word_clusters
from .fields import array_field, zipped
from .row_groups import index_from_steps, len_dtype, names_a_label_twice, rows_grouped, steps_within
from .runtime.compiled import expand_rows
from .kernels.layout import KEY_MIXES, ROWS_BAD_INDEX, ROWS_BAD_LABEL, ROWS_BAD_LENGTH, ROWS_OK

if TYPE_CHECKING:
    from .model import SparseLinearModel

FORMAT_NAME = "spacy-sparse-linear"
FORMAT_VERSION = 5
# versions 1 (float weights only) and 2 (64-bit keys) still load; their keys
# are folded to 32 bits as the kernels now make them. Version 3 stored keys
# whole and codes as (label, code); version 4 stores both as steps; version
# 5 adds `key_mix` (a build that reads up to 4 refuses keys it would not find).
READ_VERSIONS = (1, 2, 3, 4, 5)
# the last version before key_mix: what a model with splitmix keys is written as
SPLITMIX_VERSION = 4
UINTS = (np.uint8, np.uint16, np.uint32, np.uint64)
# most distinct weights a grouped file holds (codes fit in one byte)
MAX_CODEBOOK = 256
# Limits a file must keep before anything is inflated or allocated. Far above
# any model we train (the parser: ~0.3M features x 114 actions, 5M weights),
# they bound what a corrupt or hostile file can make the loader allocate.
MAX_FEATURES = 16_000_000
MAX_LABELS = 65_535
MAX_DENSE_CELLS = 2 ** 28  # features x labels of the float32 matrix prediction builds (1 GiB)
MAX_WEIGHTS = 64_000_000
MAX_CLASSES = 4_000_000
# A model file larger than this is refused before it is read.
MAX_FILE_BYTES = 1 << 30


def read_model_file(path: Path) -> bytes:
    """A model file's bytes, once it is known to be a regular file of a
    size the loader takes (a link to a device such as /dev/zero, or a huge
    file, is refused before any byte is read)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path} holds {size:,} bytes, more than a model file may ({MAX_FILE_BYTES:,})")
    with path.open("rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{path} grew beyond {MAX_FILE_BYTES:,} bytes while it was read")
    return data


def encode(model: "SparseLinearModel", grouped: Optional[bool] = None) -> Dict[str, Any]:
    """The saved form: nonzero rows only, grouped by template, each row
    as (label, value) pairs. Weights from a small set (DC-ADMM's, QT's)
    are written grouped: a codebook of the distinct values and one small
    code per weight, label and code packed into one integer; identical
    rows are stored once when that is smaller; templates left without
    features are dropped. grouped=None decides by the number of
    distinct values (at most MAX_CODEBOOK).

    Within a template, features are sorted by key and the keys stored
    as steps (the first whole): a set of random 32-bit keys then takes
    about 20 bits a key instead of 32. A row's labels climb, so a
    grouped row stores label steps too, which zlib packs tighter."""
    ptr, lab, val = model.compact()
    keys_of_row = model.keys_of_rows()
    row_len = np.diff(ptr)
    keep = np.flatnonzero(row_len > 0)
    keep = keep[np.lexsort((keys_of_row[keep], model.row_tpl[keep]))]
    row_len = row_len[keep]
    total = int(row_len.sum())
    labels = np.empty(total, dtype=np.uint8 if model.n_labels <= 256 else np.uint16)
    values = np.empty(total, dtype=np.float32)
    from .kernels.rows import gather_rows  # training/saving only: loading needs no numba import (kernels/layout.py)

    gather_rows(ptr, keep, lab, val, labels, values)
    del ptr, lab, val
    model.forget_compact()  # in training: the rest of saving holds the weights once
    counts = np.bincount(model.row_tpl[keep], minlength=len(model.templates)).astype(np.int64)
    codebook, codes = codes_of(values, MAX_CODEBOOK)
    if grouped is None:
        grouped = codebook is not None
    elif grouped and codebook is None:
        raise ValueError(f"more than {MAX_CODEBOOK} distinct weights: a grouped file holds at most {MAX_CODEBOOK}")
    templates = model.template_names
    if grouped and counts.any():
        # templates left without features go; a model with no features yet
        # (initialized, not trained) keeps them all, so it loads again
        alive = counts > 0
        templates = [t for t, a in zip(templates, alive) if a]
        counts = counts[alive]
    class_keys = np.array(sorted(model.lex_classes), dtype=np.uint64)
    out: Dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION if model.key_mix != "splitmix" else SPLITMIX_VERSION,
        "templates": templates,
        "labels": list(model.labels),
        # features are stored grouped by template, in template order
        "template_features": counts,
        "feature_key": zipped(steps_within(keys_of_row[keep].astype(np.int64), counts)),
        # sorted 64-bit hashes, stored as steps (uint64 arithmetic)
        "class_keys": zipped(np.diff(class_keys, prepend=np.uint64(0))),
        # few distinct values: whole 8-byte repeats zip best
        "class_values": zipped(np.array([model.lex_classes[k] for k in class_keys.tolist()], dtype=np.uint64),
                                planes=False),
    }
    if model.key_mix != "splitmix":
        out["key_mix"] = model.key_mix
    if model.lex_clusters:
        out.update(word_clusters.encode(model.lex_clusters))
    if not grouped:
        out.update(weights="float", row_length=row_len.astype(len_dtype(model.n_labels)),
                   row_label=labels, row_value=values)
        return out
    n_codes = max(1, codebook.size)
    steps = steps_within(labels.astype(np.int64), row_len.astype(np.int64)).astype(np.int64)
    if names_a_label_twice(steps, row_len):
        raise ValueError("A row names one label twice")  # compact() never makes such rows
    entries = steps * n_codes + codes
    out.update(weights="grouped", codebook=codebook)
    # codes are few and skewed: zlib (stdlib, data only) stores them in
    # about a third of their bytes
    out.update(rows_grouped(row_len, entries, model.n_labels * n_codes))
    return out


def decode(msg: Any) -> "SparseLinearModel":
    """Rebuild a model from `encode` output; any mismatch is a ValueError."""
    _check_format(msg)
    from .model import SparseLinearModel

    if len(msg["labels"]) > MAX_LABELS:
        raise ValueError(f"Corrupt model: {len(msg['labels']):,} labels (at most {MAX_LABELS:,})")
    model = SparseLinearModel(msg["templates"], msg["labels"])
    model.key_mix = _key_mix(msg)
    n_tpl, n_labels = len(model.templates), len(model.labels)
    counts = array_field(msg, "template_features", (np.int64,), 1)
    if counts.shape[0] != n_tpl or np.any(counts < 0):
        raise ValueError("Corrupt model: feature counts per template do not add up")
    total = int(counts.sum(dtype=np.float64))  # float: a hostile sum cannot wrap around
    if total > MAX_FEATURES or total * max(1, n_labels) > MAX_DENSE_CELLS:
        raise ValueError(f"Corrupt model: {total:,} features of {n_labels:,} labels is beyond what this build loads")
    version = msg["version"]
    key_types = {1: (np.uint64,), 2: (np.uint64,), 3: (np.uint32,)}.get(version, UINTS)
    keys = array_field(msg, "feature_key", key_types, 1, limit=total)
    n = keys.shape[0]
    if counts.sum() != n:
        raise ValueError("Corrupt model: feature counts per template do not add up")
    if version >= 4:
        keys = index_from_steps(keys.astype(np.int64), counts)
        if n and (keys.min() < 0 or keys.max() >= 2 ** 32):
            raise ValueError("Corrupt model: feature keys out of range")
    keys = keys.astype(np.uint64)
    ptr, lab, val, coded = _read_rows(msg, n_labels, counts)
    if ptr.shape[0] != n + 1:
        raise ValueError("Corrupt model: feature arrays disagree in length")
    tpl = np.repeat(np.arange(n_tpl, dtype=np.int32), counts)
    if version < 3 and n:
        keys, tpl, ptr, lab, val = _fold_legacy(keys, tpl, ptr, lab, val)
        counts = np.bincount(tpl, minlength=n_tpl).astype(np.int64)
        n = keys.shape[0]
    if np.any(keys == 0) or not np.all(np.isfinite(coded[0] if coded is not None else val)):
        raise ValueError("Corrupt model: invalid feature keys or weights")
    if not model.load_features(tpl, keys, ptr, lab, val, coded):
        raise ValueError("Corrupt model: duplicate features")
    class_keys = array_field(msg, "class_keys", (np.uint64,), 1, limit=MAX_CLASSES)
    class_values = array_field(msg, "class_values", (np.uint64,), 1, limit=MAX_CLASSES)
    if version >= 4:
        class_keys = np.cumsum(class_keys, dtype=np.uint64)
    if class_keys.shape != class_values.shape:
        raise ValueError("Corrupt model: ambiguity class arrays disagree in length")
    model.lex_classes = dict(zip(class_keys.tolist(), class_values.tolist()))
    model.lex_clusters = word_clusters.decode(msg)
    return model


def _key_mix(msg: Dict[str, Any]) -> str:
    """How a file's keys were made: its `key_mix` (format 5), else splitmix."""
    if msg["version"] <= SPLITMIX_VERSION:
        if "key_mix" in msg:
            raise ValueError(f"Corrupt model: a version {msg['version']} file holds no key_mix")
        return "splitmix"
    key_mix = msg.get("key_mix")
    if key_mix not in KEY_MIXES or key_mix == "splitmix":
        raise ValueError(f"Corrupt model: key_mix must be \"multiply\" in a version {msg['version']} file, "
                         f"got {key_mix!r}")
    return key_mix


def seal(msg: Dict[str, Any]) -> bytes:
    """The file: the encoded model as msgpack bytes inside an envelope with
    its CRC-32, so a flipped bit or a cut anywhere is found before the
    payload is used."""
    return seal_payload(dumps(msg))


def seal_payload(payload: bytes) -> bytes:
    """seal() for a model already turned into msgpack bytes (the caller
    can let the encoded arrays go before the envelope is made)."""
    return dumps({"format": FORMAT_NAME, "crc32": zlib.crc32(payload), "payload": payload})


def unseal(data: bytes) -> Any:
    """The encoded model in a file written by `seal` (its CRC-32 checked), or
    in an older file written without the envelope."""
    outer = loads(data)
    if not isinstance(outer, dict) or "payload" not in outer:
        return outer  # written before files were sealed: no checksum to check
    payload, crc = outer.get("payload"), outer.get("crc32")
    if outer.get("format") != FORMAT_NAME or not isinstance(payload, bytes) or not isinstance(crc, int):
        raise ValueError("Corrupt model: the file's envelope is damaged")
    if zlib.crc32(payload) != crc:
        raise ValueError("Corrupt model: the checksum does not match (the file was changed or cut)")
    inner = loads(payload)
    if isinstance(inner, dict) and "payload" in inner:
        raise ValueError("Corrupt model: an envelope inside an envelope")
    return inner


def dumps(msg: Dict[str, Any]) -> bytes:
    import srsly

    return srsly.msgpack_dumps(msg)


def loads(data: bytes) -> Any:
    """msgpack bytes -> data, every failure a ValueError."""
    import gc

    import srsly

    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) == 0:
        raise ValueError("Not a spacy-sparse model: empty or not bytes")
    collecting = gc.isenabled()
    try:
        return srsly.msgpack_loads(bytes(data))
    except Exception as err:  # msgpack raises several unrelated types
        # srsly turns the garbage collector off while it decodes and does
        # not turn it back on when decoding fails
        if collecting:
            gc.enable()
        raise ValueError(f"Not a spacy-sparse model, or the file is truncated/corrupt ({type(err).__name__}: {err})") from None


def _check_format(msg: Any) -> None:
    if not isinstance(msg, dict) or msg.get("format") != FORMAT_NAME:
        raise ValueError(f"Not a spacy-sparse model: expected format {FORMAT_NAME!r}")
    version = msg.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in READ_VERSIONS:
        raise ValueError(
            f"Unsupported spacy-sparse model version {msg.get('version')!r}; this build reads versions {READ_VERSIONS}"
        )
    if not isinstance(msg.get("templates"), list) or not all(isinstance(t, str) for t in msg["templates"]):
        raise ValueError("Corrupt model: 'templates' must be a list of strings")
    if not isinstance(msg.get("labels"), list) or not all(isinstance(t, str) for t in msg["labels"]):
        raise ValueError("Corrupt model: 'labels' must be a list of strings")
    if "" in msg["labels"] or len(set(msg["labels"])) != len(msg["labels"]):
        raise ValueError("Corrupt model: a label is empty or named twice")


def codes_of(values: np.ndarray, limit: int) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """(book, codes): the distinct values, sorted, and each value's index
    in them, when `values` take at most `limit` distinct values; else
    (None, None). The book is guessed from a sample and checked, so float
    weights (millions of distinct values) cost no full sort, and a coded
    model (a few values) none either."""
    book = np.unique(values[:: max(1, values.size // 65536)])
    if book.size > limit:  # the sample alone has too many: so has the whole
        return None, None
    codes = np.searchsorted(book, values).clip(0, max(0, book.size - 1))
    if np.array_equal(book[codes], values):
        return book, codes
    book, codes = np.unique(values, return_inverse=True)
    return (book, codes) if book.size <= limit else (None, None)


def _fold_legacy(keys, tpl, ptr, lab, val):
    """64-bit keys of a version 1/2 file folded to 32 bits; where two
    features of a template now share a key (rare), the first one stays."""
    from .kernels.hashing import fold_keys
    from .kernels.rows import gather_rows

    keys = fold_keys(keys)
    _, first = np.unique((tpl.astype(np.uint64) << np.uint64(32)) | keys, return_index=True)
    if first.size == keys.size:
        return keys, tpl, ptr, lab, val
    keep = np.sort(first)
    row_len = np.diff(ptr)[keep]
    new_ptr = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(row_len, out=new_ptr[1:])
    labels, values = np.empty(int(new_ptr[-1]), dtype=np.int32), np.empty(int(new_ptr[-1]), dtype=np.float32)
    gather_rows(ptr, keep, lab, val, labels, values)
    return keys[keep], tpl[keep], new_ptr, labels, values


def _read_rows(msg: Dict[str, Any], n_labels: int, counts: np.ndarray):
    """(ptr, label, value, coded) per feature from either weight layout:
    feature i's row is label[ptr[i]:ptr[i + 1]] with its values; `coded` is
    (codebook, code per weight) for grouped weights, else None. Grouped
    weights of a current file come without values (None)."""
    version = msg.get("version")
    if version == 1 or msg.get("weights") == "float":
        row_len = array_field(msg, "row_length", (np.uint8, np.uint16), 1)
        lab = array_field(msg, "row_label", (np.uint8, np.uint16), 1).astype(np.int32)
        val = array_field(msg, "row_value", (np.float32,), 1)
        ptr = np.zeros(row_len.shape[0] + 1, dtype=np.int64)
        np.cumsum(row_len, out=ptr[1:])
        if ptr[-1] != lab.shape[0] or lab.shape[0] != val.shape[0]:
            raise ValueError("Corrupt model: feature arrays disagree in length")
        if lab.size and int(lab.max()) >= n_labels:
            raise ValueError("Corrupt model: a weight names a label that does not exist")
        return ptr, lab, val, None
    if msg.get("weights") != "grouped":
        raise ValueError(f"Corrupt model: unknown weight layout {msg.get('weights')!r}")
    codebook = array_field(msg, "codebook", (np.float32,), 1)
    n_features = int(counts.sum())
    row_len = array_field(msg, "row_length", UINTS, 1, limit=n_features)
    entries = array_field(msg, "row_entry", UINTS, 1, limit=min(MAX_WEIGHTS, row_len.shape[0] * max(1, n_labels)))
    index = np.zeros(0, dtype=np.int64)
    if "feature_row" in msg:
        index = array_field(msg, "feature_row", UINTS, 1, limit=n_features).astype(np.int64)
        if index.size != n_features:
            raise ValueError("Corrupt model: feature rows out of range")
        if version == 3:
            index = index_from_steps(index, counts)
    if entries.size and codebook.size == 0:
        raise ValueError("Corrupt model: a weight code is out of range")
    # one dtype for every file, so no file can make numba compile a new version of the kernel
    status, ptr, lab, code = expand_rows(row_len.astype(np.int64), entries.astype(np.int64), max(1, codebook.size),
                                         max(1, n_labels), index, version >= 4)
    if status != ROWS_OK:
        raise ValueError("Corrupt model: " + {
            ROWS_BAD_LENGTH: "feature arrays disagree in length",
            ROWS_BAD_LABEL: "a row names a label that does not exist, or one label twice",
            ROWS_BAD_INDEX: "feature rows out of range"}[status])
    # a loaded model keeps a small codebook's codes, not their values (SparseLinearModel.load_features): no
    # float per weight is made for it (0.02 s of the shipped pipeline's load)
    values = codebook[code] if version < 3 or codebook.size > MAX_CODEBOOK else None
    return ptr, lab, values, (codebook, code)
