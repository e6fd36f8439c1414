"""Universal POS tags (`token.pos_`) from what the tagger and the parser wrote.

In UD English the coarse tag is nearly a function of the fine tag, the dependency label and, for a few words,
the word: VBZ is AUX as `cop` or `aux` and VERB elsewhere, IN is SCONJ as `mark` and ADP as `case`, RB is PART
for `not`. Counted on EWT train, the most frequent UPOS of each (tag, label, lowercase word) seen 3 times or
more, else of each (tag, label), else of the tag, gives EWT dev's gold UPOS from its gold tags and labels 99.6 %
of the time (docs/decisions/measurement-log.md). So `sparse_upos` learns those three tables by counting at `initialize` (no weights,
no training steps) and looks every token up in them in one kernel call per batch (kernels/upos.py). spaCy's
`attribute_ruler` could hold the same rules as patterns, but it checked 152 of them at about 95k tokens/s, slower
than the pipeline it would end.
"""
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy import util
from spacy.attrs import DEP, IS_SPACE, LOWER, POS, TAG
from spacy.language import Language
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.parts_of_speech import SPACE
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

from ..runtime.compiled import upos_lookup
from ..kernels.layout import UPOS_MUL

FORMAT = "spacy-sparse-upos"
VERSION = 1
# a word's own row needs this many training tokens; rarer words take their (tag, label)'s
MIN_WORD_COUNT = 3
# bounds on what a file may hold (a hostile file costs bounded time and memory)
MAX_ROWS = 1_000_000


def _keys(tag: np.ndarray, dep: np.ndarray, lower: Optional[np.ndarray] = None) -> np.ndarray:
    """One uint64 key per (tag, label[, word]) of string ids (wrapping arithmetic, as kernels/upos.py)."""
    key = tag * UPOS_MUL + dep
    return key if lower is None else key * UPOS_MUL + lower


class UposTable:
    """The three lookup tables, as sorted keys and the UPOS symbol of each."""

    def __init__(self, rows: Sequence[Tuple[str, str, str, str]] = ()):
        self.rows = [tuple(r) for r in rows]  # (tag, dep, lower, pos); "" where a level does not look
        self._build()

    def _build(self) -> None:
        from spacy.strings import get_string_id  # a symbol's id (NOUN, nsubj, POS), else the string's hash

        def level_of(row: Tuple[str, ...]) -> int:
            return 0 if not row[1] else (1 if not row[2] else 2)

        def table(level: int) -> Tuple[np.ndarray, np.ndarray]:
            chosen = [r for r in self.rows if level_of(r) == level]
            if not chosen:
                return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)
            h = [[get_string_id(part) if part else 0 for part in r[:3]] for r in chosen]
            arr = np.array(h, dtype=np.uint64)
            keys = arr[:, 0] if level == 0 else _keys(arr[:, 0], arr[:, 1], arr[:, 2] if level == 2 else None)
            values = np.array([UPOS_IDS[r[3]] for r in chosen], dtype=np.uint64)
            order = np.argsort(keys, kind="stable")
            return keys[order], values[order]

        self.levels = [table(level) for level in range(3)]

    def lookup(self, columns: np.ndarray) -> np.ndarray:
        """UPOS symbols for rows of Doc.to_array([TAG, DEP, LOWER, POS, IS_SPACE]): the word's row, else the
        (tag, label)'s, else the tag's; the POS a token has already where it has no tag or a tag the tables never
        saw; SPACE for whitespace tokens, as spaCy's pipelines mark them (views.py)."""
        if columns.ndim != 2 or columns.shape[1] != 5:  # the kernel reads five columns and checks no bounds
            raise ValueError(f"UPOS lookup takes rows of TAG, DEP, LOWER, POS, IS_SPACE; got shape {columns.shape}")
        (k0, v0), (k1, v1), (k2, v2) = self.levels
        out = np.empty(columns.shape[0], dtype=np.uint64)
        upos_lookup(np.ascontiguousarray(columns, dtype=np.uint64), k0, v0, k1, v1, k2, v2, np.uint64(SPACE), out)
        return out

    @classmethod
    def count(cls, examples: Iterable[Example], min_word_count: int = MIN_WORD_COUNT) -> "UposTable":
        """The tables from the gold tag_, dep_ and pos_ of the examples' references: each key's most
        frequent UPOS (ties: the alphabetically first), and only the rows a coarser level gets wrong."""
        from collections import Counter, defaultdict

        counts: List[Dict[Tuple[str, ...], Counter]] = [defaultdict(Counter) for _ in range(3)]
        last = None
        for eg in examples:
            if eg.reference is last:  # a reader's second view of one doc (tokens = "both") counts once
                continue
            last = eg.reference
            for token in eg.reference:
                if not token.tag_ or not token.pos_:
                    continue
                counts[0][(token.tag_,)][token.pos_] += 1
                if token.dep_:
                    counts[1][(token.tag_, token.dep_)][token.pos_] += 1
                    # the LOWER that an English vocab gives at run time (a vocab without the
                    # language's getters, as spaCy's CoNLL-U reader makes, has none)
                    counts[2][(token.tag_, token.dep_, token.text.lower())][token.pos_] += 1

        def best(counter) -> str:
            return min(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0]

        by_tag = {k[0]: best(c) for k, c in counts[0].items()}
        by_dep = {k: best(c) for k, c in counts[1].items()}
        rows = [(tag, "", "", pos) for tag, pos in sorted(by_tag.items())]
        rows += [(k[0], k[1], "", pos) for k, pos in sorted(by_dep.items()) if pos != by_tag[k[0]]]
        rows += [(k[0], k[1], k[2], best(c)) for k, c in sorted(counts[2].items())
                 if sum(c.values()) >= min_word_count and best(c) != by_dep[k[:2]]]
        return cls(rows)

    def to_msg(self) -> Dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_msg(cls, msg: Any) -> "UposTable":
        if not isinstance(msg, dict) or msg.get("format") != FORMAT:
            raise ValueError("not a spacy-sparse UPOS table")
        if msg.get("version") != VERSION:
            raise ValueError(f"UPOS table version {msg.get('version')!r}; this build reads {VERSION}")
        rows = msg.get("rows")
        if not isinstance(rows, list) or len(rows) > MAX_ROWS:
            raise ValueError("the UPOS table's rows are missing or too many")
        for row in rows:
            if not (isinstance(row, list) and len(row) == 4 and all(isinstance(p, str) for p in row)):
                raise ValueError("a UPOS table row is not four strings")
            if row[3] not in UPOS_IDS or not row[0] or (row[2] and not row[1]):
                raise ValueError(f"a UPOS table row is not valid: {row!r}")
        return cls(rows)


class SparseUpos(Pipe):
    """Sets token.pos_ from token.tag_, token.dep_ and the word (see the module docstring); put it after the
    tagger and the parser."""

    def __init__(self, vocab: Vocab, name: str = "sparse_upos", *, min_word_count: int = MIN_WORD_COUNT,
                 scorer: Optional[Callable] = None):
        if not isinstance(min_word_count, int) or min_word_count < 1:
            raise ValueError(f"min_word_count must be an integer >= 1, got {min_word_count!r}")
        self.vocab = vocab
        self.name = name
        self.min_word_count = min_word_count
        self.scorer = scorer
        self.table: Optional[UposTable] = None

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        """Count the tables on the training examples' gold annotation."""
        table = UposTable.count(get_examples(), self.min_word_count)
        if not table.rows:
            raise ValueError(f"{self.name}: the training examples have no tokens with both tag_ and pos_")
        self.table = table

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        for docs in util.minibatch(stream, size=batch_size):
            self.set_annotations(docs)
            yield from docs

    def set_annotations(self, docs: Sequence[Doc]) -> None:
        if self.table is None:
            raise ValueError(f"{self.name} has no tables: initialize it (spacy train) or load a trained pipeline")
        docs = [doc for doc in docs if len(doc)]
        if not docs:
            return
        parts = [doc.to_array([TAG, DEP, LOWER, POS, IS_SPACE]).reshape(-1, 5) for doc in docs]
        pos = self.table.lookup(parts[0] if len(parts) == 1 else np.concatenate(parts))
        start = 0
        for doc in docs:
            own = pos[start:start + len(doc)]
            start += len(doc)
            doc.from_array([POS], own.reshape(-1, 1))

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        if self.scorer is not None:
            return self.scorer(examples, **kwargs)
        return Scorer.score_token_attr(examples, "pos", **kwargs)

    # ---- serialization: the table as msgpack data in the model files' checksummed envelope ----
    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        from .. import codec

        if self.table is None:
            raise ValueError(f"{self.name} has no tables to save")
        return codec.seal(self.table.to_msg())

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = tuple()) -> "SparseUpos":
        from .. import codec

        try:
            self.table = UposTable.from_msg(codec.unseal(data))
        except ValueError as err:
            raise ValueError(f"Cannot load {self.name!r}: {err}") from None
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        path = util.ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "table").write_bytes(self.to_bytes())

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "SparseUpos":
        path = util.ensure_path(path)
        table = path / "table"
        if not table.exists():
            raise ValueError(f"Cannot load {self.name!r}: {table} is missing")
        if table.stat().st_size > 64 * MAX_ROWS:
            raise ValueError(f"Cannot load {self.name!r}: {table} is larger than any UPOS table")
        return self.from_bytes(table.read_bytes())
