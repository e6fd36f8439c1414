"""Word dropout (Kiperwasser & Goldberg 2016) for every component's training:
some tokens of a batch are read as a word never seen, so the features a new
word still has (spelling, shape, cluster) learn what such words need."""
from collections import Counter
from typing import Iterable, Tuple

import numpy as np
from spacy.strings import get_string_id
from spacy.training import Example

from ..templates import LEX_COLUMN

# the form, lowercase and norm of a word seen as unknown (word_dropout)
UNKNOWN_WORD = np.uint64(get_string_id("-unknown-word-"))
IDENTITY_COLUMNS = [LEX_COLUMN[name] for name in ("orth", "lower", "norm")]


def type_counts(examples: Iterable[Example]) -> Tuple[np.ndarray, np.ndarray]:
    """(sorted lowercase-form hashes, their counts) over the tokens training reads."""
    counts = Counter(token.lower for eg in examples for token in eg.predicted)
    keys = np.array(sorted(counts), dtype=np.uint64)
    return keys, np.array([counts[int(k)] for k in keys], dtype=np.float64)


def word_dropout(lex_rows: np.ndarray, lex: np.ndarray, keys: np.ndarray, counts: np.ndarray, alpha: float,
                 rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """Each token becomes an unknown word with probability alpha / (alpha +
    c), c the count of its lowercase form in the training data (Kiperwasser
    & Goldberg 2016): its row points to a copy of its type's row whose form,
    lowercase and norm are UNKNOWN_WORD and which has no ambiguity class, so
    every template reading it sees a new word, and what a word's spelling,
    shape and cluster say gets trained on the rare words that unknown words
    are like. Returns (lex_rows, lex), copies when anything is dropped."""
    lower = lex[lex_rows, LEX_COLUMN["lower"]]
    at = np.minimum(np.searchsorted(keys, lower), max(len(keys) - 1, 0))
    count = np.where(keys[at] == lower, counts[at], 0.0) if len(keys) else np.zeros(len(lower))
    drop = rng.random(len(lower)) < alpha / (alpha + count)
    if not drop.any():
        return lex_rows, lex
    types, twin = np.unique(lex_rows[drop], return_inverse=True)
    twins = lex[types]
    twins[:, IDENTITY_COLUMNS] = UNKNOWN_WORD
    twins[:, LEX_COLUMN["amb"]] = 0
    lex_rows = lex_rows.copy()
    lex_rows[drop] = lex.shape[0] + twin
    return lex_rows, np.concatenate([lex, twins])
