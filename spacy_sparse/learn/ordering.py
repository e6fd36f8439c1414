"""Template orders: the wrapper method of Strubell et al. (2015, §4.5.2).

Forward selection by dev accuracy: starting from no templates, try each
remaining template appended to the order so far, train briefly, keep the
one that helps the dev score most, repeat. Made practical by training on a
subsample for a few epochs, and by searching only the first `max_steps`
positions (the rest keep the set's default order).
"""
import random
from typing import Callable, List, Optional, Sequence

import spacy
from spacy.training import Example
from tqdm import tqdm

from ..bench import ACCURACY_KEYS
from ..pipeline.base import ambiguity_classes


def _take_words(examples: List[Example], n_words: int) -> List[Example]:
    out, total = [], 0
    for eg in examples:
        if n_words and total >= n_words:
            break
        out.append(eg)
        total += len(eg.reference)
    return out


def wrapper_order(
    train: List[Example],
    dev: List[Example],
    templates: Sequence[str],
    *,
    factory: str = "sparse_tagger",
    config: Optional[dict] = None,
    lang: str = "en",
    train_words: int = 20000,
    dev_words: int = 10000,
    epochs: int = 2,
    max_steps: int = 0,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> List[str]:
    """Return `templates` reordered by forward selection on dev accuracy."""
    rng = random.Random(seed)
    train = list(train)
    rng.shuffle(train)
    train = _take_words(train, train_words)
    dev = _take_words(list(dev), dev_words)
    # the examples' strings live in their vocab: the probe pipes must share it
    nlp = spacy.blank(lang, vocab=train[0].predicted.vocab)
    cfg = {"mode": "full", "train_margin": 0.0, **(config or {})}
    probe = nlp.add_pipe(factory, name="probe", config={**cfg, "templates": list(templates)})
    labels = probe._labels_from(train)
    classes = ambiguity_classes(probe._word_labels(train))
    lexicon = probe.lexicon
    dev_docs = [eg.predicted for eg in dev]

    def score(candidate: List[str]) -> float:
        pipe = nlp.create_pipe(factory, config={**cfg, "templates": candidate})
        pipe.lexicon = lexicon
        pipe._build_model(labels, None, classes)
        order = list(range(len(train)))
        for epoch in range(epochs):
            random.Random(seed + epoch).shuffle(order)
            for i in range(0, len(order), 64):
                pipe.update([train[j] for j in order[i:i + 64]])
        pipe.set_annotations(dev_docs, pipe.predict(dev_docs))
        scores = pipe.score([Example(d, eg.reference) for d, eg in zip(dev_docs, dev)])
        return next(float(scores[k]) for k in ACCURACY_KEYS if scores.get(k) is not None)

    remaining = list(templates)
    chosen: List[str] = []
    steps = len(remaining) if max_steps <= 0 else min(max_steps, len(remaining))
    for step in range(steps):
        results = [(score(chosen + [t]), -i, t) for i, t in enumerate(tqdm(remaining, leave=False, desc=f"position {step + 1}"))]
        best_score, _, best = max(results)
        chosen.append(best)
        remaining.remove(best)
        log(f"{step + 1:>3} {best:<45} dev {best_score:.4f}")
    return chosen + remaining
