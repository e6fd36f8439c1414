"""A corpus reader that keeps gold tokens and whole documents.

spaCy's `spacy.Corpus.v1` either re-tokenizes the text (gold_preproc=false)
or splits every doc into sentences (gold_preproc=true). A left-to-right
model that reads neighbouring words and labels then trains on sentence
edges it never sees at inference on whole docs. This reader yields one
example per stored doc, with the gold tokens as the predicted doc's tokens.
"""
from pathlib import Path
from typing import Callable, Iterable, Iterator, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import ensure_path, registry


def gold_token_examples(nlp: Language, path: Union[str, Path], limit: int = 0,
                        sents: bool = False) -> Iterator[Example]:
    """Examples whose predicted doc has the gold tokens (and, with `sents`,
    the gold sentence boundaries) and no other annotation."""
    path = ensure_path(path)
    if path is None or not path.exists():
        raise ValueError(f"Corpus file not found: {path}")
    files = sorted(path.glob("**/*.spacy")) if path.is_dir() else [path]
    n = 0
    for file in files:
        for ref in DocBin().from_disk(file).get_docs(nlp.vocab):
            yield Example(bare_copy(ref, sents), ref)
            n += 1
            if limit and n >= limit:
                return


def bare_copy(ref: Doc, sents: bool = False, vocab=None) -> Doc:
    """A doc with the tokens of `ref` (and its sentence starts, if asked and
    set) but none of its other annotation, in `vocab` (default: ref's)."""
    words = [t.text for t in ref]
    spaces = [bool(t.whitespace_) for t in ref]
    starts = None
    if sents and len(ref) and ref.has_annotation("SENT_START"):
        starts = [bool(t.is_sent_start) for t in ref]
    return Doc(vocab or ref.vocab, words=words, spaces=spaces, sent_starts=starts)


@registry.readers("spacy_sparse.GoldTokenCorpus.v1")
def create_gold_token_corpus(path: Path, limit: int = 0, sents: bool = False) -> Callable[[Language], Iterable[Example]]:
    """Examples with gold tokens, one per stored doc (`limit` docs at most);
    `sents` also gives the model the gold sentence boundaries (gold
    segmentation, as UD evaluations with gold tokenization assume)."""

    def read(nlp: Language) -> Iterable[Example]:
        return gold_token_examples(nlp, path, limit, sents)

    return read


def conll_ner_docs(vocab, path: Path) -> Iterator[Doc]:
    """Docs from a CoNLL-2003-style file: first column the token, last the
    IOB1/IOB2 entity tag; blank lines end sentences, -DOCSTART- lines end
    articles (one doc each). A line with one column is a malformed file."""
    from spacy.training.iob_utils import biluo_to_iob, iob_to_biluo

    def build(sents):
        words = [w for sent in sents for w, _ in sent]
        if not words:
            return None
        tags = biluo_to_iob(iob_to_biluo([t for sent in sents for _, t in sent]))  # IOB1 or IOB2 -> IOB2
        starts = [i == 0 for sent in sents for i in range(len(sent))]
        return Doc(vocab, words=words, sent_starts=starts, ents=tags)

    sents, sent = [], []
    with Path(path).open(encoding="utf8") as f:
        for number, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                if sent:
                    sents.append(sent)
                    sent = []
                continue
            if parts[0] == "-DOCSTART-":
                if sent:
                    sents.append(sent)
                    sent = []
                doc = build(sents)
                if doc is not None:
                    yield doc
                sents = []
                continue
            if len(parts) < 2:
                raise ValueError(f"{path}, line {number}: expected 'token ... tag', got {line.strip()!r}")
            sent.append((parts[0], parts[-1]))
    if sent:
        sents.append(sent)
    doc = build(sents)
    if doc is not None:
        yield doc
