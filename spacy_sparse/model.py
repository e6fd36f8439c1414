"""SparseLinearModel: one weight table per template, rows of label weights.

Tables live in one flat numpy array (see kernels/hashing.py): template t owns
the slots [tab_off[t], tab_off[t+1]) of `tab`, whose values are row numbers
(or -1 - c for a feature that took part in c updates and, under min-update,
has no row yet). Two weight layouts share those row numbers:

- training: dense `W` (n_rows x n_labels) and `U`, the step-weighted sum of
  updates, so the averaged perceptron weights `W - U / steps` are available
  at any time without a copy per step (U is float32 too, a third of the
  training memory: against float64 it moved the averages of a tagger after
  150k steps by at most 7e-6, with weights around 1);
- prediction: the averaged weights as a dense float32 matrix, cached until
  the next update (dense rows: the rows read most often belong to frequent
  features, whose rows are dense, and a dense row add vectorizes);
- storage: the averaged weights compressed per row (`ptr`, `lab`, `val`:
  each row's nonzero labels and values), which is what goes to disk and
  what the statistics count.

Loading rebuilds the hash tables from the stored keys. What training
changes is in training_rows.py; the prediction layouts made from the
averaged weights, in layouts.py.
"""
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import codec
from .clusters import ClusterTable
from .runtime.guard import ReadWriteGuard
from .runtime.compiled import fill_tables, forget_arguments
from .kernels.layout import KEY_MIXES, KEY_MULTIPLY, capacity_for, new_table
from .layouts import Layouts, empty_compact
from .learner_state import AdmmPull, GroupScales
from .runtime.mapped import release_free_heap
from .templates import Template, compile_templates, parse_templates
from .training_rows import Training



def _check_label_count(n_labels: int) -> None:
    """Refuse a label set no model file may hold, before training saves one."""
    if n_labels > codec.MAX_LABELS:
        raise ValueError(f"A model holds at most {codec.MAX_LABELS:,} labels (outputs), got {n_labels:,}")


class SparseLinearModel(Training, Layouts):
    """Templated sparse linear scorer over a fixed label set."""

    def __init__(self, templates: Sequence[str], labels: Sequence[str]):
        _check_label_count(len(labels))
        self.templates: List[Template] = parse_templates(templates)
        self.labels: List[str] = list(labels)
        seeds, atom_off, atom_src, atom_pos = compile_templates(self.templates)
        self.seeds = seeds
        self.atom_off = atom_off
        self.atom_src = atom_src
        self.atom_pos = atom_pos
        # how atoms fold into keys (layout.KEY_MIXES): a new model's way; a file says its own (codec.decode)
        self._key_mix = KEY_MULTIPLY
        # what every kernel takes to make a template's key: (seeds, atom_off,
        # atom_src, atom_pos) (templates.compile_templates) and the key mix, in one tuple
        self.template_arrays = (seeds, atom_off, atom_src, atom_pos, self._key_mix)
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
        # pending[c]: features without a row yet that took part in c updates
        # (kernels/learner.py take_update)
        self.pending = np.zeros(2, dtype=np.int64)
        # bumped by changed(): what caches of this model's rows compare
        self.version = 0
        # rare-feature pruning fixed the feature set: no new features
        self.closed = False
        # the sparseptron's and DC-ADMM's state (learner_state.py)
        self.groups = GroupScales.for_templates(n_tpl)
        self.admm = AdmmPull()
        self.steps = np.zeros(1, dtype=np.float64)
        # training instances (docs) seen, for methods that act every K of them
        self.instances = 0
        # dense training layout, made on demand (see ensure_training_layout)
        self.W: Optional[np.ndarray] = None
        self.U: Optional[np.ndarray] = None
        # AdaGrad's sums of squared gradients (only when that learner runs)
        self.G: np.ndarray = np.zeros((1, 1), dtype=np.float32)
        # averaged weights: compressed (ptr, lab, val) and dense for prediction
        self._compact: Optional[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = empty_compact(0)
        self._dense: Optional[np.ndarray] = None
        # dense one-byte codes and their book (coded_weights), or () when the weights take too many values
        self._dense_codes: Optional[Tuple[np.ndarray, ...]] = None
        self._packed: Optional[Tuple[np.ndarray, ...]] = None
        # (codebook, code per weight) of the compressed weights, as a grouped file gave them
        self._coded: Optional[Tuple[np.ndarray, np.ndarray]] = None
        # (version, averages) that weights(stale_steps) may serve
        self._stale: Optional[Tuple[int, np.ndarray]] = None
        self._lock = threading.RLock()
        # predictions read, training steps write (guard.py)
        self.guard = ReadWriteGuard()
        # ambiguity classes: hash of a lowercase form -> hash of its class
        self.lex_classes: Dict[int, int] = {}
        # word form (folded hash) -> Brown cluster path, for `clu*` atoms (clusters.py)
        self.lex_clusters = ClusterTable()

    @property
    def key_mix(self) -> str:
        """How this model's feature keys were made: "multiply" (every model
        made now) or "splitmix" (files of format 4 and older). Keys of one
        way never match the other's, so it is set only while the model has
        no features (a decoded file, or preset_features)."""
        return KEY_MIXES[int(self._key_mix)]

    @key_mix.setter
    def key_mix(self, name: str) -> None:
        if int(self.n_rows[0]) or int(self.tab_count.sum()):
            raise ValueError("A model's key mix cannot change once it has features")
        self._use_key_mix(name)

    def _use_key_mix(self, name: str) -> None:
        """Make keys the `name` way from now on (the caller sees to the features: none, or all replaced)."""
        if name not in KEY_MIXES:
            raise ValueError(f"key_mix must be one of {KEY_MIXES}, got {name!r}")
        self._key_mix = np.int64(KEY_MIXES.index(name))
        self.template_arrays = self.template_arrays[:4] + (self._key_mix,)
        self.changed()

    # ---- shape -----------------------------------------------------------
    @property
    def tab(self) -> np.ndarray:
        """The feature tables (kernels/hashing.py: every template's slots of
        key and row). A loaded model whose prediction reads tables of its
        own (packed(): the parser's) keeps only the key of each row once
        those are built, and makes the tables again, slot for slot, when
        saving or training asks for them (the shipped parser: 11.5 MB
        instead of 1)."""
        tab = self._tab
        if tab is None:
            with self._lock:
                tab = self._tab
                if tab is None:
                    n = int(self.n_rows[0])
                    tab = new_table(int(self.tab_off[-1]))
                    # rows in order, as load_features inserted them: the same slots
                    fill_tables(self.row_tpl[:n], self._row_keys.astype(np.uint64), np.arange(n, dtype=np.int64),
                                self.tab_off, tab)
                    self._tab = tab  # the keys stay: a layout built again may drop the tables again
        return tab

    @tab.setter
    def tab(self, value: np.ndarray) -> None:
        self._tab, self._row_keys = value, None

    def _drop_tables(self) -> None:
        """A loaded model that predicts from tables of its own (packed) keeps
        the keys of its rows instead of its feature tables (load_features
        kept those keys: making them from the tables took 20 ms of a first
        parse)."""
        if self.W is None and self._row_keys is not None:
            self._tab = None

    def _drop_row_keys(self) -> None:
        """A model that predicts from its feature tables needs no second copy of their keys."""
        if self._tab is not None:
            self._row_keys = None

    @property
    def template_names(self) -> List[str]:
        return [t.name for t in self.templates]

    def add_labels(self, new: Sequence[str]) -> int:
        """Append labels with zero weights in every row, so a trained model
        learns them from later updates (spaCy's components grow a new
        output the same way). Returns how many were new."""
        new = [lab for lab in dict.fromkeys(new) if lab not in self.labels]
        if not new:
            return 0
        _check_label_count(self.n_labels + len(new))
        n_old = self.n_labels

        def widen(arr: Optional[np.ndarray]) -> Optional[np.ndarray]:
            if arr is None or arr.ndim != 2 or arr.shape[1] != n_old:
                return arr
            return np.concatenate([arr, np.zeros((arr.shape[0], len(new)), dtype=arr.dtype)], axis=1)

        with self.guard.writing():
            self.W, self.U, self.G = widen(self.W), widen(self.U), widen(self.G)
            self.admm.target, self.admm.fixed = widen(self.admm.target), widen(self.admm.fixed)
            self.labels.extend(new)
            self.changed()
        return len(new)

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    # ---- weights -----------------------------------------------------------
    def changed(self, training_step: bool = False) -> None:
        """Call after training touched W/U: drops the cached averages. With
        no training layout yet, the compressed weights are the only copy and
        stay. After a plain training step (no rows renumbered, no scales
        changed) the averages may still serve weights(stale_steps)."""
        if self.W is not None:
            self._compact = None
        elif self._compact is not None and self._compact[2] is None:
            self._compact = self._widened(self._compact)  # the codes go: their values stay
        self._coded = None
        self._drop_layouts()
        if not training_step:
            self._stale = None
        self.version += 1

    def _drop_layouts(self) -> None:
        """Drop the prediction layouts (made again when next asked for)."""
        if self._dense is not None or self._dense_codes is not None or self._packed is not None:
            forget_arguments()  # the kernels' checks hold the last call's layouts too
        self._dense = self._dense_codes = self._packed = None

    # ---- statistics ----------------------------------------------------------
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
            "bytes": len(self.to_bytes()),
            "features_per_template": {t.name: int(c) for t, c in zip(self.templates, per_tpl)},
        }

    # ---- serialization (the format itself is codec.py) ------------------------
    def load_features(self, tpl: np.ndarray, keys: np.ndarray, ptr: np.ndarray, lab: np.ndarray,
                      val: Optional[np.ndarray], coded: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> bool:
        """Replace the features with these (template, key) pairs and their
        rows of (label, value) entries (feature i's: ptr[i]:ptr[i + 1]), as a
        decoded file gives them; `coded` = (codebook, code per weight) when
        the file stored them so, and then `val` may be None (the values are
        made from the codes). False if two features share a template and
        key."""
        n, n_tpl = keys.shape[0], len(self.templates)
        counts = np.bincount(tpl, minlength=n_tpl).astype(np.int64)
        caps = np.array([capacity_for(int(c)) for c in counts], dtype=np.int64)
        self.tab_off = np.zeros(n_tpl + 1, dtype=np.int64)
        self.tab_off[1:] = np.cumsum(caps)
        self.tab = new_table(int(self.tab_off[-1]))
        if fill_tables(tpl, keys, np.arange(n, dtype=np.int64), self.tab_off, self.tab):
            return False
        self.tab_count = counts
        self.pending[:] = 0
        self.row_tpl = np.zeros(max(16, n), dtype=np.int32)
        self.row_tpl[:n] = tpl
        self.n_rows[0] = n
        self.W = self.U = None
        # row i's key, until the prediction layouts are built (_drop_tables, _drop_row_keys)
        self._row_keys = keys.astype(np.uint32) if n == 0 or int(keys.max()) < 2 ** 32 else None
        self.changed()
        # Kept for saving, statistics and building the prediction layouts, not read when predicting, so in
        # the narrowest types: labels as bytes, grouped weights as one-byte codes without their values
        # (compact() makes the int32 / float32 form when asked). The shipped pipeline: 41 MB less.
        narrow = np.uint8 if self.n_labels <= 256 else np.uint16 if self.n_labels <= 65536 else np.int32
        lab = lab.astype(narrow, copy=False)
        if coded is not None and coded[0].size <= 256:
            book, code = coded
            self._compact = (ptr, lab, None)
            self._coded = (book.astype(np.float32, copy=False), code.astype(np.uint8, copy=False))
        else:
            if val is None:
                val = coded[0][coded[1]]
            self._compact = (ptr, lab, val.astype(np.float32, copy=False))
            self._coded = coded
        return True

    def to_dict(self, grouped: Optional[bool] = None) -> Dict[str, Any]:
        """The saved form (codec.encode): nonzero rows only; grouped weights
        when they take at most MAX_CODEBOOK values (grouped=None decides)."""
        return codec.encode(self, grouped)

    @classmethod
    def from_dict(cls, msg: Any) -> "SparseLinearModel":
        return codec.decode(msg)

    def part_bytes(self, grouped: Optional[bool] = None) -> Dict[str, int]:
        """Bytes of each field of the saved form (msgpack), largest first."""
        sizes = {k: len(codec.dumps({k: v})) for k, v in self.to_dict(grouped).items()}
        return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))

    def to_bytes(self) -> bytes:
        """The model file (codec.seal: the encoded model with its checksum)."""
        if self.W is not None:
            # in training, saving follows an evaluation, whose prediction layouts the next step drops anyway
            # (changed()): they go now, so the encoding is not made beside them (0.15 GB at the end of a run)
            self._drop_layouts()
        payload = codec.dumps(self.to_dict())  # the encoded arrays go before the envelope is made
        sealed = codec.seal_payload(payload)
        del payload
        release_free_heap()  # encoding's temporaries (mapped.py): saving during training holds less
        return sealed

    @classmethod
    def from_bytes(cls, data: bytes) -> "SparseLinearModel":
        return cls.from_dict(codec.unseal(data))
