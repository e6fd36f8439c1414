"""The prediction layouts of a SparseLinearModel, each made from its averaged weights when first asked for
and cached until the weights change (SparseLinearModel.changed drops them):

- `weights()`: every row dense, float32 (taggers; prediction during training);
- `coded_weights()`: dense one-byte codes into a codebook, for a model whose weights take at most 256 values;
- `compact()`: the rows compressed to their nonzero (label, value) entries, what the file stores;
- `packed()`: the parser's layout, spans of (label, value) entries per feature in its table, with the
  fullest rows dense.

A mixin of SparseLinearModel: it reads the model's tables, rows and learner arrays.
"""
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import codec
from .runtime.compiled import hot_rows, narrow_table, scatter_rows, span_tables
from .kernels.layout import capacity_for, narrow_fits, new_table
from .runtime.mapped import release_free_heap

# rows per slice where whole-table temporaries would cost too much memory: a
# parser slice's float64 temporaries (144 columns) stay under 10 MB each
_SLICE = 1 << 13
# packed(): rows with at least this many nonzero weights are read as dense rows, the fullest first, in at
# most HOT_BYTES (chosen on EWT dev, parser alone: docs/decisions/measurement-log.md)
HOT_NONZEROS = 24
HOT_BYTES = 16 << 20


class Layouts:
    """The cached prediction layouts of SparseLinearModel."""

    def _made_once(self, name: str, make: Callable[[], Any], done: Optional[Callable[[], None]] = None) -> Any:
        """The layout cached in attribute `name`, made by make() under the
        model's lock if it is not there yet; done() runs once it is set.
        Checked again under the lock: threads asking at once make it once."""
        value = getattr(self, name)
        if value is None:
            with self._lock:
                value = getattr(self, name)
                if value is None:
                    value = make()
                    setattr(self, name, value)
                    if done is not None:
                        done()
        return value

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
        def make() -> np.ndarray:
            self._stale = None  # training's evaluation: hold one copy of the averages, not two
            dense = self.averaged()
            return dense if dense.shape[0] else np.zeros((1, max(1, self.n_labels)), dtype=np.float32)

        return self._made_once("_dense", make, self._drop_row_keys)

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
        def done() -> None:
            self._drop_row_keys()
            release_free_heap()  # the load's temporaries are gone by now (mapped.py)

        return self._made_once("_dense_codes", self._make_dense_codes, done) or None

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
        def make() -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
            if self.W is not None:
                self._stale = None  # saving in training: hold the averages once, not twice
            return compress_rows(lambda: (part for _, part in self._averaged_slices()))

        return self._widened(self._made_once("_compact", make))

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
        def done() -> None:
            self.forget_compact()
            self._drop_tables()
            release_free_heap()  # the load's and this layout's temporaries are gone by now (mapped.py)

        return self._made_once("_packed", self._make_packed, done)

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


def empty_compact(n_rows: int):
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
