"""Sentence starts by kind: which reference starts a segmenter found, told apart by whether the treebank starts
a paragraph there and whether a sentence-final mark comes before it (`bench` reports them per kind)."""
from typing import Any, Dict, Sequence, Set

from spacy.tokens import Doc, Token

from .readers import PARAGRAPHS_KEY


# sentence-final marks, and what may stand between one and the next sentence
FINAL_MARKS = frozenset(".!?")
CLOSERS = frozenset({'"', "'", "''", ")", "]", "\u201d", "\u2019"})
BOUNDARY_KINDS = ("paragraph start after . ! ?", "paragraph start, no mark", "in a paragraph after . ! ?",
                  "in a paragraph, no mark")


def boundary_kind(ref: Doc, token: Token, paragraphs: Set[int]) -> str:
    """Which of BOUNDARY_KINDS a reference sentence start is: whether the
    treebank starts a paragraph there (which a text on one line does not
    show) and whether the words before it end in a sentence-final mark
    (a closing quote or bracket may follow the mark)."""
    i = token.i - 1
    while i > 0 and ref[i].text in CLOSERS:
        i -= 1
    marked = ref[i].text[-1:] in FINAL_MARKS
    return BOUNDARY_KINDS[(0 if token.i in paragraphs else 2) + (0 if marked else 1)]


def boundary_recall(docs: Sequence[Doc], references: Sequence[Doc]) -> Dict[str, Any]:
    """Reference sentence starts (after each doc's first token) found and
    missed by kind (boundary_kind), and the starts predicted where the
    reference has none, matched by character offset (docs of the references'
    own text). The docs' paragraph starts are convert-ud's
    (readers.PARAGRAPHS_KEY)."""
    kinds = {k: {"gold": 0, "found": 0} for k in BOUNDARY_KINDS}
    false_starts = 0
    for doc, ref in zip(docs, references):
        if doc.text != ref.text:
            raise ValueError("Boundaries are matched by character offset: the doc must hold the reference's text")
        paragraphs = set(ref.user_data.get(PARAGRAPHS_KEY, ()))
        found = {t.idx for t in doc if t.i and t.is_sent_start}
        gold = set()
        for token in ref:
            if token.i and token.is_sent_start:
                gold.add(token.idx)
                counts = kinds[boundary_kind(ref, token, paragraphs)]
                counts["gold"] += 1
                counts["found"] += token.idx in found
        false_starts += len(found - gold)
    return {"kinds": kinds, "false_starts": false_starts}
