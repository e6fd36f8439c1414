"""Whitespace tokens, which the models never see.

spaCy's tokenizer makes a token of any whitespace but one plain space after a
word: a line break, a blank line, a second space, a tab. Such a token is not
a word, and a model that reads it as one tags it, parses it and lets it end
or start sentences. Each component reads a view of a doc with those tokens
left out instead: the same words, the whitespace folded into the gap after
the word before, which the `space` atoms read as a class (GAP_*: a line break
says more about a sentence end than a space does). The view's predictions are
then copied back, and whitespace tokens get what spaCy's own components give
them (its v2 space policy): tag "_SP", POS SPACE, the label "dep" on the word
before (on the word after at the start of a doc, or of a sentence a start set
on the whitespace opens), no sentence start unless one was set on it, and no
entity unless one runs on both sides (entities set before stay as they were).

A doc without whitespace tokens is its own view: nothing is copied.
"""
import threading
import weakref
from collections import OrderedDict
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import DEP, ENT_IOB, ENT_TYPE, HEAD, IS_SPACE, LEMMA, MORPH, ORTH, POS, SENT_START, SPACY, TAG
from spacy.parts_of_speech import SPACE
from spacy.tokens import Doc
from spacy.training import Example

from ..runtime.arrays import unique
from ..lexicon import SPACE_COLUMN, Lexicon, WordRows
from .batching import DocColumns

# the class of the whitespace after a token, as `space` atoms read it; a doc
# without whitespace tokens gives SPACY itself (GAP_NONE or GAP_SPACES)
GAP_NONE, GAP_SPACES, GAP_LINE, GAP_BLANK_LINE = 0, 1, 2, 3
GAP_KEY = "spacy_sparse.gap"
SPACE_TAG = "_SP"
SPACE_DEP = "dep"
# annotation a later component reads from the view (the tags, sentence starts, preset entities)
CARRIED = (TAG, POS, SENT_START, ENT_IOB, ENT_TYPE)
CARRIED_NAMES = ("TAG", "POS", "SENT_START", "ENT_IOB", "ENT_TYPE")


def line_breaks(text: str) -> int:
    """Line breaks in a run of whitespace ("\\r\\n" is one)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _view(doc: Doc, keep: np.ndarray) -> Doc:
    """The doc without its whitespace tokens, with the annotation later
    components read (_carry), and the gap classes in user_data[GAP_KEY]."""
    n = len(doc)
    space = np.ones(n, dtype=bool)
    space[keep] = False
    # line breaks per whitespace token (a word's own trailing whitespace is one space at most)
    breaks = np.zeros(n + 1, dtype=np.int64)
    for j in np.flatnonzero(space).tolist():
        breaks[j + 1] = line_breaks(doc[j].text_with_ws)
    total = np.cumsum(breaks)
    ends = np.append(keep[1:], n)  # the next word's position (or the doc's end)
    lines = total[ends] - total[keep + 1]
    spaced = doc.to_array(SPACY).astype(bool)[keep] | (ends > keep + 1)
    gaps = np.where(lines >= 2, GAP_BLANK_LINE, np.where(lines == 1, GAP_LINE, spaced.astype(np.int64)))
    strings = doc.vocab.strings
    view = Doc(doc.vocab, words=[strings[o] for o in doc.to_array(ORTH)[keep].tolist()],
               spaces=(gaps != GAP_NONE).tolist())
    view.user_data[GAP_KEY] = gaps.astype(np.uint64)
    _carry(doc, view, keep, fresh=True)
    return view


def _carry(doc: Doc, view: Doc, keep: np.ndarray, fresh: bool) -> None:
    """Give the view the doc's annotation of CARRIED. A view made before (not
    `fresh`) also loses what the doc lacks (it is written as unset), so it
    reads as a new one would."""
    attrs = [a for a, name in zip(CARRIED, CARRIED_NAMES)
             if doc.has_annotation(name) or (not fresh and view.has_annotation(name))]
    if not attrs:
        return
    if (ENT_IOB in attrs) != (ENT_TYPE in attrs):  # entity marks all O have no type
        attrs = [a for a in attrs if a not in (ENT_IOB, ENT_TYPE)] + [ENT_IOB, ENT_TYPE]
    values = doc.to_array(attrs).reshape(len(doc), -1)
    if SENT_START in attrs and doc.has_annotation("SENT_START"):
        col = values[:, attrs.index(SENT_START)].view(np.int64)
        # a start set on whitespace moves to the next word; the view's first word starts its doc
        moved = np.searchsorted(keep, np.flatnonzero(col[: len(doc)] == 1))
        col[keep[moved[moved < len(keep)]]] = 1
        col[keep[0]] = 1
    kept = np.ascontiguousarray(values[keep])
    if ENT_IOB in attrs:
        kept[:, [attrs.index(ENT_IOB), attrs.index(ENT_TYPE)]] = valid_iob(
            kept[:, [attrs.index(ENT_IOB), attrs.index(ENT_TYPE)]])
    view.from_array(attrs, kept)


class _ViewCache:
    """The views made for the docs of the last batches, so that the next
    component reuses a doc's view instead of making it again: a new Doc per
    component and doc was a large part of a pipeline's time on text with
    line breaks (UD's raw-text layout, most files `tag` reads). A view
    is reused only for the very doc it was made of (a weak reference, so no
    doc is kept alive), with the same words and spaces (ORTH and SPACY as
    they were); its annotation is carried again from the doc (_carry), so it
    reads as a new view would. Entries go when their doc goes, and past
    MAX_TOKENS of views held the oldest go."""

    MAX_TOKENS = 200_000

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a weak reference's callback may run inside a locked section
        self._entries: "OrderedDict[int, Tuple[Any, Doc, np.ndarray]]" = OrderedDict()
        self._tokens = 0

    def get(self, doc: Doc, words: np.ndarray) -> Optional[Doc]:
        """The view made of `doc` when its ORTH and SPACY were `words`, or None."""
        with self._lock:
            entry = self._entries.get(id(doc))
        if entry is None or entry[0]() is not doc or not np.array_equal(entry[2], words):
            return None
        return entry[1]

    def put(self, doc: Doc, view: Doc, words: np.ndarray) -> None:
        key = id(doc)

        def gone(_: Any, key: int = key) -> None:
            self._drop(key)

        with self._lock:
            self._drop(key)
            self._entries[key] = (weakref.ref(doc, gone), view, words)
            self._tokens += len(view)
            while self._tokens > self.MAX_TOKENS and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: int) -> None:
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None:
                self._tokens -= len(entry[1])


SHARED_VIEWS = _ViewCache()


class Views:
    """The docs as the models read them, how to write their annotation
    back, and `columns`: the views' attributes in `attrs` (and ORTH,
    SENT_START) as batching.DocColumns, read with one array call per doc."""

    def __init__(self, docs: Sequence[Doc], attrs: Sequence[int] = (), lexicon: Optional[Lexicon] = None,
                 shared: bool = False):
        # with a lexicon, whitespace tokens are found through the word types' rows, which the batch needs
        # anyway, instead of a column of IS_SPACE (a lexeme flag Doc.to_array reads at ~19 ns a token)
        if lexicon is None:
            columns = DocColumns(docs, (IS_SPACE,) + tuple(attrs))
            space = columns[IS_SPACE] != 0
        else:
            # a shared view is checked against the doc's words and spaces: SPACY comes with the one array call
            columns = DocColumns(docs, tuple(attrs) + ((SPACY,) if shared else ()))
            found = columns.lex_rows(docs, lexicon)
            rows, values, generation = found.rows, found.values, found.generation
            # most batches have no whitespace token (the lookup counted them): every doc is its own view
            space = values[rows, SPACE_COLUMN] != 0 if found.spaces else None
        self.sources: List[Doc] = list(docs)  # the docs the views were made of
        self.docs: List[Doc] = list(docs)
        # per doc: the positions of its words (None: the doc is its own view)
        self.keep: List[Optional[np.ndarray]] = [None] * len(self.docs)
        self.columns = columns
        if space is None or not space.any():
            return
        spaced = columns.any_per_doc(space)
        parts = []
        for i in range(len(self.docs)):
            if not spaced[i]:
                if columns.lengths[i]:
                    parts.append(columns.rows(i))
                continue
            doc = self.docs[i]
            keep = np.flatnonzero(~space[columns.doc_off[i]:columns.doc_off[i + 1]])
            view = None
            if shared and len(keep):  # (with SHARED_VIEWS: predictions, whose views no training step changes)
                words = columns.rows(i)[:, [columns.attrs.index(ORTH), columns.attrs.index(SPACY)]]
                # the same words: the same whitespace tokens (a lexeme flag), so the same `keep`
                view = SHARED_VIEWS.get(doc, words)
                if view is not None:
                    _carry(doc, view, keep, fresh=False)
            if view is None:
                view = _view(doc, keep) if len(keep) else Doc(doc.vocab)
                if shared and len(keep):
                    SHARED_VIEWS.put(doc, view, words)
            self.keep[i] = keep
            self.docs[i] = view
            if len(keep):
                parts.append(view.to_array(columns.attrs).reshape(len(view), -1))
        self.columns = DocColumns(self.docs, columns.attrs, parts)
        if lexicon is not None:  # the views' tokens are the words, in order
            words = rows[~space]
            self.columns.looked_up = (lexicon, WordRows(words, values, generation, 0,
                                                        int(words.max()) if words.shape[0] else -1))

    @property
    def trivial(self) -> bool:
        return all(k is None for k in self.keep)

    def write_back(self, docs: Sequence[Doc], what: str) -> None:
        """Copy what a component wrote on the views onto `docs` (the docs the
        views were made of), with the whitespace tokens' own values."""
        for doc, view, keep in zip(docs, self.docs, self.keep):
            if keep is not None:
                WRITE_BACK[what](doc, view, keep)


def visible_examples(examples: Sequence[Example]) -> List[Example]:
    """The examples with their predicted docs as the models read them."""
    views = Views([eg.predicted for eg in examples])
    if views.trivial:
        return list(examples)
    return [eg if keep is None else Example(view, eg.reference)
            for eg, view, keep in zip(examples, views.docs, views.keep)]


def _token_values(doc: Doc, view: Doc, keep: np.ndarray, attr: int, space_value: int) -> None:
    out = np.full((len(doc), 1), space_value, dtype=np.uint64)
    if len(keep):
        out[keep, 0] = view.to_array(attr)
    doc.from_array([attr], out)


def _tags(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    _token_values(doc, view, keep, TAG, doc.vocab.strings.add(SPACE_TAG))


def _pos(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    _token_values(doc, view, keep, POS, SPACE)


def _morph(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    _token_values(doc, view, keep, MORPH, 0)  # whitespace has no features


def _lemma(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    """Whitespace tokens are their own lemma."""
    out = doc.to_array([ORTH]).reshape(-1, 1).astype(np.uint64)
    if len(keep):
        out[keep, 0] = view.to_array(LEMMA)
    doc.from_array([LEMMA], out)


class _Gaps:
    """Where a doc's whitespace tokens are, relative to its words and to the
    sentence starts set on it when a component writes back."""

    def __init__(self, doc: Doc, keep: np.ndarray):
        n = len(doc)
        self.at = np.arange(n)
        self.space = np.ones(n, dtype=bool)
        self.space[keep] = False
        # the word before each token (-1: none) and the word after it (-1: none)
        before = np.maximum.accumulate(np.where(self.space, -1, self.at))
        self.before = np.concatenate([[-1], before[:-1]])
        self.after = np.append(keep, -1)[np.searchsorted(keep, self.at, side="right")]
        self.starts = doc.to_array(SENT_START).view(np.int64) if doc.has_annotation("SENT_START") \
            else np.zeros(n, dtype=np.int64)
        # whitespace opens a sentence where a start is set on it, or on whitespace before it since the last
        # word (as a user may set one); whitespace before a doc's first word opens the doc
        marked = np.maximum.accumulate(np.where(self.space & (self.starts == 1), self.at, -1))
        self.opens = self.space & ((marked > self.before) | (self.before < 0))
        # the first token of the sentence such whitespace opens
        self.opener = np.where(marked > self.before, marked, 0)


def _sents(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    g = _Gaps(doc, keep)
    out = np.where(g.opens & (g.opener == g.at), 1, -1).astype(np.int64)
    if len(keep):
        out[keep] = view.to_array(SENT_START).view(np.int64)
        # the word after whitespace that opened a sentence does not start one again, unless a start was set on it
        firsts = unique(g.after[g.opens & (g.after >= 0)])
        out[firsts] = np.where(g.starts[firsts] == 1, 1, -1)
    out[0] = 1
    doc.from_array([SENT_START], out.view(np.uint64).reshape(-1, 1))


def _parse(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    g = _Gaps(doc, keep)
    head = g.at.copy()
    dep = np.full(len(doc), doc.vocab.strings.add(SPACE_DEP), dtype=np.uint64)
    if len(keep):
        values = view.to_array([HEAD, DEP]).reshape(-1, 2)
        head[keep] = keep[np.arange(len(keep)) + values[:, 0].view(np.int64)]
        dep[keep] = values[:, 1]
    # whitespace hangs on the word before it; whitespace that opens a sentence on the word after it, unless
    # that word starts a sentence of its own: then the whitespace is a sentence, rooted where it opens
    back = g.space & ~g.opens
    head[back] = g.before[back]
    alone = g.opens & ((g.after < 0) | (g.starts[np.maximum(g.after, 0)] == 1))
    ahead = g.opens & ~alone
    head[ahead] = g.after[ahead]
    head[alone] = g.opener[alone]
    dep[alone & (head == g.at)] = doc.vocab.strings.add("ROOT")
    doc.from_array([HEAD, DEP], np.stack([(head - g.at).view(np.uint64), dep], axis=1))


def _ents(doc: Doc, view: Doc, keep: np.ndarray) -> None:
    n = len(doc)
    before = doc.to_array([ENT_IOB, ENT_TYPE]).reshape(-1, 2)
    out = np.zeros((n, 2), dtype=np.uint64)
    out[:, 0] = 2  # O
    if len(keep):
        values = view.to_array([ENT_IOB, ENT_TYPE]).reshape(-1, 2)
        out[keep] = values
        # whitespace inside an entity (the next word continues it) belongs to it
        space = np.flatnonzero(~np.isin(np.arange(n), keep))
        nxt = np.searchsorted(keep, space)
        inside = nxt < len(keep)
        space, nxt = space[inside], nxt[inside]
        cont = values[nxt, 0] == 1
        out[space[cont]] = values[nxt[cont]]
    # entities set before the component ran stay as they were, whitespace and all
    preset = np.isin(before[:, 0], (1, 3))
    out[preset] = before[preset]
    doc.from_array([ENT_IOB, ENT_TYPE], valid_iob(out))


def valid_iob(values: np.ndarray) -> np.ndarray:
    """(ENT_IOB, ENT_TYPE) rows with an I that continues no entity of its
    type made a B (a view may cut an entity's first token off)."""
    iob, typ = values[:, 0], values[:, 1]
    prev_in = np.zeros(len(iob), dtype=bool)
    prev_in[1:] = np.isin(iob[:-1], (1, 3)) & (typ[:-1] == typ[1:])
    values[(iob == 1) & ~prev_in, 0] = 3
    return values


# what each component writes (SparsePipe.writes) -> how it is copied back
WRITE_BACK = {"tag": _tags, "pos": _pos, "morph": _morph, "lemma": _lemma, "sents": _sents, "parse": _parse,
              "ents": _ents}
