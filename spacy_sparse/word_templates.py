"""Template sets of the components that label a word's own form after a tagger: the lemmatizer and the
morphologizer. Both read the fine tag the tagger set (`ptag`) beside the word, its affixes and its shape;
the morphologizer also reads the words and tags to its left, where a finite verb finds its subject."""
from typing import List, Tuple

from spacy.util import registry

LEMMA_TEMPLATES: Tuple[str, ...] = (
    "ptag@0+lower@0",
    "lower@0",
    "ptag@0+suf3@0",
    "ptag@0+suf2@0",
    "ptag@0+suf1@0",
    "ptag@0+suf4@0",
    "ptag@0",
    "orth@0",
    "ptag@0+orth@0",
    "suf3@0",
    "suf4@0",
    "shape@0",
    "ptag@0+shape@0",
    "ptag@0+is_title@0",
    "ptag@0+lower@-1",
    "ptag@-1+ptag@0",
    "ptag@0+ptag@1",
)

MORPH_TEMPLATES: Tuple[str, ...] = (
    "ptag@0+lower@0",
    "ptag@0",
    "lower@0",
    "ptag@0+suf3@0",
    "suf3@0",
    "shape@0",
    "ptag@0+lower@-1",
    "ptag@0+lower@-2",
    "ptag@-1+ptag@0",
    "ptag@0+ptag@1",
    "ptag@-2+ptag@-1+ptag@0",
    "ptag@0+lower@-1+lower@0",
    "ptag@0+tag@-1",
    "tag@-1",
    "ptag@0+lower@1",
    "ptag@-1",
    "ptag@1",
    "lower@-1",
    "ptag@0+lower@-3",
    "ptag@0+ptag@-3",
)


@registry.misc("spacy_sparse.lemma_templates.v1")
def lemma_templates_v1() -> List[str]:
    """The lemmatizer's default template set, in its default order."""
    return list(LEMMA_TEMPLATES)


@registry.misc("spacy_sparse.morph_templates.v1")
def morph_templates_v1() -> List[str]:
    """The morphologizer's default template set, in its default order."""
    return list(MORPH_TEMPLATES)
