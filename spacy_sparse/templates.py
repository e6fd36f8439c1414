"""Feature templates: what a linear scorer may read around a decision.

A template is a conjunction of *atoms*. An atom reads one value at a position
relative to the token being labelled: a lexical attribute of a word (its
lowercase form, a suffix, its shape, ...) or a label the model predicted
earlier in the same doc. Templates are written as short strings so configs,
ordering files and model files can all name them the same way:

    "lower@0"             the lowercase form of the current word
    "lower@-1+lower@0"    the previous and the current word, together
    "tag@-2+tag@-1"       the two previously predicted labels
    "suf3@0+shape@0"      the current word's 3-letter suffix and its shape

The template *is* the group of the group-lasso methods, the unit of dynamic
feature selection, and one weight table in the model.
"""
from dataclasses import dataclass
from typing import Iterable, List, Sequence, Tuple

import numpy as np
from spacy.util import registry

# Lexical attributes, computed once per word type (see lexicon.py). The
# column of an attribute in the lexicon table is its index here. "amb" is
# the word's ambiguity class: the set of labels its lowercase form took in
# the training data (frequent words only), kept in the model file. Read at
# positions to the right it gives a left-to-right model a view of what comes
# next.
LEX_ATTRS: Tuple[str, ...] = (
    "orth", "lower", "norm", "shape",
    "pre1", "pre2", "pre3", "pre4",
    "suf1", "suf2", "suf3", "suf4",
    "is_title", "is_upper", "like_num", "has_hyphen", "has_digit", "is_punct",
    "amb",
)
LEX_COLUMN = {name: i for i, name in enumerate(LEX_ATTRS)}

# Non-lexical sources, encoded as negative source codes in the kernels.
# "tag" reads the label predicted at an earlier position of the same segment.
# "hist" is the extended prediction history of Ratinov & Roth (2009): the
# label last predicted for the same lowercase word earlier in the same doc
# (for entity moves, its entity type), read at the current or an earlier
# position.
HISTORY_ATTRS = {"tag": -1, "hist": -2}


@dataclass(frozen=True)
class Atom:
    attr: str
    pos: int

    @property
    def source(self) -> int:
        if self.attr in LEX_COLUMN:
            return LEX_COLUMN[self.attr]
        return HISTORY_ATTRS[self.attr]

    def __str__(self) -> str:
        return f"{self.attr}@{self.pos}"


@dataclass(frozen=True)
class Template:
    atoms: Tuple[Atom, ...]

    @property
    def name(self) -> str:
        return "+".join(str(a) for a in self.atoms)

    def __str__(self) -> str:
        return self.name


def parse_template(text: str) -> Template:
    """Parse "attr@pos+attr@pos..." into a Template, with a clear error."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"A template must be a non-empty string like 'lower@0', got {text!r}")
    atoms = []
    for part in text.strip().split("+"):
        attr, sep, pos = part.strip().partition("@")
        if not sep:
            raise ValueError(f"Template atom {part!r} in {text!r} lacks '@position' (e.g. 'lower@0')")
        if attr not in LEX_COLUMN and attr not in HISTORY_ATTRS:
            known = ", ".join(list(LEX_ATTRS) + list(HISTORY_ATTRS))
            raise ValueError(f"Unknown attribute {attr!r} in template {text!r}; known: {known}")
        try:
            offset = int(pos)
        except ValueError:
            raise ValueError(f"Position {pos!r} in template {text!r} is not an integer") from None
        if (attr == "tag" and offset >= 0) or (attr == "hist" and offset > 0):
            raise ValueError(
                f"Template {text!r} reads a predicted label at {offset}: only earlier "
                "positions are known when predicting left to right"
            )
        atoms.append(Atom(attr, offset))
    return Template(tuple(atoms))


def parse_templates(texts: Iterable[str]) -> List[Template]:
    templates = [parse_template(t) for t in texts]
    names = [t.name for t in templates]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"Duplicate templates: {', '.join(dupes)}")
    if not templates:
        raise ValueError("A template set must hold at least one template")
    return templates


def template_seed(template: Template) -> int:
    """A stable 64-bit seed from the template's name (FNV-1a), so a feature's
    key does not depend on where the template sits in the order."""
    h = 0xCBF29CE484222325
    for byte in template.name.encode("utf8"):
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h or 1


def compile_templates(templates: Sequence[Template]):
    """Flatten templates into the arrays the kernels read."""
    seeds = np.array([template_seed(t) for t in templates], dtype=np.uint64)
    offsets = np.zeros(len(templates) + 1, dtype=np.int32)
    sources: List[int] = []
    positions: List[int] = []
    for i, t in enumerate(templates):
        for atom in t.atoms:
            sources.append(atom.source)
            positions.append(atom.pos)
        offsets[i + 1] = len(sources)
    return (
        seeds,
        offsets,
        np.array(sources, dtype=np.int32),
        np.array(positions, dtype=np.int32),
    )


# A tagging set of 48 templates (Strubell et al. used 46), listed in a cheap
# default order: strong, small templates first, rarer conjunctions last. The
# wrapper method (learn/ordering.py) learns a better order from data.
TAGGER_TEMPLATES: Tuple[str, ...] = (
    "lower@0",
    "suf3@0",
    "tag@-1",
    "amb@1",
    "tag@-1+lower@0",
    "shape@0",
    "amb@0",
    "lower@-1+lower@0",
    "lower@0+lower@1",
    "tag@-2+tag@-1",
    "suf2@0",
    "lower@1",
    "lower@-1",
    "suf3@0+shape@0",
    "amb@0+amb@1",
    "tag@-1+amb@0",
    "pre1@0",
    "suf4@0",
    "suf1@0",
    "orth@0",
    "tag@-1+suf3@0",
    "amb@2",
    "suf3@1",
    "suf3@-1",
    "is_title@0+tag@-1",
    "is_title@0+is_upper@0+has_hyphen@0+has_digit@0+like_num@0",
    "lower@2",
    "lower@-2",
    "pre2@0",
    "pre3@0",
    "shape@1",
    "shape@-1",
    "lower@-1+lower@0+lower@1",
    "tag@-1+lower@1",
    "tag@-2+lower@0",
    "tag@-1+amb@1",
    "lower@0+amb@1",
    "amb@1+amb@2",
    "tag@-1+shape@0",
    "shape@-1+shape@0+shape@1",
    "lower@0+suf3@1",
    "suf3@-1+lower@0",
    "norm@0",
    "is_title@1",
    "suf3@0+amb@1",
    "tag@-1+tag@-2+lower@0",
    "pre1@0+suf3@0",
    "lower@1+lower@2",
)


@registry.misc("spacy_sparse.tagger_templates.v1")
def tagger_templates_v1() -> List[str]:
    """The default tagging template set, in its cheap default order."""
    return list(TAGGER_TEMPLATES)


# An entity template set of 46 (Strubell et al. used 46 for NER): word forms
# and shapes in windows of +-2, affixes, capitalization patterns up to 3-grams
# of shapes, earlier moves, and `hist`, the entity type last predicted for the
# same word earlier in the doc. (`amb` classes overfit on CoNLL: README.)
NER_TEMPLATES: Tuple[str, ...] = (
    "lower@0",
    "tag@-1",
    "shape@0",
    "hist@0",
    "tag@-1+lower@0",
    "suf3@0",
    "lower@-1",
    "lower@1",
    "orth@0",
    "tag@-1+shape@0",
    "is_title@-1+is_title@0+is_title@1",
    "shape@-1+shape@0",
    "shape@0+shape@1",
    "lower@-1+lower@0",
    "lower@0+lower@1",
    "tag@-2+tag@-1",
    "hist@0+shape@0",
    "hist@-1",
    "hist@0+tag@-1",
    "hist@0+lower@0",
    "pre3@0",
    "suf4@0",
    "pre4@0",
    "suf2@0",
    "pre2@0",
    "lower@-2",
    "lower@2",
    "shape@-1",
    "shape@1",
    "shape@-2+shape@-1+shape@0",
    "shape@0+shape@1+shape@2",
    "is_upper@0",
    "has_digit@0+has_hyphen@0",
    "tag@-1+suf3@0",
    "orth@-1",
    "orth@1",
    "suf3@-1",
    "suf3@1",
    "lower@-1+lower@0+lower@1",
    "tag@-1+lower@1",
    "like_num@0",
    "is_punct@-1",
    "pre1@0+shape@0",
    "lower@-2+lower@-1",
    "lower@1+lower@2",
    "tag@-1+orth@-1",
)


@registry.misc("spacy_sparse.ner_templates.v1")
def ner_templates_v1() -> List[str]:
    """The default entity template set, in its cheap default order."""
    return list(NER_TEMPLATES)


@registry.misc("spacy_sparse.template_list.v1")
def template_list_v1(templates: List[str]) -> List[str]:
    """Templates written out in a config, validated when the config loads."""
    parse_templates(templates)
    return list(templates)


def apply_order(templates: Sequence[str], order: Sequence[str]) -> List[str]:
    """Put `templates` in the order of an ordering file.

    Templates the order names come first, in its order; ones it leaves out
    keep their relative order after them. A name the set does not hold is an
    error: an ordering learned for another template set is a mistake.
    """
    known = set(templates)
    unknown = [name for name in order if name not in known]
    if unknown:
        raise ValueError(f"Ordering names templates that are not in the template set: {unknown[:5]}")
    seen = set()
    ordered = []
    for name in order:
        if name not in seen:
            ordered.append(name)
            seen.add(name)
    ordered.extend(t for t in templates if t not in seen)
    return ordered
