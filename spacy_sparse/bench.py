"""Measure a pipeline's sparse component across stop margins: accuracy,
templates scored per token and words per second, all in one run.

Inputs are raw text by default (each reference doc's text through the
pipeline's own tokenizer, no sentence boundaries: what `nlp(text)` gets and
what `spacy evaluate` scores without `--gold-preproc`); `text="gold"` gives
the gold tokens instead. Tokenization is not timed in either case.
"""
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from .boundaries import boundary_recall
from .calls import call_split
from .costs import COLD_SENTENCE
from .floors import component_floors, weight_row_bytes
from .loading import load_pipeline
from .pipeline.base import SparsePipe
from .pipeline.settings import ACCURACY_KEYS, check_margin_decay
from .pipeline.views import Views
from .provenance import directory_bytes
from .readers import bare_copy, in_lines, recased

# what a run's inputs can be (input_docs)
TEXT_MODES = ("raw", "lines", "gold", "lower", "upper")


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


def input_docs(nlp: Language, references: Sequence[Doc], text: str = "raw", sents: bool = False,
               tags: bool = False) -> List[Doc]:
    """The docs a benchmark feeds the pipeline: `raw` runs each reference's
    text through `nlp.make_doc`; `lines` the same text laid out in lines
    (readers.in_lines: a blank line between paragraphs, wrapped at 72
    characters); `lower` and `upper` the text in one case (readers.recased;
    spaCy's alignment and scorer match tokens and sentences whatever their
    case); `gold` copies the gold tokens (see bare_docs)."""
    if text not in TEXT_MODES:
        raise ValueError(f"text must be one of {TEXT_MODES}, got {text!r}")
    if text != "gold":
        if tags or (sents and text != "raw"):
            raise ValueError("Gold tags need gold tokens (text='gold'); gold sentences need gold tokens or raw text")
        if text in ("lower", "upper"):
            return [nlp.make_doc(recased(r.text, upper=text == "upper")) for r in references]
        docs = [nlp.make_doc(r.text if text == "raw" else in_lines(r)) for r in references]
        if sents:
            for doc, ref in zip(docs, references):
                given_sentence_starts(doc, ref)
        return docs
    return bare_docs(nlp, references, sents, tags)


def given_sentence_starts(doc: Doc, ref: Doc) -> Doc:
    """Mark every token of `doc` (the reference's own text, as the tokenizer
    cut it) as starting a sentence where a reference sentence starts at its
    first character, and as inside one everywhere else: the whole pipeline
    on raw text with perfect segmentation, to tell what the segmentation
    costs from what the tokens and the models do."""
    if doc.text != ref.text:
        raise ValueError("Sentence starts are given by character offset: the doc must hold the reference's text")
    starts = {t.idx for t in ref if t.is_sent_start} if ref.has_annotation("SENT_START") else {0}
    for token in doc:
        token.is_sent_start = token.idx in starts or token.i == 0
    return doc


def time_pipe(nlp: Language, docs: List[Doc], repeat: int) -> float:
    """Best-of-`repeat` words per second of nlp.pipe over pre-made docs.
    Each timing labels fresh copies: components write onto the docs they
    get, and a pipeline that met its own sentence starts again (kept as
    preset by a segmenter) would not be doing a user's work."""
    n_words = sum(len(d) for d in docs)
    best = float("inf")
    for _ in range(max(1, repeat)):
        fresh = [d.copy() for d in docs]
        start = time.perf_counter()
        for _doc in nlp.pipe(fresh):
            pass
        best = min(best, time.perf_counter() - start)
    return n_words / best if best > 0 else float("inf")


def time_first_pass(nlp: Language, docs: List[Doc]) -> float:
    """Words per second of the first pass over the docs after loading (one
    short text first, so kernels are loaded): the pass that meets most of
    the data's word types for the first time, as a user's first run over new
    text does. A component keeps per-type work (lexical atoms, rows, summed
    vectors) for later passes, which time_pipe's best-of-N measures."""
    nlp(COLD_SENTENCE)
    return time_pipe(nlp, docs, 1)


def component_speeds(nlp: Language, docs: List[Doc], repeat: int) -> Dict[str, float]:
    """Words per second of each component alone (best of `repeat`), each
    run over fresh copies of the docs as the components before it left
    them: where the time of a whole pipeline goes."""
    n_words = sum(len(d) for d in docs)
    best = {name: float("inf") for name in nlp.pipe_names}
    for _ in range(max(1, repeat)):
        current = [d.copy() for d in docs]
        for name, proc in nlp.pipeline:
            start = time.perf_counter()
            if hasattr(proc, "pipe"):
                current = list(proc.pipe(current, batch_size=nlp.batch_size))
            else:
                current = [proc(d) for d in current]
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: n_words / t if t > 0 else float("inf") for name, t in best.items()}


def sentence_texts(references: Sequence[Doc]) -> List[str]:
    """The text of every sentence of the references (of every doc, where
    one has no sentence boundaries)."""
    return [s.text for r in references for s in (r.sents if r.has_annotation("SENT_START") else [r[:]])]


def time_calls(nlp: Language, texts: Sequence[str], repeat: int) -> float:
    """Best-of-`repeat` words per second of one `nlp(text)` call per text,
    the tokenizer included: the loop most users write, where what a call
    costs around the models counts as much as the models."""
    n_words = sum(len(nlp.make_doc(t)) for t in texts)
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        for t in texts:
            nlp(t)
        best = min(best, time.perf_counter() - start)
    return n_words / best if best > 0 else float("inf")


def accuracy(pipe: SparsePipe, docs: List[Doc], references: List[Doc]) -> Tuple[str, float]:
    scores = pipe.score([Example(d, r) for d, r in zip(docs, references)])
    for key in ACCURACY_KEYS:
        if scores.get(key) is not None:
            return key, float(scores[key])
    raise ValueError(f"The component {pipe.name!r} reported none of {ACCURACY_KEYS}")


def lines_sentence_f(docs: Sequence[Doc], references: Sequence[Doc]) -> float:
    """Sentence F of docs made from text in lines, scored on their words:
    spaCy's scorer matches a predicted sentence to a gold one by their texts
    with spaces removed, so a sentence with a line break inside would never
    count as found. Each doc is scored as its view without whitespace tokens
    (pipeline/views.py), which keeps its sentence starts."""
    from spacy.scorer import Scorer

    views = Views(docs).docs
    return float(Scorer.score_spans([Example(v, r) for v, r in zip(views, references)], "sents")["sents_f"])


# what a row reports for the whole pipeline, where the pipeline has it
SCORE_KEYS = ("tag_acc", "pos_acc", "ents_f", "dep_uas", "dep_las", "sents_f", "morph_acc", "lemma_acc")


def pipeline_scores(nlp: Language, docs: List[Doc], references: List[Doc]) -> Dict[str, float]:
    """spaCy's scores of every component of the pipeline on processed docs
    (a full pipeline: tag_acc, sents_f, UAS and LAS), for the keys some
    component of it is weighted on."""
    from spacy.scorer import Scorer

    weighted = {k for name in nlp.pipe_names
                for k, w in nlp.get_pipe_meta(name).default_score_weights.items() if w is not None}
    scores = Scorer(nlp).score([Example(d, r) for d, r in zip(docs, references)])
    return {k: float(scores[k]) for k in SCORE_KEYS if k in weighted and isinstance(scores.get(k), (int, float))}


def parse_decays(text: str) -> List[float]:
    """"1,0.96" -> [1.0, 0.96]; each must lie in (0, 1]."""
    decays = [check_margin_decay(float(part)) for part in text.split(",") if part.strip()]
    if not decays:
        raise ValueError("No margin decays given")
    return decays


def comparison_pipeline(compare: str, lang: str) -> Language:
    """What `bench --compare` times beside the model: a pipeline directory,
    or "sentencizer": spaCy's rule-based sentence splitter alone, in a blank
    pipeline of the model's language (the baseline of a segmenter)."""
    if compare == "sentencizer":
        other = spacy.blank(lang)
        other.add_pipe("sentencizer")
        return other
    return spacy.load(compare)


def finds_sentences(text: str, sents: bool, scores: Dict[str, float]) -> bool:
    """Whether a run's docs have sentence boundaries the pipeline found in
    the references' own text (what boundary_recall matches)."""
    return text == "raw" and not sents and "sents_f" in scores


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
    text: str = "raw",
    calls: bool = False,
) -> Dict[str, Any]:
    """Rows of (margin, margin_decay): every margin at every decay (the
    component's own decay when `decays` is None); margin None, which no
    decay changes, once. With `calls`, also the pipeline as it loads (and
    `compare`) called once per sentence text (time_calls)."""
    nlp = load_pipeline(model)
    name, pipe = benched_component(nlp, model, component)
    references = read_references(nlp, data)
    docs = input_docs(nlp, references, text, sents, tags)
    settings, own = bench_settings(pipe, margins, decays)
    first_pass = time_first_pass(nlp, docs)  # also loads the kernels before the rows are timed
    original = pipe.margin, pipe.margin_decay
    try:
        rows = [setting_row(nlp, pipe, setting, docs, references, text, sents) for setting in settings]
        # settings take turns, so a slow spell of the machine hits them all
        for _ in range(max(1, repeat)):
            for (margin, decay), row in zip(settings, rows):
                pipe.margin, pipe.margin_decay = margin, decay
                row["words_per_second"] = max(row["words_per_second"], time_pipe(nlp, docs, 1))
    finally:
        pipe.margin, pipe.margin_decay = original
    add_cost_model(rows, weight_row_bytes(pipe))
    result: Dict[str, Any] = {"model": str(model), "component": name, "data": str(data),
                              "words": sum(len(d) for d in docs),
                              "text": text, "repeat": repeat, "gold_sentences": sents, "rows": rows,
                              "own_margin": own[0], "own_margin_decay": own[1],
                              # the other sparse components run at these in every row
                              "other_margins": {n: p.margin for n, p in sparse_components(nlp) if p is not pipe},
                              "other_margin_decays": {n: p.margin_decay for n, p in sparse_components(nlp)
                                                      if p is not pipe},
                              "first_pass_words_per_second": first_pass,
                              "pipeline_bytes": directory_bytes(model),
                              "component_bytes": pipe.sparse.stats()["bytes"] if pipe.sparse is not None else None}
    result["component_words_per_second"] = component_speeds(nlp, docs, repeat)
    result["component_floors"] = component_floors(nlp, docs, repeat)
    texts = sentence_texts(references) if calls else []
    if calls:
        time_calls(nlp, texts[:50], 1)
        result["calls"] = {"texts": len(texts), "words_per_second": time_calls(nlp, texts, repeat),
                           "split": call_split(nlp, texts, repeat)}
    if compare:
        result["compare"], other = compared(compare, nlp.lang, references, text, sents, tags, repeat,
                                            rows[0]["metric"])
        for r in rows:
            r["ratio_vs_compare"] = r["words_per_second"] / result["compare"]["words_per_second"]
        if calls:
            time_calls(other, texts[:20], 1)
            other_calls = time_calls(other, texts, repeat)
            result["calls"]["compare_words_per_second"] = other_calls
            result["calls"]["ratio_vs_compare"] = result["calls"]["words_per_second"] / other_calls
    return result


def benched_component(nlp: Language, model: str, component: Optional[str]) -> Tuple[str, SparsePipe]:
    """The sparse component a run varies: `component`, or the last one the
    pipeline is for (the parser of a tagger + parser pipeline; lemmas and
    features that follow it aside). The others run at their own margins."""
    found = sparse_components(nlp)
    if not found:
        raise ValueError(f"{model} has no spacy-sparse component")
    if component is not None:
        found = [(n, p) for n, p in found if n == component]
        if not found:
            raise ValueError(f"{model} has no sparse component named {component!r}")
    return ([(n, p) for n, p in found if p.writes not in ("lemma", "morph")] or found)[-1]


Setting = Tuple[Optional[float], float]


def bench_settings(pipe: SparsePipe, margins: Sequence[Optional[float]],
                   decays: Optional[Sequence[float]]) -> Tuple[List[Setting], Setting]:
    """The (margin, decay) settings of a run, and the component's own, which
    is always among them (the headline reports it)."""
    settings: List[Setting] = []
    for decay in decays or [pipe.margin_decay]:
        for m in margins:
            setting = (None, 1.0) if m is None else (m, decay)
            if setting not in settings:
                settings.append(setting)
    own = (None, 1.0) if pipe.margin is None else (pipe.margin, pipe.margin_decay)
    if own not in settings:
        settings.append(own)
    return settings, own


def setting_row(nlp: Language, pipe: SparsePipe, setting: Setting, docs: List[Doc], references: List[Doc],
                text: str, sents: bool) -> Dict[str, Any]:
    """One setting's accuracy, scores and templates per token (its speed is
    timed afterwards, settings taking turns)."""
    pipe.margin, pipe.margin_decay = setting
    pipe.reset_usage()
    done = list(nlp.pipe([d.copy() for d in docs]))
    key, acc = accuracy(pipe, done, references)
    scores = pipeline_scores(nlp, done, references)
    if text == "lines" and "sents_f" in scores:
        scores["sents_f"] = lines_sentence_f(done, references)
        acc = scores["sents_f"] if key == "sents_f" else acc
    row = {"margin": setting[0], "margin_decay": setting[1], "accuracy": acc, "metric": key, "scores": scores,
           "templates_per_token": pipe.templates_per_token, "words_per_second": 0.0}
    if finds_sentences(text, sents, scores):
        row["boundaries"] = boundary_recall(done, references)
    return row


def add_cost_model(rows: List[Dict[str, Any]], row_bytes: float) -> None:
    """Time per template scored, weight bytes read per token, and the
    speed-up over margin none, on each row."""
    for r in rows:
        scored = r["words_per_second"] * r["templates_per_token"]
        r["ns_per_template"] = 1e9 / scored if scored else None
        r["row_bytes_per_token"] = r["templates_per_token"] * row_bytes
    base = next((r["words_per_second"] for r in rows if r["margin"] is None), None)
    for r in rows:
        r["speedup"] = r["words_per_second"] / base if base else None


def compared(compare: str, lang: str, references: List[Doc], text: str, sents: bool, tags: bool, repeat: int,
             metric: str) -> Tuple[Dict[str, Any], Language]:
    """The comparison pipeline on the same inputs: its speed, scores, size
    and per-component speeds; and the pipeline, warm."""
    other = comparison_pipeline(compare, lang)
    other_docs = input_docs(other, references, text, sents, tags)
    other_first = time_first_pass(other, other_docs)
    other_wps = time_pipe(other, other_docs, repeat)
    scored = list(other.pipe(input_docs(other, references, text, sents, tags)))
    scores = pipeline_scores(other, scored, references)
    if text == "lines" and "sents_f" in scores:
        scores["sents_f"] = lines_sentence_f(scored, references)
    result = {"model": str(compare), "words_per_second": other_wps, "first_pass_words_per_second": other_first,
              "pipeline_bytes": directory_bytes(compare), "scores": scores, "accuracy": scores.get(metric),
              "component_words_per_second": component_speeds(other, other_docs, repeat)}
    if finds_sentences(text, sents, scores):
        result["boundaries"] = boundary_recall(scored, references)
    return result, other
