"""spaCy's English tokenizer, brought closer to UD English's tokens, and a
spaCy tokenizer that keeps more of what it has cut (KeepingTokenizer, the
base of both).

Why: a word the tokenizer cuts differently from the treebank costs its tag
and its arc on raw text whatever the model does (spaCy's scorer counts a
gold token only through a one-to-one alignment), and the pieces of `!!` or
`<<` mislead the segmenter. On EWT train spaCy's tokenizer disagrees with
the treebank on 2,548 of 204,577 tokens; the rules below cover the largest
classes whose treebank tokens are the same wherever they occur in EWT
train. What stays as spaCy has it: other hyphenated compounds (the treebank
cuts `well-known`, `self-made`), ranges (`10-20`), clitics.
"""
import re
from typing import Any, Callable, Dict, Iterable, List

from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc
from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex, registry

# A bound prefix keeps its hyphen (`non-human`, `e-mail`, `re-read`): each is whole in EWT train at least
# twice and never cut there.
BOUND_PREFIXES = ("e", "non", "pre", "post", "anti", "mid", "re", "co", "over", "pro", "multi", "ex", "sub",
                  "semi", "cross", "neo", "psycho")
# Runs of `!` and `?`, dots among them (`!!`, `?!`, `.?`), and a symbol repeated (`<<`, `***`, `====`) are one
# token, also at either end of a word; telephone numbers (`713-853-3989`, `853-3989`, `1-800-553-3119`, a
# zip+4 `77002-7361`) are one token when they stand alone.
# Each run is matched from its first character only (the lookbehinds), so a long run costs linear time
# where a pattern free to start anywhere in it would backtrack from every position.
RUN_OF_MARKS = r"(?<![.!?])(?=[.!?]{2})\.*[!?][.!?]*"
# (one group: spaCy anchors each affix pattern by putting ^ before it or $ after it, which would bind to the first
# or last alternative alone)
SYMBOL_RUN = "(?:" + "|".join(r"(?<!{0}){0}{0}+".format(re.escape(c)) for c in "<>*=_~#+$|") + ")"
# spaCy reads a token_match back from a saved tokenizer with re.match, so the pattern anchors its own end
WHOLE = r"(?:" + RUN_OF_MARKS + "|" + SYMBOL_RUN + r"|(?:1-)?(?:\d{3}-)?\d{3}-\d{4}|\d{5}-\d{4})$"
# Short forms whole in EWT train and never cut there; `and/or`, which spaCy keeps, is cut there; `Wed.`, which
# spaCy reads as `We d.` (its `wed` -> `we'd` exception), is whole there.
SPECIAL: Dict[str, List[str]] = {
    "Ft.": ["Ft."], "Lt.": ["Lt."], "Sat.": ["Sat."], "Mon.": ["Mon."], "Fri.": ["Fri."], "Thur.": ["Thur."],
    "Attn.": ["Attn."], "Reps.": ["Reps."], "Yahoo!": ["Yahoo!"], "l/c": ["l/c"], "b/c": ["b/c"],
    "I/C": ["I/C"], "and/or": ["and", "/", "or"], "Wed.": ["Wed."],
    # spoken forms the treebank cuts as it cuts `gonna` (spaCy cuts that one too), and `id`, whole there (spaCy
    # reads it as `i d`)
    "wanna": ["wan", "na"], "Wanna": ["Wan", "na"], "outta": ["out", "ta"], "dunno": ["du", "n", "no"],
    "alot": ["a", "lot"], "Alot": ["A", "lot"], "Lets": ["Let", "s"], "CANT": ["CA", "NT"], "DONT": ["DO", "NT"],
    "id": ["id"],
}
# Marks the treebank cuts off wherever they touch a word and spaCy keeps: each class below is cut that way in
# EWT train more often than kept (chosen there; with the forms above and `its`, of its 204,577 tokens those
# without a one-to-one token of ours fell from 1,793 to 1,104, EWT dev's from 326 to 189; docs/decisions/measurement-log.md).
EXTRA_INFIXES = (
    r"(?<=[^\s(])\((?=[^\s)])",            # `account(s)`, `file(TM)`, `SCHEDULE(draft)`
    r"(?<=[^\s(])\)(?=[^\s)])",            # `draft).doc`, `pdf)(See`, `2)S`
    r"(?<=[A-Za-z])(?<!\b[Mm]id)-(?=[0-9])",  # `F-102`, `AK-47`, `girl-10` (`mid-1980s` stays whole)
    r"(?<=[0-9])-(?=[A-Za-z])",              # `6-foot`, `2pm-8pm`
    r"(?<=[0-9])-(?=\$)",                    # `$10-$20`
    r"(?<=[A-Za-z]\.)-(?=[A-Za-z])",         # `U.S.-led`
    r'(?<=[A-Za-z])"(?=[<\-A-Za-z])',       # `Change"-"Alex`, `"Mc"Donald`
    r'(?<=[<\-])"(?=[A-Za-z])',
    r"(?<=[A-Za-z]):(?=[0-9<])",             # `is:5107`, `below:<http...`
    r"(?<=[A-Za-z0-9])\?(?=[A-Za-z])",       # `and?December`
    r"(?<=[A-Za-z]);(?=[A-Za-z])",           # `gda;for`
    r"(?<=[A-Za-z])#(?=[0-9])",              # `job#0000108806`
    # a fraction of one digit over one, or a ratio whose first number cannot be a month (`9/11` and `5/18`
    # are dates, whole in the treebank)
    r"(?<=^[1-9])/(?=[1-9]$)",
    r"(?:(?<=^1[3-9])|(?<=^[2-9][0-9]))/(?=[0-9]{1,2}$)",
)
EXTRA_PREFIXES = (
    r"-+(?=[A-Za-z0-9])",                    # `-for`, `-2:30`, `-0.39`, `--Sally`: dashes before a word
    # a name before its quoted address (`Julie"<julie@example.com>`): cut as a prefix, so the address after it
    # is still read whole by spaCy's URL match, which would otherwise take the name, quote and bracket with it
    r'[A-Za-z]+(?="<)',
)
EXTRA_SUFFIXES = (
    r"(?<=[A-Za-z0-9])-+",                   # `PS-`, `$10m-`, `Kay--`: dashes after a word
    r"(?<=[A-Za-z])`[sS]",                   # `mama`s`: a backtick for the apostrophe
    r"(?<=[0-9])(?:[AaPp]\.[Mm]\.|[AaPp][Mm])",   # `7:30PM`, `11AM`, `9a.m.`
    r"(?<=[0-9])[kK]",                       # `65k`
)


def _hyphen_infix(pattern: str) -> str:
    """spaCy's infix for a hyphen between letters, made to skip a bound
    prefix: one fixed-width negative lookbehind per prefix, tried only
    where a hyphen follows."""
    at = pattern.index("(?:-|")
    guards = "".join(r"(?<!\b(?i:%s))" % re.escape(p) for p in BOUND_PREFIXES)
    return pattern[:at] + "(?=[-\u2013\u2014~])" + guards + pattern[at:]


# Whitespace-delimited pieces of text whose tokens the tokenizer keeps (spaCy's default keeps 10,000 and then
# stops adding, so on a large collection most pieces met later are cut by the affix patterns every time).
# A kept piece costs about 190 bytes; 100,000 of them about 19 MB.
CACHE_SIZE = 100_000
SPACY_CACHE_SIZE = 10_000  # spaCy's Tokenizer default


class KeepingTokenizer(Tokenizer):
    """spaCy's Tokenizer with a larger cache that fills on any text.

    spaCy keeps the tokens of a whitespace-delimited piece once it has cut
    it, but not after a special case (`don't`, `U.S.`) met earlier in the
    same text, and not past `max_cache_size` pieces. On long texts many new
    pieces come after a special case, so they were cut by the affix patterns
    (the slowest part of tokenizing) each time they came again. Each piece
    not met before is first cut on its own, where spaCy keeps it; the text's
    own cut then reads it from the cache. The tokens are the same either way:
    a piece is cut the same wherever it stands."""

    def __init__(self, *args, max_cache_size: int = CACHE_SIZE, **kwargs):
        super().__init__(*args, max_cache_size=max_cache_size, **kwargs)
        self._met: set = set()

    def __call__(self, text: str) -> Doc:
        # (nothing is kept inside a memory zone, and a text of one piece is kept by its own cut)
        room = self.max_cache_size - len(self._met)
        if room > 0 and not getattr(self.vocab, "in_memory_zone", False):
            pieces = text.split()
            if len(pieces) > 1:
                new = set(pieces).difference(self._met)
                if len(new) > room:  # (the set of pieces met stays within the cache's size)
                    new = set(list(new)[:room])
                for piece in new:
                    Tokenizer.__call__(self, piece)
                self._met.update(new)
        return Tokenizer.__call__(self, text)

    def _reset_cache(self, keys):
        # spaCy drops pieces from its cache when a rule changes: meet them again
        self._met = set()
        Tokenizer._reset_cache(self, keys)


def keeping(tokenizer: Any) -> Any:
    """spaCy's own Tokenizer rebuilt as a KeepingTokenizer with the same
    rules (the same tokens) and spaCy's default cache size raised (a size
    set otherwise stays); any other tokenizer as it is. For commands that
    stream a corpus through a loaded pipeline and do not save it."""
    if type(tokenizer) is not Tokenizer:
        return tokenizer
    size = CACHE_SIZE if tokenizer.max_cache_size == SPACY_CACHE_SIZE else tokenizer.max_cache_size
    return KeepingTokenizer(tokenizer.vocab, max_cache_size=size, rules=tokenizer.rules,
                            prefix_search=tokenizer.prefix_search, suffix_search=tokenizer.suffix_search,
                            infix_finditer=tokenizer.infix_finditer,
                            token_match=tokenizer.token_match, url_match=tokenizer.url_match,
                            faster_heuristics=tokenizer.faster_heuristics)


# `its` for `it's` (`its a`, `its not`), which the treebank cuts as `it` `s`: the word after it is one that
# cannot follow the possessive. In EWT train this finds 34 of its 56 such cuts and no possessive.
ITS_NEXT = ("not a an the this really simply very like definitely also just all been still nothing now in for from "
            "getting being going gonna always never too pretty quite probably actually about at on because no ok "
            "okay").split()
ITS_BEFORE = re.compile(r"\bits(?=\s+(?:%s)\b)" % "|".join(ITS_NEXT), re.IGNORECASE)


def cut_its(doc: Doc, text: str) -> Doc:
    """Cut each `its` that stands for `it's` into `it` and `s` (ITS_BEFORE)
    in `doc`, the tokens of `text`. Most texts have no `its` at all, which a
    substring test finds (Doc.text would cost a Python step per token; a
    mixed-case `iTs` is left alone); a
    text with one is made again as a new Doc (spaCy's retokenizer took
    about 2 ms a split)."""
    if "its" not in text and "Its" not in text and "ITS" not in text:
        return doc
    found = {m.start() for m in ITS_BEFORE.finditer(text)}
    if not found:
        return doc
    words, spaces = [], []
    for token in doc:
        if token.idx in found and len(token) == 3:
            words += [token.text[:2], token.text[2:]]
            spaces += [False, bool(token.whitespace_)]
        else:
            words.append(token.text)
            spaces.append(bool(token.whitespace_))
    return Doc(doc.vocab, words=words, spaces=spaces) if len(words) > len(doc) else doc


class UDTokenizer(KeepingTokenizer):
    """A KeepingTokenizer with UD English's rules (below) that skips reading
    back a saved copy of itself.

    `spacy.load` builds the tokenizer from the config and then reads the
    pipeline's tokenizer file, which resets every rule and builds them
    again (0.13 s of each cold start here). When the file holds exactly
    what this tokenizer would write, reading it changes nothing, so it is
    not read; any other file is read as spaCy reads it."""

    def __call__(self, text: str) -> Doc:
        return cut_its(KeepingTokenizer.__call__(self, text), text)

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> "UDTokenizer":
        if bytes_data == self.to_bytes(exclude=exclude):
            return self
        return _read(self, bytes_data, exclude)


def _read(tokenizer: Tokenizer, bytes_data: bytes, exclude) -> Tokenizer:
    """spaCy's own reading of a tokenizer file (it rebuilds every rule)."""
    return Tokenizer.from_bytes(tokenizer, bytes_data, exclude=exclude)


def ud_tokenizer(vocab, exceptions: Dict, prefixes: Iterable[str], infixes: Iterable[str],
                 suffixes: Iterable[str], url_match=None) -> UDTokenizer:
    """A tokenizer with a language's exceptions and affixes plus the rules
    above (each pattern compiled once: this runs in every cold start)."""
    rules = dict(exceptions)
    rules.update({text: [{"ORTH": p} for p in pieces] for text, pieces in SPECIAL.items()})
    return UDTokenizer(
        vocab, rules=rules,
        prefix_search=compile_prefix_regex([RUN_OF_MARKS, SYMBOL_RUN, *EXTRA_PREFIXES, *prefixes]).search,
        suffix_search=compile_suffix_regex([RUN_OF_MARKS, SYMBOL_RUN, *EXTRA_SUFFIXES, *suffixes]).search,
        infix_finditer=compile_infix_regex(
            [*EXTRA_INFIXES, *(_hyphen_infix(p) if "(?:-|" in p else p for p in infixes)]).finditer,
        token_match=re.compile(WHOLE).match, url_match=url_match)


@registry.tokenizers("spacy_sparse.UDTokenizer.v1")
def create_ud_tokenizer() -> Callable:
    """spaCy's tokenizer for the pipeline's language with the rules above
    (written for English; `[nlp] tokenizer` of the EWT configs)."""
    def make(nlp):
        d = nlp.Defaults
        return ud_tokenizer(nlp.vocab, d.tokenizer_exceptions, d.prefixes or [], d.infixes or [],
                            d.suffixes or [], d.url_match)
    return make
