"""Gold values read through spaCy's alignment, kept per example from batch
to batch.

Why: `Language.update` gives each component copies of the batch's examples,
so what an `Example` caches (its alignment) lasts for one component's update
of one batch: the tagger, the segmenter and the parser each aligned every
doc again, and the parser made it projective again, in every epoch (about
9 % of `spacy train configs/tagger_parser.cfg`, docs/decisions/measurement-log.md). A component's
gold values depend only on the reference doc and the predicted doc's words,
so they are kept by those: the reference weakly (the entry goes with its
corpus), under a digest of the predicted words and of the reference's
annotation, so a doc annotated again or tokenized otherwise is read anew.
"""
import hashlib
import threading
import weakref
from typing import Any, Callable, Dict, TypeVar

import numpy as np
from spacy.attrs import DEP, HEAD, LEMMA, MORPH, ORTH, POS, SENT_START, TAG
from spacy.tokens import Doc
from spacy.training import Example

T = TypeVar("T")
# the reference's annotation that any component's gold reads
_REFERENCE_ATTRS = [ORTH, TAG, POS, HEAD, DEP, SENT_START, MORPH, LEMMA]


class GoldMemo:
    """One component's gold values per example (thread-safe)."""

    def __init__(self) -> None:
        self._memo: "weakref.WeakKeyDictionary[Doc, Dict[bytes, Any]]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, eg: Example, make: Callable[[Example], T]) -> T:
        """make(eg), or what it gave for the same reference and words before."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.ascontiguousarray(eg.predicted.to_array(ORTH)).tobytes())
        digest.update(np.ascontiguousarray(eg.reference.to_array(_REFERENCE_ATTRS)).tobytes())
        key = digest.digest()
        with self._lock:
            kept = self._memo.get(eg.reference)
            if kept is not None and key in kept:
                return kept[key]
        value = make(eg)
        with self._lock:
            self._memo.setdefault(eg.reference, {})[key] = value
        return value
