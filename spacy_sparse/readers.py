"""A corpus reader that keeps gold tokens and whole documents.

spaCy's `spacy.Corpus.v1` either re-tokenizes the text (gold_preproc=false)
or splits every doc into sentences (gold_preproc=true). A left-to-right
model that reads neighbouring words and labels then trains on sentence
edges it never sees at inference on whole docs. This reader yields one
example per stored doc, with the gold tokens as the predicted doc's tokens.
"""
import weakref
import zlib
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from spacy.language import Language
from spacy.attrs import TAG
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import ensure_path, registry

from .checks import check_number


# Examples a reader keeps for its pipeline's next read (predicted tokens; EWT train read both ways: 0.4M)
KEEP_TOKENS = 5_000_000
TOKENS = ("gold", "runtime", "both")
# user_data key of a doc's paragraph starts (token offsets after the first), from a CoNLL-U's `# newpar`
PARAGRAPHS_KEY = "spacy_sparse.paragraphs"


def mark_paragraphs(docs: List[Doc], conllu: str) -> List[Doc]:
    """Record in each doc (spaCy's conllu_to_docs output: runs of whole
    sentences, in file order) where a paragraph or document of the CoNLL-U
    text starts inside it."""
    flags = [("# newpar" in block or "# newdoc" in block)
             for block in conllu.split("\n\n") if block.strip()]
    k = 0
    for doc in docs:
        starts = []
        for j, sent in enumerate(doc.sents):
            if j and k < len(flags) and flags[k]:
                starts.append(sent.start)
            k += 1
        doc.user_data[PARAGRAPHS_KEY] = starts
    if k != len(flags):
        raise ValueError(f"The docs hold {k} sentences, the CoNLL-U text {len(flags)}")
    return docs


def in_lines(ref: Doc, paragraph: str = "\n\n", width: int = 72) -> str:
    """The text of `ref` laid out in lines, as plain-text files and e-mail
    are: `paragraph` where a paragraph starts (PARAGRAPHS_KEY), and a line
    break for the space before a word that would pass `width` characters (0:
    no wrapping). Only whitespace changes, so spaCy's alignment still maps
    the tokens of this text to the gold ones."""
    breaks = set(ref.user_data.get(PARAGRAPHS_KEY, ()))
    # the length of the run of tokens without whitespace that starts at each token: what must fit on the line
    run = [0] * (len(ref) + 1)
    for token in reversed(ref):
        run[token.i] = len(token.text) + (0 if token.whitespace_ else run[token.i + 1])
    parts, line = [], 0
    for token in ref:
        if token.i in breaks and parts and parts[-1] == " ":
            parts[-1], line = paragraph, 0
        elif width and parts and parts[-1] == " " and line + run[token.i] > width:
            parts[-1], line = "\n", 0
        parts.append(token.text)
        parts.append(token.whitespace_)
        line += len(token.text_with_ws)
    return "".join(parts)


def random_lines(ref: Doc, rng: np.random.Generator) -> str:
    """A layout for training: paragraphs after a line break or a blank line,
    and half the time lines wrapped at 60-80 characters."""
    paragraph = "\n" if rng.random() < 0.5 else "\n\n"
    return in_lines(ref, paragraph, int(rng.integers(60, 81)) if rng.random() < 0.5 else 0)


def recased(text: str, upper: bool) -> str:
    """`text` in lower or upper case, character by character, leaving a
    character whose other case is longer (`ß` -> `SS`) as it is: spaCy's
    alignment maps tokens of texts that differ only in case and whitespace."""
    change = str.upper if upper else str.lower
    out = change(text)
    if len(out) == len(text):
        return out
    return "".join(c if len(change(c)) != 1 else change(c) for c in text)


def check_shares(newlines: float, lowercase: float, uppercase: float) -> Tuple[float, float, float]:
    """The shares of raw-text copies laid out in lines and put in one case,
    checked (the two cases share one draw, so they add up to at most 1)."""
    lowercase = check_number(lowercase, "lowercase", low=0.0, high=1.0)
    return (check_number(newlines, "newlines", low=0.0, high=1.0), lowercase,
            check_number(uppercase, "uppercase", low=0.0, high=1.0 - lowercase))


def gold_token_examples(nlp: Language, path: Union[str, Path], limit: int = 0,
                        sents: bool = False, tags: bool = False, tokens: str = "gold",
                        newlines: float = 0.0, lowercase: float = 0.0, uppercase: float = 0.0) -> Iterator[Example]:
    """Examples whose predicted doc has the gold tokens (and, with `sents`,
    the gold sentence boundaries; with `tags`, the stored tags) and no
    other annotation. `tokens="runtime"` gives the predicted doc the tokens
    of `nlp.make_doc` instead (what users have; the gold labels reach them
    through spaCy's alignment; `sents` projects the gold sentence starts
    onto them); "both" yields each doc both ways: gold tokens (with `sents`,
    gold sentences) and the raw-text path users take (spaCy's tokens, no
    boundaries). A `newlines` share of the raw-text copies (drawn per doc,
    the same in every epoch) has its text laid out in lines (random_lines);
    a `lowercase` and an `uppercase` share is all in one case (text typed
    without capitals, or shouted), so a model does not rely on case alone."""
    if tokens not in TOKENS:
        raise ValueError(f"tokens must be one of {TOKENS}, got {tokens!r}")
    newlines, lowercase, uppercase = check_shares(newlines, lowercase, uppercase)
    path = ensure_path(path)
    if path is None or not path.exists():
        raise ValueError(f"Corpus file not found: {path}")
    files = sorted(path.glob("**/*.spacy")) if path.is_dir() else [path]
    n = 0
    for file in files:
        for ref in DocBin().from_disk(file).get_docs(nlp.vocab):
            if tokens != "runtime":
                yield Example(bare_copy(ref, sents, tags=tags), ref)
            if tokens != "gold":
                text = ref.text
                if newlines > 0:
                    rng = np.random.default_rng(zlib.crc32(text.encode("utf8")))
                    if rng.random() < newlines:
                        text = random_lines(ref, rng)
                if lowercase > 0 or uppercase > 0:
                    draw = np.random.default_rng(zlib.crc32(b"case" + ref.text.encode("utf8"))).random()
                    if draw < lowercase + uppercase:
                        text = recased(text, upper=draw >= lowercase)
                yield runtime_example(nlp, ref, sents and tokens == "runtime", text)
            n += 1
            if limit and n >= limit:
                return


def runtime_example(nlp: Language, ref: Doc, sents: bool = False, text: Optional[str] = None) -> Example:
    """An example whose predicted doc is `nlp.make_doc(ref.text)` (or of
    `text`, the same words with other whitespace); with `sents`, the
    reference's sentence starts projected onto its tokens through spaCy's
    alignment."""
    eg = Example(nlp.make_doc(ref.text if text is None else text), ref)
    if sents and len(ref) and ref.has_annotation("SENT_START"):
        for token, start in zip(eg.predicted, eg.get_aligned_sent_starts()):
            token.is_sent_start = bool(start)
    return eg


def bare_copy(ref: Doc, sents: bool = False, vocab=None, tags: bool = False) -> Doc:
    """A doc with the tokens of `ref` (and, if asked, its sentence starts
    and its tag_, the input of models with `ptag` templates) but none of its
    other annotation, in `vocab` (default: ref's)."""
    words = [t.text for t in ref]
    spaces = [bool(t.whitespace_) for t in ref]
    starts = None
    if sents and len(ref) and ref.has_annotation("SENT_START"):
        starts = [bool(t.is_sent_start) for t in ref]
    doc = Doc(vocab or ref.vocab, words=words, spaces=spaces, sent_starts=starts)
    if tags and len(ref):
        for tag in {t.tag_ for t in ref}:  # the array holds string hashes: the vocab needs the strings
            doc.vocab.strings.add(tag)
        doc.from_array([TAG], ref.to_array([TAG]))
    return doc


@registry.readers("spacy_sparse.GoldTokenCorpus.v1")
def create_gold_token_corpus(path: Path, limit: int = 0, sents: bool = False, tags: bool = False,
                             tokens: str = "gold", newlines: float = 0.0, lowercase: float = 0.0,
                             uppercase: float = 0.0) -> Callable[[Language], Iterable[Example]]:
    """Examples with gold tokens, one per stored doc (`limit` docs at most);
    `sents` also gives the model the gold sentence boundaries (gold
    segmentation, as UD evaluations with gold tokenization assume); `tags`
    puts the stored tag_ on the predicted doc, for a parser trained on
    jackknifed tags (`python -m spacy_sparse jackknife`); `tokens` picks
    gold tokens, the tokens of spaCy's tokenizer ("runtime"), or "both";
    `newlines`, the share of raw-text copies laid out in lines; `lowercase`
    and `uppercase`, the shares in one case. A pipeline that reads the
    corpus to the end gets the same examples again on its next read, unless
    they hold more than KEEP_TOKENS tokens (a corpus streamed with
    `max_epochs = -1` is read afresh each time)."""
    if tokens not in TOKENS:
        raise ValueError(f"tokens must be one of {TOKENS}, got {tokens!r}")
    newlines, lowercase, uppercase = check_shares(newlines, lowercase, uppercase)

    made: "weakref.WeakKeyDictionary[Language, List[Example]]" = weakref.WeakKeyDictionary()

    def read(nlp: Language) -> Iterable[Example]:
        # `spacy train` reads the corpus once per component's initialize and once per evaluation; the examples
        # are the same each time (the layouts and cases are drawn per doc), and spaCy copies the predicted docs
        # before it writes on them (update, evaluate), so one read serves them all
        examples = made.get(nlp)
        return iter(examples) if examples is not None else remember(nlp)

    def remember(nlp: Language) -> Iterator[Example]:
        examples: Optional[List[Example]] = []
        n_tokens = 0
        for eg in gold_token_examples(nlp, path, limit, sents, tags, tokens, newlines, lowercase, uppercase):
            if examples is not None:
                n_tokens += len(eg.predicted)
                examples.append(eg)
                if n_tokens > KEEP_TOKENS:
                    examples = None  # too large to hold: read again next time
            yield eg
        if examples is not None:
            made[nlp] = examples  # only a read to the end: spaCy's initialize may look at the first few alone

    return read


def iob_docs(vocab, path: Path, *, token_col: int, tag_col: int, doc_break: Callable[[str], bool],
             map_tag: Callable[[str], str] = lambda t: t, pos_col: Optional[int] = None,
             doc_per_sentence: bool = False, comments: bool = True) -> Iterator[Doc]:
    """Docs with sentence starts and entities from a token-per-line file with
    an IOB1/IOB2 tag column: blank lines end sentences, lines for which
    `doc_break` is true end docs (with `doc_per_sentence`, every sentence is
    a doc), other lines starting with "#" are comments
    (unless `comments` is False: "#" is a word in the WSJ); `pos_col` fills
    tag_. A line without the columns is a malformed file."""
    from spacy.training.iob_utils import biluo_to_iob, iob_to_biluo

    def build(sents):
        words = [w[0] for sent in sents for w, _ in sent]
        if not words:
            return None
        tags = biluo_to_iob(iob_to_biluo([t for sent in sents for _, t in sent]))  # IOB1 or IOB2 -> IOB2
        starts = [i == 0 for sent in sents for i in range(len(sent))]
        pos = [w[1] for sent in sents for w, _ in sent] if pos_col is not None else None
        return Doc(vocab, words=words, sent_starts=starts, ents=tags, tags=pos)

    sents, sent = [], []
    with Path(path).open(encoding="utf8") as f:
        for number, line in enumerate(f, start=1):
            stripped = line.strip()
            if not stripped or doc_break(stripped) or (comments and stripped.startswith("#")):
                if sent:
                    sents.append(sent)
                    sent = []
                if (stripped and doc_break(stripped)) or (doc_per_sentence and sents):
                    doc = build(sents)
                    if doc is not None:
                        yield doc
                    sents = []
                continue
            parts = line.rstrip("\n").split("\t") if "\t" in line else line.split()
            if len(parts) <= max(token_col, tag_col, pos_col or 0):
                raise ValueError(f"{path}, line {number}: expected a token and a tag, got {stripped!r}")
            pos = parts[pos_col] if pos_col is not None else ""
            sent.append(((parts[token_col], pos), map_tag(parts[tag_col])))
    if sent:
        sents.append(sent)
    doc = build(sents)
    if doc is not None:
        yield doc


DOCSTART = "-DOCSTART-"


def conll_ner_docs(vocab, path: Path, docstart_every: int = 0) -> Iterator[Doc]:
    """CoNLL-2003 (token POS chunk tag): one doc per -DOCSTART- article.
    With `docstart_every` k > 0, articles 0, k, 2k, ... open with the
    marker as a sentence of its own (outside any entity), as every doc
    of spaCy's `--converter ner` that starts an article does: a model
    trained on them leaves the marker alone in such docs, and (k = 2)
    still sees as many article starts without it."""
    docstart_every = check_number(docstart_every, "docstart_every", whole=True, low=0)
    docs = iob_docs(vocab, path, token_col=0, tag_col=-1, doc_break=lambda line: line.startswith(DOCSTART))
    for i, doc in enumerate(docs):
        if docstart_every and i % docstart_every == 0:
            doc = Doc.from_docs([Doc(vocab, words=[DOCSTART], sent_starts=[True], ents=["O"]), doc])
        yield doc


def chunk_docs(vocab, path: Path) -> Iterator[Doc]:
    """CoNLL-2000 chunking (token POS chunk): one doc per sentence (the data
    has no documents), the POS column as tag_, the chunks as doc.ents, so a
    `sparse_ner` with `ptag` templates is a chunker and its entity F1 is
    conlleval's chunk F1 (exact spans)."""
    return iob_docs(vocab, path, token_col=0, tag_col=2, pos_col=1, doc_break=lambda line: False,
                    doc_per_sentence=True, comments=False)


def uner_docs(vocab, path: Path, drop_types: Sequence[str] = ("OTH", "O")) -> Iterator[Doc]:
    """Universal NER files (index token tag - annotator, `# newdoc` comments):
    one doc per `# newdoc`. Tags of `drop_types` become O: the draft EWT
    train file has an OTH type and stray B-O tags that UNER v1 does not."""

    def map_tag(tag: str) -> str:
        return "O" if tag[2:] in drop_types else tag

    return iob_docs(vocab, path, token_col=1, tag_col=2, doc_break=lambda line: line.startswith("# newdoc"),
                    map_tag=map_tag)
