"""Docs as the kernels take them, and how a batch is shared out: over threads for prediction, in bounded runs
for training."""
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import ORTH, SENT_START
from spacy.tokens import Doc
from spacy.training import Example

from ..runtime.arrays import unique
from ..lexicon import Lexicon, WordRows

# below this many tokens per thread, threads cost more than they save
MIN_TOKENS_PER_THREAD = 2000

ZERO = np.zeros(1, dtype=np.int64)  # the start of a one-doc batch
# seg_new_doc of a batch of one doc in one segment, and of none (the kernels only read them)
ONE_DOC = np.ones(1, dtype=np.uint8)
NO_SEGMENTS = np.zeros(0, dtype=np.uint8)

# A training kernel gets room for every feature its batch could add: tokens x
# decisions x templates new rows of all labels, 16 bytes a cell (weights,
# averaging sums, AdaGrad sums). A batch whose room would pass this many
# cells (about 2 GB) is cut into runs of whole docs. The learner is online,
# so a tagger or NER learns exactly what one pass over the whole batch
# teaches (the parser draws its per-batch random choices per run).
# spacy train's batches stay far below it.
MAX_TRAIN_CELLS = 128_000_000


def token_chunks(examples: List[Example], max_tokens: int) -> List[List[Example]]:
    """Consecutive runs of examples with at most max_tokens predicted tokens
    each (a longer example makes a run of its own)."""
    parts: List[List[Example]] = [[]]
    n = 0
    for eg in examples:
        size = len(eg.predicted)
        if parts[-1] and n + size > max_tokens:
            parts.append([])
            n = 0
        parts[-1].append(eg)
        n += size
    return parts


def doc_spans(docs: Sequence[Doc], doc_off: np.ndarray) -> Iterator[Tuple[Doc, int, int]]:
    """(doc, start, end) for each doc with tokens: its rows [start, end) of
    a batch's flat arrays (doc_off as DocColumns has it), the offsets read
    once as Python ints rather than twice a doc from the array (a batch of
    one-line docs writes its labels doc by doc)."""
    bounds = doc_off.tolist()
    for doc, start, end in zip(docs, bounds, bounds[1:]):
        if end > start:
            yield doc, start, end


# the attributes a DocColumns reads, per tuple of attributes asked for (a few per component)
_ATTRS: Dict[Tuple[int, ...], Tuple[int, ...]] = {}


def _column_attrs(attrs: Sequence[int]) -> Tuple[int, ...]:
    """ORTH, SENT_START and then `attrs`, each once."""
    key = tuple(attrs)
    known = _ATTRS.get(key)
    if known is None:
        known = _ATTRS[key] = tuple(dict.fromkeys((ORTH, SENT_START) + key))
    return known


class DocColumns:
    """Token attributes of a batch's docs as one flat table (doc i's tokens
    are rows doc_off[i]:doc_off[i+1]), read with one Doc.to_array per doc.
    A call costs about a microsecond whatever its width, as much as labelling
    a short sentence: a call per attribute made a batch of one-sentence docs
    cost more in Python than in the kernels. ORTH and SENT_START are always
    read; `parts` gives the docs' arrays when the caller has them already.
    `looked_up` holds a lexicon's rows for the ORTH column once someone
    looked them up (views.Views does, to find whitespace tokens), so a
    DocBatch with the same lexicon does not look them up again. ORTH is
    column 0 of `table` (Lexicon.find_words reads it there)."""

    def __init__(self, docs: Sequence[Doc], attrs: Sequence[int] = (),
                 parts: Optional[List[np.ndarray]] = None):
        self.attrs = _column_attrs(attrs)
        if len(docs) == 1:  # nlp(text): a cumulative sum costs more than the doc's labelling
            self.doc_off = np.array((0, len(docs[0])), dtype=np.int64)
            self.lengths = self.doc_off[1:]
        else:
            self.lengths = np.array([len(doc) for doc in docs], dtype=np.int64)
            self.doc_off = np.zeros(len(docs) + 1, dtype=np.int64)
            np.cumsum(self.lengths, out=self.doc_off[1:])
        if parts is None:
            parts = [doc.to_array(self.attrs) for doc in docs if len(doc)]
        if len(parts) == 1:  # nlp(text): no copy
            self.table = parts[0]
        else:
            self.table = np.concatenate(parts) if parts else np.zeros((0, len(self.attrs)), dtype=np.uint64)
        self.looked_up: Optional[Tuple[Lexicon, WordRows]] = None

    def lex_rows(self, docs: Sequence[Doc], lexicon: Lexicon) -> WordRows:
        """The lexicon's rows for the ORTH column (Lexicon.find_words),
        looked up once per lexicon."""
        if self.looked_up is None or self.looked_up[0] is not lexicon:
            others = () if len(docs) == 1 and docs[0].vocab is lexicon.vocab else \
                list({id(d.vocab): d.vocab for d in docs if d.vocab is not lexicon.vocab}.values())
            self.looked_up = (lexicon, lexicon.find_words(self.table, others))
        return self.looked_up[1]

    def __getitem__(self, attr: int) -> np.ndarray:
        return self.table[:, self.attrs.index(attr)]

    def rows(self, i: int) -> np.ndarray:
        """Doc i's rows of the table."""
        return self.table[self.doc_off[i]:self.doc_off[i + 1]]

    def any_per_doc(self, mask: np.ndarray) -> np.ndarray:
        """Per doc, whether `mask` (one value per token) holds for any of its tokens."""
        if self.lengths.shape[0] == 1:
            return np.array([bool(mask.any())])
        out = np.zeros(self.lengths.shape[0], dtype=bool)
        out[np.repeat(np.arange(self.lengths.shape[0]), self.lengths)[mask]] = True
        return out

    def sent_starts(self) -> np.ndarray:
        """SENT_START per token (1 start, -1 not, 0 unset), as int64."""
        return self[SENT_START].view(np.int64)

    def _past_first(self, mask: np.ndarray) -> np.ndarray:
        if self.lengths.shape[0] == 1:  # nlp(text)
            return np.array([bool(mask[1:].any())])
        mask[self.doc_off[:-1][self.lengths > 0]] = False
        return self.any_per_doc(mask)

    def sents_set(self) -> np.ndarray:
        """Per doc, Doc.has_annotation("SENT_START"): a value set past the
        first token, or a doc of at most one token (a user hook aside)."""
        if self.lengths.shape[0] == 1:  # nlp(text)
            return np.array([self.table.shape[0] <= 1 or bool((self.sent_starts()[1:] != 0).any())])
        return self._past_first(self.sent_starts() != 0) | (self.lengths <= 1)

    def sents_complete(self) -> np.ndarray:
        """Per doc, whether every token's sentence start is set (the first
        token's need not be; an empty doc: no)."""
        if self.lengths.shape[0] == 1:  # nlp(text)
            return np.array([self.table.shape[0] > 0 and not (self.sent_starts()[1:] == 0).any()])
        return (self.lengths > 0) & ~self._past_first(self.sent_starts() == 0)


class DocBatch:
    """Tokens of several docs as flat arrays (the kernels' input).

    `doc_off` delimits docs; `seg_off` delimits the segments the kernels
    label one at a time: the sentences of a doc whose sentence boundaries are
    set (by a senter, a parser, the user or gold preprocessing), else the
    whole doc. Context windows and label history do not cross a segment edge.
    With `by_sents=False` every doc is one segment (the sentence segmenter,
    which sets the boundaries, reads across them). `columns` holds what the
    docs give as arrays (read here unless the caller has them).
    """

    def __init__(self, docs: Sequence[Doc], lexicon: Lexicon, by_sents: bool = True,
                 columns: Optional[DocColumns] = None):
        self.columns = columns = DocColumns(docs) if columns is None else columns
        self.doc_off = columns.doc_off
        self.n_tokens = int(self.doc_off[-1])
        found = columns.lex_rows(docs, lexicon)
        self.lex_rows, self.lex, self.lex_generation = found.rows, found.values, found.generation
        self.lex_top = found.top  # the highest lexicon row among the tokens (-1: no token)
        one = len(columns.lengths) == 1  # nlp(text): fewer array calls, the same segments
        # a start set past a doc's first token means the doc has its sentences
        if one and (not by_sents or not (columns.sent_starts()[1:] == 1).any()):  # labelled whole: one segment
            self.seg_off = columns.doc_off if self.n_tokens else ZERO
            self.seg_new_doc = ONE_DOC if self.n_tokens else NO_SEGMENTS
            return
        # the position after the last token closes the last segment
        starts = np.zeros(self.n_tokens + 1, dtype=bool)
        if by_sents:
            np.equal(columns.sent_starts(), 1, out=starts[:-1])
        doc_starts = ZERO if one else self.doc_off[:-1][columns.lengths > 0]
        starts[doc_starts] = True
        starts[-1] = True
        self.seg_off = starts.nonzero()[0].astype(np.int64, copy=False)
        self.seg_new_doc = np.zeros(self.seg_off.shape[0] - 1, dtype=np.uint8)
        if one:
            self.seg_new_doc[0] = 1
        else:
            self.seg_new_doc[np.searchsorted(self.seg_off[:-1], doc_starts)] = 1


class SegmentPool:
    """Labels a batch's docs on up to n threads. Docs are independent and
    each thread writes its own tokens, so the result does not depend on the
    number of threads. The executor is made on first use and remade when the
    thread count changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._size = 0

    def _get(self, n_threads: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None or self._size != n_threads:
                old = self._executor
                self._executor = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="spacy-sparse")
                self._size = n_threads
                if old is not None:
                    old.shutdown(wait=False)
            return self._executor

    def run(self, batch: DocBatch, n_threads: int, run: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """Call run(seg_off_part, seg_new_doc_part) on contiguous runs of
        whole docs, one per thread (or once, on the calling thread, for a
        small batch or one thread)."""
        seg_off, new_doc = batch.seg_off, batch.seg_new_doc
        if n_threads <= 1 or seg_off[-1] < MIN_TOKENS_PER_THREAD * 2:
            run(seg_off, new_doc)
            return
        doc_starts = np.flatnonzero(new_doc)
        n_threads = min(n_threads, len(doc_starts))
        if n_threads <= 1:
            run(seg_off, new_doc)
            return
        executor = self._get(n_threads)
        # cut at the doc starts nearest to equal shares of tokens
        targets = np.linspace(0, seg_off[-1], n_threads + 1)[1:-1]
        at = doc_starts[np.searchsorted(seg_off[doc_starts], targets).clip(0, len(doc_starts) - 1)]
        cuts = unique(np.concatenate([[0], at, [len(seg_off) - 1]]))
        parts = [(seg_off[a:b + 1], new_doc[a:b]) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
        for future in [executor.submit(run, *part) for part in parts]:
            future.result()
