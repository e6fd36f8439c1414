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

# With a word table (clusters with casefreq and WordNet readings): how the word is usually written, which
# tells a name's lemma ("google" -> "Google", "TEHRAN" -> "Tehran") from a common word's, and the parts of
# speech and inflections WordNet gives the form, which tell "provoked" (provoke) from "walked" (walk).
LEMMA_DICTIONARY_TEMPLATES: Tuple[str, ...] = (
    "ptag@0+casefreq@0",
    "casefreq@0+shape@0",
    "ptag@0+wnpos@0",
    "suf3@0+wnpos@0",
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
def lemma_templates_v1(dictionary: bool = False) -> List[str]:
    """The lemmatizer's default template set, in its default order; with `dictionary`, also the templates
    over the word table's casefreq codes and WordNet readings (then give the component clusters, e.g.
    "en_brown_1000", in [initialize.components.sparse_lemmatizer]; its rules then also check their lemmas
    against WordNet: pipeline/lemmatizer.py)."""
    return list(LEMMA_TEMPLATES) + (list(LEMMA_DICTIONARY_TEMPLATES) if dictionary else [])


@registry.misc("spacy_sparse.morph_templates.v1")
def morph_templates_v1() -> List[str]:
    """The morphologizer's default template set, in its default order."""
    return list(MORPH_TEMPLATES)
