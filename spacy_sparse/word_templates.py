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

# Whether a word keeps its case in its lemma follows its tag where the tag is right; where the tagger mistakes a
# name for a common noun or back, the word's usual case in a large corpus (`casefreq`, from the cluster table)
# and the capitals around it still tell.
LEMMA_CASE_TEMPLATES: Tuple[str, ...] = (
    "casefreq@0",
    "casefreq@0+ptag@0",
    "casefreq@0+is_title@0",
    "is_title@-1+is_title@0+is_title@1",
    "ptag@0+is_title@0+is_punct@-1",
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
def lemma_templates_v1(case: bool = False) -> List[str]:
    """The lemmatizer's default template set, in its default order; `case` adds templates over the word's
    usual case and the capitals around it (the component then needs a cluster table with casefreq codes)."""
    return list(LEMMA_TEMPLATES) + (list(LEMMA_CASE_TEMPLATES) if case else [])


@registry.misc("spacy_sparse.morph_templates.v1")
def morph_templates_v1() -> List[str]:
    """The morphologizer's default template set, in its default order."""
    return list(MORPH_TEMPLATES)
