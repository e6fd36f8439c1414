"""What the left-to-right labellers (tagger, NER) share: running the
sequence kernels over a batch, in threads, and training on a batch.

A subclass supplies its label mask (`_allowed`), the gold label index per
token (`_gold`), labels fixed in advance (`_fixed`), and how predictions are
written onto docs (`set_annotations`).
"""
from typing import Iterable, List

import numpy as np
from spacy.tokens import Doc
from spacy.training import Example

from ..kernels.sequence import predict_sequence, train_sequence
from ..model import SparseLinearModel
from .base import DocBatch, SparsePipe

NO_FIXED = np.zeros(0, dtype=np.int32)


class SequencePipe(SparsePipe):
    """Base of greedy left-to-right sequence labellers (not registered)."""

    _allowed: np.ndarray

    @property
    def _hist_of(self) -> np.ndarray:
        """Value a `hist` atom reads per label: the label itself (+1)."""
        return np.arange(1, self._allowed.shape[2] + 1, dtype=np.uint64)

    def _fixed(self, docs: List[Doc], batch: DocBatch) -> np.ndarray:
        """Label index per token given in advance (-1: predict it); an empty
        array when nothing is fixed."""
        return NO_FIXED

    def _gold(self, examples: List[Example], n_tokens: int) -> np.ndarray:
        raise NotImplementedError

    def predict(self, docs: Iterable[Doc]):
        docs = list(docs)
        model = self._require_model()
        batch = DocBatch(docs, self.lexicon)
        pred = np.zeros(batch.n_tokens, dtype=np.int32)
        used = np.zeros(batch.n_tokens, dtype=np.int32)
        margin = -1.0 if self.margin is None else self.margin
        W = model.weights()
        fixed = self._fixed(docs, batch)

        def label(seg_off: np.ndarray, seg_new_doc: np.ndarray) -> None:
            predict_sequence(
                batch.lex_rows, batch.lex, seg_off, seg_new_doc, model.seeds, model.atom_off, model.atom_src,
                model.atom_pos, model.tab_off, model.tab, W, self._allowed, fixed, self._hist_of, margin,
                pred, used,
            )

        self._over_segments(batch, label)
        self._record_usage(used[used > 0] if len(fixed) else used)
        return pred, batch.doc_off

    def _train_batch(self, model: SparseLinearModel, examples: List[Example]) -> int:
        batch = DocBatch([eg.predicted for eg in examples], self.lexicon)
        gold = self._gold(examples, batch.n_tokens)
        model.reserve(batch.n_tokens, adagrad=self.adagrad)
        pred = np.zeros(batch.n_tokens, dtype=np.int32)
        return train_sequence(
            batch.lex_rows, batch.lex, batch.seg_off, batch.seg_new_doc, gold, model.seeds, model.atom_off,
            model.atom_src, model.atom_pos, model.tab_off, model.tab, model.tab_count, model.row_tpl,
            model.n_rows, model.updates, model.min_updates,
            model.W, model.U, model.G, self.adagrad, self.cfg["learn_rate"], model.steps,
            self._allowed, self._hist_of, self.cfg["train_margin"], self.objective, pred,
        )
