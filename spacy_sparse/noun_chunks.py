"""`doc.noun_chunks` for docs parsed with Universal Dependencies labels.

spaCy's English chunker looks for ClearNLP labels (`dobj`, `pobj`, ...), which a UD parser never writes. In
UD a nominal argument or modifier is a noun or pronoun attached as `nsubj`, `obj`, `iobj`, `obl`, `nmod`,
`appos` or `root` (with any subtype but the possessive `nmod:poss`, which stays inside its owner's chunk), or
a conjunct of one. Its chunk runs from the left edge of its left dependents to the word itself, leaving out a
preposition (`case`), a coordinator (`cc`) or punctuation at the left: "over the lazy dog" gives
"the lazy dog". A chunk never starts inside the one before it.

The parser installs `noun_chunks` as its vocab's syntax iterator; a doc whose labels are not UD's (another
pipeline's, on the same vocab) still gets spaCy's English chunker.
"""
from typing import Iterator, Tuple, Union

from spacy.errors import Errors
from spacy.lang.en.syntax_iterators import noun_chunks as english_noun_chunks
from spacy.symbols import NOUN, PRON, PROPN
from spacy.tokens import Doc, Span, Token

# the UD relations (before any subtype) whose nominal dependents head a chunk
CHUNK_RELATIONS = frozenset({"nsubj", "obj", "iobj", "obl", "nmod", "appos", "root"})
NOT_CHUNK = frozenset({"nmod:poss"})
# left dependents that do not belong to the chunk of their head
OUTSIDE_LEFT = frozenset({"case", "cc", "punct", "mark", "cop", "aux", "advcl", "parataxis", "discourse",
                          "csubj", "dep", "cc:preconj"})
# labels only a UD parse has: a doc with one of them is chunked here
UD_ONLY = frozenset({"obj", "iobj", "obl", "cop", "flat", "fixed", "root", "nsubj:pass", "aux:pass", "nmod:poss",
                     "obl:tmod", "obl:npmod", "nmod:tmod", "compound:prt", "det:poss", "csubj:pass"})
NOMINAL_TAGS = ("NN", "PRP", "WP")  # for a doc with fine tags and no UPOS


def _relation(label: str) -> str:
    return label.split(":", 1)[0].lower()


def _is_nominal(word: Token) -> bool:
    if word.pos:
        return word.pos in (NOUN, PROPN, PRON)
    return word.tag_.startswith(NOMINAL_TAGS)


def _heads_chunk(word: Token) -> bool:
    return word.dep_ not in NOT_CHUNK and _relation(word.dep_) in CHUNK_RELATIONS


def _start(word: Token) -> int:
    """The first token of the chunk `word` heads."""
    start = word.i
    for child in word.lefts:
        if child.dep_.lower() not in OUTSIDE_LEFT and _relation(child.dep_) not in OUTSIDE_LEFT:
            start = min(start, child.left_edge.i)
    return start


def is_ud_parse(doc: Doc) -> bool:
    """Whether the doc's labels are UD's (its parse holds a label no ClearNLP parse has)."""
    return any(token.dep_ in UD_ONLY for token in doc)


def noun_chunks(doclike: Union[Doc, Span]) -> Iterator[Tuple[int, int, int]]:
    """(start, end, label) of the base noun phrases of a parsed doc or span."""
    doc = doclike.doc
    if not doc.has_annotation("DEP"):
        raise ValueError(Errors.E029)
    if not is_ud_parse(doc):
        yield from english_noun_chunks(doclike)
        return
    np_label = doc.vocab.strings.add("NP")
    prev_end = -1
    for word in doclike:
        if not _is_nominal(word) or word.is_space:
            continue
        head = word
        while head.dep_ == "conj" and head.head.i < head.i:
            head = head.head  # a conjunct chunks as the first of its conjuncts does
        if not (_heads_chunk(head) and (head is word or _is_nominal(head))):
            continue
        start = _start(word)
        if start <= prev_end:
            start = prev_end + 1
        if start > word.i:
            continue
        prev_end = word.i
        yield start, word.i + 1, np_label


def install(vocab) -> None:
    """Make `noun_chunks` the vocab's syntax iterator, unless it already has one of another language."""
    if vocab.get_noun_chunks in (None, english_noun_chunks):
        vocab.get_noun_chunks = noun_chunks
