"""`sparse_senter`: sentence boundaries as a left-to-right labelling of
tokens, each "S" (starts a sentence) or "I" (does not), on the engine the
tagger and NER use.

The segmenter reads the whole doc as one segment (its templates look across
the boundaries it is deciding), and sentence starts already on a doc (set by
the user or an earlier component) are kept as fixed labels, as spaCy's own
`senter` keeps them. Components after it label each sentence on its own.
"""
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import SENT_START
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

from .batching import DocBatch, doc_spans
from ..checks import check_number
from .sequence import NO_BIAS, NO_FIXED, SequencePipe

SENT_START_ATTRS = (SENT_START,)  # what the segmenter writes (Doc.from_array)

# label indices, in the sorted order spaCy's senter uses too
LABELS = ("I", "S")
INSIDE, START = 0, 1
# the SENT_START value Doc.from_array takes per label index (-1 inside, 1 start)
START_VALUES = np.array([-1, 1], dtype=np.int64).view(np.uint64)


def check_start_bias(value: Any) -> float:
    return check_number(value, "start_bias", low=-1e6, high=1e6)


class SparseSenter(SequencePipe):
    """Sets token.is_sent_start greedily from left to right."""

    writes = "sents"

    by_sents = False
    # Two labels: a row costs as little to read as a summed vector, and the
    # other order of float additions broke near ties the other way
    # (dev sentence F 79.56 -> 79.37 for the shipped segmenter).
    summed_words = False

    def __init__(self, vocab: Vocab, name: str = "sparse_senter", *, start_bias: float = 0.0, **kwargs: Any):
        super().__init__(vocab, name, start_bias=check_start_bias(start_bias), **kwargs)
        self.cfg["labels"] = list(LABELS)

    @property
    def start_bias(self) -> float:
        """Added to the score of a sentence start before any template: above
        0 the segmenter starts sentences more readily (recall for precision).
        A decision threshold, applied when predicting, not in training."""
        return self.cfg.get("start_bias", 0.0)

    @start_bias.setter
    def start_bias(self, value: float) -> None:
        self.cfg["start_bias"] = check_start_bias(value)

    def _check_task_cfg(self, cfg: Dict[str, Any]) -> None:
        check_start_bias(cfg.get("start_bias", 0.0))

    # (start_bias, its label bias array) once made: a kernel argument at every call, made once per setting
    _bias_made: Optional[Tuple[float, np.ndarray]] = None

    def _label_bias(self) -> np.ndarray:
        bias = self.start_bias
        if not bias:
            return NO_BIAS
        made = self._bias_made
        if made is None or made[0] != bias:
            made = self._bias_made = (bias, np.array([0.0, bias], dtype=np.float32))
        return made[1]

    def add_label(self, label: str) -> int:
        """The labels are fixed ("I", "S"); adding one of them is a no-op."""
        if label in LABELS:
            return 0
        raise ValueError(f"{self.name!r} has the fixed labels {LABELS}; it cannot learn {label!r}")

    def _build_model(self, labels: Sequence[str], order: Optional[Any],
                     classes: Optional[Dict[int, int]] = None) -> None:
        if list(labels) != list(LABELS):
            raise ValueError(f"{self.name!r} takes the labels {list(LABELS)}, got {list(labels)[:5]}")
        super()._build_model(labels, order, classes)

    def _check_labels(self, labels: Sequence[str]) -> None:
        if tuple(labels) != LABELS:
            raise ValueError(f"a segmenter's labels must be {list(LABELS)}, not {list(labels)[:5]}")

    def _labels_changed(self) -> None:
        self._allowed = np.ones((2, len(LABELS) + 1, len(LABELS)), dtype=np.uint8)
        self._allowed[:, 0, INSIDE] = 0  # a doc's first token starts a sentence

    def _labels_from(self, examples: Iterable[Example]) -> List[str]:
        if any(eg.reference.has_annotation("SENT_START") for eg in examples):
            return list(LABELS)
        return []

    def _word_labels(self, examples: Iterable[Example]):
        for eg in examples:
            if eg.reference.has_annotation("SENT_START"):
                for token in eg.reference:
                    yield token.text, LABELS[bool(token.is_sent_start)]

    # ---- inference -----------------------------------------------------------
    def _fixed(self, docs: List[Doc], batch: DocBatch) -> np.ndarray:
        """Sentence starts set before the segmenter ran (1: start, -1: not)
        stay as they are; only unset tokens are predicted."""
        cols = batch.columns
        preset = cols.sents_set()
        if not (preset[0] if preset.shape[0] == 1 else preset.any()):
            return NO_FIXED
        values = np.where(np.repeat(preset, cols.lengths), cols.sent_starts(), 0)
        fixed = np.full(batch.n_tokens, -1, dtype=np.int32)
        fixed[values == 1] = START
        fixed[values == -1] = INSIDE
        return fixed

    def _set_annotations(self, docs: List[Doc], predictions) -> None:
        pred, doc_off = predictions
        values = START_VALUES[pred].reshape(-1, 1)
        for doc, start, end in doc_spans(docs, doc_off):
            doc.from_array(SENT_START_ATTRS, values[start:end])

    # ---- training --------------------------------------------------------------
    def _gold(self, examples: List[Example], n_tokens: int) -> np.ndarray:
        """START/INSIDE per predicted token (-1: the reference has no
        sentence boundaries)."""
        parts = [self._gold_memo.get(eg, _aligned_starts) for eg in examples]
        return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)).reshape(n_tokens)


def _aligned_starts(eg: Example) -> np.ndarray:
    """1 / 0 per predicted token as the reference starts a sentence there or
    not; -1 where it says nothing."""
    return np.array([-1 if s is None else int(s) for s in eg.get_aligned_sent_starts()], dtype=np.int32)
