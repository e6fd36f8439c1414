"""Labels fixed in advance for the (word, tag) pairs the training data labels one way only.

Most running words of English are frequent words whose lemma and features follow from the word and its tag
("the"/DT, "was"/VBD). The lemmatizer and the morphologizer count, at `initialize`, each (word, tag) pair of
the training data; a pair seen at least `MIN_KNOWN` times that always took one label is *known*, and a token
that comes with a known pair gets that label without being scored (the sequence kernel's `fixed` labels), so
the kernels score only the words the table cannot settle. The table is two sorted arrays, kept in the
component's cfg so that it travels with `to_disk`, `to_bytes` and pickling.
"""
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
from spacy.attrs import ORTH, TAG
from spacy.strings import get_string_id
from spacy.tokens import Doc
from spacy.training import Example

from ..checks import check_number
from ..codes import KNOWN_PAIR_MUL
from ..runtime.compiled import known_labels
from .batching import DocBatch

DEFAULT_MIN_LABEL_COUNT = 5  # training tokens a label needs (rarer edit rules and feature sets are not labels)
MIN_KNOWN = 5  # training tokens a (word, tag) pair needs before its label is fixed
MAX_KNOWN = 1_000_000  # a loaded table holds no more pairs than this
PAIR_MUL = np.uint64(KNOWN_PAIR_MUL)
NO_FIXED = np.zeros(0, dtype=np.int32)


def pair_keys(orth: np.ndarray, tag: np.ndarray) -> np.ndarray:
    """One uint64 key per (ORTH, TAG) hash pair (wrapping arithmetic)."""
    return orth.astype(np.uint64) * PAIR_MUL + tag.astype(np.uint64)


def once(examples: Iterable[Example]) -> Iterable[Example]:
    """The examples, each reference doc once (a reader may yield two views of a doc: tokens = "both")."""
    seen = set()
    for eg in examples:
        if id(eg.reference) not in seen:
            seen.add(id(eg.reference))
            yield eg


def check_known(known: Any) -> None:
    """ValueError unless `known` is a table as KnownWords saves it (or None)."""
    if known is None:
        return
    if not isinstance(known, dict) or set(known) != {"keys", "labels"}:
        raise ValueError("known must hold 'keys' and 'labels'")
    keys, labels = known["keys"], known["labels"]
    if not isinstance(keys, list) or not isinstance(labels, list) or len(keys) != len(labels) \
            or len(keys) > MAX_KNOWN:
        raise ValueError("known's keys and labels must be lists of one length")
    if not all(isinstance(k, int) and 0 <= k < 2 ** 64 for k in keys) \
            or not all(isinstance(y, int) and y >= 0 for y in labels):
        raise ValueError("known's keys must be 64-bit unsigned integers and its labels label indices")


class KnownWords:
    """Mixin for a sequence labeller whose labels mostly follow from (word, tag): see the module docstring.
    The class supplies `_word_tag_labels`."""

    cfg: Dict[str, Any]
    labels: Tuple[str, ...]
    writes: str
    _known_cache: Optional[Tuple[Any, np.ndarray, np.ndarray, int]] = None

    def _word_tag_labels(self, examples: Iterable[Example]) -> Iterable[Tuple[str, str, str]]:
        raise NotImplementedError

    def _check_task_cfg(self, cfg: Dict[str, Any]) -> None:
        """The settings both word labellers have: what they annotate, `overwrite` and the known table."""
        if cfg.get("annotate", self.writes) != self.writes:
            raise ValueError(f"{type(self).__name__} annotates {self.writes!r}, got {cfg.get('annotate')!r}")
        if not isinstance(cfg.get("overwrite", False), bool):
            raise ValueError(f"overwrite must be true or false, got {cfg.get('overwrite')!r}")
        check_known(cfg.get("known"))
        check_number(cfg.get("min_label_count", DEFAULT_MIN_LABEL_COUNT), "min_label_count", whole=True, low=1)

    def initialize(self, get_examples, *, nlp=None, labels: Optional[List[str]] = None, order: Any = None,
                   clusters: Any = None, clusters_min_logprob: Optional[float] = None) -> None:
        """The component's initialize (SparsePipe.initialize; spaCy checks its settings against this signature),
        then the table of known pairs from the same examples."""
        super().initialize(get_examples, nlp=nlp, labels=labels, order=order,  # type: ignore[misc]
                           clusters=clusters, clusters_min_logprob=clusters_min_logprob)
        self._count_known(get_examples())

    def _word_labels(self, examples: Iterable[Example]) -> Iterable[Tuple[str, str]]:
        return ((word, label) for word, _, label in self._word_tag_labels(examples))

    def _labels_from(self, examples: Iterable[Example]) -> List[str]:
        """The labels the training data has at least min_label_count times (each doc counted once)."""
        counts = Counter(label for _, _, label in self._word_tag_labels(once(examples)))
        return sorted(label for label, n in counts.items() if n >= self.cfg["min_label_count"])

    def _count_known(self, examples: Iterable[Example]) -> None:
        counts: Dict[Tuple[str, str], Counter] = defaultdict(Counter)
        for word, tag, label in self._word_tag_labels(once(examples)):
            if tag:
                counts[(word, tag)][label] += 1
        index = {label: i for i, label in enumerate(self.labels)}
        pairs = [(word, tag, index[next(iter(c))]) for (word, tag), c in counts.items()
                 if len(c) == 1 and sum(c.values()) >= MIN_KNOWN and next(iter(c)) in index]
        orth = np.array([get_string_id(w) for w, _, _ in pairs], dtype=np.uint64)
        tags = np.array([get_string_id(t) for _, t, _ in pairs], dtype=np.uint64)
        keys = pair_keys(orth, tags)
        order = np.argsort(keys, kind="stable")
        labels = np.array([y for _, _, y in pairs], dtype=np.int64)
        self.cfg["known"] = {"keys": keys[order].tolist(), "labels": labels[order].tolist()}

    def _known_arrays(self) -> Tuple[np.ndarray, np.ndarray]:
        """The table as sorted keys and label indices (pairs whose label the model lacks left out)."""
        known = self.cfg.get("known")
        n_labels = len(self.sparse.labels) if self.sparse is not None else len(self.labels)  # (labels: a new tuple)
        cached = self._known_cache
        if cached is not None and cached[0] is known and cached[3] == n_labels:
            return cached[1], cached[2]
        keys = np.array(known["keys"] if known else [], dtype=np.uint64)
        labels = np.array(known["labels"] if known else [], dtype=np.int32)
        ok = labels < n_labels
        keys, labels = keys[ok], labels[ok]
        order = np.argsort(keys, kind="stable")
        self._known_cache = (known, keys[order], labels[order], n_labels)
        return self._known_cache[1], self._known_cache[2]

    def _fixed(self, docs: List[Doc], batch: DocBatch) -> np.ndarray:
        keys, labels = self._known_arrays()
        columns = batch.columns
        if not len(keys) or not batch.n_tokens or TAG not in columns.attrs:
            return NO_FIXED
        fixed = np.empty(batch.n_tokens, dtype=np.int32)
        if not known_labels(keys, labels, columns.table, columns.attrs.index(ORTH), columns.attrs.index(TAG), fixed):
            return NO_FIXED
        return fixed
