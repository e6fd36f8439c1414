"""Jackknifed tags: the training data tagged by taggers that never saw it.

A parser trained on tags from a tagger that was trained on the same
sentences sees almost perfect tags, then meets a tagger's real errors at
run time. Split the training docs into k folds, train a tagger (spaCy's own
`spacy train` with the given config) on the other k - 1 folds, and tag each
fold with it. The output keeps every gold annotation of the input except
`token.tag_`, which holds the predicted tags; the reader option
`tags = true` of `spacy_sparse.GoldTokenCorpus.v1` passes them to the parser.
"""
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import spacy
from spacy.cli.train import train as spacy_train
from spacy.tokens import Doc, DocBin
from wasabi import msg

from .readers import bare_copy


def fold_of(n_docs: int, k: int) -> List[int]:
    """Docs dealt to folds in turn (doc i in fold i mod k): folds mix the
    corpus's genres evenly."""
    return [i % k for i in range(n_docs)]


def jackknife_tags(config: Path, train: Path, dev: Path, output: Path, *, folds: int = 5,
                   component: str = "sparse_tagger", overrides: Optional[Dict[str, object]] = None) -> float:
    """Write `train` with jackknifed tags to `output`; returns the tag
    accuracy of the predicted tags (what the parser will train on)."""
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}")
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(train).get_docs(nlp.vocab))
    if len(docs) < folds:
        raise ValueError(f"{train} has {len(docs)} docs, fewer than {folds} folds")
    assign = fold_of(len(docs), folds)
    predicted: List[Optional[Doc]] = [None] * len(docs)
    with tempfile.TemporaryDirectory() as tmp:
        for f in range(folds):
            rest = [d for d, a in zip(docs, assign) if a != f]
            held = [i for i, a in enumerate(assign) if a == f]
            fold_dir = Path(tmp) / f"fold{f}"
            fold_dir.mkdir()
            DocBin(docs=rest, store_user_data=False).to_disk(fold_dir / "train.spacy")
            msg.info(f"fold {f + 1}/{folds}: training on {len(rest)} docs, tagging {len(held)}")
            spacy_train(config, fold_dir / "out", overrides={
                "paths.train": str(fold_dir / "train.spacy"), "paths.dev": str(dev), **(overrides or {})})
            tagger_nlp = spacy.load(fold_dir / "out" / "model-last")
            tagger = tagger_nlp.get_pipe(component)
            for i, doc in zip(held, tagger.pipe(bare_copy(docs[i], True, tagger_nlp.vocab) for i in held)):
                predicted[i] = doc
    right = total = 0
    for gold, pred in zip(docs, predicted):
        for g, p in zip(gold, pred):
            total += 1
            right += g.tag_ == p.tag_
            g.tag_ = p.tag_
    output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=False).to_disk(output)
    return right / total if total else 0.0
