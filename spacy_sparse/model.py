"""SparseLinearModel: one weight table per template, rows of label weights.

Tables live in one flat numpy array (see kernels/hashing.py): template t owns
the slots [tab_off[t], tab_off[t+1]) of `tab`, whose values are row numbers.
Two weight layouts share those row numbers:

- training: dense `W` (n_rows x n_labels) and `U`, the step-weighted sum of
  updates, so the averaged perceptron weights `W - U / steps` are available
  at any time without a copy per step;
- prediction: the averaged weights as a dense float32 matrix, cached until
  the next update. (A per-row sparse layout was measured slower: the rows
  read most often are the frequent features, whose rows are dense, and a
  dense row add vectorizes.)
- storage: the averaged weights compressed per row (`ptr`, `lab`, `val`:
  each row's nonzero labels and values), which is what goes to disk and
  what the statistics count.

Loading rebuilds the hash tables from the stored keys.
"""
import threading
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .kernels.hashing import capacity_for, fill_tables, fold_keys, new_table, rehash
from .templates import Template, compile_templates, parse_templates

FORMAT_NAME = "spacy-sparse-linear"
FORMAT_VERSION = 4
# versions 1 (float weights only) and 2 (64-bit keys) still load; their keys
# are folded to 32 bits as the kernels now make them. Version 3 stored keys
# whole and codes as (label, code); version 4 stores both as steps.
READ_VERSIONS = (1, 2, 3, 4)
UINTS = (np.uint8, np.uint16, np.uint32, np.uint64)
# most distinct weights a grouped file holds (codes fit in one byte)
MAX_CODEBOOK = 256


class SparseLinearModel:
    """Templated sparse linear scorer over a fixed label set."""

    def __init__(self, templates: Sequence[str], labels: Sequence[str]):
        self.templates: List[Template] = parse_templates(templates)
        self.labels: List[str] = list(labels)
        seeds, atom_off, atom_src, atom_pos = compile_templates(self.templates)
        self.seeds = seeds
        self.atom_off = atom_off
        self.atom_src = atom_src
        self.atom_pos = atom_pos
        n_tpl = len(self.templates)
        self.tab_off = np.arange(n_tpl + 1, dtype=np.int64) * 8
        self.tab = new_table(int(self.tab_off[-1]))
        self.tab_count = np.zeros(n_tpl, dtype=np.int64)
        self.n_rows = np.zeros(1, dtype=np.int64)
        self.row_tpl = np.zeros(16, dtype=np.int32)
        # per feature: decisions whose update it took part in (min-update);
        # a feature counts in scores once it has min_updates of them
        self.updates = np.zeros(16, dtype=np.int32)
        self.min_updates = 1
        # bumped by changed(): what caches of this model's rows compare
        self.version = 0
        # rare-feature pruning fixed the feature set: no new features
        self.closed = False
        # sparseptron: per template, w = scale * v, and |v|^2 kept up to date
        # by the learner, so a group-lasso prox step costs O(#templates);
        # `selecting` makes predictions use the current iterate (the
        # selection phase does not average)
        self.scale = np.ones(n_tpl, dtype=np.float32)
        self.norm2 = np.zeros(n_tpl, dtype=np.float64)
        self.selecting = False
        # DC-ADMM: the w-step pulls each row toward target (u - alpha) at
        # rate 1 - pull per decision, lazily (stamp: the decision a row was
        # last pulled at); `fixed` holds u, the discrete weights the model
        # predicts with and saves while ADMM runs
        self.pull = 1.0
        self.target = np.zeros((1, 1), dtype=np.float32)
        self.stamp = np.zeros(1, dtype=np.float64)
        self.fixed: Optional[np.ndarray] = None
        self.steps = np.zeros(1, dtype=np.float64)
        # training instances (docs) seen, for methods that act every K of them
        self.instances = 0
        # dense training layout, made on demand (see _ensure_dense)
        self.W: Optional[np.ndarray] = None
        self.U: Optional[np.ndarray] = None
        # AdaGrad's sums of squared gradients (only when that learner runs)
        self.G: np.ndarray = np.zeros((1, 1), dtype=np.float32)
        # averaged weights: compressed (ptr, lab, val) and dense for prediction
        self._compact: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = _empty_compact(0)
        self._dense: Optional[np.ndarray] = None
        self._packed: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self._lock = threading.RLock()
        # ambiguity classes: hash of a lowercase form -> hash of its class
        self.lex_classes: Dict[int, int] = {}

    # ---- shape -----------------------------------------------------------
    @property
    def template_names(self) -> List[str]:
        return [t.name for t in self.templates]

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    def reserve(self, n_new: int, adagrad: bool = False) -> None:
        """Make room for n_new more features in every table before a
        training kernel runs, so kernels never need to grow arrays."""
        if self.closed:
            n_new = 0
        need = self.tab_count + n_new
        caps = np.diff(self.tab_off)
        if np.any(2 * need + 2 > caps):
            new_caps = np.array([max(c, capacity_for(int(n))) for c, n in zip(caps, need)], dtype=np.int64)
            self._relayout(new_caps)
        self._ensure_dense()
        rows_needed = int(self.n_rows[0]) + n_new * len(self.templates)
        if rows_needed > self.W.shape[0]:
            cap = max(rows_needed, 2 * self.W.shape[0])
            self.W = _grow(self.W, cap)
            self.U = _grow(self.U, cap)
            self.row_tpl = _grow(self.row_tpl, cap)
            self.updates = _grow(self.updates, cap)
        if self.pull < 1.0 and self.target.shape != self.W.shape:
            self.target = _grow(self.target, self.W.shape[0]) if self.target.shape[1] == self.W.shape[1] \
                else np.zeros_like(self.W)
            self.stamp = _grow(self.stamp, self.W.shape[0])
        if adagrad and self.G.shape != self.W.shape:
            self.G = _grow(self.G, self.W.shape[0]) if self.G.shape[1] == self.W.shape[1] else np.zeros_like(self.W)

    def _ensure_dense(self) -> None:
        """Make the dense training layout from the compressed weights."""
        if self.W is not None:
            return
        n = int(self.n_rows[0])
        cap = max(16, n)
        W = np.zeros((cap, max(1, self.n_labels)), dtype=np.float32)
        ptr, lab, val = self.compact()
        W[np.repeat(np.arange(n), np.diff(ptr)), lab.astype(np.int64)] = val
        self.W = W
        self.U = np.zeros(W.shape, dtype=np.float64)
        self.steps[0] = 0.0
        self.row_tpl = _grow(self.row_tpl, cap) if self.row_tpl.shape[0] < cap else self.row_tpl
        # features read from a file passed any min-update threshold when saved
        self.updates = np.full(cap, np.iinfo(np.int32).max // 2, dtype=np.int32)

    def tables(self) -> Tuple[np.ndarray, ...]:
        """The feature tables as the training kernels take them."""
        return (self.tab, self.tab_off, self.tab_count, self.row_tpl, self.n_rows)

    def learner_state(self) -> Tuple[np.ndarray, ...]:
        """The arrays a training kernel updates (see prefix_train_step)."""
        return (self.W, self.U, self.G, self.updates, self.scale, self.norm2, self.target, self.stamp)

    def learner_params(self, adagrad: bool, lr: float) -> Tuple[Any, ...]:
        return (bool(adagrad), float(lr), int(self.min_updates), bool(self.closed), float(self.pull))

    def preset_features(self, keys_per_template: Sequence[np.ndarray]) -> None:
        """Make exactly these features (zero weights) and close the model
        to any others: training only learns their weights."""
        counts = np.array([len(k) for k in keys_per_template], dtype=np.int64)
        keys = np.concatenate([np.asarray(k, dtype=np.uint64) for k in keys_per_template]) if len(counts) else \
            np.zeros(0, dtype=np.uint64)
        n = keys.shape[0]
        tpl = np.repeat(np.arange(len(self.templates), dtype=np.int32), counts)
        caps = np.array([capacity_for(int(c)) for c in counts], dtype=np.int64)
        self.tab_off = np.zeros(len(self.templates) + 1, dtype=np.int64)
        self.tab_off[1:] = np.cumsum(caps)
        self.tab = new_table(int(self.tab_off[-1]))
        fill_tables(tpl, keys, np.arange(n, dtype=np.int64), self.tab_off, self.tab)
        self.tab_count = counts
        self.n_rows[0] = n
        cap = max(16, n)
        self.row_tpl = np.zeros(cap, dtype=np.int32)
        self.row_tpl[:n] = tpl
        self.W = np.zeros((cap, max(1, self.n_labels)), dtype=np.float32)
        self.U = np.zeros(self.W.shape, dtype=np.float64)
        self.updates = np.zeros(cap, dtype=np.int32)
        self.steps[0] = 0.0
        self.closed = True
        self.changed()

    def keys_of_rows(self) -> np.ndarray:
        """The feature key of every row."""
        n = int(self.n_rows[0])
        out = np.zeros(n, dtype=np.uint64)
        keys, rows = self.tab[0::2], self.tab[1::2]
        used = keys != 0
        out[rows[used].astype(np.int64)] = keys[used]
        return out

    def keep_rows(self, keep: np.ndarray) -> int:
        """Delete the features whose `keep` is False (their memory is freed,
        and a later update may make them again). Returns how many went."""
        self._ensure_dense()
        n = int(self.n_rows[0])
        keep = np.asarray(keep, dtype=bool)[:n]
        if keep.all():
            return 0
        keys = self.keys_of_rows()[keep]
        tpl = self.row_tpl[:n][keep]
        m = int(keep.sum())
        self.tab = new_table(int(self.tab_off[-1]))
        fill_tables(tpl, keys, np.arange(m, dtype=np.int64), self.tab_off, self.tab)
        self.tab_count = np.bincount(tpl, minlength=len(self.templates)).astype(np.int64)
        cap = max(16, m)

        def shrink(arr):
            out = np.zeros((cap,) + arr.shape[1:], dtype=arr.dtype)
            out[:m] = arr[:n][keep]
            return out

        self.W, self.U, self.row_tpl, self.updates = (shrink(a) for a in (self.W, self.U, self.row_tpl, self.updates))
        if self.G.shape[0] >= n and self.G.shape[0] > 1:
            self.G = shrink(self.G)
        if self.target.shape[0] >= n and self.target.shape[0] > 1:
            self.target, self.stamp = shrink(self.target), shrink(self.stamp)
        if self.fixed is not None:
            self.fixed = self.fixed[:n][keep[: self.fixed.shape[0]]] if self.fixed.shape[0] == n else None
        self.n_rows[0] = m
        self.changed()
        return n - m

    def drop_templates(self, dead: np.ndarray) -> int:
        """Delete every feature of the templates marked in `dead` (a group
        the group lasso zeroed); they may grow back from later updates."""
        dead = np.asarray(dead, dtype=bool)
        n = int(self.n_rows[0])
        removed = self.keep_rows(~dead[self.row_tpl[:n]])
        self.norm2[dead] = 0.0
        self.scale[dead] = 1.0
        return removed

    def fold_scale(self) -> None:
        """Multiply the sparseptron's template scales into the weights."""
        if self.W is None or np.all(self.scale == 1.0):
            return
        n = int(self.n_rows[0])
        factor = self.scale[self.row_tpl[:n]].astype(np.float64)[:, None]
        self.W[:n] *= factor.astype(np.float32)
        self.U[:n] *= factor
        self.norm2 *= self.scale.astype(np.float64) ** 2
        self.scale[:] = 1.0
        self.changed()

    def _relayout(self, caps: np.ndarray) -> None:
        new_off = np.zeros(len(caps) + 1, dtype=np.int64)
        new_off[1:] = np.cumsum(caps)
        tab = new_table(int(new_off[-1]))
        rehash(self.tab, self.tab_off, new_off, tab)
        self.tab_off, self.tab = new_off, tab

    # ---- weights -----------------------------------------------------------
    def changed(self) -> None:
        """Call after training touched W/U: drops the cached averages. With
        no training layout yet, the compressed weights are the only copy and
        stay."""
        if self.W is not None:
            self._compact = None
        self._dense = None
        self._packed = None
        self.version += 1

    def weights(self) -> np.ndarray:
        """Averaged weights as the dense matrix prediction reads (cached;
        at least one row so kernels always get a 2-D array)."""
        dense = self._dense
        if dense is None:
            with self._lock:
                dense = self._dense
                if dense is None:
                    dense = self.averaged()
                    if dense.shape[0] == 0:
                        dense = np.zeros((1, max(1, self.n_labels)), dtype=np.float32)
                    self._dense = dense
        return dense

    def float_average(self) -> np.ndarray:
        """The learner's averaged weights, whatever the model predicts with
        (a loaded model gets its training layout first, which then holds
        the float weights whatever `fixed` becomes)."""
        self._ensure_dense()
        fixed, self.fixed = self.fixed, None
        try:
            return self.averaged()
        finally:
            self.fixed = fixed

    def averaged(self) -> np.ndarray:
        """The weights the model predicts with and saves (n_rows x
        n_labels): the averaged perceptron's, the current iterate while the
        sparseptron selects, or DC-ADMM's discrete u while that runs."""
        n = int(self.n_rows[0])
        if self.fixed is not None:
            out = np.zeros((n, max(1, self.n_labels)), dtype=np.float32)
            m = min(n, self.fixed.shape[0])
            out[:m] = self.fixed[:m]
            return out
        if self.W is None:
            out = np.zeros((n, max(1, self.n_labels)), dtype=np.float32)
            ptr, lab, val = self.compact()
            out[np.repeat(np.arange(n), np.diff(ptr)), lab.astype(np.int64)] = val
            return out
        if self.selecting:
            out = self.W[:n] * self.scale[self.row_tpl[:n]][:, None]
        elif self.steps[0] > 0:
            out = (self.W[:n] - self.U[:n] / self.steps[0]).astype(np.float32)
        else:
            out = self.W[:n].copy()
        if self.min_updates > 1:
            out[self.updates[:n] < self.min_updates] = 0.0  # not yet counted, not saved
        return out

    def compact(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Averaged weights in the compressed row layout that prediction
        reads, computed once per change (thread-safe)."""
        compact = self._compact
        if compact is None:
            with self._lock:
                compact = self._compact
                if compact is None:
                    compact = _compress(self.averaged())
                    self._compact = compact
        return compact

    def packed(self) -> Tuple[np.ndarray, np.ndarray]:
        """The prediction layout for rows with few nonzeros (the parser's):
        a copy of the hash tables whose values are spans start << 16 | count
        into `lv`, the (label, value) pairs of all rows, so a feature costs
        one probe and one read. Cached with the averages."""
        packed = self._packed
        if packed is None:
            ptr, lab, val = self.compact()
            with self._lock:
                packed = self._packed
                if packed is None:
                    tab = self.tab.copy()
                    values = tab[1::2]
                    rows = values[tab[0::2] != 0].astype(np.int64)
                    spans = (ptr[rows] << 16) | (ptr[rows + 1] - ptr[rows])
                    values[tab[0::2] != 0] = spans.astype(np.uint64)
                    lv = np.empty((lab.shape[0], 2), dtype=np.float32)
                    lv[:, 0] = lab
                    lv[:, 1] = val
                    packed = self._packed = (tab, lv)
        return packed

    def finalize_average(self) -> None:
        """Make the averaged weights the current weights (ends averaging)."""
        if self.W is None:
            return
        n = int(self.n_rows[0])
        self.W[:n] = self.averaged()
        self.U[:n] = 0.0
        self.steps[0] = 0.0
        self.changed()

    def prune_weights(self, threshold: float) -> int:
        """Zero averaged weights with |w| < threshold (features whose row
        becomes empty are not saved). Ends training state; returns how many
        weights were dropped. A crude size knob for shipping a model; the
        sparsity methods do this properly."""
        self._ensure_dense()
        self.finalize_average()
        n = int(self.n_rows[0])
        small = (np.abs(self.W[:n]) < threshold) & (self.W[:n] != 0)
        self.W[:n][small] = 0.0
        self.changed()
        return int(small.sum())

    # ---- statistics ----------------------------------------------------------
    def training_bytes(self) -> int:
        """Memory the learner's per-feature arrays use for the features made
        so far (hash tables included; spare capacity not counted)."""
        n = int(self.n_rows[0])
        per_row = sum(a[0:1].nbytes for a in (self.W, self.U, self.G, self.target, self.stamp)
                      if a is not None and a.shape[0] >= n and a.shape[0] > 1)
        return int(self.tab.nbytes + n * (per_row + self.updates.itemsize + self.row_tpl.itemsize))

    def stats(self) -> Dict[str, Any]:
        ptr, lab, val = self.compact()
        n = int(self.n_rows[0])
        nz_rows = np.diff(ptr) > 0
        per_tpl = np.bincount(self.row_tpl[:n][nz_rows], minlength=len(self.templates))
        nz = val[val != 0]
        return {
            "templates": int(np.count_nonzero(per_tpl)),
            "templates_total": len(self.templates),
            "labels": self.n_labels,
            "features": int(self.n_rows[0]),
            "nonzero_features": int(nz_rows.sum()),
            "nonzero_weights": int(nz.size),
            "distinct_weights": int(np.unique(nz).size),
            "bytes": len(_dumps(self.to_dict())),
            "features_per_template": {t.name: int(c) for t, c in zip(self.templates, per_tpl)},
        }

    # ---- serialization ---------------------------------------------------------
    def to_dict(self, grouped: Optional[bool] = None) -> Dict[str, Any]:
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
        ptr, lab, val = self.compact()
        keys_of_row = self.keys_of_rows()
        row_len = np.diff(ptr)
        keep = np.flatnonzero(row_len > 0)
        keep = keep[np.lexsort((keys_of_row[keep], self.row_tpl[keep]))]
        row_len = row_len[keep]
        take = _gather_ranges(ptr[keep], row_len)
        counts = np.bincount(self.row_tpl[keep], minlength=len(self.templates)).astype(np.int64)
        values = val[take].astype(np.float32)
        codebook = np.unique(values)
        if grouped is None:
            grouped = codebook.size <= MAX_CODEBOOK
        elif grouped and codebook.size > MAX_CODEBOOK:
            raise ValueError(f"{codebook.size} distinct weights: a grouped file holds at most {MAX_CODEBOOK}")
        templates = self.template_names
        if grouped:
            alive = counts > 0
            templates = [t for t, a in zip(templates, alive) if a]
            counts = counts[alive]
        class_keys = np.array(sorted(self.lex_classes), dtype=np.uint64)
        out: Dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "templates": templates,
            "labels": list(self.labels),
            # features are stored grouped by template, in template order
            "template_features": counts,
            "feature_key": _zipped(_steps_within(keys_of_row[keep].astype(np.int64), counts)),
            # sorted 64-bit hashes, stored as steps (uint64 arithmetic)
            "class_keys": _zipped(np.diff(class_keys, prepend=np.uint64(0))),
            # few distinct values: whole 8-byte repeats zip best
            "class_values": _zipped(np.array([self.lex_classes[k] for k in class_keys.tolist()], dtype=np.uint64),
                                    planes=False),
        }
        if not grouped:
            label_dtype = np.uint8 if self.n_labels <= 256 else np.uint16
            out.update(weights="float", row_length=row_len.astype(_len_dtype(self.n_labels)),
                       row_label=lab[take].astype(label_dtype), row_value=values)
            return out
        n_codes = max(1, codebook.size)
        labels = lab[take].astype(np.int64)
        steps = _steps_within(labels, row_len.astype(np.int64)).astype(np.int64)
        if _names_a_label_twice(steps, row_len):
            raise ValueError("A row names one label twice")  # compact() never makes such rows
        entries = steps * n_codes + np.searchsorted(codebook, values)
        out.update(weights="grouped", codebook=codebook)
        # codes are few and skewed: zlib (stdlib, data only) stores them in
        # about a third of their bytes
        out.update(_rows_grouped(row_len, entries, self.n_labels * n_codes))
        return out

    @classmethod
    def from_dict(cls, msg: Any) -> "SparseLinearModel":
        """Rebuild a model from `to_dict` output; any mismatch is a ValueError."""
        _check_format(msg)
        model = cls(msg["templates"], msg["labels"])
        n_tpl, n_labels = len(model.templates), len(model.labels)
        counts = _array(msg, "template_features", (np.int64,), 1)
        version = msg["version"]
        key_types = {1: (np.uint64,), 2: (np.uint64,), 3: (np.uint32,)}.get(version, UINTS)
        keys = _array(msg, "feature_key", key_types, 1)
        n = keys.shape[0]
        if counts.shape[0] != n_tpl or np.any(counts < 0) or counts.sum() != n:
            raise ValueError("Corrupt model: feature counts per template do not add up")
        if version >= 4:
            keys = _index_from_steps(keys.astype(np.int64), counts)
            if n and (keys.min() < 0 or keys.max() >= 2 ** 32):
                raise ValueError("Corrupt model: feature keys out of range")
        keys = keys.astype(np.uint64)
        row_len, lab, val = _read_rows(msg, n_labels, counts)
        if row_len.shape[0] != n or lab.shape[0] != val.shape[0] or int(row_len.sum()) != lab.shape[0]:
            raise ValueError("Corrupt model: feature arrays disagree in length")
        tpl = np.repeat(np.arange(n_tpl, dtype=np.int32), counts)
        if version < 3 and n:
            keys, tpl, row_len, lab, val = _fold_legacy(keys, tpl, row_len, lab, val)
            counts = np.bincount(tpl, minlength=n_tpl).astype(np.int64)
            n = keys.shape[0]
        if lab.size and (int(lab.max()) >= n_labels or int(lab.min()) < 0):
            raise ValueError("Corrupt model: a weight names a label that does not exist")
        if np.any(keys == 0) or not np.all(np.isfinite(val)):
            raise ValueError("Corrupt model: invalid feature keys or weights")
        caps = np.array([capacity_for(int(c)) for c in counts], dtype=np.int64)
        model.tab_off = np.zeros(n_tpl + 1, dtype=np.int64)
        model.tab_off[1:] = np.cumsum(caps)
        model.tab = new_table(int(model.tab_off[-1]))
        if fill_tables(tpl, keys, np.arange(n, dtype=np.int64), model.tab_off, model.tab):
            raise ValueError("Corrupt model: duplicate features")
        model.tab_count = counts.copy()
        model.row_tpl = np.zeros(max(16, n), dtype=np.int32)
        model.row_tpl[:n] = tpl
        model.n_rows[0] = n
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(row_len, out=ptr[1:])
        model._compact = (ptr, lab.astype(np.int32), val.astype(np.float32))
        class_keys = _array(msg, "class_keys", (np.uint64,), 1)
        class_values = _array(msg, "class_values", (np.uint64,), 1)
        if version >= 4:
            class_keys = np.cumsum(class_keys, dtype=np.uint64)
        if class_keys.shape != class_values.shape:
            raise ValueError("Corrupt model: ambiguity class arrays disagree in length")
        model.lex_classes = dict(zip(class_keys.tolist(), class_values.tolist()))
        return model

    def part_bytes(self, grouped: Optional[bool] = None) -> Dict[str, int]:
        """Bytes of each field of the saved form (msgpack), largest first."""
        sizes = {k: len(_dumps({k: v})) for k, v in self.to_dict(grouped).items()}
        return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))

    def to_bytes(self) -> bytes:
        return _dumps(self.to_dict())

    @classmethod
    def from_bytes(cls, data: bytes) -> "SparseLinearModel":
        return cls.from_dict(_loads(data))


def _empty_compact(n_rows: int):
    return (np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


def _compress(dense: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense rows -> (ptr, lab, val): each row's nonzero labels and values."""
    rows, labels = np.nonzero(dense)
    ptr = np.zeros(dense.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=ptr[1:])
    return ptr, labels.astype(np.int32), dense[rows, labels].astype(np.float32)


def _len_dtype(n_labels: int):
    return np.uint8 if n_labels < 256 else np.uint16


def _index_dtype(top: int):
    """The smallest unsigned type holding 0..top."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return dt
    return np.uint64


def _rows_grouped(row_len: np.ndarray, entries: np.ndarray, n_entries: int) -> Dict[str, Dict[str, Any]]:
    """Rows of packed (label step, code) entries, zipped; identical rows
    are stored once (with an index per feature) when that zips smaller."""
    entry_dt = _index_dtype(max(0, n_entries - 1))
    len_dt = _index_dtype(int(row_len.max()) if row_len.size else 0)
    plain = {"row_length": _zipped(row_len.astype(len_dt)), "row_entry": _zipped(entries.astype(entry_dt))}
    if row_len.size < 2:
        return plain
    same = _same_rows(row_len, entries)
    if same is None:
        return plain
    first, index = same
    # distinct rows in lexicographic order: neighbours then look alike,
    # which zlib rewards (a quarter fewer bytes than hash order)
    starts = _row_starts(row_len)
    u_len = row_len[first]
    mat = np.full((first.size, int(u_len.max())), n_entries, dtype=np.int64)
    mat[np.repeat(np.arange(first.size), u_len), _positions_in_rows(u_len)] = entries[_gather_ranges(starts[first], u_len)]
    order = np.lexsort(mat.T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    first, index = first[order], rank[index]
    u_len = row_len[first]
    merged = {"row_length": _zipped(u_len.astype(len_dt)),
              "row_entry": _zipped(entries[_gather_ranges(starts[first], u_len)].astype(entry_dt)),
              "feature_row": _zipped(index.astype(_index_dtype(first.size - 1)))}
    return merged if _zipped_bytes(merged) < _zipped_bytes(plain) else plain


def _same_rows(row_len: np.ndarray, entries: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(first, index): the distinct rows (by their first feature) and each
    feature's distinct row. Rows are told apart by a 64-bit hash of their
    entries and then compared in full; None if two rows share a hash (the
    caller then stores every row)."""
    starts = _row_starts(row_len)
    _, first, index = np.unique(_row_hashes(row_len, entries), return_index=True, return_inverse=True)
    index = index.reshape(-1)
    rep_len = row_len[first][index]
    if np.any(rep_len != row_len) or np.any(entries[_gather_ranges(starts[first][index], rep_len)] != entries):
        return None
    return first, index


def _row_hashes(row_len: np.ndarray, entries: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each (nonempty) row: its entries times fixed odd
    multipliers by position, summed, plus its length."""
    mults = np.random.default_rng(0x5EED).integers(1, 2 ** 63, size=int(row_len.max()), dtype=np.uint64) | np.uint64(1)
    starts = _row_starts(row_len)
    with np.errstate(over="ignore"):
        mixed = (entries.astype(np.uint64) + np.uint64(1)) * mults[_positions_in_rows(row_len)]
        return np.add.reduceat(mixed, starts) + row_len.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)


def _row_starts(row_len: np.ndarray) -> np.ndarray:
    """Where each row begins in the concatenated entries."""
    starts = np.zeros(row_len.size, dtype=np.int64)
    np.cumsum(row_len[:-1], dtype=np.int64, out=starts[1:])
    return starts


def _positions_in_rows(row_len: np.ndarray) -> np.ndarray:
    """0, 1, .., len-1 for each row, concatenated."""
    starts = _row_starts(row_len)
    return np.arange(int(row_len.sum())) - np.repeat(starts, row_len)


def _steps_within(index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Values sorted within each group (`counts` values a group) -> their
    steps, the first of each group kept whole; all >= 0."""
    steps = np.diff(index, prepend=0)
    starts = np.cumsum(counts)[:-1]
    starts = starts[counts[1:] > 0] if starts.size else starts
    steps[starts] = index[starts]
    return steps.astype(_index_dtype(int(steps.max()) if steps.size else 0))


def _names_a_label_twice(label_steps: np.ndarray, row_len: np.ndarray) -> bool:
    """Whether a row's label steps (the first whole) repeat a label: a zero
    step anywhere but at a row's start."""
    return bool(label_steps.size and np.any(label_steps[_positions_in_rows(row_len) > 0] == 0))


def _index_from_steps(steps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Inverse of _steps_within."""
    total = np.cumsum(steps)
    starts = np.cumsum(counts) - counts
    # each template's first step is whole: subtract the sum before it
    before = np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0) if total.size else np.zeros_like(counts)
    return total - np.repeat(before, counts)


def _fold_legacy(keys, tpl, row_len, lab, val):
    """64-bit keys of a version 1/2 file folded to 32 bits; where two
    features of a template now share a key (rare), the first one stays."""
    keys = fold_keys(keys)
    _, first = np.unique((tpl.astype(np.uint64) << np.uint64(32)) | keys, return_index=True)
    if first.size == keys.size:
        return keys, tpl, row_len, lab, val
    keep = np.sort(first)
    starts = _row_starts(row_len)
    take = _gather_ranges(starts[keep], row_len[keep].astype(np.int64))
    return keys[keep], tpl[keep], row_len[keep], lab[take], val[take]


def _zipped(arr: np.ndarray, planes: bool = True) -> Dict[str, Any]:
    """A 1-d unsigned array, zlib-compressed. With `planes`, its bytes go
    plane by plane (all low bytes, then the next...): the high bytes of
    small numbers are mostly zero and pack to almost nothing."""
    arr = np.ascontiguousarray(arr)
    raw = arr.view(np.uint8).reshape(-1, arr.dtype.itemsize).T.tobytes() if planes else arr.tobytes()
    return {"zlib": zlib.compress(raw, 6), "dtype": arr.dtype.str, "size": int(arr.size), "planes": planes}


def _zipped_bytes(fields: Dict[str, Dict[str, Any]]) -> int:
    return sum(len(f["zlib"]) for f in fields.values())


def _unzipped(field: Dict[str, Any], name: str) -> np.ndarray:
    """A 1-d array stored by _zipped (version 3: without planes). The
    declared size bounds what is inflated, so a corrupt or hostile file
    cannot exhaust memory."""
    data, dtype, size = field.get("zlib"), field.get("dtype"), field.get("size")
    planes = field.get("planes", False)
    if not isinstance(data, bytes) or dtype not in ("|u1", "<u2", "<u4", "<u8") or not isinstance(size, int) \
            or not isinstance(planes, bool):
        raise ValueError(f"Corrupt model: field {name!r} is not a valid compressed array")
    width = np.dtype(dtype).itemsize
    n_bytes = size * width
    if size < 0 or n_bytes > 1100 * len(data) + 64:  # beyond what zlib can reach
        raise ValueError(f"Corrupt model: field {name!r} declares an impossible size")
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(data, n_bytes)
    except zlib.error as err:
        raise ValueError(f"Corrupt model: field {name!r} does not inflate ({err})") from None
    if len(raw) != n_bytes or not inflate.eof or inflate.unconsumed_tail:
        raise ValueError(f"Corrupt model: field {name!r} has the wrong length")
    flat = np.frombuffer(raw, dtype=np.uint8)
    if planes:
        flat = np.ascontiguousarray(flat.reshape(width, size).T)
    return flat.view(dtype).reshape(size).copy()


def _read_rows(msg: Dict[str, Any], n_labels: int, counts: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_length, label, value) per feature from either weight layout."""
    version = msg.get("version")
    if version == 1 or msg.get("weights") == "float":
        return (_array(msg, "row_length", (np.uint8, np.uint16), 1),
                _array(msg, "row_label", (np.uint8, np.uint16), 1),
                _array(msg, "row_value", (np.float32,), 1))
    if msg.get("weights") != "grouped":
        raise ValueError(f"Corrupt model: unknown weight layout {msg.get('weights')!r}")
    codebook = _array(msg, "codebook", (np.float32,), 1)
    row_len = _array(msg, "row_length", UINTS, 1).astype(np.int64)
    entries = _array(msg, "row_entry", UINTS, 1).astype(np.int64)
    n_codes = max(1, codebook.size)
    if int(row_len.sum()) != entries.size or (row_len.size and row_len.min() < 1):
        raise ValueError("Corrupt model: feature arrays disagree in length")
    if entries.size and int(entries.max()) >= n_labels * n_codes:
        raise ValueError("Corrupt model: a weight code is out of range")
    labels, codes = entries // n_codes, entries % n_codes
    if version >= 4:  # label steps within each row, the first whole
        if _names_a_label_twice(labels, row_len):
            raise ValueError("Corrupt model: a row names one label twice")
        labels = _index_from_steps(labels, row_len)
    n_features = int(counts.sum())
    if "feature_row" in msg:
        index = _array(msg, "feature_row", UINTS, 1).astype(np.int64)
        if version == 3 and index.size == n_features:
            index = _index_from_steps(index, counts)
        if index.size != n_features or (index.size and (int(index.max()) >= row_len.size or index.min() < 0)):
            raise ValueError("Corrupt model: feature rows out of range")
        take = _gather_ranges(_row_starts(row_len)[index], row_len[index])
        labels, codes, row_len = labels[take], codes[take], row_len[index]
    return row_len, labels, codebook[codes] if codebook.size else np.zeros(0, np.float32)


def _gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges [starts[i], starts[i] + lengths[i])."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - _row_starts(lengths), lengths)
    return offsets + np.arange(total)


def _grow(arr: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n,) + arr.shape[1:], dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def _dumps(msg: Dict[str, Any]) -> bytes:
    import srsly

    return srsly.msgpack_dumps(msg)


def _loads(data: bytes) -> Any:
    import srsly

    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) == 0:
        raise ValueError("Not a spacy-sparse model: empty or not bytes")
    try:
        return srsly.msgpack_loads(bytes(data))
    except Exception as err:  # msgpack raises several unrelated types
        raise ValueError(f"Not a spacy-sparse model, or the file is truncated/corrupt ({type(err).__name__}: {err})") from None


def _check_format(msg: Any) -> None:
    if not isinstance(msg, dict) or msg.get("format") != FORMAT_NAME:
        raise ValueError(f"Not a spacy-sparse model: expected format {FORMAT_NAME!r}")
    if msg.get("version") not in READ_VERSIONS:
        raise ValueError(
            f"Unsupported spacy-sparse model version {msg.get('version')!r}; this build reads versions {READ_VERSIONS}"
        )
    if not isinstance(msg.get("templates"), list) or not all(isinstance(t, str) for t in msg["templates"]):
        raise ValueError("Corrupt model: 'templates' must be a list of strings")
    if not isinstance(msg.get("labels"), list) or not all(isinstance(t, str) for t in msg["labels"]):
        raise ValueError("Corrupt model: 'labels' must be a list of strings")


def _array(msg: Dict[str, Any], name: str, dtypes, ndim: int) -> np.ndarray:
    arr = msg.get(name)
    if isinstance(arr, dict):
        arr = _unzipped(arr, name)
    if not isinstance(arr, np.ndarray) or arr.ndim != ndim or arr.dtype not in [np.dtype(d) for d in dtypes]:
        raise ValueError(f"Corrupt model: field {name!r} is missing or has the wrong type")
    return arr
