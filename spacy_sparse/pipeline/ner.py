"""`sparse_ner`: a greedy left-to-right BILUO entity recognizer over feature
templates, with dynamic feature selection (Strubell et al. 2015, §6.3).

The labels the model predicts are BILUO moves (O, B-T, I-T, L-T, U-T for
each entity type T); a validity mask lets only well-formed sequences
through, so the output is always a valid set of spans. Entities already on
a doc (from an entity_ruler, say) are kept: their tokens are fixed labels,
and predictions fill in around them.
"""
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from spacy.attrs import ENT_IOB, ENT_TYPE
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab

from ..model import SparseLinearModel
from .batching import DocBatch
from .sequence import ALWAYS, NO_FIXED, SequencePipe

PREFIXES = ("B", "I", "L", "U")
ENT_ATTRS = [ENT_IOB, ENT_TYPE]


def ner_score(examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
    """Entity precision, recall and F1, overall and per type."""
    return get_ner_prf(examples)


@registry.scorers("spacy_sparse.ner_scorer.v1")
def make_ner_scorer() -> Callable:
    return ner_score


def _entity_types(examples: Iterable[Example]) -> Set[str]:
    """The entity types of the examples' references. spaCy's old "!TYPE"
    notation for negative samples is refused, as spaCy's NER refuses it."""
    types = {ent.label_ for eg in examples for ent in eg.reference.ents}
    negative = sorted(t for t in types if t.startswith("!"))
    if negative:
        raise ValueError(f"The entity notation {negative[0]!r} (a negative sample) is not supported: put the spans "
                         "a type must not cover in doc.spans under the component's incorrect_spans_key instead")
    return types


# The move mask (biluo_mask) grows with the square of the moves: 1,000 types
# make it 32 MB, which bounds what a model file or a label set can cost.
MAX_ENTITY_TYPES = 1_000


def _check_type_count(n_types: int) -> None:
    if n_types > MAX_ENTITY_TYPES:
        raise ValueError(f"An entity recognizer holds at most {MAX_ENTITY_TYPES:,} entity types, got {n_types:,}")


def biluo_moves(types: Sequence[str]) -> List[str]:
    """O, then B-T, I-T, L-T, U-T for each type in order."""
    return ["O"] + [f"{p}-{t}" for t in types for p in PREFIXES]


def biluo_mask(n_types: int) -> np.ndarray:
    """allowed[closing, prev + 1, move] for the moves of biluo_moves().

    Outside an entity (start, O, L-*, U-*) come O, B-* and U-*; inside one
    (B-T, I-T) come I-T and L-T. A closing token (the last of a segment, or
    one before a fixed label) may not open or continue an entity.
    """
    n = 1 + 4 * n_types
    allowed = np.zeros((2, n + 1, n), dtype=np.uint8)
    outside_rows = [0, 1] + [1 + 1 + 4 * k + 2 for k in range(n_types)] + [1 + 1 + 4 * k + 3 for k in range(n_types)]
    for row in outside_rows:
        allowed[0, row, 0] = 1
        allowed[1, row, 0] = 1
        for k in range(n_types):
            allowed[0, row, 1 + 4 * k] = 1  # B
            allowed[0, row, 1 + 4 * k + 3] = 1  # U
            allowed[1, row, 1 + 4 * k + 3] = 1  # U
    for k in range(n_types):
        for inside in (1 + 4 * k, 1 + 4 * k + 1):  # after B-T or I-T
            row = inside + 1
            allowed[0, row, 1 + 4 * k + 1] = 1  # I-T
            allowed[0, row, 1 + 4 * k + 2] = 1  # L-T
            allowed[1, row, 1 + 4 * k + 2] = 1  # L-T
    return allowed


def moves_to_spans(moves: np.ndarray, types: Sequence[str]) -> List[Tuple[int, int, str]]:
    """(start, end, type) of the entities in a valid BILUO move sequence."""
    kind = np.where(moves > 0, (moves - 1) % 4, -1)
    starts = np.flatnonzero((kind == 0) | (kind == 3))
    ends = np.flatnonzero((kind == 2) | (kind == 3)) + 1
    return [(int(s), int(e), types[(int(moves[s]) - 1) // 4]) for s, e in zip(starts, ends)]


class SparseNER(SequencePipe):
    """Sets doc.ents greedily from left to right."""

    writes = "ents"

    def __init__(self, vocab: Vocab, name: str = "sparse_ner", *, incorrect_spans_key: Optional[str] = None,
                 **kwargs: Any):
        self._check_task_cfg({"incorrect_spans_key": incorrect_spans_key})
        super().__init__(vocab, name, incorrect_spans_key=incorrect_spans_key, **kwargs)
        self._types: List[str] = []
        self._move_index: Dict[str, int] = {}
        self._move_iob_type = np.array([(2, 0)], dtype=np.uint64)

    def _check_task_cfg(self, cfg: Dict[str, Any]) -> None:
        key = cfg.get("incorrect_spans_key")
        if key is not None and not (isinstance(key, str) and key):
            raise ValueError(f"incorrect_spans_key must be a span group name or null, got {key!r}")

    @property
    def labels(self) -> Tuple[str, ...]:
        """The entity types (the model's labels are their BILUO moves)."""
        if self.sparse is not None:
            return tuple(self._types)
        return tuple(self.cfg["labels"])

    def _build_model(self, labels: Sequence[str], order: Optional[Any],
                     classes: Optional[Dict[int, int]] = None) -> None:
        types = sorted(set(labels))
        bad = [t for t in types if not t or t[:2] in {f"{p}-" for p in PREFIXES}]
        if bad:
            raise ValueError(f"Entity types must be plain labels like 'PER', got {bad[:5]}")
        _check_type_count(len(types))
        super()._build_model(biluo_moves(types), order, classes)
        self.cfg["labels"] = list(types)

    def _build_labels(self) -> List[str]:
        return list(self._types)

    def _labels_changed(self) -> None:
        moves = list(self.sparse.labels) if self.sparse is not None else biluo_moves(self.cfg["labels"])
        self._types = [m[2:] for m in moves[1::4]]
        self._move_index = {m: i for i, m in enumerate(moves)}
        self._allowed = biluo_mask(len(self._types))
        for t in self._types:
            self.vocab.strings.add(t)
        # O, then B, I, L, U of each type: B and U open an entity (3), I and L continue it (1)
        self._move_iob_type = np.array([(2, 0)] + [(iob, self.vocab.strings[t]) for t in self._types
                                                   for iob in (3, 1, 1, 3)], dtype=np.uint64)

    def _check_labels(self, labels: Sequence[str]) -> None:
        types = [m[2:] for m in labels[1::4]]
        _check_type_count(len(types))
        if list(labels) != biluo_moves(types):
            raise ValueError("an entity recognizer's labels must be O, then B-, I-, L-, U- of each type")

    def _set_model(self, model: SparseLinearModel, where: str) -> None:
        super()._set_model(model, where)
        self.cfg["labels"] = list(self._types)

    def _labels_from(self, examples: Iterable[Example]) -> List[str]:
        return sorted(_entity_types(examples))

    def _outputs_of(self, label: str) -> List[str]:
        if label[:2] in {f"{p}-" for p in PREFIXES}:
            raise ValueError(f"Entity types must be plain labels like 'PER', got {label!r}")
        _check_type_count(len(self._types) + 1)
        return [f"{p}-{label}" for p in PREFIXES]

    def _labels_in(self, examples: List[Example]) -> Iterable[str]:
        return sorted(_entity_types(examples) - set(self._types))

    def _word_labels(self, examples: Iterable[Example]):
        for eg in examples:
            for token, move in zip(eg.reference, _biluo_of(eg.reference)):
                yield token.text, move

    def _hist_values(self) -> np.ndarray:
        """A `hist` atom reads the entity type of the last move (1: outside)."""
        n = self._allowed.shape[2]
        return np.array([1] + [2 + (m - 1) // 4 for m in range(1, n)], dtype=np.uint64)

    # ---- inference -----------------------------------------------------------
    def _fixed(self, docs: List[Doc], batch: DocBatch) -> np.ndarray:
        if not any(doc.has_annotation("ENT_IOB") for doc in docs):  # no entities, none blocked: a C loop each
            return NO_FIXED
        blocked = [_blocked(doc) for doc in docs]
        if not any(doc.ents for doc in docs) and not any(b.any() for b in blocked):
            return NO_FIXED
        fixed = np.full(batch.n_tokens, -1, dtype=np.int32)
        for i, doc in enumerate(docs):
            base = batch.doc_off[i]
            # tokens blocked with doc.set_ents(blocked=...) are in no entity
            fixed[base + np.flatnonzero(blocked[i])] = 0
            for ent in doc.ents:
                label = ent.label_
                if label not in self._types:
                    # an entity type the model does not know: keep it, as outside for the model
                    fixed[base + ent.start: base + ent.end] = 0
                    continue
                k = 1 + 4 * self._types.index(label)
                if len(ent) == 1:
                    fixed[base + ent.start] = k + 3
                else:
                    fixed[base + ent.start] = k
                    fixed[base + ent.start + 1: base + ent.end - 1] = k + 1
                    fixed[base + ent.end - 1] = k + 2
        return fixed

    def _set_annotations(self, docs: List[Doc], predictions) -> None:
        pred, doc_off = predictions
        # per move: the token's ENT_IOB (O 2, B 3, I 1) and ENT_TYPE, for docs without entity marks yet
        iob_type = self._move_iob_type[pred]
        for i, doc in enumerate(docs):
            start, end = doc_off[i], doc_off[i + 1]
            if not doc.has_annotation("ENT_IOB"):  # what set_ents gives them, in one array write
                if end > start:
                    doc.from_array(ENT_ATTRS, iob_type[start:end])
                continue
            keep = {(e.start, e.end): e for e in doc.ents}
            spans = []
            for s, e, label in moves_to_spans(pred[start:end], self._types):
                spans.append(keep.get((s, e)) or Span(doc, s, e, label=label))
            # presets of types the model does not know were fixed as outside
            known = {(sp.start, sp.end) for sp in spans}
            spans.extend(e for e in doc.ents if (e.start, e.end) not in known)
            blocked = [Span(doc, int(k), int(k) + 1) for k in np.flatnonzero(_blocked(doc))]
            doc.set_ents(sorted(spans, key=lambda sp: sp.start), blocked=blocked, default="outside")

    # ---- training --------------------------------------------------------------
    def _gold(self, examples: List[Example], n_tokens: int) -> np.ndarray:
        """BILUO move index per predicted token; -1 where missing or unknown."""
        index = self._move_index
        out = []
        for eg in examples:
            out.extend(index.get(m, -1) if m else -1 for m in eg.get_aligned_ner())
        return np.array(out, dtype=np.int32).reshape(n_tokens)

    def _add_negatives(self, examples: List[Example], gold: np.ndarray) -> np.ndarray:
        """Spans of the reference's `incorrect_spans_key` group are not
        entities of their label (spaCy's NER): at a token without gold
        annotation, a one-token span forbids U-T; a longer span [s, e)
        forbids L-T at e - 1 when B-T at s opened the entity (so [s, e) is
        exactly what the move would close). One negative per token: the
        first span that claims it."""
        key = self.cfg.get("incorrect_spans_key")
        if not key:
            return ALWAYS
        when = np.full((gold.shape[0], 3), -1, dtype=np.int32)
        base = 0
        for eg in examples:
            spans = eg.reference.spans.get(key)
            if spans:
                for span in eg.get_aligned_spans_y2x(spans, allow_overlap=True):
                    if span.label_ not in self._types:
                        continue
                    k = 1 + 4 * self._types.index(span.label_)
                    last = base + span.end - 1
                    if gold[last] != -1:  # annotated (or claimed by another span): that decides
                        continue
                    if len(span) == 1:
                        gold[last] = -2 - (k + 3)
                    else:
                        gold[last] = -2 - (k + 2)
                        when[last] = (base + span.start, k, k + 1)
            base += len(eg.predicted)
        return when


def _blocked(doc: Doc) -> np.ndarray:
    """Tokens blocked from entities (spaCy marks them as an entity start of no type)."""
    if not len(doc) or not doc.has_annotation("ENT_IOB"):  # a C loop: docs without entity marks cost no array
        return np.zeros(len(doc), dtype=bool)
    iob_type = doc.to_array([ENT_IOB, ENT_TYPE]).reshape(-1, 2)
    return (iob_type[:, 0] == 3) & (iob_type[:, 1] == 0)


def _biluo_of(doc: Doc) -> List[str]:
    from spacy.training.iob_utils import doc_to_biluo_tags

    return doc_to_biluo_tags(doc, missing="")
