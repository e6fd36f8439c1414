"""Write the texts of .spacy corpora as raw text, one doc per line, the
corpora (a comma-separated list) repeated until the file holds at least
WORDS words: the input of `python -m spacy_sparse tag-speed`.

    python benchmarks/raw_text.py corpus/ewt/train.spacy 1000000 corpus/ewt/raw_1m.txt

A repeated corpus meets all its word types in its first pass; each process
of `tag --n-process` meets them again (its own spaCy vocab and tokenizer
cache, its own lexicon). Several corpora with a WORDS no larger than they
hold give text that is not repeated.
"""
import sys
from pathlib import Path

import spacy
from spacy.tokens import DocBin


def main(corpus: str, words: str, out: str) -> None:
    nlp = spacy.blank("en")
    lines = [" ".join(doc.text.split()) for path in corpus.split(",")
             for doc in DocBin().from_disk(path).get_docs(nlp.vocab)]
    lines = [line for line in lines if line]
    per_pass = sum(len(line.split()) for line in lines)
    if not per_pass:
        raise SystemExit(f"{corpus} holds no text")
    passes = -(-int(words) // per_pass)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf8") as f:
        for _ in range(passes):
            f.write("\n".join(lines) + "\n")
    print(f"Wrote {out}: {passes} x {len(lines):,} lines, {passes * per_pass:,} words")


if __name__ == "__main__":
    main(*sys.argv[1:])
