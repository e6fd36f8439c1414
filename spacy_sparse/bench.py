"""Measure a pipeline's sparse component across stop margins: accuracy,
templates scored per token and words per second, all in one run.

Inputs are raw text by default (each reference doc's text through the
pipeline's own tokenizer, no sentence boundaries: what `nlp(text)` gets and
what `spacy evaluate` scores without `--gold-preproc`); `text="gold"` gives
the gold tokens instead. Tokenization is not timed in either case.
"""
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
import spacy
import srsly
from spacy.language import Language
from spacy.tokens import Doc, DocBin, Token
from spacy.training import Example

from .kernels.rows import HOT, span_values
from .loading import DEFAULT_PIPELINES, load_pipeline, resolve_model
from .pipeline.base import SparsePipe
from .pipeline.settings import ACCURACY_KEYS, check_margin_decay
from .pipeline.views import Views
from .readers import PARAGRAPHS_KEY, bare_copy, in_lines, recased

# The score each task is judged by, first match wins.
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


# sentence-final marks, and what may stand between one and the next sentence
FINAL_MARKS = frozenset(".!?")
CLOSERS = frozenset({'"', "'", "''", ")", "]", "\u201d", "\u2019"})
BOUNDARY_KINDS = ("paragraph start after . ! ?", "paragraph start, no mark", "in a paragraph after . ! ?",
                  "in a paragraph, no mark")


def boundary_kind(ref: Doc, token: Token, paragraphs: Set[int]) -> str:
    """Which of BOUNDARY_KINDS a reference sentence start is: whether the
    treebank starts a paragraph there (which a text on one line does not
    show) and whether the words before it end in a sentence-final mark
    (a closing quote or bracket may follow the mark)."""
    i = token.i - 1
    while i > 0 and ref[i].text in CLOSERS:
        i -= 1
    marked = ref[i].text[-1:] in FINAL_MARKS
    return BOUNDARY_KINDS[(0 if token.i in paragraphs else 2) + (0 if marked else 1)]


def boundary_recall(docs: Sequence[Doc], references: Sequence[Doc]) -> Dict[str, Any]:
    """Reference sentence starts (after each doc's first token) found and
    missed by kind (boundary_kind), and the starts predicted where the
    reference has none, matched by character offset (docs of the references'
    own text). The docs' paragraph starts are convert-ud's
    (readers.PARAGRAPHS_KEY)."""
    kinds = {k: {"gold": 0, "found": 0} for k in BOUNDARY_KINDS}
    false_starts = 0
    for doc, ref in zip(docs, references):
        if doc.text != ref.text:
            raise ValueError("Boundaries are matched by character offset: the doc must hold the reference's text")
        paragraphs = set(ref.user_data.get(PARAGRAPHS_KEY, ()))
        found = {t.idx for t in doc if t.i and t.is_sent_start}
        gold = set()
        for token in ref:
            if token.i and token.is_sent_start:
                gold.add(token.idx)
                counts = kinds[boundary_kind(ref, token, paragraphs)]
                counts["gold"] += 1
                counts["found"] += token.idx in found
        false_starts += len(found - gold)
    return {"kinds": kinds, "false_starts": false_starts}


def provenance() -> Dict[str, Any]:
    """What a benchmark page prints beside each table: the command, the
    commit, the date and the machine it ran on."""
    import numba
    import numpy
    import spacy as _spacy

    from . import __version__
    from .kernels import compiled

    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError, AttributeError):
        mem_gib = 0.0
    args = [Path(sys.argv[0]).name if sys.argv[0].endswith("__main__.py") else sys.argv[0], *sys.argv[1:]]
    command = "python -m spacy_sparse " + " ".join(args[1:]) if args[0] == "__main__.py" else " ".join(args)
    return {
        "command": command,
        "commit": commit or f"spacy-sparse {__version__}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_gib, 1),
                    "python": platform.python_version(), "spacy": _spacy.__version__, "numba": numba.__version__,
                    "numpy": numpy.__version__, "kernels": "compiled" if compiled.COMPILED else "jit"},
    }


def weight_row_bytes(pipe: SparsePipe) -> float:
    """Bytes of weights one template's row costs a prediction: a dense
    float32 row of every label (taggers, NER), or for the parser the
    average row of its packed layout (8-byte (label, value) pairs or 2-byte
    coded entries, and a dense float32 row for each hot row,
    SparseLinearModel.packed)."""
    model = pipe.sparse
    if model is None:
        return 0.0
    if getattr(pipe, "template_kind", "sequence") == "state":
        tab, _, _, lc, _, _ = model.packed()
        counts = np.sort(np.diff(model.compact()[0]))
        if counts.size == 0:
            return 0.0
        n_hot = int((span_values(tab) >= HOT).sum())
        cold = counts[: counts.size - n_hot].sum() * (2.0 if lc.size else 8.0)
        return float(cold + n_hot * 4.0 * model.n_labels) / counts.size
    return 4.0 * model.n_labels


def directory_bytes(path: Any) -> Optional[int]:
    """Bytes of every file under a pipeline directory (None if not one)."""
    path = resolve_model(path)
    if not path.is_dir():
        return None
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


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
    found = sparse_components(nlp)
    if not found:
        raise ValueError(f"{model} has no spacy-sparse component")
    if component is not None:
        found = [(n, p) for n, p in found if n == component]
        if not found:
            raise ValueError(f"{model} has no sparse component named {component!r}")
    # the last sparse component is the one the pipeline is for (the parser
    # of a tagger + parser pipeline), lemmas and features that follow it aside; the others run at their own margin
    name, pipe = ([(n, p) for n, p in found if p.writes not in ("lemma", "morph")] or found)[-1]
    references = read_references(nlp, data)
    docs = input_docs(nlp, references, text, sents, tags)
    n_words = sum(len(d) for d in docs)
    original = pipe.margin, pipe.margin_decay
    settings: List[Tuple[Optional[float], float]] = []
    for decay in decays or [pipe.margin_decay]:
        for m in margins:
            setting = (None, 1.0) if m is None else (m, decay)
            if setting not in settings:
                settings.append(setting)
    # the pipeline as it loads is always measured (the headline reports it)
    own = (None, 1.0) if original[0] is None else original
    if own not in settings:
        settings.append(own)
    rows = []
    first_pass = time_first_pass(nlp, docs)  # also loads the kernels before the rows are timed
    try:
        for margin, decay in settings:
            pipe.margin, pipe.margin_decay = margin, decay
            pipe.reset_usage()
            done = list(nlp.pipe([d.copy() for d in docs]))
            key, acc = accuracy(pipe, done, references)
            scores = pipeline_scores(nlp, done, references)
            if text == "lines" and "sents_f" in scores:
                scores["sents_f"] = lines_sentence_f(done, references)
                acc = scores["sents_f"] if key == "sents_f" else acc
            rows.append({"margin": margin, "margin_decay": decay, "accuracy": acc, "metric": key,
                         "scores": scores,
                         "templates_per_token": pipe.templates_per_token, "words_per_second": 0.0})
            if finds_sentences(text, sents, scores):
                rows[-1]["boundaries"] = boundary_recall(done, references)
        # settings take turns, so a slow spell of the machine hits them all
        for _ in range(max(1, repeat)):
            for (margin, decay), row in zip(settings, rows):
                pipe.margin, pipe.margin_decay = margin, decay
                row["words_per_second"] = max(row["words_per_second"], time_pipe(nlp, docs, 1))
    finally:
        pipe.margin, pipe.margin_decay = original
    row_bytes = weight_row_bytes(pipe)
    for r in rows:
        # the cost model: time per template scored, and weight bytes read per token
        scored = r["words_per_second"] * r["templates_per_token"]
        r["ns_per_template"] = 1e9 / scored if scored else None
        r["row_bytes_per_token"] = r["templates_per_token"] * row_bytes
    base = next((r["words_per_second"] for r in rows if r["margin"] is None), None)
    for r in rows:
        r["speedup"] = r["words_per_second"] / base if base else None
    result: Dict[str, Any] = {"model": str(model), "component": name, "data": str(data), "words": n_words,
                              "text": text, "repeat": repeat, "gold_sentences": sents, "rows": rows,
                              "own_margin": own[0], "own_margin_decay": own[1],
                              # the other sparse components run at these in every row
                              "other_margins": {n: p.margin for n, p in sparse_components(nlp) if p is not pipe},
                              "first_pass_words_per_second": first_pass,
                              "pipeline_bytes": directory_bytes(model),
                              "component_bytes": pipe.sparse.stats()["bytes"] if pipe.sparse is not None else None}
    result["component_words_per_second"] = component_speeds(nlp, docs, repeat)
    texts = sentence_texts(references) if calls else []
    if calls:
        time_calls(nlp, texts[:50], 1)
        result["calls"] = {"texts": len(texts), "words_per_second": time_calls(nlp, texts, repeat)}
    if compare:
        other = comparison_pipeline(compare, nlp.lang)
        other_docs = input_docs(other, references, text, sents, tags)
        other_first = time_first_pass(other, other_docs)
        other_wps = time_pipe(other, other_docs, repeat)
        metric = rows[0]["metric"]
        scored = list(other.pipe(input_docs(other, references, text, sents, tags)))
        scores = pipeline_scores(other, scored, references)
        if text == "lines" and "sents_f" in scores:
            scores["sents_f"] = lines_sentence_f(scored, references)
        result["compare"] = {"model": str(compare), "words_per_second": other_wps,
                             "first_pass_words_per_second": other_first,
                             "pipeline_bytes": directory_bytes(compare), "scores": scores,
                             "accuracy": scores.get(metric),
                             "component_words_per_second": component_speeds(other, other_docs, repeat)}
        if finds_sentences(text, sents, scores):
            result["compare"]["boundaries"] = boundary_recall(scored, references)
        for r in rows:
            r["ratio_vs_compare"] = r["words_per_second"] / other_wps
        if calls:
            time_calls(other, texts[:20], 1)
            other_calls = time_calls(other, texts, repeat)
            result["calls"]["compare_words_per_second"] = other_calls
            result["calls"]["ratio_vs_compare"] = result["calls"]["words_per_second"] / other_calls
    return result


COLD_SENTENCE = "The ferry left the harbour at dawn."
# the cold-start row of a blank pipeline plus one cached numba kernel: what no numba component can go below
NUMBA_FLOOR = "numba-floor"


def compile_bytecode() -> bool:
    """Write this package's bytecode caches, as `pip install` does for a
    wheel, before timing new processes. An editable install gets them on its
    first import, unless PYTHONDONTWRITEBYTECODE is set (as on the machines
    these benchmarks ran on): each process then compiles every module of
    ours from source again, which no installed user pays (0.4 s of the `tag`
    command's start-up, 2026-11-25). compileall writes them whatever that
    variable says; a read-only install keeps what it has."""
    import compileall

    return bool(compileall.compile_dir(str(Path(__file__).parent), quiet=1))


def has_sparse_components(path: Path) -> bool:
    """Whether the pipeline directory's config names a factory of ours."""
    try:
        config = spacy.util.load_config(Path(path) / "config.cfg")
    except (OSError, ValueError):
        return False
    return any(str(c.get("factory", "")).startswith("sparse_") for c in config.get("components", {}).values())


def cold_start(models: Sequence[str], runs: int = 5) -> Dict[str, Any]:
    """Seconds from a new Python process to one labelled sentence, for
    each model and for `spacy.blank("en")` as the baseline, runs taking
    turns (a slow spell hits every model alike), and the peak resident
    memory of those processes and what was resident at their end (medians;
    over the baseline's too). A model is "default",
    "default-tagger" or a path; each process imports what a user's would.
    With kernels compiled ahead of time (`compile-kernels`), each model
    with sparse components is timed with numba's jit as well (a "(jit)"
    row); another pipeline (spaCy's CNN) is a row of its own, for scale."""
    from .kernels import compiled as compiled_kernels

    jit = dict(os.environ, SPACY_SPARSE_AOT="0")
    # row name -> (code, environment (None: ours), the model whose directory it loads)
    code = {"blank": ("import spacy; nlp = spacy.blank('en')", None, None),
            # numba's share, common to any numba component: its import, the registries its first
            # call sets up, one cached kernel, and the collector's passes over its objects at exit
            NUMBA_FLOOR: ("import spacy; nlp = spacy.blank('en'); import numpy as np; "
                          "from spacy_sparse.kernels.hashing import mix; mix(np.uint64(1), np.uint64(2))", None, None)}
    for model in models:
        shipped = {str(path): name for name, path in DEFAULT_PIPELINES.items()}.get(str(resolve_model(model)))
        if shipped:  # as the README loads them
            load = f"import spacy, spacy_sparse; nlp = spacy_sparse.load_default({shipped!r})"
        else:
            load = f"import spacy, spacy_sparse; nlp = spacy.load({str(resolve_model(model))!r})"
        code[model] = (load, None, model)
        if compiled_kernels.COMPILED and (shipped or has_sparse_components(resolve_model(model))):
            code[f"{model} (jit)"] = (load, jit, model)
    times: Dict[str, List[float]] = {name: [] for name in code}
    peaks: Dict[str, List[int]] = {name: [] for name in code}
    bytecode = compile_bytecode()
    # each process reports, as it ends, its peak resident memory and what is resident then (VmHWM, VmRSS in kB;
    # Linux; 0 elsewhere). Not ru_maxrss, which a new process inherits from the one that forked it (this one).
    report = (r"; import os, re; s = open('/proc/self/status').read() if os.path.exists('/proc/self/status') "
              r"else ''; print(*[(re.findall(k + r':\s*(\d+)', s) or ['0'])[0] for k in ('VmHWM', 'VmRSS')])")
    resident: Dict[str, List[int]] = {name: [] for name in code}
    for load, env, _ in code.values():  # untimed: numba's cache is written, if it was not
        subprocess.run([sys.executable, "-c", f"{load}; nlp({COLD_SENTENCE!r})"], check=True, env=env)
    for _ in range(max(1, runs)):
        for name, (load, env, _) in code.items():
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", f"{load}; nlp({COLD_SENTENCE!r}){report}"], check=True,
                                  env=env, stdout=subprocess.PIPE, text=True)
            times[name].append(time.perf_counter() - start)
            peak_kb, now_kb = done.stdout.split()[-2:]
            peaks[name].append(int(peak_kb) * 1024)
            resident[name].append(int(now_kb) * 1024)
    base = sorted(times["blank"])

    def median(values: List[int]) -> int:
        return sorted(values)[len(values) // 2]
    rows = []
    for name, (_, _, model) in code.items():
        if name == "blank":
            continue
        own = sorted(times[name])
        # pair runs by rank: the k-th fastest of each
        extra = [a - b for a, b in zip(own, base)]
        rows.append({"model": str(name), "seconds": own, "blank_seconds": base,
                     "extra_seconds": extra, "median_extra": sorted(extra)[len(extra) // 2],
                     "peak_rss_bytes": median(peaks[name]),
                     "extra_rss_bytes": median(peaks[name]) - median(peaks["blank"]),
                     "end_rss_bytes": median(resident[name]),
                     "extra_end_rss_bytes": median(resident[name]) - median(resident["blank"]),
                     "pipeline_bytes": None if model is None else directory_bytes(model)})
    return {"runs": runs, "sentence": COLD_SENTENCE, "bytecode_compiled": bytecode,
            "compiled_kernels": bool(compiled_kernels.COMPILED), "rows": rows}


def tag_speed(model: str, source: Path, settings: Sequence[Tuple[int, int]], runs: int = 2,
              workdir: Optional[Path] = None) -> Dict[str, Any]:
    """Wall-clock seconds of the `tag` command on a raw-text file (one doc
    per line) for each (processes, threads) setting, runs taking turns,
    start-up included as a user meets it. The outputs must be byte-identical
    across settings; their hash is recorded."""
    import hashlib
    import tempfile

    source = Path(source)
    words = 0
    with source.open(encoding="utf8") as f:
        for line in f:
            words += len(line.split())
    times: Dict[Tuple[int, int], List[float]] = {s: [] for s in settings}
    digests: Dict[Tuple[int, int], str] = {}
    compiled = compile_bytecode()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        # untimed: numba's cache is written, if it was not
        first = Path(tmp) / "first-line.txt"
        with source.open(encoding="utf8") as f:
            first.write_text(f.readline(), encoding="utf8")
        subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", str(model), str(first), str(first) + ".jsonl",
                        "--quiet"], check=True)
        for _ in range(max(1, runs)):
            for n_process, n_threads in settings:
                out = Path(tmp) / f"out-{n_process}-{n_threads}.jsonl"
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", str(model), str(source), str(out),
                                "--quiet", "--n-process", str(n_process), "--n-threads", str(n_threads)], check=True)
                times[(n_process, n_threads)].append(time.perf_counter() - start)
                digests[(n_process, n_threads)] = hashlib.sha256(out.read_bytes()).hexdigest()
    if len(set(digests.values())) != 1:
        raise RuntimeError(f"tag wrote different outputs for different settings: {digests}")
    base = times[settings[0]]
    rows = [{"n_process": p, "n_threads": t, "seconds": times[(p, t)],
             "words_per_second": [words / x for x in times[(p, t)]],
             "speedup": [b / x for b, x in zip(base, times[(p, t)])]} for p, t in settings]
    return {"model": str(model), "input": str(source), "words": words, "runs": runs, "bytecode_compiled": compiled,
            "output_sha256": next(iter(digests.values())), "rows": rows}


# Runs one command and prints the peak resident set of its process tree's largest member, in KiB (Linux
# getrusage: of the waited-for child, the wrapper's only one).
_PEAK_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def train_cost(config: Path, train: Path, dev: Path, output: Path, runs: int = 2,
               overrides: Sequence[str] = ()) -> Dict[str, Any]:
    """Wall-clock seconds and peak RSS of `python -m spacy train CONFIG` as
    a user runs it (a new process each run, loading included), with the
    dev scores and size on disk of the model-best it wrote. Each run goes
    through a small wrapper process, so its peak is its own, not the
    largest of all runs so far."""
    rows = []
    for i in range(max(1, runs)):
        out = Path(output) / f"run{i + 1}"
        cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(out),
               "--paths.train", str(train), "--paths.dev", str(dev), *overrides]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _PEAK_RSS, *cmd], check=True, stdout=subprocess.PIPE,
                              text=True)
        seconds = time.perf_counter() - start
        best = out / "model-best"
        meta = srsly.read_json(best / "meta.json")
        rows.append({"seconds": seconds, "peak_rss_bytes": int(done.stdout.split()[-1]) * 1024,
                     "dev_scores": {k: v for k, v in meta.get("performance", {}).items()
                                    if isinstance(v, (int, float))},
                     "model_best_bytes": directory_bytes(best)})
    return {"config": str(config), "train": str(train), "dev": str(dev), "overrides": list(overrides),
            "runs": runs, "rows": rows}
