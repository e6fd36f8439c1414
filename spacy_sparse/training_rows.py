"""What training changes in a SparseLinearModel: room for new features before a kernel runs, the learner's
arrays as the training kernels take them, the features given in advance or kept and dropped by the sparsity
methods, and the end of averaging.

A mixin of SparseLinearModel: it reads and replaces the model's tables and rows, then calls its `changed`.
"""
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import codec
from .runtime.compiled import fill_tables, scatter_rows
from .kernels.layout import capacity_for, new_table
from .runtime.mapped import grow_rows

# Training fills its feature tables up to this load (prediction's own tables, made at load or at an
# evaluation, stay at one half): the parser's 0.15 GB of training tables at the end of a full EWT run are
# mostly features still counting toward min-update, and a fuller table changes no row, only probe lengths.
TRAINING_LOAD = 0.75


class Training:
    """Training's side of SparseLinearModel."""

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

    def preset_features(self, keys_per_template: Sequence[np.ndarray], key_mix: Optional[str] = None) -> None:
        """Make exactly these features (zero weights) and close the model
        to any others: training only learns their weights. `key_mix`: how
        the keys were made (SparseLinearModel.key_mix), when another model
        made them."""
        if key_mix is not None:
            self._use_key_mix(key_mix)  # every feature is replaced below
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

    def feature_keys(self, templates: Sequence[str]) -> List[np.ndarray]:
        """The feature keys each of `templates` holds now, sorted; none for
        a template the model does not have (a saved model drops templates
        left without features)."""
        n = int(self.n_rows[0])
        keys = self.keys_of_rows()
        tpl = self.row_tpl[:n]
        index = {name: i for i, name in enumerate(self.template_names)}
        return [np.sort(keys[tpl == index[name]]) if name in index else np.zeros(0, dtype=np.uint64)
                for name in templates]

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

    def training_bytes(self) -> int:
        """Memory the learner's per-feature arrays use for the features made
        so far (hash tables included; spare capacity not counted)."""
        n = int(self.n_rows[0])
        per_row = sum(a[0:1].nbytes for a in (self.W, self.U, self.G, self.admm.target, self.admm.stamp)
                      if a is not None and a.shape[0] >= n and a.shape[0] > 1)
        return int(self.tab.nbytes + n * (per_row + self.updates.itemsize + self.row_tpl.itemsize))
