"""The CoNLL 2018 shared task's metrics, so the project's numbers sit beside
those other UD parsers publish (`python -m spacy_sparse evaluate-ud`).

Gold and system files must hold the same characters once whitespace is
removed; each surface token is then a span of that text. Words that are
tokens align when their spans are equal. Where a multiword token of either
file lies, the smallest stretch of text that no multiword token crosses is
cut out, and the words inside align by the longest common subsequence of
their lower-cased forms. Tokens and sentences score by equal spans.
Labels compare only the universal part of a relation ("obl", not
"obl:tmod") and only the universal features. CLAS, MLAS and BLEX count the
words with content relations; MLAS also asks for the right tags, features
and functional children, BLEX for the lemma (any lemma where gold has "_").
"""
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

from .conllu import DEPREL, FEATS, FORM, HEAD, LEMMA, UPOS, XPOS, BadSentence, read_sentences

METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS", "CLAS",
           "MLAS", "BLEX")

CONTENT_RELATIONS = frozenset({
    "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl", "dislocated", "advcl", "advmod",
    "discourse", "nmod", "appos", "nummod", "acl", "amod", "conj", "fixed", "flat", "compound", "list", "parataxis",
    "orphan", "goeswith", "reparandum", "root", "dep"})
FUNCTION_RELATIONS = frozenset({"aux", "cop", "mark", "det", "clf", "case", "cc"})
UNIVERSAL_FEATURES = frozenset({
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number", "Case", "Definite",
    "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident", "Polarity", "Person", "Polite"})

NO_HEAD = -2  # HEAD "_": the file has no tree for this word, so no parent can match


class UDError(ValueError):
    pass


@dataclass
class Word:
    start: int  # the span, in the whitespace-free text, of the surface token the word belongs to
    end: int
    multi: bool  # part of a multiword token
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: str  # universal features only, sorted
    relation: str  # universal part of DEPREL
    parent: int = -1  # index of the head word in the treebank, -1 for the root
    function_children: List[int] = field(default_factory=list)

    @property
    def content(self) -> bool:
        return self.relation in CONTENT_RELATIONS


@dataclass
class Treebank:
    text: List[str] = field(default_factory=list)  # characters of the tokens, whitespace left out
    tokens: List[Tuple[int, int]] = field(default_factory=list)
    sentences: List[Tuple[int, int]] = field(default_factory=list)
    words: List[Word] = field(default_factory=list)

    def annotates(self) -> Dict[str, bool]:
        """Which columns the file fills anywhere (a pipeline without a
        lemmatizer writes "_" for every lemma)."""
        return {"upos": any(w.upos != "_" for w in self.words), "xpos": any(w.xpos != "_" for w in self.words),
                "feats": any(w.feats not in ("", "_") for w in self.words),
                "lemma": any(w.lemma != "_" for w in self.words),
                "head": any(w.parent != NO_HEAD for w in self.words)}


# The columns each metric reads beyond the words themselves.
NEEDS = {"UPOS": ("upos",), "XPOS": ("xpos",), "UFeats": ("feats",), "AllTags": ("upos", "xpos", "feats"),
         "Lemmas": ("lemma",), "UAS": ("head",), "LAS": ("head",), "CLAS": ("head",),
         "MLAS": ("head", "upos", "feats"), "BLEX": ("head", "lemma")}


def _no_space(form: str) -> str:
    return "".join(c for c in form if unicodedata.category(c) != "Zs")


def _universal_feats(feats: str) -> str:
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


def load(lines: Iterable[Union[str, bytes]], name: str = "the file") -> Treebank:
    """A CoNLL-U stream as spans and words; a broken sentence raises
    UDError naming its line (an evaluation cannot skip gold)."""
    bank = Treebank()
    for sentence in read_sentences(lines):
        if isinstance(sentence, BadSentence):
            raise UDError(f"{name}, sentence at line {sentence.line}: {sentence.problem}")
        first_word = len(bank.words)
        sentence_start = len(bank.text)
        ranges = {first: (last, columns) for first, last, columns in sentence.ranges}
        k = 0
        while k < len(sentence.words):
            wid = k + 1
            last, columns = ranges.get(wid, (wid, sentence.words[k]))
            form = _no_space(columns[FORM])
            if not form:
                raise UDError(f"{name}, sentence at line {sentence.line}: word {wid} has a FORM of spaces only")
            start = len(bank.text)
            bank.text.extend(form)
            bank.tokens.append((start, len(bank.text)))
            for columns_w in sentence.words[k:last]:
                word_form = columns_w[FORM] if last > wid else form
                bank.words.append(Word(start, len(bank.text), last > wid, word_form.lower(), columns_w[LEMMA],
                                       columns_w[UPOS], columns_w[XPOS], _universal_feats(columns_w[FEATS]),
                                       columns_w[DEPREL].split(":")[0]))
            k = last
        bank.sentences.append((sentence_start, len(bank.text)))
        for w, columns in zip(bank.words[first_word:], sentence.words):
            head = columns[HEAD]
            w.parent = NO_HEAD if head == "_" else (-1 if head == "0" else first_word + int(head) - 1)
        for i, w in enumerate(bank.words[first_word:], start=first_word):
            if w.parent >= 0 and w.relation in FUNCTION_RELATIONS:
                bank.words[w.parent].function_children.append(i)
    return bank


def load_file(path: Union[str, Path]) -> Treebank:
    with open(path, "rb") as f:
        return load(f, str(path))


class Score(NamedTuple):
    correct: int
    gold: int
    system: int
    aligned: Optional[int] = None

    @property
    def precision(self) -> float:
        return self.correct / self.system if self.system else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        total = self.gold + self.system
        return 2 * self.correct / total if total else 0.0

    @property
    def aligned_accuracy(self) -> Optional[float]:
        return None if self.aligned is None else (self.correct / self.aligned if self.aligned else 0.0)


def span_score(gold: Sequence[Tuple[int, int]], system: Sequence[Tuple[int, int]]) -> Score:
    """Spans equal in start and end (both lists in text order)."""
    correct, g, s = 0, 0, 0
    while g < len(gold) and s < len(system):
        if gold[g][0] == system[s][0]:
            correct += gold[g][1] == system[s][1]
            g += 1
            s += 1
        elif gold[g][0] < system[s][0]:
            g += 1
        else:
            s += 1
    return Score(correct, len(gold), len(system))


def _past(words: Sequence[Word], i: int, end: int) -> bool:
    """Whether word i lies beyond a multiword stretch ending at `end`."""
    if i >= len(words):
        return True
    return words[i].start >= end if words[i].multi else words[i].end > end


def _stretch(gold: Sequence[Word], system: Sequence[Word], g: int, s: int) -> Tuple[int, int, int, int]:
    """The smallest stretch from gold word g / system word s (one of them in
    a multiword token) that holds every multiword token it touches whole:
    (gold start, system start, gold end, system end) as word indices."""
    if gold[g].multi:
        end = gold[g].end
        if not system[s].multi and system[s].start < gold[g].start:
            s += 1
    else:
        end = system[s].end
        if not gold[g].multi and gold[g].start < system[s].start:
            g += 1
    g0, s0 = g, s
    while not (_past(gold, g, end) and _past(system, s, end)):
        take_gold = g < len(gold) and (s >= len(system) or gold[g].start <= system[s].start)
        word = gold[g] if take_gold else system[s]
        if word.multi:
            end = max(end, word.end)
        if take_gold:
            g += 1
        else:
            s += 1
    return g0, s0, g, s


def _common_subsequence(a: Sequence[str], b: Sequence[str]) -> List[Tuple[int, int]]:
    """Index pairs of a longest common subsequence, taking the earliest
    match where there is a choice."""
    n, m = len(a), len(b)
    best = [[0] * (m + 1) for _ in range(n + 1)]  # best[i][j]: LCS length of a[i:], b[j:]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = best[i + 1][j + 1] + 1 if a[i] == b[j] else max(best[i + 1][j], best[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def align(gold: Sequence[Word], system: Sequence[Word]) -> Dict[int, int]:
    """system word index -> the gold word it aligns with."""
    pairs: Dict[int, int] = {}
    g, s = 0, 0
    while g < len(gold) and s < len(system):
        if gold[g].multi or system[s].multi:
            g0, s0, g, s = _stretch(gold, system, g, s)
            found = _common_subsequence([w.form for w in gold[g0:g]], [w.form for w in system[s0:s]])
            for i, j in found:
                pairs[s0 + j] = g0 + i
        elif (gold[g].start, gold[g].end) == (system[s].start, system[s].end):
            pairs[s] = g
            g += 1
            s += 1
        elif gold[g].start <= system[s].start:
            g += 1
        else:
            s += 1
    return pairs


TAGS = {"UPOS": ("upos",), "XPOS": ("xpos",), "UFeats": ("feats",), "AllTags": ("upos", "xpos", "feats")}
CONTENT_ONLY = ("CLAS", "MLAS", "BLEX")


def _key(metric: str, w: Word, bank: Treebank, head: Callable[[int], object], gold_lemma: str) -> object:
    """What must be equal for a word to count as correct under `metric`;
    `head` names a word index as the gold file does (the gold index, or
    where the system word aligned)."""
    if metric in TAGS:
        return tuple(getattr(w, name) for name in TAGS[metric])
    lemma = w.lemma if gold_lemma != "_" else "_"
    if metric == "Lemmas":
        return lemma
    parent = head(w.parent)
    if metric == "UAS":
        return parent
    if metric in ("LAS", "CLAS"):
        return parent, w.relation
    if metric == "BLEX":
        return parent, w.relation, lemma
    if metric == "MLAS":
        children = [(head(c), bank.words[c].relation, bank.words[c].upos, bank.words[c].feats)
                    for c in w.function_children]
        return parent, w.relation, w.upos, w.feats, children
    raise ValueError(f"unknown metric {metric!r}")


def evaluate(gold: Treebank, system: Treebank) -> Dict[str, Score]:
    """Every metric of METRICS. Raises UDError when the two texts differ."""
    if gold.text != system.text:
        at = next((i for i, (a, b) in enumerate(zip(gold.text, system.text)) if a != b),
                  min(len(gold.text), len(system.text)))
        raise UDError("gold and system files hold different text (whitespace aside): from character "
                      f"{at}, gold {''.join(gold.text[at:at + 20])!r}, system {''.join(system.text[at:at + 20])!r}")
    pairs = align(gold.words, system.words)
    matched = sorted((g, s) for s, g in pairs.items())

    def gold_head(i: int) -> object:
        return i

    def system_head(i: int) -> object:
        if i == NO_HEAD:
            return "no head"
        return i if i < 0 else pairs.get(i, "not aligned")

    out = {"Tokens": span_score(gold.tokens, system.tokens),
           "Sentences": span_score(gold.sentences, system.sentences),
           "Words": Score(len(matched), len(gold.words), len(system.words))}
    for metric in METRICS[3:]:
        keep = (lambda w: w.content) if metric in CONTENT_ONLY else (lambda w: True)
        correct = aligned = 0
        for g, s in matched:
            gw, sw = gold.words[g], system.words[s]
            if keep(gw):
                aligned += 1
                correct += _key(metric, gw, gold, gold_head, gw.lemma) == _key(metric, sw, system, system_head,
                                                                               gw.lemma)
        out[metric] = Score(correct, sum(map(keep, gold.words)), sum(map(keep, system.words)), aligned)
    return out


def table(scores: Dict[str, Score]) -> str:
    """The scores as the shared task's verbose table (percentages)."""
    rows = ["Metric     | Precision |    Recall |  F1 Score | AligndAcc",
            "-----------+-----------+-----------+-----------+-----------"]
    for metric in METRICS:
        sc = scores[metric]
        acc = "" if sc.aligned_accuracy is None else f"{100 * sc.aligned_accuracy:10.2f}"
        rows.append(f"{metric:11}|{100 * sc.precision:10.2f} |{100 * sc.recall:10.2f} |{100 * sc.f1:10.2f} |{acc}")
    return "\n".join(rows)


def as_json(scores: Dict[str, Score]) -> Dict[str, Dict[str, Union[int, float, None]]]:
    return {metric: {"precision": sc.precision, "recall": sc.recall, "f1": sc.f1,
                     "aligned_accuracy": sc.aligned_accuracy, "correct": sc.correct, "gold": sc.gold,
                     "system": sc.system, "aligned": sc.aligned} for metric, sc in scores.items()}
