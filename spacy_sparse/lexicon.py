"""Lexical atoms per word type, computed once and looked up by numba.

Every lexical atom (lowercase form, affixes, shape, flags) depends on the
word form only, so a table keyed by the ORTH hash holds one row of atom
values per word type. A batch maps its tokens' ORTH hashes to rows in a
kernel; only word types never seen before go through Python, once.

Values are spaCy string hashes (stable across processes), so a model
trained in one process reads the same atoms in another.

The components of one pipeline share the part of a row that depends on
the word form alone (FormGroup): each adds its own ambiguity classes and
word clusters to it, so a new word type is spelled out once per pipeline.

Thread safety: readers take a snapshot of (keys, rows, values) without a
lock; a writer adds new word types under a lock and publishes a new
snapshot, never mutating one a reader might hold.
"""
import re
import threading
import weakref
from typing import Any, Dict, Iterable, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from spacy.strings import get_string_id
from spacy.vocab import Vocab

from . import clusters as word_clusters
from .runtime.arrays import unique
from .runtime.compiled import fill_tables, find_words
from .kernels.layout import capacity_for, new_table
from .templates import LEX_ATTRS

# Past this many word types the cache starts afresh, so streaming a huge
# corpus keeps memory bounded.
MAX_TYPES = 2_000_000


def _hash(text: str) -> int:
    return get_string_id(text) if text else 0


# lexical_atoms writes its values in this order
_ORDER = ("orth", "lower", "norm", "shape", "pre1", "pre2", "pre3", "pre4", "suf1", "suf2", "suf3", "suf4",
          "is_title", "is_upper", "like_num", "has_hyphen", "has_digit", "is_punct", "amb", "cshape")
if LEX_ATTRS != _ORDER + tuple(name for name, _ in word_clusters.PREFIXES) + (word_clusters.CASEFREQ,
                                                                           word_clusters.WNPOS, "is_space"):
    raise ImportError("lexicon.lexical_atoms is out of step with templates.LEX_ATTRS")
SPACE_COLUMN = LEX_ATTRS.index("is_space")
# the columns a component's own tables fill in: its ambiguity classes and its word clusters
AMB_COLUMN = _ORDER.index("amb")
LOWER_COLUMN = _ORDER.index("lower")
CLUSTER_COLUMNS = slice(len(_ORDER), len(LEX_ATTRS) - 1)


def lexical_atoms(vocab: Vocab, text: str, classes: Optional[Dict[int, int]] = None,
                  clusters: Optional[word_clusters.ClusterTable] = None) -> Tuple[int, ...]:
    """Atom values of one word form, in the column order of LEX_ATTRS
    (lexical_atom_rows for one form)."""
    return tuple(lexical_atom_rows(vocab, [text], classes, clusters)[0].tolist())


# Hashes of short strings (affixes, collapsed shapes), which recur from word type to word type: a dict
# lookup costs an eighth of hashing again. Only strings of up to SHORT characters are kept, and the dict is
# cleared when full, so a long or hostile stream keeps it bounded.
_SHORT_HASHES: Dict[str, int] = {}
MAX_SHORT_HASHES = 1 << 18
SHORT = 16


def _short_hash(text: str) -> int:
    if len(text) > SHORT:
        return _hash(text)
    h = _SHORT_HASHES.get(text)
    if h is None:
        if len(_SHORT_HASHES) >= MAX_SHORT_HASHES:
            _SHORT_HASHES.clear()
        h = _SHORT_HASHES[text] = _hash(text)
    return h


def lexical_atom_rows(vocab: Vocab, texts: Sequence[str], classes: Optional[Dict[int, int]] = None,
                      clusters: Optional[word_clusters.ClusterTable] = None) -> np.ndarray:
    """Atom values of word forms, a row each in the column order of
    LEX_ATTRS. `classes` maps a lowercase form's hash to its ambiguity class
    value, `clusters` a form's folded hash to its cluster path, casefreq code
    and WordNet readings (clusters.py). Runs once per new word type: the
    per-form part in Python, the cluster table searched for all forms at
    once (clusters.atom_value_rows)."""
    classes = classes or {}
    rows = []
    for text in texts:
        lex = vocab[text]
        lower = _hash(text.lower())
        rows.append((
            _hash(text), lower, lex.norm, lex.shape,
            _short_hash(text[:1]), _short_hash(text[:2]), _short_hash(text[:3]), _short_hash(text[:4]),
            _short_hash(text[-1:]), _short_hash(text[-2:]), _short_hash(text[-3:]), _short_hash(text[-4:]),
            int(text.istitle()), int(text.isupper()), int(lex.like_num), int("-" in text),
            int(any(c.isdigit() for c in text)), int(lex.is_punct),
            classes.get(lower, 0),
            _short_hash(collapsed_shape(text)),
            int(lex.is_space),
        ))
    own = np.array(rows, dtype=np.uint64).reshape(len(texts), -1)
    table = clusters if clusters is not None else word_clusters.EMPTY
    clustered = word_clusters.atom_value_rows(table, texts, own[:, 0], own[:, 1])
    return np.concatenate([own[:, :-1], clustered, own[:, -1:]], axis=1)


_ASCII_CLASS = str.maketrans({chr(i): ("A" if chr(i).isupper() else "a" if chr(i).islower()
                                       else "0" if chr(i).isdigit() else chr(i)) for i in range(128)})
_RUN = re.compile(r"(.)\1+", re.DOTALL)


def _run_char(match: "re.Match[str]") -> str:
    # a function, not the template r"\1": re expands a template per match in Python, 4x slower per word
    return match.group(1)


def collapsed_shape(text: str) -> str:
    """Collins' word shape: upper -> A, lower -> a, digit -> 0, anything else
    kept, with runs of the same class collapsed to one."""
    if text.isascii():
        return _RUN.sub(_run_char, text.translate(_ASCII_CLASS))
    out = []
    for ch in text:
        c = "A" if ch.isupper() else "a" if ch.islower() else "0" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


class FormGroup:
    """The lexicons of one vocab (a pipeline's components). With two or
    more of them, the atoms that depend on the word form alone (no
    ambiguity classes, no clusters) are computed once for all, in `forms`,
    made when first needed; a lexicon alone computes its rows itself and
    keeps no second table."""

    def __init__(self) -> None:
        self.members: "weakref.WeakSet[Lexicon]" = weakref.WeakSet()
        self._forms: Optional["Lexicon"] = None
        self._lock = threading.Lock()

    def forms(self, vocab: Vocab) -> Optional["Lexicon"]:
        """The shared table, or None while a single lexicon is in the group."""
        if len(self.members) < 2:
            return None
        with self._lock:
            if self._forms is None:
                self._forms = Lexicon(vocab, shared=False)
            return self._forms


# vocab.lookups -> a weak reference to its lexicons' FormGroup. Keyed by the lookups because a Vocab takes no
# weak reference; both references are weak, so a group lives as long as one of its lexicons and an entry goes
# with its vocab.
_GROUPS: "weakref.WeakKeyDictionary[Any, weakref.ReferenceType]" = weakref.WeakKeyDictionary()
_GROUPS_LOCK = threading.Lock()


def join_group(lexicon: "Lexicon") -> FormGroup:
    """Add a lexicon to the group of its vocab's lexicons."""
    with _GROUPS_LOCK:
        ref = _GROUPS.get(lexicon.vocab.lookups)
        group = ref() if ref is not None else None
        if group is None:
            group = FormGroup()
            _GROUPS[lexicon.vocab.lookups] = weakref.ref(group)
        group.members.add(lexicon)
        return group


def add_keys(tab: np.ndarray, n_after: int, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Put keys -> rows into a table of one range at slot 0 (kernels/hashing.py), in place while `n_after` keys
    keep it at most half full, else into a new, larger table holding every key; returns the table. Key 0 marks
    an empty slot, so it is put as 1 (the finding kernels ask for it so)."""
    keys = np.where(keys == 0, np.uint64(1), keys).astype(np.uint64)
    if 2 * n_after + 2 > tab.shape[0] // 2:
        held, held_rows = tab[0::2], tab[1::2]
        used = held != 0
        keys = np.concatenate([held[used], keys])
        rows = np.concatenate([held_rows[used].astype(np.int64), rows])
        tab = new_table(capacity_for(2 * n_after))
    fill_tables(np.zeros(len(keys), dtype=np.int32), keys, rows, np.array([0, tab.shape[0] // 2], dtype=np.int64),
                tab)
    return tab


class WordRows(NamedTuple):
    """Lexicon.find_words: the rows of a batch's tokens, the value table
    they index, the generation of its numbering; how many tokens are
    whitespace, and the highest row (-1: none)."""

    rows: np.ndarray
    values: np.ndarray
    generation: int
    spaces: int
    top: int


class Lexicon:
    """ORTH hash -> row of lexical atom values, grown on demand."""

    def __init__(self, vocab: Vocab, classes: Optional[Dict[int, int]] = None, shared: bool = True):
        self.vocab = vocab
        self.classes = dict(classes or {})
        self.clusters = word_clusters.EMPTY
        # the other lexicons of this vocab, with which it shares the atoms of word forms (FormGroup)
        self._group = join_group(self) if shared else None
        self._lock = threading.Lock()
        self._generation = 0
        self._reset()

    def set_classes(self, classes: Dict[int, int]) -> None:
        """Use a model's ambiguity classes; cached rows are recomputed."""
        with self._lock:
            if classes != self.classes:
                self.classes = dict(classes)
                self._reset()

    def set_clusters(self, clusters: word_clusters.ClusterTable) -> None:
        """Use a model's word clusters; cached rows are recomputed."""
        with self._lock:
            if clusters != self.clusters:
                self.clusters = clusters
                self._reset()

    def _reset(self) -> None:
        cap = 1024
        # counts resets: rows are numbered afresh, so caches keyed by row go
        # stale; part of the snapshot, so a batch knows which numbering it has
        self._generation += 1
        self._n = 0
        self._snapshot = (new_table(cap), np.zeros((cap // 2 + 1, len(LEX_ATTRS)), dtype=np.uint64),
                          self._generation)

    def __len__(self) -> int:
        return self._n

    @property
    def generation(self) -> int:
        return self._snapshot[2]

    def lookup(self, orths: np.ndarray, other_vocabs: Sequence[Vocab] = ()) -> Tuple[np.ndarray, np.ndarray, int]:
        """Rows for ORTH hashes, adding unseen word types. Returns the rows,
        the value table they index and the generation of their numbering
        (a consistent snapshot). The strings of new types come from the
        pipeline's vocab or, for docs made with another vocab, from
        `other_vocabs` (a hash names the same string in every vocab)."""
        found = self.find_words(np.ascontiguousarray(orths, dtype=np.uint64).reshape(-1, 1), other_vocabs)
        return found.rows, found.values, found.generation

    def find_words(self, table: np.ndarray, other_vocabs: Sequence[Vocab] = ()) -> "WordRows":
        """lookup of the ORTH hashes in column 0 of a batch's token table
        (C-ordered uint64, as Doc.to_array gives it), with what a batch asks
        of the rows besides: how many are whitespace, and the highest."""
        tab, values, generation = self._snapshot
        out = np.empty(table.shape[0], dtype=np.int64)
        missing, spaces, top = find_words(tab, tab.shape[0] // 2, table, values, SPACE_COLUMN, out)
        if missing:
            with self._lock:
                tab, values, generation = self._snapshot
                missing, spaces, top = find_words(tab, tab.shape[0] // 2, table, values, SPACE_COLUMN, out)
                if missing:
                    self._add(unique(table[:, 0][out < 0]), other_vocabs)
                    tab, values, generation = self._snapshot
                    missing, spaces, top = find_words(tab, tab.shape[0] // 2, table, values, SPACE_COLUMN, out)
        return WordRows(out, values, generation, spaces, top)

    def _rows_of(self, orths: np.ndarray, texts: Sequence[str], other_vocabs: Sequence[Vocab]) -> np.ndarray:
        """The rows of new word types: lexical_atom_rows, from the shared
        rows of their forms when this table has them."""
        forms = self._group.forms(self.vocab) if self._group is not None else None
        if forms is None:
            return lexical_atom_rows(self.vocab, texts, self.classes, self.clusters)
        rows, values, _ = forms.lookup(orths, other_vocabs)
        fresh = values[rows]  # a copy: the shared rows stay as they are
        if self.classes:
            fresh[:, AMB_COLUMN] = [self.classes.get(lower, 0) for lower in fresh[:, LOWER_COLUMN].tolist()]
        if self.clusters is not word_clusters.EMPTY:
            fresh[:, CLUSTER_COLUMNS] = word_clusters.atom_value_rows(self.clusters, texts, fresh[:, 0],
                                                                       fresh[:, LOWER_COLUMN])
        return fresh

    def _text(self, orth: int, other_vocabs: Sequence[Vocab]) -> str:
        if orth in self.vocab.strings:
            return self.vocab.strings[orth]
        for vocab in other_vocabs:
            if orth in vocab.strings:
                return vocab.strings[orth]
        raise ValueError(f"A token's text (hash {orth}) is in no vocab the docs came with: make docs with the "
                         "pipeline's own vocab (nlp.make_doc or Doc(nlp.vocab, ...))")

    def _add(self, new_orths: np.ndarray, other_vocabs: Sequence[Vocab] = ()) -> None:
        """Add word types under the lock. Rows and keys are written in place
        when there is room (value rows first, then keys, so readers of the
        current snapshot never see a half-added type); growing publishes new
        arrays instead."""
        if self._n + len(new_orths) > MAX_TYPES:
            self._reset()
        tab, values, generation = self._snapshot
        texts = [self._text(int(o), other_vocabs) for o in new_orths]
        fresh = self._rows_of(new_orths, texts, other_vocabs)
        n_old, n_new = self._n, self._n + len(new_orths)
        if n_new + 1 > values.shape[0]:
            grown = np.zeros((2 * (n_new + 1), values.shape[1]), dtype=np.uint64)
            grown[: n_old + 1] = values[: n_old + 1]
            values = grown
        values[n_old + 1 : n_new + 1] = fresh
        tab = add_keys(tab, n_new, new_orths, np.arange(n_old + 1, n_new + 1, dtype=np.int64))
        self._n = n_new
        self._snapshot = (tab, values, generation)


def ambiguity_classes(pairs: Iterable[Tuple[str, str]], min_count: int = 3,
                      min_share: float = 0.01) -> Dict[int, int]:
    """Lowercase form -> the set of labels it took, for forms seen at least
    `min_count` times; labels under `min_share` of a form's uses are noise.
    Rare forms get no class, so training sees what unknown words look like
    (a singleton's class would simply be its gold label)."""
    counts: Dict[str, Dict[str, int]] = {}
    for word, label in pairs:
        if label:
            per = counts.setdefault(word.lower(), {})
            per[label] = per.get(label, 0) + 1
    classes = {}
    for word, per in counts.items():
        total = sum(per.values())
        if total >= min_count:
            kept = sorted(lab for lab, c in per.items() if c >= min_share * total)
            classes[get_string_id(word)] = get_string_id("amb:" + "|".join(kept))
    return classes
