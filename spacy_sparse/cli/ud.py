"""The UD user's path: `ud-text` (a treebank's text laid out as UD's raw-text
files), `evaluate-ud` (the CoNLL 2018 shared task's metrics) and `bench-ud`
(pipelines over that text as documents, scored and timed side by side)."""
import argparse
import time
from pathlib import Path
from typing import Any, Dict, List

import srsly
from wasabi import msg

from ..loading import load_pipeline
from .train import ship_settings

# The metrics bench-ud keeps (F1 of each), as the shared task reports them.
BENCH_METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS",
                 "CLAS", "MLAS", "BLEX")


def ud_paragraphs(conllu: Path) -> List[str]:
    """The treebank's text as UD lays it out, one string per paragraph."""
    from ..conllu import BadSentence, read_sentences, ud_text

    with open(conllu, "rb") as f:
        sentences = []
        for sentence in read_sentences(f):
            if isinstance(sentence, BadSentence):
                raise ValueError(f"{conllu}, sentence at line {sentence.line}: {sentence.problem}")
            sentences.append(sentence)
    return list(ud_text(sentences))


def cmd_ud_text(args: argparse.Namespace) -> int:
    paragraphs = ud_paragraphs(Path(args.conllu))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text("\n\n".join(paragraphs) + "\n", encoding="utf8")
    msg.good(f"Wrote {args.output}: {len(paragraphs):,} paragraphs")
    return 0


def cmd_evaluate_ud(args: argparse.Namespace) -> int:
    from ..ud_eval import UDError, as_json, evaluate, load_file, table

    try:
        scores = evaluate(load_file(args.gold), load_file(args.system))
    except UDError as err:
        msg.fail(str(err))
        return 1
    print(table(scores))
    if args.json:
        srsly.write_json(args.json, as_json(scores))
    return 0


def annotate_paragraphs(nlp, paragraphs: List[str], name: str) -> str:
    """CoNLL-U of the paragraphs run as `tag --format paragraphs` runs them
    (spaCy's tokenizer with the project's rules, each paragraph a doc, the
    first one starting the document)."""
    from ..records import Where
    from ..stream import ConlluWriter

    parts = [ConlluWriter.encode(doc, Where(k + 1, doc_id=name, newdoc=k == 0))
             for k, doc in enumerate(nlp.pipe(paragraphs, batch_size=256))]
    return b"".join(parts).decode("utf8")


def _timed_pass(nlp, paragraphs: List[str], name: str) -> Dict[str, Any]:
    start = time.perf_counter()
    text = annotate_paragraphs(nlp, paragraphs, name)
    return {"seconds": time.perf_counter() - start, "conllu": text}


def cmd_bench_ud(args: argparse.Namespace) -> int:
    """Each pipeline over the treebank's UD-layout text, in turns (`--runs`
    passes each, alternating, so both meet the same machine), scored with
    the shared task's metrics; words/s counts the gold words."""
    from ..provenance import provenance
    from ..tokenizer import keeping
    from ..ud_eval import NEEDS, evaluate, load, load_file

    if args.runs < 1:
        raise ValueError(f"--runs must be at least 1, got {args.runs}")
    gold = load_file(args.gold)
    paragraphs = ud_paragraphs(Path(args.gold))
    models = {"model": args.model, **({"baseline": args.baseline} if args.baseline else {})}
    pipelines = {}
    settings: Dict[Any, Any] = {}
    for role, path in models.items():
        nlp = load_pipeline(path)
        if role == "model":
            settings = ship_settings(nlp, args.set)
        nlp.tokenizer = keeping(nlp.tokenizer)
        annotate_paragraphs(nlp, paragraphs[:20], "warm-up")
        pipelines[role] = nlp
    passes: Dict[str, List[Dict[str, Any]]] = {role: [] for role in models}
    for _ in range(args.runs):
        for role, nlp in pipelines.items():
            passes[role].append(_timed_pass(nlp, paragraphs, Path(args.gold).stem))
    out: Dict[str, Any] = {"meta": provenance(), "gold": str(args.gold), "words": len(gold.words),
                           # as text: JSON's writer would round a density such as 1e-30 to 0
                           "settings": {f"{name}.{key}": str(value) for (name, key), value in settings.items()},
                           "paragraphs": len(paragraphs), "layout": "UD raw text: paragraphs, lines wrapped at 80"}
    for role, path in models.items():
        system = load(passes[role][-1]["conllu"].splitlines(True), "the system output")
        scores = evaluate(gold, system)
        filled = system.annotates()
        # a metric over a column the pipeline never fills is not a score of it (None)
        out[role] = {"path": str(path), "pipes": pipelines[role].pipe_names,
                     "scores": {m: round(100 * scores[m].f1, 4) if all(filled[c] for c in NEEDS.get(m, ())) else None
                                for m in BENCH_METRICS},
                     "words_per_second": [len(gold.words) / p["seconds"] for p in passes[role]]}
        if args.conllu_dir:
            Path(args.conllu_dir).mkdir(parents=True, exist_ok=True)
            (Path(args.conllu_dir) / f"{role}.conllu").write_text(passes[role][-1]["conllu"], encoding="utf8")
    if args.baseline:
        out["speed_ratio"] = [m / b for m, b in zip(out["model"]["words_per_second"],
                                                    out["baseline"]["words_per_second"])]
    for role in models:
        row = out[role]
        msg.info(f"{role} ({row['path']}): " + ", ".join(f"{m} {row['scores'][m]:.2f}" for m in BENCH_METRICS
                                                          if row["scores"][m] is not None)
                 + f"; {min(row['words_per_second']):,.0f}-{max(row['words_per_second']):,.0f} words/s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(args.json, out)
        msg.good(f"Wrote {args.json}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("ud-text", help="a CoNLL-U treebank's text laid out as UD's raw-text files")
    p.add_argument("conllu", help="a CoNLL-U file (e.g. en_ewt-ud-test.conllu)")
    p.add_argument("output", help="the text file to write (paragraphs apart by blank lines, wrapped at 80)")
    p.set_defaults(func=cmd_ud_text)

    p = sub.add_parser("evaluate-ud", help="the CoNLL 2018 shared task's metrics of a system CoNLL-U file")
    p.add_argument("gold", help="the gold CoNLL-U file")
    p.add_argument("system", help="the system's CoNLL-U file (the same text; tokens and sentences may differ)")
    p.add_argument("--json", help="also write every score (precision, recall, F1, counts) as JSON here")
    p.set_defaults(func=cmd_evaluate_ud)

    p = sub.add_parser("bench-ud", help="pipelines over a treebank's UD-layout text, scored as the shared task does")
    p.add_argument("model", help='a pipeline directory, or "default" for the embedded one')
    p.add_argument("gold", help="the gold CoNLL-U file whose text is annotated")
    p.add_argument("--baseline", help="a second pipeline (e.g. spaCy's CNN) run and timed in turn with the first")
    p.add_argument("--runs", type=int, default=2, help="timed passes per pipeline, alternating")
    p.add_argument("--json", help="write scores, words/s and provenance here")
    p.add_argument("--conllu-dir", help="also keep each pipeline's CoNLL-U output here")
    p.add_argument("--set", action="append", default=[], metavar="COMPONENT.SETTING=VALUE",
                   help="a runtime setting of the model's sparse components, as ship-default takes it (e.g. "
                        "sparse_parser.beam_width=4); may be repeated")
    p.set_defaults(func=cmd_bench_ud)

