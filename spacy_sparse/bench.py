"""Measure a pipeline's sparse component across stop margins: accuracy,
templates scored per token and words per second, all in one run."""
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from .pipeline.base import SparsePipe, check_margin_decay
from .readers import bare_copy

# The score each task is judged by, first match wins.
ACCURACY_KEYS = ("tag_acc", "pos_acc", "ents_f", "dep_las")


def parse_margins(text: str) -> List[Optional[float]]:
    """"none,40,20" -> [None, 40.0, 20.0]."""
    margins: List[Optional[float]] = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        if part in ("none", "null", "all"):
            margins.append(None)
        else:
            value = float(part)
            if value < 0:
                raise ValueError(f"Margins must be >= 0 or 'none', got {part}")
            margins.append(value)
    if not margins:
        raise ValueError("No margins given")
    return margins


def sparse_components(nlp: Language) -> List[Tuple[str, SparsePipe]]:
    return [(name, pipe) for name, pipe in nlp.pipeline if isinstance(pipe, SparsePipe)]


def read_references(nlp: Language, path: Path) -> List[Doc]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No such data file: {path}")
    return list(DocBin().from_disk(path).get_docs(nlp.vocab))


def bare_docs(nlp: Language, references: Sequence[Doc], sents: bool = False, tags: bool = False) -> List[Doc]:
    """Unannotated copies of the gold docs (gold tokens, no tokenizer time;
    with `sents`, the gold sentence starts too; with `tags`, the given tags,
    for models that read them, like the chunker)."""
    return [bare_copy(d, sents, nlp.vocab, tags=tags) for d in references]


def time_pipe(nlp: Language, docs: List[Doc], repeat: int) -> float:
    """Best-of-`repeat` words per second of nlp.pipe over pre-made docs."""
    n_words = sum(len(d) for d in docs)
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        for _doc in nlp.pipe(docs):
            pass
        best = min(best, time.perf_counter() - start)
    return n_words / best if best > 0 else float("inf")


def accuracy(pipe: SparsePipe, docs: List[Doc], references: List[Doc]) -> Tuple[str, float]:
    scores = pipe.score([Example(d, r) for d, r in zip(docs, references)])
    for key in ACCURACY_KEYS:
        if scores.get(key) is not None:
            return key, float(scores[key])
    raise ValueError(f"The component {pipe.name!r} reported none of {ACCURACY_KEYS}")


def parse_decays(text: str) -> List[float]:
    """"1,0.96" -> [1.0, 0.96]; each must lie in (0, 1]."""
    decays = [check_margin_decay(float(part)) for part in text.split(",") if part.strip()]
    if not decays:
        raise ValueError("No margin decays given")
    return decays


def run_bench(
    model: str,
    data: Path,
    margins: Sequence[Optional[float]],
    *,
    component: Optional[str] = None,
    compare: Optional[str] = None,
    repeat: int = 3,
    sents: bool = False,
    tags: bool = False,
    decays: Optional[Sequence[float]] = None,
) -> Dict[str, Any]:
    """Rows of (margin, margin_decay): every margin at every decay (the
    component's own decay when `decays` is None); margin None, which no
    decay changes, once."""
    nlp = spacy.load(model)
    found = sparse_components(nlp)
    if not found:
        raise ValueError(f"{model} has no spacy-sparse component")
    if component is not None:
        found = [(n, p) for n, p in found if n == component]
        if not found:
            raise ValueError(f"{model} has no sparse component named {component!r}")
    # the last sparse component is the one the pipeline is for (the parser
    # of a tagger + parser pipeline); the others run at their own margin
    name, pipe = found[-1]
    references = read_references(nlp, data)
    docs = bare_docs(nlp, references, sents, tags)
    n_words = sum(len(d) for d in docs)
    original = pipe.margin, pipe.margin_decay
    settings: List[Tuple[Optional[float], float]] = []
    for decay in decays or [pipe.margin_decay]:
        for m in margins:
            setting = (None, 1.0) if m is None else (m, decay)
            if setting not in settings:
                settings.append(setting)
    rows = []
    time_pipe(nlp, docs[:50], 1)  # load kernels before timing
    try:
        for margin, decay in settings:
            pipe.margin, pipe.margin_decay = margin, decay
            pipe.reset_usage()
            for _doc in nlp.pipe(docs):
                pass
            key, acc = accuracy(pipe, docs, references)
            rows.append({"margin": margin, "margin_decay": decay, "accuracy": acc, "metric": key,
                         "templates_per_token": pipe.templates_per_token, "words_per_second": 0.0})
        # settings take turns, so a slow spell of the machine hits them all
        for _ in range(max(1, repeat)):
            for (margin, decay), row in zip(settings, rows):
                pipe.margin, pipe.margin_decay = margin, decay
                row["words_per_second"] = max(row["words_per_second"], time_pipe(nlp, docs, 1))
    finally:
        pipe.margin, pipe.margin_decay = original
    base = next((r["words_per_second"] for r in rows if r["margin"] is None), None)
    for r in rows:
        r["speedup"] = r["words_per_second"] / base if base else None
    result: Dict[str, Any] = {"model": str(model), "component": name, "data": str(data), "words": n_words,
                              "repeat": repeat, "gold_sentences": sents, "rows": rows}
    if compare:
        other = spacy.load(compare)
        other_docs = bare_docs(other, references, sents, tags)
        time_pipe(other, other_docs[:20], 1)
        other_wps = time_pipe(other, other_docs, repeat)
        result["compare"] = {"model": str(compare), "words_per_second": other_wps}
        for r in rows:
            r["ratio_vs_compare"] = r["words_per_second"] / other_wps
    return result
