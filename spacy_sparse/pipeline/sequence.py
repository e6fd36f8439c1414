"""What the left-to-right labellers (tagger, NER) share: running the
sequence kernels over a batch, in threads, and training on a batch.

A subclass supplies its label mask (`_allowed`), the gold label index per
token (`_gold`), labels fixed in advance (`_fixed`), and how predictions are
written onto docs (`set_annotations`).
"""
from typing import Iterable, List, Tuple

import numpy as np
from spacy.attrs import TAG
from spacy.tokens import Doc
from spacy.training import Example

from ..kernels.sequence import gold_keys, predict_sequence, train_sequence, word_rows
from ..model import SparseLinearModel
from ..templates import HISTORY_ATTRS
from .base import DocBatch, SparsePipe

NO_FIXED = np.zeros(0, dtype=np.int32)
NO_TAGS = np.zeros(0, dtype=np.uint64)


def input_tags(docs: List[Doc], model: SparseLinearModel) -> np.ndarray:
    """The tag_ hash of every token as the docs come in (what `ptag` atoms
    read), or an empty array when no template reads it."""
    if not np.any(model.atom_src == HISTORY_ATTRS["ptag"]):
        return NO_TAGS
    parts = [doc.to_array(TAG).astype(np.uint64) for doc in docs if len(doc)]
    return np.concatenate(parts) if parts else NO_TAGS


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
        margin, thr = self._stop_rule(len(model.seeds))
        W = model.weights()
        fixed = self._fixed(docs, batch)
        tags = input_tags(docs, model)
        column, tid, type_rows = word_rows(batch.lex_rows, batch.lex, model.seeds, model.atom_off, model.atom_src,
                                           model.tab, model.tab_off, self._word_cache_depth(len(model.seeds)))

        def label(seg_off: np.ndarray, seg_new_doc: np.ndarray) -> None:
            predict_sequence(
                batch.lex_rows, batch.lex, tags, seg_off, seg_new_doc, model.seeds, model.atom_off, model.atom_src,
                model.atom_pos, model.tab_off, model.tab, W, self._allowed, fixed, self._hist_of, column, tid,
                type_rows, margin, thr, pred, used,
            )

        self._over_segments(batch, label)
        self._record_usage(used[used > 0] if len(fixed) else used)
        return pred, batch.doc_off

    def _word_cache_depth(self, n_templates: int) -> int:
        """How many leading templates have their rows cached per word type
        (kernels.sequence.word_rows). A cached row costs one lookup per type
        and pays off only on the tokens that reach its template: all do
        without a margin; with one, cache twice the templates a token has
        needed so far (all on the first batch). Labels never depend on it."""
        used = self.templates_per_token
        if self.margin is None or used == 0:
            return n_templates
        return min(n_templates, int(np.ceil(2 * used)))

    def _train_batch(self, model: SparseLinearModel, examples: List[Example]) -> int:
        examples_docs = [eg.predicted for eg in examples]
        batch = DocBatch(examples_docs, self.lexicon)
        gold = self._gold(examples, batch.n_tokens)
        model.reserve(batch.n_tokens, adagrad=self.adagrad)
        pred = np.zeros(batch.n_tokens, dtype=np.int32)
        return train_sequence(
            batch.lex_rows, batch.lex, input_tags(examples_docs, model), batch.seg_off, batch.seg_new_doc, gold,
            model.seeds, model.atom_off, model.atom_src, model.atom_pos, model.tables(), model.learner_state(),
            model.learner_params(self.adagrad, self.cfg["learn_rate"]), model.steps,
            self._allowed, self._hist_of, self.cfg["train_margin"], self.objective, pred,
        )

    def gold_feature_keys(self, examples: List[Example]) -> Tuple[np.ndarray, np.ndarray]:
        """(keys, gold) for every token of the examples: the key of each
        template (n_tokens x n_templates, gold labels as history) and the
        gold label index (-1: none). Rare-feature pruning counts these; the
        template orderings regress on them."""
        model = self._require_model()
        all_keys, all_gold = [], []
        for i in range(0, len(examples), 256):
            part = examples[i:i + 256]
            docs = [eg.predicted for eg in part]
            batch = DocBatch(docs, self.lexicon)
            gold = self._gold(part, batch.n_tokens)
            keys = np.zeros((batch.n_tokens, len(model.templates)), dtype=np.uint64)
            gold_keys(batch.lex_rows, batch.lex, input_tags(docs, model), batch.seg_off, batch.seg_new_doc,
                      gold, model.seeds, model.atom_off, model.atom_src, model.atom_pos, self._hist_of, keys)
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
