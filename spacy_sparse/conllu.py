"""CoNLL-U, the format UD's tools exchange: sentences read with every check
the evaluation needs, and docs written the way UD English lays them out.

Reading is shared by `tag --format conllu` (gold tokens and sentences,
annotated again) and `evaluate-ud` (ud_eval.py). A sentence that breaks the
format is reported as a `BadSentence` naming its line, and the reader goes
on at the next blank line, so one broken sentence never costs the others.
"""
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from spacy.tokens import Doc, Span, Token

ID, FORM, LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC = range(10)

# The second word of a surface token that UD English writes as one multiword
# token with the word before it (nothing between them): clitics and "n't".
CLITICS = frozenset({"'s", "n't", "'m", "'ll", "'ve", "'re", "'d", "nt"})
# The same without the apostrophe ("Im", "youre"), only right after a letter.
BARE_CLITICS = frozenset({"s", "m", "ll", "ve", "re", "d"})
# Words the tokenizer cuts from one surface form that UD English keeps as one token.
JOINED_PAIRS = frozenset({("can", "not"), ("gon", "na"), ("wan", "na"), ("got", "ta")})


class Sentence(NamedTuple):
    """One sentence as the file holds it: comment lines (without the line
    break), its words' ten columns, and its multiword tokens as (first word
    id, last word id, the range line's ten columns)."""
    line: int
    comments: List[str]
    words: List[List[str]]
    ranges: List[Tuple[int, int, List[str]]]

    @property
    def spaces(self) -> List[bool]:
        """Whether each word is followed by a space (SpaceAfter=No on a
        multiword token's line applies to its last word)."""
        out = [not has_misc(w[MISC], "SpaceAfter=No") for w in self.words]
        for first, last, columns in self.ranges:
            out[first - 1:last - 1] = [False] * (last - first)
            out[last - 1] = not has_misc(columns[MISC], "SpaceAfter=No")
        return out


    def surface(self) -> List[Tuple[str, bool]]:
        """(form, followed by a space) of each surface token: a multiword
        token's own form, or a word's."""
        spaces = self.spaces
        starts = {first: (last, columns) for first, last, columns in self.ranges}
        out, k = [], 0
        while k < len(self.words):
            last, columns = starts.get(k + 1, (k + 1, self.words[k]))
            out.append((columns[FORM], spaces[last - 1]))
            k = last
        return out

    def starts_paragraph(self) -> bool:
        return any(c.startswith(("# newpar", "# newdoc")) for c in self.comments)


class BadSentence(NamedTuple):
    """A sentence the reader skipped: where it starts and what is wrong."""
    line: int
    problem: str


class ConlluError(ValueError):
    pass


def has_misc(misc: str, item: str) -> bool:
    return misc != "_" and item in misc.split("|")


def read_sentences(lines: Iterable[Union[str, bytes]]) -> Iterator[Union[Sentence, BadSentence]]:
    """The sentences of a CoNLL-U stream, in order, each checked (ten
    columns, word ids 1..n in order, multiword ranges over the next words,
    heads inside the sentence forming one tree, non-empty forms). Empty
    nodes (ids like 3.1) belong to the enhanced graph and are left out."""
    block: List[Tuple[int, str]] = []
    number = 0
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf8")
            except UnicodeDecodeError as err:
                block.append((number, f"\x00invalid UTF-8 ({err.reason} at byte {err.start})"))
                continue
        text = raw.rstrip("\r\n")
        if text.strip():
            block.append((number, text))
        elif block:
            yield _sentence(block)
            block = []
    if block:
        yield _sentence(block)


def _sentence(block: List[Tuple[int, str]]) -> Union[Sentence, BadSentence]:
    try:
        return _checked(block)
    except ConlluError as err:
        return BadSentence(block[0][0], str(err))


def _checked(block: List[Tuple[int, str]]) -> Sentence:
    comments: List[str] = []
    words: List[List[str]] = []
    ranges: List[Tuple[int, int, List[str]]] = []
    for number, text in block:
        if text.startswith("\x00"):
            raise ConlluError(f"line {number}: {text[1:]}")
        if text.startswith("#"):
            if words or ranges:
                raise ConlluError(f"line {number}: a comment inside a sentence")
            comments.append(text)
            continue
        columns = text.split("\t")
        if len(columns) != 10:
            raise ConlluError(f"line {number}: {len(columns)} tab-separated columns, not 10")
        ident = columns[ID]
        if "." in ident:
            continue
        if "-" in ident:
            first, _, last = ident.partition("-")
            if not (first.isdigit() and last.isdigit()) or int(first) != len(words) + 1 or int(last) <= int(first):
                raise ConlluError(f"line {number}: multiword token id {ident!r} does not cover the next words")
            ranges.append((int(first), int(last), columns))
            continue
        if not ident.isdigit() or int(ident) != len(words) + 1:
            raise ConlluError(f"line {number}: word id {ident!r} where {len(words) + 1} comes next")
        if not columns[FORM] or columns[FORM].isspace():
            raise ConlluError(f"line {number}: an empty FORM")
        words.append(columns)
    if not words:
        raise ConlluError(f"line {block[0][0]}: a sentence without words")
    if ranges and ranges[-1][1] > len(words):
        raise ConlluError(f"line {block[0][0]}: a multiword token reaches past the sentence's last word")
    _check_tree([w[HEAD] for w in words])
    return Sentence(block[0][0], comments, words, ranges)


def _check_tree(heads: Sequence[str]) -> None:
    """Heads all "_" (no tree), or all ids in 0..n with one root and no
    cycle (the caller names the sentence's line)."""
    if all(h == "_" for h in heads):
        return
    n = len(heads)
    if not all(h.isdigit() and int(h) <= n for h in heads):
        raise ConlluError("a HEAD that is not a word id of the sentence or 0")
    parent = [int(h) for h in heads]
    if parent.count(0) != 1:
        raise ConlluError(f"{parent.count(0)} roots, not 1")
    state = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, n + 1):
        path, node = [], start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = parent[node - 1]
        if state[node] == 1:
            raise ConlluError(f"a cycle through word {node}")
        for p in path:
            state[p] = 2


# ---- writing -------------------------------------------------------------------------------------------


def _escape_space(text: str) -> str:
    """Whitespace as UDPipe writes it in SpacesAfter (\\s, \\t, \\n, \\r)."""
    return text.replace("\\", "\\\\").replace(" ", "\\s").replace("\t", "\\t").replace("\n", "\\n") \
        .replace("\r", "\\r")


def space_misc(after: str, last_in_doc: bool) -> str:
    """MISC for the whitespace that follows a word: nothing for one space,
    SpaceAfter=No for none (but after a doc's last word), SpacesAfter for
    anything else (line breaks, several spaces), so the text is kept whole."""
    if after == " " or (not after and last_in_doc):
        return "_"
    if not after:
        return "SpaceAfter=No"
    return "SpacesAfter=" + _escape_space(after)


def multiword_tokens(words: Sequence[Token]) -> List[Tuple[int, int]]:
    """(first, last) positions in `words` of the runs written as one
    multiword token: a word and the clitics glued to it."""
    out: List[Tuple[int, int]] = []
    i = 0
    while i < len(words):
        j = i
        while j + 1 < len(words) and not words[j].whitespace_ and _glued(words[j].text, words[j + 1].text):
            j += 1
        if j > i:
            out.append((i, j))
        i = j + 1
    return out


def _glued(before: str, word: str) -> bool:
    low = word.lower().replace("\u2019", "'")
    if low in CLITICS:
        return True
    if low in BARE_CLITICS:
        return before[-1:].isalpha()
    return (before.lower(), low) in JOINED_PAIRS


def sentence_text(words: Sequence[Token]) -> str:
    """The sentence as `# text` gives it: its words and the spaces between
    them, any run of whitespace as one space."""
    parts = []
    for k, token in enumerate(words):
        parts.append(token.text)
        if k + 1 < len(words) and (token.whitespace_ or words[k + 1].i > token.i + 1):
            parts.append(" ")
    return "".join(parts)


def _field(value: str) -> str:
    """A column value: "_" when unset; no tab or line break can break the line."""
    if not value:
        return "_"
    return value.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def sentence_lines(sent: Span, last_in_doc: int, given: Optional[Sentence] = None) -> List[str]:
    """The word and multiword-token lines of one sentence. Whitespace
    tokens are not words: their text goes to the MISC of the word before.
    With `given` (the sentence read from CoNLL-U), its multiword tokens
    are kept as they were."""
    doc = sent.doc
    words = [t for t in sent if not t.is_space]
    ident = {t.i: k + 1 for k, t in enumerate(words)}
    parsed = doc.has_annotation("DEP")
    if given is not None:
        runs = [(first - 1, last - 1) for first, last, _ in given.ranges]
        range_misc = {first - 1: columns[MISC] for first, _, columns in given.ranges}
    else:
        runs, range_misc = multiword_tokens(words), {}
    in_run = {k: (a, b) for a, b in runs for k in range(a, b + 1)}
    tree = one_tree(words, ident) if parsed else []
    out: List[str] = []
    for k, token in enumerate(words):
        after = _whitespace_after(doc, token)
        run = in_run.get(k)
        if run is not None and run[0] == k:
            surface = "".join(w.text for w in words[run[0]:run[1] + 1])
            tail = words[run[1]]
            misc = range_misc.get(k) or space_misc(_whitespace_after(doc, tail), tail.i == last_in_doc)
            out.append(f"{k + 1}-{run[1] + 1}\t{_field(surface)}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
        if given is not None:
            misc = given.words[k][MISC]
        else:
            misc = "_" if run is not None else space_misc(after, token.i == last_in_doc)
        head, deprel = "_", "_"
        if parsed:
            head, deprel = (("0", "root") if tree[k] < 0 else
                            (str(tree[k] + 1), "dep" if token.dep_.lower() == "root" else _field(token.dep_)))
        morph = str(token.morph)
        out.append("\t".join([str(k + 1), _field(token.text), _field(token.lemma_), _field(token.pos_),
                              _field(token.tag_), _field(morph), head, deprel, "_", misc]))
    return out


def one_tree(words: Sequence[Token], ident: Dict[int, int]) -> List[int]:
    """Each word's head as a position in `words` (-1: the root), as one
    tree: a head that is a whitespace token is followed up to a word, and a
    word whose head lies outside the sentence (or at a whitespace root)
    would be a second root, so it hangs from the sentence's root instead
    (the first word the parser made its own head, else the first such
    word)."""
    heads = []
    for token in words:
        head, steps = token.head, 0
        while head.is_space and head.head.i != head.i and steps < len(words):  # bounded: a doc's heads may cycle
            head, steps = head.head, steps + 1
        heads.append(-1 if head.i == token.i or head.i not in ident else ident[head.i] - 1)
    roots = [k for k, h in enumerate(heads) if h < 0]
    if len(roots) > 1:
        main = next((k for k in roots if words[k].head.i == words[k].i), roots[0])
        for k in roots:
            if k != main:
                heads[k] = main
    return heads


def _whitespace_after(doc: Doc, token: Token) -> str:
    """The token's own whitespace and the text of the whitespace tokens after it."""
    parts = [token.whitespace_]
    i = token.i + 1
    while i < len(doc) and doc[i].is_space:
        parts.append(doc[i].text_with_ws)
        i += 1
    return "".join(parts)


def doc_sentences(doc: Doc) -> List[Span]:
    """The doc's sentences with at least one word; the whole doc when no
    component set sentence starts."""
    spans = list(doc.sents) if doc.has_annotation("SENT_START") else [doc[:]]
    return [s for s in spans if any(not t.is_space for t in s)]


def doc_conllu(doc: Doc, doc_id: str, newdoc: bool = True, newpar: bool = True,
               sent_prefix: Optional[str] = None) -> str:
    """The doc as CoNLL-U: `# newdoc id` (with `newdoc`), `# newpar` before
    its first sentence (with `newpar`) and wherever a blank line comes
    before a sentence, `# sent_id` (DOC_ID-N) and `# text` for every
    sentence (SENT_PREFIX-N: `sent_prefix` defaults to the doc id); UPOS,
    XPOS, FEATS, LEMMA, HEAD and DEPREL as the pipeline set them, "_" for
    what it did not set."""
    words = [t for t in doc if not t.is_space]
    if not words:
        return ""
    last = words[-1].i
    out: List[str] = []
    for n, sent in enumerate(doc_sentences(doc), start=1):
        if n == 1 and newdoc:
            out.append(f"# newdoc id = {_field(doc_id)}")
        if (n == 1 and newpar) or (n > 1 and _blank_line_before(doc, sent)):
            out.append("# newpar")
        out.append(f"# sent_id = {_field(sent_prefix or doc_id)}-{n}")
        out.append(f"# text = {_field(sentence_text([t for t in sent if not t.is_space]))}")
        out.extend(sentence_lines(sent, last))
        out.append("")
    return "\n".join(out) + "\n"


def given_conllu(doc: Doc, given: Sentence) -> str:
    """A sentence read from CoNLL-U and annotated again: its comments and
    multiword tokens as they were, the words' columns as the pipeline set
    them (MISC kept)."""
    sent = doc[:]
    lines = list(given.comments) + sentence_lines(sent, len(doc) - 1, given)
    return "\n".join(lines) + "\n\n"


def _blank_line_before(doc: Doc, sent: Span) -> bool:
    """Whether the whitespace between the sentence's first word and the
    word before it holds a blank line (a paragraph break)."""
    first = next(t for t in sent if not t.is_space)
    i = first.i - 1
    while i >= 0 and doc[i].is_space:
        i -= 1
    gap = _whitespace_after(doc, doc[i]) if i >= 0 else ""
    return gap.count("\n") >= 2


def sentence_doc(vocab, sentence: Sentence) -> Doc:
    """A doc of one CoNLL-U sentence's words (its tokens and sentence as
    given), to be annotated."""
    words = [w[FORM] for w in sentence.words]
    spaces = sentence.spaces
    spaces[-1] = False
    return Doc(vocab, words=words, spaces=spaces, sent_starts=[True] + [False] * (len(words) - 1))


def ud_text(sentences: Iterable[Sentence], width: int = 80) -> Iterator[str]:
    """The treebank's text laid out as UD's raw-text files are: paragraphs
    (a new one at `# newpar` or `# newdoc`) apart by a blank line, each
    wrapped at spaces into lines of at most `width` characters (a longer
    word stands alone). Yields one paragraph at a time, without the
    blank line."""
    paragraph: List[str] = []
    for sentence in sentences:
        if sentence.starts_paragraph() and paragraph:
            yield wrap("".join(paragraph).rstrip(), width)
            paragraph = []
        for form, space in sentence.surface():
            paragraph.append(form + (" " if space else ""))
    if paragraph:
        yield wrap("".join(paragraph).rstrip(), width)


def wrap(text: str, width: int) -> str:
    lines = []
    while len(text) > width:
        cut = text.rfind(" ", 0, width + 1)
        if cut <= 0:
            cut = text.find(" ", width)
            if cut < 0:
                break
        lines.append(text[:cut])
        text = text[cut + 1:]
    lines.append(text)
    return "\n".join(lines)
