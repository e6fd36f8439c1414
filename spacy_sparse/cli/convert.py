"""Corpus conversion to .spacy DocBins (spaCy's converters where they fit)."""
import argparse
import re
from pathlib import Path
from typing import List, Tuple

from wasabi import msg


def hold_out(conllu: str, prefix: str) -> Tuple[str, str]:
    """(the CoNLL-U text without the documents whose `# newdoc id` starts
    with `prefix`, the text of those documents). A treebank's document ids
    name their source (EWT's: answers-, email-, newsgroup-, reviews-,
    weblog-), so a prefix holds one genre out."""
    kept: List[str] = []
    held: List[str] = []
    into = kept
    for block in conllu.split("\n\n"):
        if not block.strip():
            continue
        doc_id = re.search(r"^# newdoc id = (.*)$", block, re.M)
        if doc_id:
            into = held if doc_id.group(1).strip().startswith(prefix) else kept
        into.append(block)
    return "".join(b + "\n\n" for b in kept), "".join(b + "\n\n" for b in held)


def cmd_convert_ud(args: argparse.Namespace) -> int:
    """Convert a UD treebank directory's train/dev/test CoNLL-U to DocBins
    with spaCy's own converter (what `spacy convert --converter conllu` does),
    keeping where the treebank's paragraphs start (readers.PARAGRAPHS_KEY):
    the raw-text copies training makes can then break lines there. With
    `hold_out`, the documents whose id starts with it leave train and dev
    and go to `heldout.spacy` instead (test stays whole): text of a kind
    the models never learned from nor were picked on, to measure them on
    another domain without touching test."""
    from spacy.tokens import DocBin
    from spacy.training.converters import conllu_to_docs

    from ..readers import mark_paragraphs

    def docs_of(text: str) -> list:
        return mark_paragraphs(list(conllu_to_docs(text, n_sents=10, no_print=True)), text) if text else []

    src, out = Path(args.ud_dir), Path(args.output)
    prefix = getattr(args, "hold_out", None)
    texts = {}
    for split in ("train", "dev", "test"):
        files = sorted(src.glob(f"*-ud-{split}.conllu"))
        if not files:
            msg.fail(f"No *-ud-{split}.conllu in {src}", exits=1)
        texts[split] = (files[0], files[0].read_text(encoding="utf8"))
    held = ""
    if prefix:  # split before anything is written, so an unknown prefix leaves no half-made corpus
        for split in ("train", "dev"):
            name, text = texts[split]
            kept, held_here = hold_out(text, prefix)
            texts[split] = (name, kept)
            held += held_here
        if not held:
            msg.fail(f"No document of train or dev has an id that starts with {prefix!r}", exits=1)
    out.mkdir(parents=True, exist_ok=True)
    for split, (name, text) in texts.items():
        DocBin(docs=docs_of(text), store_user_data=True).to_disk(out / f"{split}.spacy")
        msg.good(f"{name.name} -> {out / f'{split}.spacy'}")
    if prefix:
        held_docs = docs_of(held)
        DocBin(docs=held_docs, store_user_data=True).to_disk(out / "heldout.spacy")
        msg.good(f"documents {prefix}* of train and dev -> {out / 'heldout.spacy'}: "
                 f"{sum(len(list(d.sents)) for d in held_docs):,} sentences, {sum(len(d) for d in held_docs):,} tokens")
    return 0


def cmd_convert_conll(args: argparse.Namespace) -> int:
    """CoNLL-2003-style files (token ... IOB tag per line, blank line between
    sentences, -DOCSTART- between articles) to one doc per article, with
    sentence starts and entities, so document-level features see the whole
    article. (spaCy's `--converter ner` groups a fixed number of sentences
    and keeps -DOCSTART- as a sentence.)"""
    from spacy.tokens import DocBin

    from ..readers import chunk_docs, conll_ner_docs, uner_docs

    vocab = __import__("spacy").blank("en").vocab
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.uner or args.chunks:
        docs = list((uner_docs if args.uner else chunk_docs)(vocab, Path(args.input)))
    else:
        docs = list(conll_ner_docs(vocab, Path(args.input), docstart_every=args.docstart_every))
    DocBin(docs=docs, store_user_data=False).to_disk(out)
    msg.good(f"{args.input} -> {out}: {len(docs)} docs, {sum(len(d) for d in docs):,} tokens, "
             f"{sum(len(d.ents) for d in docs):,} entities")
    return 0


def cmd_clusters(args: argparse.Namespace) -> int:
    """A word-cluster source ("lookups", Liang's `paths` file, a table) ->
    a table file that `clusters` settings take (and that the package ships
    as en_brown_1000, made from "lookups")."""
    from ..clusters import resolve, write_table

    try:
        table = resolve(args.source, args.lang)
    except (OSError, ValueError) as err:
        msg.fail(str(err), exits=1)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(write_table(table))
    msg.good(f"{args.source} -> {out}: {len(table):,} word forms, {table.n_clusters:,} clusters, "
             f"{int((table.stats > 0).sum()):,} casefreq codes, {int((table.senses > 0).sum()):,} WordNet readings, "
             f"{out.stat().st_size:,} bytes")
    return 0


def register(sub) -> None:
    p = sub.add_parser("convert-ud", help="UD treebank directory -> train/dev/test .spacy")
    p.add_argument("ud_dir")
    p.add_argument("output")
    p.add_argument("--hold-out", default=None, metavar="PREFIX",
                   help="documents whose id starts with PREFIX (EWT: a genre, e.g. email) leave train and dev for "
                        "OUTPUT/heldout.spacy")
    p.set_defaults(func=cmd_convert_ud)

    p = sub.add_parser("convert-conll", help="CoNLL-2003 NER (or --uner, --chunks) file -> .spacy")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--uner", action="store_true",
                   help="Universal NER format (index token tag ...); OTH and B-O tags become O")
    p.add_argument("--chunks", action="store_true",
                   help="CoNLL-2000 chunking (token POS chunk): one doc per sentence, POS as tag_, chunks as ents")
    p.add_argument("--docstart-every", type=int, default=0, metavar="K",
                   help="CoNLL-2003: open articles 0, K, 2K, ... with the -DOCSTART- marker as a one-token "
                        "sentence, as spaCy's `convert --converter ner` docs have it (default 0: never)")
    p.set_defaults(func=cmd_convert_conll)

    p = sub.add_parser("clusters", help="word clusters (lookups, Liang's paths file) -> a table for `clusters` settings")
    p.add_argument("source", help='"lookups" (spacy-lookups-data), a Liang brown-cluster `paths` file, or a table')
    p.add_argument("output")
    p.add_argument("--lang", default="en", help="language of the lookups table (default: en)")
    p.set_defaults(func=cmd_clusters)
