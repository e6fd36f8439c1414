"""The per-word codes a word table carries beside a form's cluster (clusters.py): how the word is usually
written and how frequent it is (`casefreq`, from a corpus's log probabilities), and the parts of speech and
inflections WordNet gives it (`wnpos`). Both are made once, when a table is built; a model reads them as
atoms, and the lemmatizer checks its lemmas against the WordNet readings."""
from typing import Dict, List, NamedTuple, Tuple

# Forms rarer than this (natural log of the probability in lexeme_prob) get no
# casefreq code: 116k lowercase English forms are kept, most of the word types
# the EWT training data lacks that the table knows at all.
MIN_LOGPROB = -17.0

# the casefreq code's parts: the usual case (0 lower, 1 Title, 2 UPPER), its lead
# over the next case, the frequency
LEAD_EDGES = (1.0, 2.5, 5.0)  # natural-log units between the usual case and the next
FREQ_EDGES = (-8.0, -10.0, -12.0, -14.0, -16.0)  # the usual form's log probability


def casefreq_code(logprobs: Dict[str, float], lower: str) -> int:
    """The code of a lowercase form: 1 + 32 * case + 8 * lead + frequency
    (0 when no case of it is known or it is rarer than MIN_LOGPROB)."""
    forms = (lower, lower[:1].upper() + lower[1:], lower.upper())
    found = sorted(((logprobs[f], c) for c, f in enumerate(forms) if f in logprobs), reverse=True)
    if not found or found[0][0] <= MIN_LOGPROB:
        return 0
    best, case = found[0]
    lead = best - (found[1][0] if len(found) > 1 else -21.0)
    lead_bin = sum(lead >= edge for edge in LEAD_EDGES)
    freq_bin = sum(best <= edge for edge in FREQ_EDGES)
    return 1 + 32 * case + 8 * lead_bin + freq_bin


def casefreq_codes(logprobs: Dict[str, float]) -> Dict[str, int]:
    """Every lowercase form of `logprobs` -> its code (codes of 0 left out)."""
    lowers = {w.lower() for w, lp in logprobs.items() if w and lp > MIN_LOGPROB}
    codes = {w: casefreq_code(logprobs, w) for w in lowers}
    return {w: c for w, c in codes.items() if c}


class Lemmas(NamedTuple):
    """WordNet's lemma lists per part of speech, its irregular forms and
    the suffix rules of spaCy's rule lemmatizer (spacy-lookups-data)."""
    index: Dict[str, frozenset]
    exceptions: Dict[str, Dict[str, List[str]]]
    rules: Dict[str, List[List[str]]]


# One bit per reading of a form: (part of speech, how the form reaches the lemma).
# "base": the form is a lemma; "irregular": WordNet lists it as an irregular
# form; otherwise the suffix a rule strips (`ies` and `es` count as `s`).
READINGS: Tuple[Tuple[str, str], ...] = (
    ("noun", "base"), ("noun", "s"), ("noun", "irregular"),
    ("verb", "base"), ("verb", "s"), ("verb", "ed"), ("verb", "ing"), ("verb", "irregular"),
    ("adj", "base"), ("adj", "er"), ("adj", "est"), ("adj", "irregular"),
    ("adv", "base"),
)
_READING_BIT = {reading: 1 << i for i, reading in enumerate(READINGS)}
# the readings of a form that is itself a lemma in WordNet, of any part of speech
BASE_READINGS = sum(bit for (_, how), bit in _READING_BIT.items() if how == "base")
# the readings of a form that a regular suffix rule takes to a WordNet lemma
SUFFIX_READINGS = sum(bit for (_, how), bit in _READING_BIT.items() if how not in ("base", "irregular"))


def _suffix_kind(old: str) -> str:
    return "s" if old.endswith("s") or old == "men" else old


def wordnet_readings(lemmas: Lemmas, form: str) -> int:
    """The reading bits of a lowercase form (READINGS)."""
    bits = 0
    for pos, lemma_set in lemmas.index.items():
        if form in lemma_set:
            bits |= _READING_BIT.get((pos, "base"), 0)
        if form in lemmas.exceptions.get(pos, {}):
            bits |= _READING_BIT.get((pos, "irregular"), 0)
        for old, new in lemmas.rules.get(pos, []):
            if old and form.endswith(old) and form[: len(form) - len(old)] + new in lemma_set:
                bits |= _READING_BIT.get((pos, _suffix_kind(old)), 0)
    return bits
