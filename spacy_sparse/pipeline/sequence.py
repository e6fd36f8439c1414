"""What the left-to-right labellers (tagger, NER) share: running the
sequence kernels over a batch, in threads, and training on a batch.

A subclass supplies its label mask (`_allowed`), the gold label index per
token (`_gold`), labels fixed in advance (`_fixed`), and how predictions are
written onto docs (`set_annotations`).
"""
import threading
import weakref
from typing import List, Optional, Tuple

import numpy as np
from spacy.attrs import SPACY, TAG
from spacy.tokens import Doc
from spacy.training import Example

from ..runtime.compiled import predict_sequence, word_rows, word_sums
from ..kernels.layout import UNSET, word_columns, word_slots
from ..model import SparseLinearModel
from ..templates import HISTORY_ATTRS, compile_templates, parse_templates
from .base import SparsePipe
from .batching import DocBatch, DocColumns
from .views import GAP_KEY, visible_examples

NO_FIXED = np.zeros(0, dtype=np.int32)
NO_BIAS = np.zeros(0, dtype=np.float32)  # no label bias (predict_sequence)
ALWAYS = np.zeros((0, 3), dtype=np.int32)
NO_INPUTS = np.zeros((0, 2), dtype=np.uint64)
NO_SUMS = np.zeros((0, 1, 1), dtype=np.float32)
FLOAT_ROWS = np.zeros(1, dtype=np.float32)  # the book of float rows: none (scoring.add_dense)
SUMS_BYTES = 32 << 20  # summed vectors for the first types a cache meets (in a stream, the common ones)


# input_attrs per templates' atom sources (a model's atom_src array changes only with its templates)
_INPUT_ATTRS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def input_attrs(model: SparseLinearModel) -> Tuple[int, ...]:
    """The token attributes token_inputs needs: TAG if a template reads
    `ptag` atoms, SPACY if one reads `space` atoms (asked twice per batch,
    so remembered per model: a batch of one short doc is mostly such costs)."""
    src = model.atom_src
    known = _INPUT_ATTRS.get(model)
    if known is not None and known[0] is src:
        return known[1]
    attrs = tuple(attr for attr, atom in ((TAG, "ptag"), (SPACY, "space")) if np.any(src == HISTORY_ATTRS[atom]))
    _INPUT_ATTRS[model] = (src, attrs)
    return attrs


def token_inputs(docs: List[Doc], model: SparseLinearModel, columns: DocColumns) -> np.ndarray:
    """Per token, the tag_ hash as the docs come in (what `ptag` atoms read)
    and the whitespace that follows it (`space`: views.GAP_*, which is SPACY
    in a doc without whitespace tokens), or an empty array when no template
    reads either (a column no template reads is 0), from the docs'
    `columns`, which hold what input_attrs names."""
    attrs = input_attrs(model)
    if not attrs or not columns.table.shape[0]:
        return NO_INPUTS
    if len(attrs) == 2:  # both columns in one C-ordered gather (a short doc's labelling costs about a call)
        inputs = columns.table.take([columns.attrs.index(TAG), columns.attrs.index(SPACY)], axis=1)
    else:
        inputs = np.zeros((columns.table.shape[0], 2), dtype=np.uint64)
        inputs[:, 0 if attrs[0] == TAG else 1] = columns[attrs[0]]
    if SPACY in attrs:
        for i, doc in enumerate(docs):
            gaps = doc.user_data.get(GAP_KEY) if doc.user_data else None
            if gaps is not None:
                inputs[columns.doc_off[i]:columns.doc_off[i + 1], 1] = gaps
    return inputs


# what WordRowCache.for_batch gives: column, rows, slot, slot_pos, sums
WordArrays = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class WordRowCache:
    """The rows of a model's one-word templates per word type, kept from
    batch to batch (kernels.sequence.word_rows), so a type's keys are
    looked up once, not once per batch; with `summed`, also those rows
    summed per word offset (word_sums), which a prediction reads instead
    (for as many types as SUMS_BYTES holds). Indexed by lexicon row; refilled from scratch when the
    model changes (training, a load) or the lexicon numbers its rows afresh.
    Every lexicon row below `_rows_upto` (and below `_sums_upto` for the
    sums) is filled: a lexicon adds rows in order, so a batch whose types
    are all older costs no kernel call (a warm nlp(text) of a short
    text spent two calls per component on finding nothing to fill).
    Only the lock holder writes: a batch fills its new types before its
    kernels read them, and other threads read only rows they filled
    themselves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Optional[SparseLinearModel] = None
        self._stamp = (-1, -1)
        self.column = np.zeros(0, dtype=np.int32)
        self.any_words = False  # whether any template is a one-word one (column >= 0)
        self.rows = np.zeros((0, 1), dtype=np.int32)
        self.slot = np.zeros(0, dtype=np.int32)
        self.slot_pos = np.zeros(0, dtype=np.int64)
        self.sums = NO_SUMS
        self.filled = np.zeros(0, dtype=np.bool_)
        self._rows_upto = 0
        self._sums_upto = 0
        # (model, stamp, summed, types filled, the arrays): what a batch of filled types gets without the lock
        self._done: Optional[Tuple[SparseLinearModel, Tuple[int, int], bool, int, WordArrays]] = None

    def for_batch(self, model: SparseLinearModel, batch: DocBatch, W: np.ndarray, book: np.ndarray,
                  summed: bool) -> WordArrays:
        """(column, rows, slot, slot_pos, sums) with every word type of the batch
        filled in, for the lexicon numbering the batch was looked up in and
        the weights of the model's current version (W: float rows, or codes
        into `book`); sums empty unless `summed`."""
        n_types = batch.lex_top + 1  # a lexicon adds rows in order, and its value table has room past them
        stamp = (model.version, batch.lex_generation)
        done = self._done
        if done is not None and done[0] is model and done[1] == stamp and done[2] == summed and n_types <= done[3]:
            # every type of the batch filled already: the same arrays, in the same tuple (a kernel's argument
            # check passes a tuple it saw last at once)
            return done[4]
        with self._lock:
            if model is not self._model or stamp != self._stamp:
                self._model, self._stamp = model, stamp
                self.column = word_columns(model.seeds, model.atom_off, model.atom_src, model.atom_pos)
                self.any_words = bool(np.any(self.column >= 0))
                self.rows = np.full((0, max(1, int((self.column >= 0).sum()))), UNSET, dtype=np.int32)
                self.slot, self.slot_pos = word_slots(self.column, model.atom_off, model.atom_pos)
                self.sums, self.filled = NO_SUMS, np.zeros(0, dtype=np.bool_)
                self._rows_upto = self._sums_upto = 0
            if not self.any_words:
                return self.column, self.rows, self.slot, self.slot_pos, NO_SUMS
            if self.rows.shape[0] < n_types:
                grown = np.full((max(n_types, 2 * self.rows.shape[0]), self.rows.shape[1]), UNSET, dtype=np.int32)
                grown[: self.rows.shape[0]] = self.rows
                self.rows = grown
            if self._rows_upto < n_types:
                word_rows(np.arange(self._rows_upto, n_types), batch.lex, model.template_arrays, model.tab,
                          model.tab_off, self.column, self.rows)
                self._rows_upto = n_types
            if not summed:
                return self._keep(model, stamp, summed, (self.column, self.rows, self.slot, self.slot_pos, NO_SUMS))
            n = min(self.rows.shape[0], SUMS_BYTES // (4 * self.slot_pos.shape[0] * W.shape[1]))
            if self.sums.shape[0] < n:
                sums = np.zeros((n, self.slot_pos.shape[0], W.shape[1]), dtype=np.float32)
                sums[: self.sums.shape[0]] = self.sums
                filled = np.zeros(n, dtype=np.bool_)
                filled[: self.filled.shape[0]] = self.filled
                self.sums, self.filled = sums, filled
            upto = min(n_types, self.sums.shape[0])
            if self._sums_upto < upto:
                word_sums(np.arange(self._sums_upto, upto), self.column, self.slot, self.rows, W, book, self.sums,
                          self.filled)
                self._sums_upto = upto
            return self._keep(model, stamp, summed, (self.column, self.rows, self.slot, self.slot_pos, self.sums))

    def _keep(self, model: SparseLinearModel, stamp: Tuple[int, int], summed: bool, out: WordArrays) -> WordArrays:
        """Remember `out` for batches whose types are all filled (the lock holder calls this)."""
        filled = min(self._rows_upto, self._sums_upto) if summed else self._rows_upto
        self._done = (model, stamp, summed, filled, out)
        return out


class SequencePipe(SparsePipe):
    """Base of greedy left-to-right sequence labellers (not registered)."""

    _allowed: np.ndarray
    # label each sentence of a doc with set boundaries as its own segment
    by_sents = True
    # read one-word templates as summed vectors (WordRowCache); with a margin, first
    summed_words = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._word_rows = WordRowCache()

    def _arrange_templates(self, templates: List[str]) -> List[str]:
        """With summed words, the one-word templates first, each group in
        its order: a prediction with a margin reads them as sums before any
        other template and tests the margin there, so training's prefixes
        are then the ones the margin test sees (EWT dev, configs/tagger.cfg:
        docs/decisions/measurement-log.md)."""
        if not self.summed_words:
            return templates
        one_word = word_columns(*compile_templates(parse_templates(templates))) >= 0
        return [t for t, w in zip(templates, one_word) if w] + [t for t, w in zip(templates, one_word) if not w]

    # (the label mask it was made for, _hist_values) once made
    _hist_made: Optional[Tuple[np.ndarray, np.ndarray]] = None

    @property
    def _hist_of(self) -> np.ndarray:
        """_hist_values, made once per label mask: the kernels take it at
        every call, and a new array each time was checked anew."""
        made = self._hist_made
        if made is None or made[0] is not self._allowed:
            made = self._hist_made = (self._allowed, self._hist_values())
        return made[1]

    def _hist_values(self) -> np.ndarray:
        """Value a `hist` atom reads per label: the label itself (+1)."""
        return np.arange(1, self._allowed.shape[2] + 1, dtype=np.uint64)

    def _fixed(self, docs: List[Doc], batch: DocBatch) -> np.ndarray:
        """Label index per token given in advance (-1: predict it); an empty
        array when nothing is fixed."""
        return NO_FIXED

    def _gold(self, examples: List[Example], n_tokens: int) -> np.ndarray:
        raise NotImplementedError

    def _add_negatives(self, examples: List[Example], gold: np.ndarray) -> np.ndarray:
        """Write the task's negative labels into `gold` (-2 - y) and return
        the histories in which they hold (kernels.sequence.train_sequence's
        neg_when; no rows: always). The tagger's come with `_gold`."""
        return ALWAYS

    def _label_bias(self) -> np.ndarray:
        """A constant per label added to its score before any template, when
        predicting (empty: none; the segmenter's start_bias)."""
        return NO_BIAS

    def _reads(self, model: SparseLinearModel) -> Tuple[int, ...]:
        return input_attrs(model)

    def _predict(self, docs: List[Doc], model: SparseLinearModel, stale_steps: int = 0,
                 columns: Optional[DocColumns] = None):
        columns = DocColumns(docs, self._reads(model)) if columns is None else columns
        batch = DocBatch(docs, self.lexicon, self.by_sents, columns)
        pred = np.zeros(batch.n_tokens, dtype=np.int32)
        used = np.zeros(batch.n_tokens, dtype=np.int32)
        margin, thr = self._stop_rule(len(model.seeds))
        # a loaded DC-ADMM / QT model reads its rows as one-byte codes, the same values in a quarter of the bytes
        coded = model.coded_weights() if stale_steps == 0 else None
        W, book = coded if coded is not None else (model.weights(stale_steps=stale_steps), FLOAT_ROWS)
        fixed = self._fixed(docs, batch)
        inputs = token_inputs(docs, model, columns)
        summed = self.summed_words
        column, type_rows, slot, slot_pos, sums = self._word_rows.for_batch(model, batch, W, book, summed)

        def label(seg_off: np.ndarray, seg_new_doc: np.ndarray) -> None:
            predict_sequence(
                (batch.lex_rows, batch.lex, inputs), (seg_off, seg_new_doc), model.template_arrays,
                (model.tab_off, model.tab, W, book), (self._allowed, fixed, self._hist_of, self._label_bias()),
                (column, type_rows, slot, slot_pos, sums), (margin, thr), (pred, used),
            )

        self._over_segments(batch, label)
        self._record_usage(used, scored_only=len(fixed) > 0)
        return pred, batch.doc_off

    def _train_batch(self, model: SparseLinearModel, examples: List[Example]) -> int:
        examples_docs = [eg.predicted for eg in examples]
        columns = DocColumns(examples_docs, self._reads(model))  # one array call per doc for all the batch reads
        batch = DocBatch(examples_docs, self.lexicon, self.by_sents, columns)
        gold = self._gold(examples, batch.n_tokens)
        neg_when = self._add_negatives(examples, gold)
        model.reserve(batch.n_tokens, adagrad=self.adagrad)
        pred = np.zeros(batch.n_tokens, dtype=np.int32)
        lex_rows, lex = self._word_dropout(model, batch)
        from ..kernels.sequence import train_sequence  # training/saving only: loading needs no numba import (kernels/layout.py)

        return train_sequence(
            (lex_rows, lex, token_inputs(examples_docs, model, columns)), (batch.seg_off, batch.seg_new_doc),
            (gold, neg_when), model.template_arrays, self._learning(model), (self._allowed, self._hist_of),
            (self.cfg["train_margin"], self.objective), pred,
        )

    def gold_feature_keys(self, examples: List[Example]) -> Tuple[np.ndarray, np.ndarray]:
        """(keys, gold) for every token of the examples: the key of each
        template (n_tokens x n_templates, gold labels as history) and the
        gold label index (-1: none). Rare-feature pruning counts these; the
        template orderings regress on them."""
        model = self._require_model()
        from ..kernels.sequence import gold_keys  # training/saving only: loading needs no numba import (kernels/layout.py)

        examples = visible_examples(examples)
        all_keys, all_gold = [], []
        for i in range(0, len(examples), 256):
            part = examples[i:i + 256]
            docs = [eg.predicted for eg in part]
            columns = DocColumns(docs, self._reads(model))
            batch = DocBatch(docs, self.lexicon, self.by_sents, columns)
            gold = self._gold(part, batch.n_tokens)
            keys = np.zeros((batch.n_tokens, len(model.templates)), dtype=np.uint64)
            gold_keys((batch.lex_rows, batch.lex, token_inputs(docs, model, columns)), (batch.seg_off, batch.seg_new_doc),
                      gold, model.template_arrays, self._hist_of, keys)
            all_keys.append(keys)
            all_gold.append(gold)
        if not all_keys:
            return np.zeros((0, len(model.templates)), dtype=np.uint64), np.zeros(0, dtype=np.int32)
        return np.concatenate(all_keys), np.concatenate(all_gold)

    def _keep_frequent_features(self, examples: List[Example], min_count: int) -> None:
        model = self._require_model()
        keys, _ = self.gold_feature_keys(examples)
        frequent = []
        for t in range(len(model.templates)):
            values, n = np.unique(keys[:, t], return_counts=True)
            frequent.append(values[n >= min_count])
        model.preset_features(frequent)
