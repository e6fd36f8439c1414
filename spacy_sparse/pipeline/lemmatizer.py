"""`sparse_lemmatizer`: lemmas as labels, the way spaCy's trainable lemmatizer and UDPipe find them.

Each (form, lemma) pair of the training data becomes an *edit rule*: take the form as it is, in lower case or
in title case, cut a suffix, add one. "studies" -> "study" is `K3|iesy` (keep case, cut the 3 characters
"ies", add "y"), "The" -> "the" is `L0|` (lower case, cut nothing), "KABUL" -> "Kabul" is `T0|` (title case:
UD English writes a proper noun's lemma so, however the text cased it). A rule is written
`{K|L|T}{n}|{cut}{add}`, so it parses back without ambiguity whatever characters the suffixes hold.

The component predicts a rule per token with the tagger's engine, over templates that read the word, its
affixes, its tag (set by an earlier tagger: `ptag`) and its neighbours; a rule whose cut suffix the form does
not end with is never applied: the token then keeps its form (in the case the rule asks for). With a word
table holding WordNet readings (`wnpos` templates), a rule whose lemma WordNet does not know gives way to a
rule of the same suffix family whose lemma it knows ("provoked": `K2|ed` makes "provok", `K1|d` "provoke").
Rules seen fewer than `min_label_count` times in the training data are not labels (they are mostly one-off
irregular forms and typos).

Writing lemmas looks each (word, rule) pair of a batch up in a hash table of the lemmas made before
(MadeLemmas), so the string work is done once per pair the component meets, not once per token.
"""
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import LEMMA, ORTH
from spacy.scorer import Scorer
from spacy.strings import get_string_id
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab

from ..clusters import ClusterTable, key_of
from ..kernels.layout import new_table
from ..runtime.arrays import unique
from ..lexicon import add_keys
from ..runtime.compiled import find_many
from ..word_codes import BASE_READINGS, SUFFIX_READINGS
from .known_words import DEFAULT_MIN_LABEL_COUNT, KnownWords
from .batching import doc_spans
from .tagger import SparseTagger

# the cache of made lemmas is emptied when it holds this many (word, rule) pairs
MAX_CACHED = 1_000_000
LEMMA_ATTRS = (LEMMA,)  # what the lemmatizer writes (Doc.from_array)
MIN_STEM = 3  # dictionary_lemma: shorter stems are whole-word replacements, not suffix edits
KEY_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd: (word, rule) -> one 64-bit cache key


CASES = ("K", "L", "T")  # keep, lower, title


def cased(form: str, case: str) -> str:
    """The form as rule case `case` writes it before cutting."""
    if case == "L":
        return form.lower()
    if case == "T":
        return form[:1].upper() + form[1:].lower()
    return form


def edit_rule(form: str, lemma: str) -> str:
    """The shortest edit rule that turns `form` into `lemma` (keeping case, lower-casing or title-casing
    first: the first of these on a tie)."""
    best: Optional[Tuple[int, str, str, str]] = None
    for flag in CASES:
        source = cased(form, flag)
        p = 0
        n = min(len(source), len(lemma))
        while p < n and source[p] == lemma[p]:
            p += 1
        cut, add = source[p:], lemma[p:]
        if best is None or len(cut) + len(add) < best[0]:
            best = (len(cut) + len(add), flag, cut, add)
    _, flag, cut, add = best
    return f"{flag}{len(cut)}|{cut}{add}"


def parse_rule(rule: str) -> Tuple[str, str, str]:
    """(case first: K, L or T, suffix to cut, suffix to add) of a rule; ValueError if it is not one."""
    flag, bar = rule[:1], rule.find("|")
    if flag not in CASES or bar < 2 or not rule[1:bar].isdigit():
        raise ValueError(f"not a lemma edit rule: {rule!r}")
    n = int(rule[1:bar])
    rest = rule[bar + 1:]
    if n > len(rest):
        raise ValueError(f"not a lemma edit rule: {rule!r}")
    return flag, rest[:n], rest[n:]


def apply_rule(form: str, rule: Tuple[str, str, str]) -> Optional[str]:
    """The lemma the rule makes of `form`, or None where it does not apply (the form does not end with the
    suffix it cuts, or nothing would be left)."""
    case, cut, add = rule
    source = cased(form, case)
    if not source.endswith(cut):
        return None
    lemma = source[: len(source) - len(cut)] + add
    return lemma or None


def _related(a: Tuple[str, str, str], b: Tuple[str, str, str]) -> bool:
    """Whether two rules are of one suffix family: the same case, one cut ending the other."""
    return a[0] == b[0] and (a[1].endswith(b[1]) or b[1].endswith(a[1]))


def dictionary_lemma(form: str, rule: int, rules: Sequence[Tuple[str, str, str]], table: ClusterTable) -> str:
    """The lemma rule `rule` makes of `form`, unless WordNet knows the form as a regular inflection, the rule
    edits it into a word WordNet does not know as a lemma, and a related rule (_related) makes one it knows:
    then that rule's lemma (the nearest in edit length; the lower label index on a tie). A rule that does
    not apply leaves the form. Forms WordNet does not inflect (pronouns, typos, names) keep the rule's lemma,
    and so does a rule that keeps less than MIN_STEM characters of the form ("us" -> "we" replaces a word)."""
    chosen = rules[rule]
    lemma = apply_rule(form, chosen)
    if lemma is None:
        return cased(form, chosen[0])
    if not table.has_senses or not (chosen[1] or chosen[2]) or _is_lemma(table, lemma):
        return lemma
    if len(form) - len(chosen[1]) < MIN_STEM or not table.codes(key_of(form.lower()))[1] & SUFFIX_READINGS:
        return lemma
    best: Optional[Tuple[int, int, str]] = None
    for i, other in enumerate(rules):
        if i == rule or not (other[1] or other[2]) or not _related(chosen, other):
            continue
        made = apply_rule(form, other)
        if made is None or made == form or not _is_lemma(table, made):
            continue
        distance = abs(len(other[1]) - len(chosen[1])) + abs(len(other[2]) - len(chosen[2]))
        if best is None or (distance, i) < best[:2]:
            best = (distance, i, made)
    return lemma if best is None else best[2]


def _is_lemma(table: ClusterTable, word: str) -> bool:
    return bool(table.codes(key_of(word.lower()))[1] & BASE_READINGS)


def lemma_score(examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
    """lemma_acc, as spaCy's lemmatizers report it."""
    return Scorer.score_token_attr(examples, "lemma", **kwargs)


@registry.scorers("spacy_sparse.lemmatizer_scorer.v1")
def make_lemmatizer_scorer() -> Callable:
    return lemma_score


class MadeLemmas:
    """The lemma hashes made before, keyed by a 64-bit mix of (word, rule): an open-addressing table (the
    lexicon's: `add_keys`, `find_many`) of rows into `lemmas`. A call looks its pairs up in one kernel and
    adds new pairs in place; a sorted array, as this was, had to be sorted again whole at every new pair, so
    one nlp(text) call on new text cost more the more text came before. Emptied once it holds MAX_CACHED
    pairs. The owner's lock guards it."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.tab = new_table(1024)
        self.lemmas = np.zeros(1, dtype=np.uint64)  # row 0 unused: rows start at 1
        self.n = 0

    def find(self, pairs: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """(lemma hash per pair, whether it was found; None: every pair was)."""
        rows = np.empty(pairs.shape[0], dtype=np.int64)
        misses = find_many(self.tab, self.tab.shape[0] // 2, pairs, rows) if self.n else pairs.shape[0]
        if not misses:  # the usual case once a text's common words were met
            return self.lemmas[rows], None
        if misses == pairs.shape[0]:
            return np.zeros(pairs.shape[0], dtype=np.uint64), np.zeros(pairs.shape[0], dtype=bool)
        hit = rows > 0
        return self.lemmas[np.where(hit, rows, 0)], hit

    def add(self, keys: np.ndarray, lemmas: np.ndarray) -> None:
        """Add distinct pairs not held yet."""
        if self.n + len(keys) > MAX_CACHED:
            self.clear()
        n_old, n_new = self.n, self.n + len(keys)
        if n_new + 1 > self.lemmas.shape[0]:
            grown = np.zeros(2 * (n_new + 1), dtype=np.uint64)
            grown[: n_old + 1] = self.lemmas[: n_old + 1]
            self.lemmas = grown
        self.lemmas[n_old + 1: n_new + 1] = lemmas
        self.tab = add_keys(self.tab, n_new, keys, np.arange(n_old + 1, n_new + 1, dtype=np.int64))
        self.n = n_new


class SparseLemmatizer(KnownWords, SparseTagger):
    """Assigns token.lemma_ by predicting an edit rule per token (see the module docstring); put it after a
    tagger, whose tags its templates read."""

    writes = "lemma"

    def __init__(self, vocab: Vocab, name: str = "sparse_lemmatizer", *, annotate: str = "lemma",
                 min_label_count: int = DEFAULT_MIN_LABEL_COUNT, overwrite: bool = False, **kwargs: Any):
        self._check_task_cfg({"annotate": annotate, "min_label_count": min_label_count, "overwrite": overwrite})
        self._rules: List[Tuple[str, str, str]] = []
        self._made = MadeLemmas()
        self._made_lock = threading.Lock()
        super(SparseTagger, self).__init__(vocab, name, annotate=annotate, min_label_count=min_label_count,
                                           overwrite=overwrite, **kwargs)
        self._label_values = np.zeros(0, dtype=np.uint64)

    @property
    def overwrite(self) -> bool:
        return self.cfg["overwrite"]

    def _values_of(self, labels: Sequence[str]) -> np.ndarray:
        rules = [parse_rule(label) for label in labels]  # a label that is not a rule is refused here
        with self._made_lock:
            self._rules = rules
            self._made = MadeLemmas()
        return np.array([get_string_id(label) for label in labels], dtype=np.uint64)

    def _word_tag_labels(self, examples: Iterable[Example]):
        for eg in examples:
            for token in eg.reference:
                if token.lemma_ and not token.is_space:
                    yield token.text, token.tag_, edit_rule(token.text, token.lemma_)

    def _gold_values(self, eg: Example) -> np.ndarray:
        """The hash of the rule that turns each predicted token into its reference lemma (0 where no lemma
        is aligned one-to-one)."""
        lemmas = eg.get_aligned("LEMMA", as_string=True)
        return np.array([get_string_id(edit_rule(t.text, lemma)) if lemma else 0
                         for t, lemma in zip(eg.predicted, lemmas)], dtype=np.uint64)

    # ---- inference -----------------------------------------------------------
    def _lemma_values(self, vocab: Vocab, orth: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The lemma hash per token (words `orth` of docs of `vocab`) for the predicted label indices. Lemmas
        made before come from the cache (MadeLemmas); only pairs not met before are made in Python, once per
        distinct pair (the cache serves the component's own vocab: another vocab must be given each lemma
        string)."""
        pairs = orth.astype(np.uint64, copy=False) * KEY_MUL
        np.add(pairs, labels, out=pairs, dtype=np.uint64, casting="unsafe")  # the uint64 loop: a mixed one is float
        own_vocab = vocab is self.vocab
        with self._made_lock:
            if own_vocab:
                out, hit = self._made.find(pairs)
                if hit is None:
                    return out
            else:
                hit = np.zeros(len(pairs), dtype=bool)
                out = np.zeros(len(pairs), dtype=np.uint64)
            missed = np.flatnonzero(~hit)
            keys, inverse = unique(pairs[missed], return_inverse=True)
            one = np.empty(len(keys), dtype=np.int64)  # a token of each new pair (its word and rule are the key's)
            one[inverse] = missed
            strings, rules, table = vocab.strings, self._rules, self.lexicon.clusters
            made = np.array([strings.add(dictionary_lemma(strings[int(orth[i])], int(labels[i]), rules, table))
                             for i in one.tolist()], dtype=np.uint64)
            out[missed] = made[inverse]
            if own_vocab:
                self._made.add(keys, made)
        return out

    def _set_annotations(self, docs: List[Doc], predictions) -> None:
        pred, doc_off = predictions
        words = [doc for doc in docs if len(doc)]
        if not words:
            return
        vocab = words[0].vocab
        if any(doc.vocab is not vocab for doc in words):  # one batch, one vocab: else doc by doc
            for i, doc in enumerate(docs):
                if len(doc):
                    self._set_annotations([doc], (pred[doc_off[i]:doc_off[i + 1]], np.array([0, len(doc)])))
            return
        orth = np.concatenate([doc.to_array(ORTH) for doc in words]) if len(words) > 1 else words[0].to_array(ORTH)
        lemmas = self._lemma_values(vocab, orth, pred[: len(orth)]).reshape(-1, 1)
        for doc, start, end in doc_spans(docs, doc_off):
            doc.from_array(LEMMA_ATTRS, lemmas[start:end])
