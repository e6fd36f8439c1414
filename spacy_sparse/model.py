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

Loading rebuilds the hash tables from the stored keys.
"""
import threading
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import codec
from .clusters import ClusterTable
from .guard import ReadWriteGuard
from .learner_state import AdmmPull, GroupScales
from .mapped import grow_rows, release_free_heap
from .kernels.compiled import fill_tables, forget_arguments, hot_rows, narrow_table, scatter_rows, span_tables
from .kernels.layout import capacity_for, narrow_fits, new_table
from .templates import Template, compile_templates, parse_templates

# rows per slice where whole-table temporaries would cost too much memory: a
# parser slice's float64 temporaries (144 columns) stay under 10 MB each
_SLICE = 1 << 13
# packed(): rows with at least this many nonzero weights are read as dense rows, the fullest first, in at
# most HOT_BYTES (chosen on EWT dev, parser alone: docs/decisions/measurement-log.md)
HOT_NONZEROS = 24
HOT_BYTES = 16 << 20
# Training fills its feature tables up to this load (prediction's own tables, made at load or at an
# evaluation, stay at one half): the parser's 0.15 GB of training tables at the end of a full EWT run are
# mostly features still counting toward min-update, and a fuller table changes no row, only probe lengths.
TRAINING_LOAD = 0.75


def _check_label_count(n_labels: int) -> None:
    """Refuse a label set no model file may hold, before training saves one."""
    if n_labels > codec.MAX_LABELS:
        raise ValueError(f"A model holds at most {codec.MAX_LABELS:,} labels (outputs), got {n_labels:,}")


class SparseLinearModel:
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
        # what every kernel takes to make a template's key: (seeds, atom_off,
        # atom_src, atom_pos) in one tuple (templates.compile_templates)
        self.template_arrays = (seeds, atom_off, atom_src, atom_pos)
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
        # (kernels/scoring.py take_update)
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
        self._compact: Optional[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = _empty_compact(0)
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

    def reserve(self, n_new: int, adagrad: bool = False) -> None:
        """Make room for n_new more features in every table before a
        training kernel runs, so kernels never need to grow arrays."""
        if self.closed:
            n_new = 0
        n_rows, n_labels = int(self.n_rows[0]), max(1, self.n_labels)
        if n_rows * n_labels > codec.MAX_DENSE_CELLS or n_labels > codec.MAX_LABELS:
            # stop before a model is saved that no loader takes (or the rows fill the memory)
            raise ValueError(f"The model holds {n_rows:,} features of {n_labels:,} labels, beyond what a model "
                             f"file may hold ({codec.MAX_DENSE_CELLS:,} weights): use fewer labels "
                             "(min_label_count), fewer templates, or min_updates")
        need = self.tab_count + n_new
        caps = np.diff(self.tab_off)
        if np.any(need + 1 > caps * TRAINING_LOAD):
            new_caps = np.array([max(c, capacity_for(int(n), TRAINING_LOAD)) for c, n in zip(caps, need)],
                                dtype=np.int64)
            self._relayout(new_caps)
        self.ensure_training_layout()
        rows_needed = int(self.n_rows[0]) + self._rows_made_at_most(n_new * len(self.templates))
        if rows_needed > self.W.shape[0]:
            cap = max(rows_needed, self.W.shape[0] + self.W.shape[0] // 2)
            for name in ("W", "U", "row_tpl", "updates"):
                grow_rows(self, name, cap)
        admm = self.admm
        if admm.pulling and admm.target.shape != self.W.shape:
            if admm.target.shape[1] != self.W.shape[1]:
                admm.target = np.zeros((0, self.W.shape[1]), dtype=np.float32)
            grow_rows(admm, "target", self.W.shape[0])
            grow_rows(admm, "stamp", self.W.shape[0])
        if adagrad and self.G.shape != self.W.shape:
            if self.G.shape[1] != self.W.shape[1]:
                self.G = np.zeros((0, self.W.shape[1]), dtype=np.float32)
            grow_rows(self, "G", self.W.shape[0])

    def _rows_made_at_most(self, n_updates: int) -> int:
        """The most rows n_updates feature updates can make: a feature gets
        its row at its min_updates-th update, so one waiting with c updates
        costs min_updates - c more, and a new one min_updates."""
        m = max(1, int(self.min_updates))
        if self.closed:
            return 0
        if m == 1:
            return n_updates
        cost = np.maximum(1, m - np.arange(self.pending.shape[0]))
        made, budget = 0, n_updates
        for c in range(1, m + 1):
            have = int(self.pending[1:][cost[1:] == c].sum()) if c < m else budget
            k = min(have, budget // c)
            made, budget = made + k, budget - k * c
        return made

    def ensure_training_layout(self) -> None:
        """Make the dense training layout from the compressed weights."""
        if self.W is not None:
            return
        n = int(self.n_rows[0])
        cap = max(16, n)
        _ = self.tab  # made again if only the keys of the rows were kept
        self._row_keys = None  # training changes the tables in place
        W = np.zeros((cap, max(1, self.n_labels)), dtype=np.float32)
        scatter_rows(*self.compact(), W)
        self.W = W
        self.U = np.zeros(W.shape, dtype=np.float32)
        self.steps[0] = 0.0
        grow_rows(self, "row_tpl", cap)
        # features read from a file passed any min-update threshold when saved
        self.updates = np.full(cap, np.iinfo(np.int32).max // 2, dtype=np.int32)

    def tables(self) -> Tuple[np.ndarray, ...]:
        """The feature tables as the training kernels take them."""
        if self.pending.shape[0] <= self.min_updates:
            grow_rows(self, "pending", int(self.min_updates) + 1)
        return (self.tab, self.tab_off, self.tab_count, self.row_tpl, self.n_rows, self.pending)

    def learner_state(self) -> Tuple[np.ndarray, ...]:
        """The arrays a training kernel updates (see prefix_train_step)."""
        return (self.W, self.U, self.G, self.updates, self.groups.scale, self.groups.norm2, self.admm.target,
                self.admm.stamp)

    def learner_params(self, adagrad: bool, lr: float) -> Tuple[Any, ...]:
        return (bool(adagrad), float(lr), int(self.min_updates), bool(self.closed), float(self.admm.pull))

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
        self.pending[:] = 0
        self.tab_count = counts
        self.n_rows[0] = n
        cap = max(16, n)
        self.row_tpl = np.zeros(cap, dtype=np.int32)
        self.row_tpl[:n] = tpl
        self.W = np.zeros((cap, max(1, self.n_labels)), dtype=np.float32)
        self.U = np.zeros(self.W.shape, dtype=np.float32)
        self.updates = np.zeros(cap, dtype=np.int32)
        self.steps[0] = 0.0
        self.closed = True
        self.changed()

    def keys_of_rows(self) -> np.ndarray:
        """The feature key of every row."""
        n = int(self.n_rows[0])
        out = np.zeros(n, dtype=np.uint64)
        keys, rows = self.tab[0::2], self.tab[1::2].view(np.int64)
        used = (keys != 0) & (rows >= 0)  # not the features still waiting for a row
        out[rows[used]] = keys[used]
        return out

    def keep_rows(self, keep: np.ndarray) -> int:
        """Delete the features whose `keep` is False (their memory is freed,
        and a later update may make them again). Returns how many went."""
        self.ensure_training_layout()
        n = int(self.n_rows[0])
        keep = np.asarray(keep, dtype=bool)[:n]
        if keep.all():
            return 0
        keys = self.keys_of_rows()[keep]
        tpl = self.row_tpl[:n][keep]
        m = int(keep.sum())
        self.tab = new_table(int(self.tab_off[-1]))
        fill_tables(tpl, keys, np.arange(m, dtype=np.int64), self.tab_off, self.tab)
        self.pending[:] = 0  # the features waiting for a row start over
        self.tab_count = np.bincount(tpl, minlength=len(self.templates)).astype(np.int64)
        cap = max(16, m)

        def shrink(arr):
            out = np.zeros((cap,) + arr.shape[1:], dtype=arr.dtype)
            out[:m] = arr[:n][keep]
            return out

        self.W, self.U, self.row_tpl, self.updates = (shrink(a) for a in (self.W, self.U, self.row_tpl, self.updates))
        if self.G.shape[0] >= n and self.G.shape[0] > 1:
            self.G = shrink(self.G)
        if self.admm.target.shape[0] >= n and self.admm.target.shape[0] > 1:
            self.admm.target, self.admm.stamp = shrink(self.admm.target), shrink(self.admm.stamp)
        if self.admm.fixed is not None:
            fixed = self.admm.fixed
            self.admm.fixed = fixed[:n][keep[: fixed.shape[0]]] if fixed.shape[0] == n else None
        self.n_rows[0] = m
        self.changed()
        return n - m

    def drop_templates(self, dead: np.ndarray) -> int:
        """Delete every feature of the templates marked in `dead` (a group
        the group lasso zeroed); they may grow back from later updates."""
        dead = np.asarray(dead, dtype=bool)
        n = int(self.n_rows[0])
        removed = self.keep_rows(~dead[self.row_tpl[:n]])
        self.groups.reset(dead)
        return removed

    def fold_scale(self) -> None:
        """Multiply the sparseptron's template scales into the weights."""
        if self.W is None or np.all(self.groups.scale == 1.0):
            return
        n = int(self.n_rows[0])
        factor = self.groups.scale[self.row_tpl[:n]].astype(np.float64)[:, None]
        self.W[:n] *= factor.astype(np.float32)
        self.U[:n] *= factor
        self.groups.norm2 *= self.groups.scale.astype(np.float64) ** 2
        self.groups.scale[:] = 1.0
        self.changed()

    def _relayout(self, caps: np.ndarray) -> None:
        """Give the tables these capacities (never smaller), in place: the
        flat array grows like the weight arrays (mapped.grow_rows) and the
        tables move within it, so the parser's 0.15 GB of tables at the end
        of a full EWT run is not held twice while they grow."""
        from .kernels.hashing import relayout_tables  # training only: loading needs no numba import (kernels/layout.py)

        old_off = self.tab_off
        old_caps = np.diff(old_off)
        if np.any(caps < old_caps):
            raise ValueError("tables only grow")
        grown = caps != old_caps
        scratch = np.zeros(2 * int(old_caps[grown].max()) if grown.any() else 0, dtype=np.uint64)
        new_off = np.zeros(len(caps) + 1, dtype=np.int64)
        new_off[1:] = np.cumsum(caps)
        grow_rows(self, "tab", 2 * int(new_off[-1]))
        relayout_tables(self.tab, old_off, new_off, scratch)
        self.tab_off = new_off

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

    def weights(self, stale_steps: int = 0) -> np.ndarray:
        """Averaged weights as the dense matrix prediction reads (cached;
        at least one row so kernels always get a 2-D array).

        With stale_steps > 0, during training, the averages may be up to
        that many training steps old: they are then kept as rows of the
        training layout's full height, so a row made since reads as zeros
        (an unseen feature) and any row the tables name is in range; a grown
        layout, new labels or any other change computes them again."""
        if stale_steps > 0 and self.W is not None:
            with self._lock:
                stale = self._stale
                if stale is None or stale[1].shape != self.W.shape:
                    self._stale = stale = None  # freed before its successor is made: one copy at a time
                    stale = self._stale = (self.version, self._fill_averages(np.zeros(self.W.shape, np.float32)))
                elif self.version - stale[0] > stale_steps:
                    # made again in place: rows are only appended between two such versions, so those past
                    # the old rows are still zeros (new pages for every copy cost more than the averaging)
                    stale = self._stale = (self.version, self._fill_averages(stale[1]))
                return stale[1]
        dense = self._dense
        if dense is None:
            with self._lock:
                dense = self._dense
                if dense is None:
                    self._stale = None  # training's evaluation: hold one copy of the averages, not two
                    dense = self.averaged()
                    if dense.shape[0] == 0:
                        dense = np.zeros((1, max(1, self.n_labels)), dtype=np.float32)
                    self._dense = dense
                    self._drop_row_keys()
        return dense

    def coded_weights(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """The dense rows prediction reads as one-byte codes (n_rows x
        n_labels, uint8) and the float32 values they stand for, book[0] = 0
        for the labels a row has no weight for; None unless the weights came
        from a grouped file (DC-ADMM, QT: at most 255 distinct nonzero
        values) and no training changed them. The values are the float
        rows' own, so every score is the same sum in the same order; the
        rows take a quarter of the memory (the shipped tagger's 92 MB of
        float rows: 23 MB). Every coded model reads codes, small ones too,
        so a pipeline of them compiles one version of the kernels, not a
        float and a coded one (docs/decisions/measurement-log.md). Cached."""
        if self.W is not None:  # training: its float rows are the weights
            return None
        codes = self._dense_codes
        if codes is None:
            with self._lock:
                codes = self._dense_codes
                if codes is None:
                    codes = self._dense_codes = self._make_dense_codes()
                    self._drop_row_keys()
                    release_free_heap()  # the load's temporaries are gone by now (mapped.py)
        return codes or None

    def _make_dense_codes(self) -> Tuple[np.ndarray, ...]:
        coded, compact = self._coded, self._compact
        if coded is None or compact is None:
            return ()
        book, code = coded
        ptr, lab = compact[0], compact[1].astype(np.int32, copy=False)
        nonzero = book != 0.0
        if int(nonzero.sum()) > 255 or code.shape[0] != lab.shape[0]:
            return ()
        # 0.0 first, then the nonzero values in their order: old code -> new code
        remap = np.zeros(book.shape[0], dtype=np.uint8)
        remap[nonzero] = np.arange(1, int(nonzero.sum()) + 1, dtype=np.uint8)
        new_book = np.concatenate([np.zeros(1, dtype=np.float32), book[nonzero].astype(np.float32)])
        out = np.zeros((max(1, int(self.n_rows[0])), max(1, self.n_labels)), dtype=np.uint8)
        scatter_rows(ptr, lab, remap[code], out)
        return out, new_book

    def float_average(self) -> np.ndarray:
        """The learner's averaged weights, whatever the model predicts with
        (a loaded model gets its training layout first, which then holds
        the float weights whatever `fixed` becomes)."""
        self.ensure_training_layout()
        fixed, self.admm.fixed = self.admm.fixed, None
        try:
            return self.averaged()
        finally:
            self.admm.fixed = fixed

    def averaged(self) -> np.ndarray:
        """The weights the model predicts with and saves (n_rows x
        n_labels): the averaged perceptron's, the current iterate while the
        sparseptron selects, or DC-ADMM's discrete u while that runs."""
        n = int(self.n_rows[0])
        if self.admm.fixed is None and self.W is None:
            out = np.zeros((n, max(1, self.n_labels)), dtype=np.float32)
            scatter_rows(*self.compact(), out)
            return out
        return self._fill_averages(np.empty((n, max(1, self.n_labels)), dtype=np.float32))

    def _fill_averages(self, out: np.ndarray) -> np.ndarray:
        """averaged() written into the first rows of `out`, a slice at a time
        (the averaged perceptron's in one kernel call)."""
        n = int(self.n_rows[0])
        if self._plain_average():
            from .kernels.rows import average_rows  # training only: loading needs no numba import

            average_rows(self.W[:n], self.U[:n], float(self.steps[0]), out[:n])
            if self.min_updates > 1:
                out[:n][self.updates[:n] < self.min_updates] = 0.0  # not yet counted, not saved
            return out
        for i, part in self._averaged_slices():
            out[i:i + part.shape[0]] = part
        return out

    def _plain_average(self) -> bool:
        """Whether averaged() is the averaged perceptron's W - U / steps (no
        DC-ADMM values fixed, no sparseptron scales, some steps taken)."""
        return self.admm.fixed is None and self.W is not None and not self.groups.selecting and self.steps[0] > 0

    def _averaged_slices(self) -> Iterator[Tuple[int, np.ndarray]]:
        """averaged() by slices of rows, (first row, weights): what needs
        them one at a time (compact) never holds all rows at once, nor a
        float64 temporary of them."""
        n = int(self.n_rows[0])
        fixed = self.admm.fixed
        if self._plain_average():
            from .kernels.rows import average_rows  # training only: loading needs no numba import
        for i in range(0, n, _SLICE):
            j = min(n, i + _SLICE)
            if fixed is not None:
                out = np.zeros((j - i, max(1, self.n_labels)), dtype=np.float32)
                m = min(j, fixed.shape[0])
                out[:max(0, m - i)] = fixed[i:m]
                yield i, out
                continue
            if self.groups.selecting:
                out = self.W[i:j] * self.groups.scale[self.row_tpl[i:j]][:, None]
            elif self._plain_average():
                out = np.empty((j - i, self.W.shape[1]), dtype=np.float32)
                average_rows(self.W[i:j], self.U[i:j], float(self.steps[0]), out)
            else:
                out = self.W[i:j].copy()
            if self.min_updates > 1:
                out[self.updates[i:j] < self.min_updates] = 0.0  # not yet counted, not saved
            yield i, out

    def compact(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Averaged weights in the compressed row layout that prediction
        reads, computed once per change (thread-safe)."""
        compact = self._compact
        if compact is None:
            with self._lock:
                compact = self._compact
                if compact is None:
                    if self.W is not None:
                        self._stale = None  # saving in training: hold the averages once, not twice
                    compact = compress_rows(lambda: (part for _, part in self._averaged_slices()))
                    self._compact = compact
        return self._widened(compact)

    def _widened(self, compact: Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]
                 ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The compressed rows as every user takes them (int32 labels,
        float32 values) from the form a loaded model keeps: labels in the
        narrowest unsigned type and, for grouped weights, no values beside
        their codes (load_features)."""
        ptr, lab, val = compact
        if val is None:
            book, code = self._coded
            val = book[code]
        return ptr, lab.astype(np.int32, copy=False), val

    def packed(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The prediction layout for rows with few nonzeros (the parser's):
        (tab, tab_off, lv, lc, book, dense). `tab` holds the features that have rows
        (in tables sized for them, at `tab_off`), each value a span
        start << 16 | count into the nonzero weights of all rows, so a
        feature costs one probe and one read. The weights are
        (label, value) pairs in `lv`; or, when they take at most 256 values
        and there are at most 256 labels (DC-ADMM), 2-byte entries
        label << 8 | code in `lc` with the values in `book`, and `lv` empty.
        Rows with at least HOT_NONZEROS weights are rows of the dense float32
        matrix `dense` instead (kernels.rows.HOT): the few features that fire
        most hold most nonzeros, and a dense add of them is a fraction of the
        instructions of the scattered one, with the same sums.
        Cached with the averages."""
        packed = self._packed
        if packed is None:
            with self._lock:
                packed = self._packed
                if packed is None:
                    packed = self._packed = self._make_packed()
                    self.forget_compact()
                    self._drop_tables()
                    release_free_heap()  # the load's and this layout's temporaries are gone by now (mapped.py)
        return packed

    def _make_packed(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        # in this order, the rows' int32 labels and float values (a loaded model's are made for this call) are
        # gone before the tables are made: the first sentence of the shipped pipeline peaked 20 MB lower
        ptr, lab, val = self.compact()
        self.forget_compact()  # in training, so that `del lab, val` below frees them (0.04 GB for the parser)
        hot, dense = hot_rows(ptr, lab, val, HOT_NONZEROS, max(1, self.n_labels), HOT_BYTES)
        book, codes = self._coded if self._coded is not None and self._coded[0].size <= 256 \
            else codec.codes_of(val, 256)
        if book is not None and self.n_labels <= 256 and val.size:
            lc = lab.astype(np.uint16)
            lc <<= 8
            lc |= codes.astype(np.uint16, copy=False)
            lv = np.zeros((0, 2), dtype=np.float32)
        else:
            lc, book = np.zeros(0, dtype=np.uint16), np.zeros(1, dtype=np.float32)
            lv = np.empty((lab.shape[0], 2), dtype=np.float32)
            lv[:, 0] = lab
            lv[:, 1] = val
        del lab, val, codes
        n = int(self.n_rows[0])
        counts = np.bincount(self.row_tpl[:n], minlength=len(self.templates))
        tab_off = np.zeros(len(self.templates) + 1, dtype=np.int64)
        tab_off[1:] = np.cumsum([capacity_for(int(c)) for c in counts])
        tab = new_table(int(tab_off[-1]))
        span_tables(self.tab, self.tab_off, ptr, hot, tab_off, tab)
        if narrow_fits(self.n_labels, int(ptr[-1])):
            wide, tab = tab, np.zeros(tab.shape[0], dtype=np.uint32)
            narrow_table(wide, tab)
            del wide
        return tab, tab_off, lv, lc, np.ascontiguousarray(book, dtype=np.float32), dense

    def forget_compact(self) -> None:
        """In training, drop the cached compressed rows once their user has
        what it needs from them (the packed layout, a saved file): they are
        made again from the training rows when needed, so evaluating and
        saving hold the weights once, not twice. A loaded model keeps them
        (they are its only copy)."""
        if self.W is not None:
            self._compact = None

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
        self.ensure_training_layout()
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
        per_row = sum(a[0:1].nbytes for a in (self.W, self.U, self.G, self.admm.target, self.admm.stamp)
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


def _empty_compact(n_rows: int):
    return (np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


def compress_rows(parts: Union[Sequence[np.ndarray], Callable[[], Iterable[np.ndarray]]]
                  ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense rows, given as consecutive slices (a sequence, or a function
    that makes them anew) -> (ptr, lab, val): each row's nonzero labels and
    values. Two passes, counting and then filling, so no list of pieces and
    their concatenation are ever held together (for a parser in training,
    each is over 100 MB); a slice at a time keeps np.nonzero's indices small."""
    make = parts if callable(parts) else (lambda: parts)
    counts = [np.count_nonzero(part, axis=1) for part in make()]
    ptr = np.zeros(sum(c.shape[0] for c in counts) + 1, dtype=np.int64)
    if counts:
        np.cumsum(np.concatenate(counts), out=ptr[1:])
    lab = np.empty(int(ptr[-1]), dtype=np.int32)
    val = np.empty(int(ptr[-1]), dtype=np.float32)
    at = 0
    for part in make():
        rows, labels = np.nonzero(part)
        lab[at:at + rows.shape[0]] = labels
        val[at:at + rows.shape[0]] = part[rows, labels]
        at += rows.shape[0]
    if at != lab.shape[0]:
        raise RuntimeError("compress_rows: the slices changed between passes")
    return ptr, lab, val
