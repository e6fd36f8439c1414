"""`sparse_tagger`: a greedy left-to-right tagger over feature templates with
dynamic feature selection (Strubell et al. 2015)."""
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
from spacy.attrs import LEMMA, MORPH, POS, TAG
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.scorer import Scorer
from spacy.strings import get_string_id
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab

from ..runtime.arrays import find_sorted
from .batching import doc_spans
from .sequence import SequencePipe

ANNOTATE = {"tag": TAG, "pos": POS, "morph": MORPH, "lemma": LEMMA}
NEG_PREFIX = "!"  # a gold tag "!NN": anything but NN (spaCy's tagger: neg_prefix)

def tagger_score(examples: Iterable[Example], *, annotate: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """Token accuracy of the attribute the tagger writes (tag_acc or pos_acc)."""
    return Scorer.score_token_attr(examples, annotate)


@registry.scorers("spacy_sparse.tagger_scorer.v1")
def make_tagger_scorer() -> Callable:
    return tagger_score


class SparseTagger(SequencePipe):
    """Assigns token.tag_ (or token.pos_) greedily from left to right."""

    def __init__(self, vocab: Vocab, name: str = "sparse_tagger", *, annotate: str = "tag", **kwargs: Any):
        self._check_task_cfg({"annotate": annotate})
        super().__init__(vocab, name, annotate=annotate, **kwargs)
        self._label_values = np.zeros(0, dtype=np.uint64)

    def _check_task_cfg(self, cfg: Dict[str, Any]) -> None:
        annotate = cfg.get("annotate", "tag")
        if not isinstance(annotate, str) or annotate not in ("tag", "pos"):
            raise ValueError(f"annotate must be 'tag' or 'pos', got {annotate!r}")

    @property
    def annotate(self) -> str:
        return self.cfg["annotate"]

    @property
    def writes(self) -> str:
        return self.annotate

    def _labels_changed(self) -> None:
        labels = self.labels
        self._label_values = self._values_of(labels)
        self._allowed = np.ones((1, 1, max(1, len(labels))), dtype=np.uint8)  # any tag after any tag
        # A gold value is a label (index y) or, with the tags, a negative tag
        # "!label" (-2 - y: "anything but y", as spaCy's tagger reads them).
        values, index = [self._label_values], [np.arange(len(labels), dtype=np.int32)]
        if self.annotate == "tag":
            values.append(np.array([get_string_id(NEG_PREFIX + lab) for lab in labels], dtype=np.uint64))
            index.append(-2 - index[0])
        values, index = np.concatenate(values), np.concatenate(index)
        order = np.argsort(values, kind="stable")
        self._sorted_values = values[order]
        self._sorted_index = index[order]

    def _values_of(self, labels: Sequence[str]) -> np.ndarray:
        """The value each label has in the docs' array of the annotated attribute (what _gold compares)."""
        if self.annotate == "pos":
            bad = [lab for lab in labels if lab not in UPOS_IDS or lab == ""]
            if bad:
                raise ValueError(
                    f"annotate='pos' takes Universal POS tags only; not UPOS: {bad[:5]}. "
                    "Use annotate='tag' for fine-grained tag sets."
                )
            return np.array([UPOS_IDS[lab] for lab in labels], dtype=np.uint64)
        return np.array([self.vocab.strings.add(lab) for lab in labels], dtype=np.uint64)

    def _labels_from(self, examples: Iterable[Example]) -> List[str]:
        seen = set()
        for eg in examples:
            for token in eg.reference:
                value = getattr(token, self.annotate + "_")
                if value and not value.startswith(NEG_PREFIX):
                    seen.add(value)
        return sorted(seen)

    def _word_labels(self, examples: Iterable[Example]):
        for eg in examples:
            for token in eg.reference:
                value = getattr(token, self.annotate + "_")
                yield token.text, "" if value.startswith(NEG_PREFIX) else value

    # ---- inference -----------------------------------------------------------
    def _set_annotations(self, docs: List[Doc], predictions) -> None:
        pred, doc_off = predictions
        attr = ANNOTATE[self.annotate]
        values = self._label_values[pred].reshape(-1, 1)
        for doc in docs:
            if doc.vocab is not self.vocab:
                self._teach(doc.vocab)
        attrs = [attr]
        for doc, start, end in doc_spans(docs, doc_off):
            doc.from_array(attrs, values[start:end])

    def _teach(self, vocab: Vocab) -> None:
        """Make another vocab know what the labels write (so a doc of its own reads tag_)."""
        if self.annotate == "tag":
            for label in self.labels:
                vocab.strings.add(label)

    def set_annotations(self, docs: Iterable[Doc], predictions) -> None:
        """Write the labels; a component whose cfg says overwrite = false leaves a value set before."""
        docs = list(docs)
        kept = self._values_before(docs)
        super().set_annotations(docs, predictions)
        self._restore(docs, kept)

    def _write_one(self, docs: List[Doc], predictions) -> None:
        kept = self._values_before(docs)  # (predicting wrote nothing: the values set before are still there)
        self._set_annotations(docs, predictions)
        self._restore(docs, kept)

    def _values_before(self, docs: List[Doc]) -> Optional[List[Optional[np.ndarray]]]:
        """With overwrite = false, the values of the annotated attribute the docs have (None: a doc has none)."""
        if self.cfg.get("overwrite", True):
            return None
        attr = ANNOTATE[self.annotate]
        return [doc.to_array(attr) if doc.has_annotation(self.annotate.upper()) else None for doc in docs]

    def _restore(self, docs: List[Doc], kept: Optional[List[Optional[np.ndarray]]]) -> None:
        """Put back the values set before the labels were written (_values_before)."""
        attr = ANNOTATE[self.annotate]
        for doc, before in zip(docs, kept or ()):
            if before is not None:
                doc.from_array([attr], np.where(before != 0, before, doc.to_array(attr)).reshape(-1, 1))

    # ---- training --------------------------------------------------------------
    def _gold(self, examples: List[Example], n_tokens: int) -> np.ndarray:
        """Gold label index per predicted token; -1 where missing, unknown
        or not aligned one-to-one; -2 - y for a negative tag "!y"."""
        parts = [self._gold_memo.get(eg, self._gold_values) for eg in examples]
        values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        if not len(self._sorted_values):
            return np.full(n_tokens, -1, dtype=np.int32)
        pos, found = find_sorted(self._sorted_values, values)
        found &= values != 0
        return np.where(found, self._sorted_index[pos], -1).astype(np.int32)

    def _gold_values(self, eg: Example) -> np.ndarray:
        """The reference's tag (or POS) value per predicted token, 0 where
        none is aligned one-to-one."""
        n = len(eg.predicted)
        align = eg.alignment.x2y
        if len(eg.reference) == n and np.array_equal(align.lengths, np.ones(n, dtype=align.lengths.dtype)):
            values = eg.reference.to_array(ANNOTATE[self.annotate]).astype(np.uint64)
            return values[align.data] if n else values
        strings = eg.get_aligned(self.annotate.upper(), as_string=True)
        return np.array([self._string_value(s) for s in strings], dtype=np.uint64)

    def _string_value(self, label: Optional[str]) -> int:
        if not label:
            return 0
        if self.annotate == "pos":
            return UPOS_IDS.get(label, 0)
        return self.vocab.strings[label] if label in self.vocab.strings else 0
