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

A parser's atoms read tokens at *slots* of its state instead of offsets:
"tag@S0+lower@B0" is the tag of the stack top with the first buffer word;
"dep@S0L" the label of the stack top's leftmost dependent (see SLOTS).
A template reads offsets or slots, never both: sequence tasks take the
first kind, the parser the second.

The template *is* the group of the group-lasso methods, the unit of dynamic
feature selection, and one weight table in the model.
"""
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, List, Sequence, Tuple, Union

import numpy as np
from spacy.util import registry

# Lexical attributes, computed once per word type (see lexicon.py), and the
# codes of the non-lexical atoms and parser slots: codes.py, which the kernels
# import too. "amb" is the word's ambiguity class: the set of labels its
# lowercase form took in the training data (frequent words only), kept in the
# model file; read at positions to the right it gives a left-to-right model a
# view of what comes next. "cshape" is Collins' (2002) word shape: character
# classes (A, a, 0, the character itself for others) with runs collapsed,
# "Confidence" -> "Aa", "2,664,098" -> "0,0,0".
#
# Sequence sources: "tag" reads the label predicted at an earlier position of
# the same segment; "hist" is the extended prediction history of Ratinov &
# Roth (2009): the label last predicted for the same lowercase word earlier in
# the same doc (for entity moves, its entity type), read at the current or an
# earlier position; "ptag" reads the token's tag_ as it was before this
# component ran (set by an earlier tagger, or given with the input: CoNLL-2000
# chunking provides POS tags), at any offset; "space" says what whitespace
# follows the token in the text: none, spaces, a line break or a blank line
# (a per-token fact no word type holds: `."` closes a quote where `. "` may
# open one; a blank line usually ends a sentence).
#
# Parser slots: stack items S0-S2 (S0 on top), buffer items B0-B3, and
# dependents already attached: S0L/S0L2 the leftmost and second leftmost
# dependent of S0, S0R/S0R2 the rightmost two, S0LL the leftmost dependent of
# S0L, and the same for S1 and B0 (whose dependents are all on its left);
# and the words beside them in the text: S0prev, S0next, B0prev, S1next.
# Parser sources besides lexical attributes: "tag" and "pos" are the token's
# tags set by an earlier component; "dep" the label the parser gave it;
# "lv"/"rv" its number of left/right dependents so far (valency);
# "lset"/"rset" the set of labels of those dependents; "dist" the distance
# from the slot's token to B0 (bucketed), e.g. "dist@S0".
from .checks import check_number  # noqa: E402
from .codes import HISTORY_ATTRS, LEX_ATTRS, LEX_COLUMN, SLOT_CODE, SLOTS, STATE_ATTRS  # noqa: E402,F401


# how far an atom may read from the token it helps label
MAX_OFFSET = 64


@dataclass(frozen=True)
class Atom:
    attr: str
    pos: Union[int, str]  # an offset (sequence tasks) or a slot name (parser)

    @property
    def is_slot(self) -> bool:
        return isinstance(self.pos, str)

    @property
    def source(self) -> int:
        if self.attr in LEX_COLUMN:
            return LEX_COLUMN[self.attr]
        return STATE_ATTRS[self.attr] if self.is_slot else HISTORY_ATTRS[self.attr]

    @property
    def code(self) -> int:
        """The position as the kernels read it: the offset or the slot code."""
        return SLOT_CODE[self.pos] if isinstance(self.pos, str) else self.pos

    def __str__(self) -> str:
        return f"{self.attr}@{self.pos}"


@dataclass(frozen=True)
class Template:
    atoms: Tuple[Atom, ...]

    @property
    def kind(self) -> str:
        """"state" for parser templates (slots), "sequence" for offsets."""
        return "state" if self.atoms[0].is_slot else "sequence"

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
        pos = pos.strip()
        if not sep:
            raise ValueError(f"Template atom {part!r} in {text!r} lacks '@position' (e.g. 'lower@0')")
        atoms.append(_slot_atom(text, attr, pos) if pos in SLOT_CODE else _offset_atom(text, attr, pos))
    if len({a.is_slot for a in atoms}) > 1:
        raise ValueError(f"Template {text!r} mixes offsets and parser slots")
    return Template(tuple(atoms))


def _offset_atom(text: str, attr: str, pos: str) -> Atom:
    if attr not in LEX_COLUMN and attr not in HISTORY_ATTRS:
        known = ", ".join(list(LEX_ATTRS) + list(HISTORY_ATTRS))
        raise ValueError(f"Unknown attribute {attr!r} in template {text!r}; known: {known}")
    try:
        offset = int(pos)
    except ValueError:
        raise ValueError(
            f"Position {pos!r} in template {text!r} is neither an integer offset nor a parser slot "
            f"({', '.join(SLOTS)})"
        ) from None
    if abs(offset) > MAX_OFFSET:
        raise ValueError(f"Offset {offset} in template {text!r} is beyond +-{MAX_OFFSET} tokens")
    if (attr == "tag" and offset >= 0) or (attr == "hist" and offset > 0):
        raise ValueError(
            f"Template {text!r} reads a predicted label at {offset}: only earlier "
            "positions are known when predicting left to right"
        )
    return Atom(attr, offset)


def _slot_atom(text: str, attr: str, slot: str) -> Atom:
    if attr not in LEX_COLUMN and attr not in STATE_ATTRS:
        known = ", ".join(list(LEX_ATTRS) + list(STATE_ATTRS))
        raise ValueError(f"Unknown attribute {attr!r} for a parser slot in {text!r}; known: {known}")
    return Atom(attr, slot)


def check_kind(templates: Sequence[Template], kind: str, component: str) -> None:
    """Refuse templates a component's kernel cannot read (offsets for the
    parser, slots for the taggers)."""
    wrong = [t.name for t in templates if t.kind != kind]
    if wrong:
        what = "parser slots (e.g. 'tag@S0')" if kind == "state" else "offsets (e.g. 'lower@-1')"
        raise ValueError(f"{component} templates must read {what}; these do not: {wrong[:5]}")


# far more than any useful set (the largest shipped one has 100); a model file
# naming more is corrupt or hostile, and is refused before any work per template
MAX_TEMPLATES = 10_000


def parse_templates(texts: Iterable[str]) -> List[Template]:
    texts = list(texts)
    if len(texts) > MAX_TEMPLATES:
        raise ValueError(f"A template set holds at most {MAX_TEMPLATES:,} templates, got {len(texts):,}")
    templates = [parse_template(t) for t in texts]
    counts = Counter(t.name for t in templates)
    dupes = sorted(n for n, c in counts.items() if c > 1)
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
            positions.append(atom.code)
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


# Whether whitespace separates a token from its neighbours: the pieces of a
# word spaCy's tokenizer splits (`e-mail` -> `e - mail`) touch each other.
TAGGER_SPACE_TEMPLATES: Tuple[str, ...] = (
    "space@-1+space@0+lower@0",
    "space@-1+lower@-1+lower@0",
    "space@0+lower@0+lower@1",
)


# Brown clusters of the word and its neighbours (clusters.py): what a word
# seen rarely in training shares with the words it is distributed like.
TAGGER_CLUSTER_TEMPLATES: Tuple[str, ...] = (
    "clu@0",
    "clu6@0",
    "clu4@0",
    "clu@1",
    "clu@-1",
)


# The usual case and frequency of the word and its neighbours in a large
# corpus (clusters.py, `casefreq`): whether a word the training data lacks
# is mostly a name, a common word or an acronym.
TAGGER_CASEFREQ_TEMPLATES: Tuple[str, ...] = (
    "casefreq@0",
    "casefreq@0+shape@0",
    "casefreq@0+tag@-1",
    "casefreq@1",
    "casefreq@-1",
    "casefreq@0+suf3@0",
)


# The WordNet readings of the word and the next one (clusters.py, `wnpos`):
# the word classes a dictionary gives a word the training data lacks.
TAGGER_WORDNET_TEMPLATES: Tuple[str, ...] = (
    "wnpos@0",
    "wnpos@0+suf3@0",
    "wnpos@0+tag@-1",
    "wnpos@1",
    "wnpos@0+casefreq@0",
)


# Templates over two or three words (or a word and an earlier tag) that `lean = true` leaves out. A token
# reads its one-word templates as a few summed vectors, so with every template scored the multi-word ones are
# most of a tagger's time: a table probe and a row each. Taken out one at a time from a model trained with all
# of them (EWT dev, raw text), each of the first eleven cost at most 0.02 points; a model trained without those
# eleven then missed each of the last two by at most 0.014. configs/tagger.cfg trained without the thirteen:
# EWT dev 94.20 / 94.19 -> 94.17 / 94.16 (seeds 0 / 1), Wall Street Journal text 92.42 / 92.44 -> 92.46 /
# 92.52, 1.6x the words/s at margin none; EWT test, measured after the choice, 94.95 / 94.93 -> 94.80 / 94.77
# (docs/decisions/measurement-log.md).
TAGGER_LEAN_DROPS: Tuple[str, ...] = (
    "tag@-1+lower@0",
    "lower@0+lower@1",
    "tag@-1+suf3@0",
    "lower@-1+lower@0+lower@1",
    "tag@-1+lower@1",
    "tag@-1+amb@1",
    "lower@0+amb@1",
    "tag@-1+tag@-2+lower@0",
    "lower@1+lower@2",
    "amb@1+amb@2",
    "suf3@0+amb@1",
    "suf3@-1+lower@0",
    "lower@-1+lower@0",
)


@registry.misc("spacy_sparse.tagger_templates.v1")
def tagger_templates_v1(space: bool = False, clusters: bool = False, casefreq: bool = False,
                        wordnet: bool = False, lean: bool = False, drop: Sequence[str] = ()) -> List[str]:
    """The default tagging template set, in its cheap default order;
    `space` adds templates over the whitespace around the token, `clusters`
    over word clusters (the component then needs a cluster table), `casefreq`
    over the words' usual case and frequency, `wordnet` over their WordNet
    readings (a table with those codes), at the end. `lean` leaves out the
    thirteen multi-word templates of TAGGER_LEAN_DROPS (1.6x faster at
    margin none; 0.03 lower on EWT dev, 0.15 on test); `drop` leaves out
    the templates it names, each of which must be in the set (a misspelt
    name would otherwise leave the set unchanged without a word)."""
    out = (list(TAGGER_TEMPLATES) + (list(TAGGER_SPACE_TEMPLATES) if space else [])
           + (list(TAGGER_CLUSTER_TEMPLATES) if clusters else [])
           + (list(TAGGER_CASEFREQ_TEMPLATES) if casefreq else [])
           + (list(TAGGER_WORDNET_TEMPLATES) if wordnet else []))
    if lean:
        out = [t for t in out if t not in TAGGER_LEAN_DROPS]
    if isinstance(drop, str):
        raise ValueError(f"drop takes a list of template names, got the string {drop!r}")
    missing = [t for t in drop if t not in out]
    if missing:
        raise ValueError(f"drop names templates the set does not have: {missing}")
    dropped = set(drop)
    return [t for t in out if t not in dropped]


# An entity template set of 46 (Strubell et al. used 46 for NER): word forms
# and shapes in windows of +-2, affixes, capitalization patterns up to 3-grams
# of shapes, earlier moves, and `hist`, the entity type last predicted for the
# same word earlier in the doc. (`amb` classes overfit on CoNLL: docs/decisions/measurement-log.md.)
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


# Brown clusters around the token, at prefix lengths as Ratinov & Roth used them.
NER_CLUSTER_TEMPLATES: Tuple[str, ...] = (
    "clu@0",
    "clu4@0",
    "clu6@0",
    "clu10@0",
    "clu@-1",
    "clu@1",
    "clu6@-1+clu6@0",
    "clu6@0+clu6@1",
    "clu10@-1",
    "clu10@1",
    "clu4@-1",
    "clu4@1",
    "clu@-2",
    "clu@2",
    "shape@0+clu6@0",
    "clu@0+lower@-1",
)


@registry.misc("spacy_sparse.ner_templates.v1")
def ner_templates_v1(clusters: bool = False) -> List[str]:
    """The default entity template set, in its cheap default order;
    `clusters` adds templates over word clusters at the end."""
    return list(NER_TEMPLATES) + (list(NER_CLUSTER_TEMPLATES) if clusters else [])


# A sentence-boundary set: does token 0 start a sentence? The evidence is
# mostly what ends the previous one (its form and shape, and the two words
# before it), how token 0 looks (case, shape, form), what follows it, and
# whether the previous token started a sentence itself.
SENTER_TEMPLATES: Tuple[str, ...] = (
    "orth@-1",
    "shape@0",
    "orth@-1+shape@0",
    "lower@0",
    "orth@-1+lower@0",
    "tag@-1",
    "is_title@0+is_punct@-1",
    "cshape@-1+cshape@0",
    "orth@-2+orth@-1",
    "lower@-1",
    "orth@0",
    "shape@-1+shape@0+shape@1",
    "lower@1",
    "shape@1",
    "lower@0+lower@1",
    "orth@-1+orth@0+shape@1",
    "suf3@-1",
    "suf3@-2+orth@-1",
    "shape@-2",
    "tag@-1+orth@-1",
    "tag@-2+tag@-1",
    "is_punct@-2+orth@-1+is_title@0",
    "amb@0",
    "amb@0+orth@-1",
    "lower@-2",
    "pre1@0+orth@-1",
    "like_num@-1+orth@0",
    "suf3@0",
    "cshape@-2+cshape@-1+cshape@0",
    "orth@1+orth@2",
)


# With a tagger before the segmenter: its tags around the position (`ptag`).
SENTER_TAG_TEMPLATES: Tuple[str, ...] = (
    "ptag@0",
    "ptag@-1+ptag@0",
    "ptag@-1",
    "orth@-1+ptag@0",
    "ptag@0+ptag@1",
    "ptag@-2+ptag@-1+ptag@0",
    "ptag@-1+ptag@0+ptag@1",
    "shape@0+ptag@0",
    "ptag@1",
    "lower@0+ptag@-1",
    "ptag@-1+shape@0+ptag@1",
)


# The whitespace before the position alone (none, spaces, a line break, a blank line), read second.
SENTER_GAP_TEMPLATE = "space@-1"
# Whether whitespace separates the tokens around the position.
SENTER_SPACE_TEMPLATES: Tuple[str, ...] = (
    "orth@-1+space@-1+orth@0",
    "space@-1+space@0+orth@0",
    "orth@-2+space@-2+orth@-1+space@-1",
    "space@-1+shape@0",
)


# Brown clusters around the position: the class of word that starts a sentence
# and of the word before it.
SENTER_CLUSTER_TEMPLATES: Tuple[str, ...] = (
    "clu@0",
    "clu6@0",
    "clu@-1",
    "orth@-1+clu6@0",
    "clu6@-1+clu6@0",
    "clu6@1",
    "is_title@0+clu@0",
)


@registry.misc("spacy_sparse.senter_templates.v1")
def senter_templates_v1(tags: bool = False, space: bool = False, clusters: bool = False) -> List[str]:
    """The default sentence-boundary template set; `tags` adds templates
    over the tags of a tagger that runs before the segmenter (the three
    strongest early, the rest after the word templates). On EWT dev they
    add about 1.5 points of sentence F (docs/decisions/measurement-log.md). `space` adds
    templates over the whitespace between tokens, `clusters` over word
    clusters, at the end."""
    base = list(SENTER_TEMPLATES)
    if tags:
        extra = list(SENTER_TAG_TEMPLATES)
        base = base[:5] + extra[:3] + base[5:12] + extra[3:] + base[12:]
    if space:  # the whitespace before the token, early: a line break is read before a margin stops
        base = base[:1] + [SENTER_GAP_TEMPLATE] + base[1:]
    return (base + (list(SENTER_SPACE_TEMPLATES) if space else [])
            + (list(SENTER_CLUSTER_TEMPLATES) if clusters else []))


def ngram_templates(attr: str, window: int, max_n: int) -> List[str]:
    """Every n-gram (n <= max_n) of `attr` inside offsets -window..window,
    short ones and those near the word first."""
    out = []
    for n in range(1, max_n + 1):
        starts = range(-window, window - n + 2)
        for start in sorted(starts, key=lambda a: (abs(2 * a + n - 1), a)):
            out.append("+".join(f"{attr}@{start + k}" for k in range(n)))
    return out


@registry.misc("spacy_sparse.chunk_templates.v1")
def chunk_templates_v1(pos_window: int = 5, pos_n: int = 5, word_window: int = 3, word_n: int = 3,
                       shape_window: int = 2, shape_n: int = 2, label_bigram: bool = True) -> List[str]:
    """The chunking templates of Martins et al. (2011, §5): POS n-grams up to
    pos_n in a window of +-pos_window, word n-grams up to word_n in
    +-word_window, Collins shape n-grams up to shape_n in +-shape_window,
    and a label bigram (the previous label). POS is the input tag (`ptag`).
    With the defaults the description gives 72 input templates + 1 (the
    paper counts 96 without listing them)."""
    for name, value in (("pos_window", pos_window), ("pos_n", pos_n), ("word_window", word_window),
                        ("word_n", word_n), ("shape_window", shape_window), ("shape_n", shape_n)):
        check_number(value, name, whole=True, low=0)
    out = (ngram_templates("ptag", pos_window, pos_n) + ngram_templates("lower", word_window, word_n)
           + ngram_templates("cshape", shape_window, shape_n))
    if label_bigram:
        out.append("tag@-1")
    return out


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


# A parsing set of 100 templates: the 72 of Zhang & Nivre (2011) moved to
# the arc-hybrid system (their S0h, the head of the stack top, which
# arc-hybrid never has, becomes S1, the other candidate head of S0; S0h2
# becomes S2), then additions measured on EWT dev (docs/decisions/measurement-log.md): `amb` ambiguity
# classes, which soften the tagger's errors, suffixes and shapes of S0/B0,
# more B1-B3 lookahead and S1 dependents. Words are lowercase forms, "tag"
# the tags of an earlier tagger. Cheap default order: the tag context of S1,
# S0 and B0 first, words and dependents after.
PARSER_TEMPLATES: Tuple[str, ...] = (
    "tag@S0+tag@B0",
    "tag@S1+tag@S0",
    "tag@S1+tag@S0+tag@B0",
    "tag@S0+tag@B0+tag@B1",
    "lower@S0",
    "lower@B0",
    "tag@S0+dist@S0",
    "tag@S1+tag@S0+dist@S1",
    "lower@S0+tag@S0",
    "lower@B0+tag@B0",
    "amb@B0",
    "amb@S0",
    "amb@B1",
    "amb@S0+amb@B0",
    "tag@S0+amb@B0",
    "amb@S0+tag@B0",
    "lower@S1+tag@S1",
    "tag@S0+tag@S0L+tag@B0",
    "tag@S0+tag@S0R+tag@B0",
    "tag@S0+tag@B0+tag@B0L",
    "tag@S1+tag@S1R+tag@S0",
    "tag@S2+tag@S1+tag@S0",
    "tag@B0+tag@B1+tag@B2",
    "lower@S0+lower@B0",
    "lower@S1+lower@S0",
    "lower@S0+tag@S0+lower@B0+tag@B0",
    "lower@S0+tag@S0+lower@B0",
    "lower@S0+lower@B0+tag@B0",
    "lower@S0+tag@S0+tag@B0",
    "tag@S0+lower@B0+tag@B0",
    "lower@S1+tag@S0",
    "tag@S1+lower@S0",
    "lower@S1+tag@S1+lower@S0+tag@S0",
    "tag@S0+tag@B0+dist@S0",
    "lower@S0+lower@B0+dist@S0",
    "lower@S0+dist@S0",
    "lower@B0+dist@S0",
    "tag@B0+dist@S0",
    "tag@S0+rv@S0",
    "tag@S0+lv@S0",
    "tag@B0+lv@B0",
    "lower@S0+rv@S0",
    "lower@S0+lv@S0",
    "lower@B0+lv@B0",
    "dep@S0L",
    "dep@S0R",
    "dep@B0L",
    "tag@S0L",
    "tag@S0R",
    "tag@B0L",
    "lower@S0L",
    "lower@S0R",
    "lower@B0L",
    "tag@B1",
    "lower@B1",
    "lower@B1+tag@B1",
    "tag@B2",
    "lower@B2",
    "tag@S2",
    "lower@S2",
    "dep@S1R",
    "tag@S1L",
    "dep@S0L2",
    "dep@S0R2",
    "dep@B0L2",
    "tag@S0L2",
    "tag@S0R2",
    "tag@B0L2",
    "tag@S0+tag@S0L+tag@S0L2",
    "tag@S0+tag@S0R+tag@S0R2",
    "tag@B0+tag@B0L+tag@B0L2",
    "tag@S0+lset@S0",
    "tag@S0+rset@S0",
    "tag@B0+lset@B0",
    "lower@S0+lset@S0",
    "lower@S0+rset@S0",
    "lower@B0+lset@B0",
    "tag@S0+tag@S0LL+tag@S0RR",
    "amb@S1",
    "suf3@S0",
    "suf3@B0",
    "lower@B0+lower@B1",
    "tag@S0+lower@B0+tag@B1",
    "lower@S0+tag@B0+tag@B1",
    "lower@S0+lower@B1",
    "lower@B0+tag@B1",
    "tag@B0+lower@B1",
    "tag@B3",
    "tag@B1+tag@B2+tag@B3",
    "amb@B2",
    "lower@S0+tag@S1",
    "lower@S1+lower@B0",
    "tag@S1+tag@B0",
    "tag@S1+lower@B0",
    "shape@B0",
    "shape@S0",
    "tag@S0+tag@S1+tag@S1L",
    "dep@S1L",
    "tag@S1R",
    "lower@S1R",
)


# Label templates for split actions: each reads the move being labelled
# (`move@S0`), so LEFT (head B0), RIGHT (head S1) and ROOT arcs of S0 have
# features of their own; labels depend on the dependent, its head
# candidates, and the dependents both already have.
LABEL_TEMPLATES: Tuple[str, ...] = tuple("move@S0+" + t for t in (
    "tag@S0",
    "lower@S0",
    "tag@S0+tag@B0",
    "tag@S1+tag@S0",
    "lower@S0+tag@S0",
    "lower@S0+tag@B0",
    "tag@S0+lower@B0",
    "lower@S1+tag@S0",
    "tag@S1+lower@S0",
    "lower@S0+lower@B0",
    "lower@S1+lower@S0",
    "tag@S0+dist@S0",
    "tag@S1+tag@S0+dist@S1",
    "tag@B0",
    "tag@S1",
    "lower@B0",
    "lower@S1",
    "suf3@S0",
    "shape@S0",
    "amb@S0",
    "tag@S0+lset@S0",
    "tag@S0+rset@S0",
    "dep@S0L",
    "dep@S0R",
    "tag@S0+tag@S0L",
    "tag@S0+tag@S0R",
    "tag@S0+tag@B0+tag@B1",
    "tag@S1+tag@S0+tag@B0",
    "tag@S0+tag@B0+dist@S0",
    "lower@S0+tag@S0+tag@B0",
    "tag@S0+lower@B0+tag@B0",
    "lower@S0+tag@S0+lower@B0+tag@B0",
    "lower@S1+tag@S1+lower@S0+tag@S0",
    "tag@S0+tag@S0L+tag@B0",
    "tag@S0+tag@S0R+tag@B0",
    "tag@S1+tag@S1R+tag@S0",
    "tag@S0+lv@S0",
    "tag@S0+rv@S0",
    "lower@S0+lv@S0",
    "lower@S0+rv@S0",
    "amb@B0",
    "amb@S1",
    "suf3@B0",
    "tag@S2+tag@S1+tag@S0",
    "tag@B1",
    "lower@B1",
    "tag@S0+tag@B1",
    "dep@S0L2",
    "tag@S0L",
    "tag@S0R",
    "lower@S0L",
    "lower@S0R",
    "tag@B0+lset@B0",
    "tag@S1+rset@S1",
    "tag@S1+lset@S1",
    "lower@B0+lset@B0",
    "lower@S1+rset@S1",
    "dep@B0L",
    "dep@S1R",
    "tag@S0+tag@B0+lset@B0",
))


def has_move_atom(template: Template) -> bool:
    """A template that scores labels of split actions (it reads the move)."""
    return any(a.attr == "move" for a in template.atoms)


@registry.misc("spacy_sparse.parser_templates.v1")
def parser_templates_v1(split: bool = False, clusters: bool = False, window: bool = False) -> List[str]:
    """The default parsing template set, in its cheap default order; with
    `split`, the label templates of split actions after it; with `clusters`,
    templates over word clusters (Koo et al. 2008's kind) at the end; with
    `window`, templates over the words next to S0, S1 and B0 in the text."""
    return (list(PARSER_TEMPLATES) + (list(LABEL_TEMPLATES) if split else [])
            + (list(PARSER_CLUSTER_TEMPLATES) if clusters else [])
            + (list(PARSER_WINDOW_TEMPLATES) if window else []))


# The words beside the stack top, the buffer front and S1 in the text: the
# word just before B0 (often a comma or a conjunction) ends S0's subtree
# however deep it hangs; a clause or a conjunct starts after it.
PARSER_WINDOW_TEMPLATES: Tuple[str, ...] = (
    "tag@B0prev+tag@B0",
    "lower@B0prev+tag@B0",
    "tag@S0+tag@B0prev+tag@B0",
    "tag@S0+tag@S0next",
    "tag@S0prev+tag@S0",
    "tag@S0prev+tag@S0+tag@S0next",
    "tag@S1+tag@S1next+tag@S0",
    "lower@S0next+tag@S0",
    "lower@B0prev",
    "tag@B0prev+lower@B0",
    "tag@S0+tag@S0next+tag@B0",
    "tag@B0prev+tag@B0+tag@B1",
    "tag@S0prev+tag@S0+tag@B0",
    "lower@S0prev+tag@S0",
    # the label the word before B0 got (`cc`, `punct`, `mark`: what B0 may be joined by)
    "dep@B0prev+tag@B0",
    "dep@B0prev+tag@S0+tag@B0",
    "dep@B0prev+lower@B0prev+tag@B0",
    "dep@S0next+tag@S0",
)


# Brown clusters of the words in the head-dependent positions, alone and with tags.
PARSER_CLUSTER_TEMPLATES: Tuple[str, ...] = (
    "clu@S0",
    "clu@B0",
    "clu6@S0+clu6@B0",
    "clu6@S0+tag@B0",
    "tag@S0+clu6@B0",
    "clu4@S0+clu4@B0",
    "clu@S0+tag@S0",
    "clu@B0+tag@B0",
    "clu6@S1+clu6@S0",
    "clu6@B1",
)
