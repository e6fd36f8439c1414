"""`sparse_morphologizer`: UD morphological features (`token.morph`) as the labels of a sparse tagger.

A label is a token's whole FEATS string ("Number=Plur", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|
VerbForm=Fin"; "_" for none), as spaCy's morphologizer predicts it. In English most of it follows from the
fine tag and the word, and the rest (the person and number of a finite verb) from the words before it, so
the default templates read the tag an earlier tagger set (`ptag`) around the token, the word, its suffixes
and the words to its left.
"""
from typing import Any, Callable, Dict, Iterable, Optional, Sequence

import numpy as np
from spacy.scorer import Scorer
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab

from .known_words import DEFAULT_MIN_LABEL_COUNT, KnownWords
from .tagger import SparseTagger

EMPTY = "_"  # the label of a token without features (UD's and spaCy's empty FEATS)


def morph_score(examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
    """morph_acc and morph_per_feat, as spaCy's morphologizer reports them."""
    def key(token, attr):  # the scorers read a morph through its key
        return token.morph.key

    examples = list(examples)
    for eg in examples:  # the per-feature scorer reads predicted keys in the reference's strings
        if eg.reference.vocab is not eg.predicted.vocab:
            for morph in {str(token.morph) for token in eg.predicted}:
                eg.reference.vocab.strings.add(morph)

    scores = Scorer.score_token_attr(examples, "morph", getter=key, **kwargs)
    scores.update(Scorer.score_token_attr_per_feat(examples, "morph", getter=key, **kwargs))
    return scores


@registry.scorers("spacy_sparse.morphologizer_scorer.v1")
def make_morphologizer_scorer() -> Callable:
    return morph_score


class SparseMorphologizer(KnownWords, SparseTagger):
    """Assigns token.morph greedily from left to right; put it after a tagger, whose tags its templates read."""

    writes = "morph"

    def __init__(self, vocab: Vocab, name: str = "sparse_morphologizer", *, annotate: str = "morph",
                 min_label_count: int = DEFAULT_MIN_LABEL_COUNT, overwrite: bool = True, **kwargs: Any):
        self._check_task_cfg({"annotate": annotate, "min_label_count": min_label_count, "overwrite": overwrite})
        super(SparseTagger, self).__init__(vocab, name, annotate=annotate, min_label_count=min_label_count,
                                           overwrite=overwrite, **kwargs)
        self._label_values = np.zeros(0, dtype=np.uint64)

    @property
    def overwrite(self) -> bool:
        return self.cfg["overwrite"]

    def _values_of(self, labels: Sequence[str]) -> np.ndarray:
        """The morph key of each label (the key spaCy's Doc.to_array(MORPH) gives)."""
        return np.array([self.vocab.morphology.add(label) for label in labels], dtype=np.uint64)

    def _word_tag_labels(self, examples: Iterable[Example]):
        for eg in examples:
            for token in eg.reference:
                if token.has_morph() and not token.is_space:
                    yield token.text, token.tag_, str(token.morph) or EMPTY

    def _string_value(self, label: Optional[str]) -> int:
        if label is None:
            return 0
        return self.vocab.morphology.add(label or EMPTY)

    def _teach(self, vocab: Vocab) -> None:
        for label in self.labels:
            vocab.morphology.add(label)
