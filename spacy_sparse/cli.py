"""`python -m spacy_sparse COMMAND`: demo, tag, tag-shards, bench, report, order-templates, convert-ud,
convert-conll, jackknife, prune, quantize, sparsity-bench, sparsity-plot, ship-default."""
import argparse
import sys
import time
from pathlib import Path
from typing import List, Optional

import srsly
from wasabi import msg

SAMPLE_TEXT = (
    "The ferry left the harbour at dawn, and by noon the passengers could see the cliffs. "
    "Maria counted 42 gulls following the boat while her brother read a novel about volcanoes. "
    "Nobody expected the storm that arrived later that evening."
)

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


def _print_rows(result: dict) -> None:
    header = ("margin", "decay", result["rows"][0]["metric"], "templates/token", "words/s", "speed-up")
    data = []
    for r in result["rows"]:
        data.append((
            "none" if r["margin"] is None else f"{r['margin']:g}",
            "-" if r["margin"] is None else f"{r['margin_decay']:g}",
            f"{100 * r['accuracy']:.2f}",
            f"{r['templates_per_token']:.2f}",
            f"{r['words_per_second']:,.0f}",
            "-" if r["speedup"] is None else f"{r['speedup']:.2f}x",
        ))
    msg.table(data, header=header, divider=True)
    if "compare" in result:
        other = result["compare"]
        msg.info(f"compare: {other['model']} at {other['words_per_second']:,.0f} words/s")
        for r in result["rows"]:
            m = "none" if r["margin"] is None else f"{r['margin']:g}, decay {r['margin_decay']:g}"
            msg.text(f"  margin {m}: {r['ratio_vs_compare']:.1f}x the words/s of {other['model']}")


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import parse_decays, parse_margins, run_bench

    decays = parse_decays(args.decays) if args.decays else None
    result = run_bench(args.model, Path(args.data), parse_margins(args.margins), component=args.component,
                       compare=args.compare, repeat=args.repeat, sents=args.gold_sents, tags=args.gold_tags,
                       decays=decays)
    sents = ", gold sentences" if result["gold_sentences"] else ""
    msg.info(f"{result['component']} of {result['model']} on {result['data']} ({result['words']:,} words{sents}, "
             f"best of {result['repeat']})")
    _print_rows(result)
    if args.json:
        keys = ("margin", "margin_decay", "metric", "accuracy", "templates_per_token", "words_per_second", "speedup")
        rows = [{k: r[k] for k in keys}
                | ({"ratio_vs_compare": r["ratio_vs_compare"]} if "ratio_vs_compare" in r else {})
                for r in result["rows"]]
        srsly.write_json(args.json, rows)
        if args.json_full:
            srsly.write_json(args.json_full, result)
        msg.good(f"Wrote {args.json}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import spacy

    from .bench import sparse_components

    nlp = spacy.load(args.model)
    report = {}
    for name, pipe in sparse_components(nlp):
        stats = pipe._require_model().stats()
        if not args.per_template:
            stats.pop("features_per_template")
        stats["margin"] = pipe.margin
        stats["mode"] = pipe.cfg["mode"]
        stats["bytes_per_part"] = pipe._require_model().part_bytes()
        report[name] = stats
    if not report:
        msg.fail(f"{args.model} has no spacy-sparse component", exits=1)
    if args.json:
        print(srsly.json_dumps(report, indent=2))
        return 0
    for name, stats in report.items():
        msg.divider(name)
        rows = [(k, v) for k, v in stats.items() if k not in ("features_per_template", "bytes_per_part")]
        msg.table(rows)
        msg.text("bytes per part of the saved model:")
        for part, n in stats["bytes_per_part"].items():
            msg.text(f"  {n:>11,}  {part}")
        for tpl, n in stats.get("features_per_template", {}).items():
            msg.text(f"  {n:>9,}  {tpl}")
    return 0


def cmd_order(args: argparse.Namespace) -> int:
    import spacy
    from .learn.ordering import gomp_order, group_lasso_order, wrapper_order
    from .readers import gold_token_examples

    nlp = spacy.blank(args.lang)
    train = list(gold_token_examples(nlp, args.train, tags=args.tags))
    factory_cfg = nlp.get_factory_meta(args.factory).default_config
    base = spacy.util.registry.resolve({"t": factory_cfg["templates"]})["t"]
    if args.templates:
        base = srsly.read_json(args.templates)
    common = dict(factory=args.factory, lang=args.lang, train_words=args.train_words, seed=args.seed, log=msg.text)
    start = time.time()
    if args.method == "wrapper":
        dev = list(gold_token_examples(nlp, args.dev, tags=args.tags))
        order = wrapper_order(train, dev, base, dev_words=args.dev_words, epochs=args.epochs,
                              max_steps=args.max_steps, **common)
    elif args.method == "group-lasso":
        order = group_lasso_order(train, base, epochs=args.epochs, **common)
    else:
        order = gomp_order(train, base, alpha=args.alpha, max_steps=args.max_steps, **common)
    srsly.write_json(args.output, order)
    msg.good(f"Wrote the {args.method} order of {len(order)} templates to {args.output} ({time.time() - start:.0f}s)")
    return 0


def cmd_convert_ud(args: argparse.Namespace) -> int:
    """Convert a UD treebank directory's train/dev/test CoNLL-U to DocBins
    with spaCy's own converter (what `spacy convert --converter conllu` does)."""
    from spacy.tokens import DocBin
    from spacy.training.converters import conllu_to_docs

    src, out = Path(args.ud_dir), Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        files = sorted(src.glob(f"*-ud-{split}.conllu"))
        if not files:
            msg.fail(f"No *-ud-{split}.conllu in {src}", exits=1)
        docs = conllu_to_docs(files[0].read_text(encoding="utf8"), n_sents=10, no_print=True)
        DocBin(docs=docs, store_user_data=False).to_disk(out / f"{split}.spacy")
        msg.good(f"{files[0].name} -> {out / f'{split}.spacy'}")
    return 0


DEFAULT_NOTE = """The embedded default pipeline of spacy-sparse: a sparse_tagger (token.tag_, PTB-style XPOS)
trained on UD English-EWT by `spacy project run train-small` and shipped by `spacy project run ship-default`.

This model is derived from UD English-EWT, which is licensed under CC BY-SA 4.0
(https://creativecommons.org/licenses/by-sa/4.0/); the model is shared under the same licence.
{pruned}"""


def cmd_ship_default(args: argparse.Namespace) -> int:
    """Copy a trained tagger pipeline into the package as the embedded default."""
    import shutil

    import spacy

    from . import DEFAULT_MODEL_PATH

    nlp = spacy.load(args.model)
    pipe = nlp.get_pipe("sparse_tagger")
    dropped = pipe._require_model().prune_weights(args.min_weight) if args.min_weight > 0 else 0
    if args.sentencizer and "sentencizer" not in nlp.pipe_names:
        # the tagger labels sentence by sentence when a doc has sentence
        # starts; on raw multi-sentence text a rule-based sentencizer supplies
        # them (+0.17 on EWT docs of 10 sentences, but spaCy's sentencizer
        # costs about as much per token as the tagger: see README)
        nlp.add_pipe("sentencizer", first=True)
    nlp.meta["name"] = "en_ewt_sparse_tagger"
    nlp.meta["license"] = "CC BY-SA 4.0"
    nlp.meta["sources"] = [{"name": "UD English-EWT", "license": "CC BY-SA 4.0"}]
    if DEFAULT_MODEL_PATH.exists():
        shutil.rmtree(DEFAULT_MODEL_PATH)
    nlp.to_disk(DEFAULT_MODEL_PATH)
    # The tagger reads word forms from the docs it gets, not from the vocab:
    # ship only the label strings, not the training corpus's word list.
    srsly.write_json(DEFAULT_MODEL_PATH / "vocab" / "strings.json", sorted(set(pipe.labels)))
    pruned = f"Weights with |w| < {args.min_weight:g} were dropped to keep the package small.\n" if dropped else ""
    (DEFAULT_MODEL_PATH / "LICENSE").write_text(DEFAULT_NOTE.format(pruned=pruned))
    size = sum(p.stat().st_size for p in DEFAULT_MODEL_PATH.rglob("*") if p.is_file())
    msg.good(f"Shipped {args.model} to {DEFAULT_MODEL_PATH} ({size / 1e6:.1f} MB, {dropped:,} small weights dropped)")
    return 0


def rewrite_components(args: argparse.Namespace, change) -> int:
    """Load args.model, apply `change(model)` (returns a note) to every
    sparse component (or args.component), log sizes, save to args.output."""
    import spacy

    from .bench import sparse_components

    nlp = spacy.load(args.model)
    found = [(n, p) for n, p in sparse_components(nlp) if not args.component or n == args.component]
    if not found:
        msg.fail(f"{args.model} has no spacy-sparse component{' named ' + args.component if args.component else ''}",
                 exits=1)
    for name, pipe in found:
        model = pipe._require_model()
        before = model.stats()
        note = change(model)
        after = model.stats()
        msg.info(f"{name}: {note}; nonzero features {before['nonzero_features']:,} -> {after['nonzero_features']:,}, "
                 f"distinct weights {after['distinct_weights']:,}, {before['bytes'] / 1e6:.2f} -> "
                 f"{after['bytes'] / 1e6:.2f} MB")
    nlp.to_disk(args.output)
    msg.good(f"Saved {args.output}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """Drop small averaged weights of every sparse component and save."""
    return rewrite_components(args, lambda model: f"dropped {model.prune_weights(args.min_weight):,} weights")


def cmd_quantize(args: argparse.Namespace) -> int:
    """QT (Suzuki & Nagata's baseline): round a trained model's weights to
    the nearest value of S and save it as a grouped-weight file."""
    from .learn.admm import AdmmSettings, quantize

    settings = AdmmSettings(zeta=args.zeta, kappa=args.kappa, eta="auto" if args.eta is None else args.eta,
                            lambda0=args.lambda0, lambda0_feature=args.lambda0_feature)
    return rewrite_components(args, lambda model: f"quantized to {quantize(model, settings)['distinct_weights']} values")


def cmd_sparsity_bench(args: argparse.Namespace) -> int:
    from .bench_sparsity import run_table

    run_table(args.table, Path(args.corpus), Path(args.output))
    msg.good(f"Wrote {Path(args.output) / (args.table + '.json')}")
    return 0


def cmd_sparsity_plot(args: argparse.Namespace) -> int:
    from .bench_sparsity import plot_tables

    for path in plot_tables(Path(args.output)):
        msg.good(f"Wrote {path}")
    return 0


def cmd_jackknife(args: argparse.Namespace) -> int:
    from .jackknife import jackknife_tags

    overrides = {"training.max_epochs": args.max_epochs} if args.max_epochs else {}
    acc = jackknife_tags(Path(args.config), Path(args.train), Path(args.dev), Path(args.output),
                         folds=args.folds, overrides=overrides)
    msg.good(f"Wrote {args.output}: tags predicted by {args.folds} held-out taggers, {100 * acc:.2f}% correct")
    return 0


def cmd_convert_conll(args: argparse.Namespace) -> int:
    """CoNLL-2003-style files (token ... IOB tag per line, blank line between
    sentences, -DOCSTART- between articles) to one doc per article, with
    sentence starts and entities, so document-level features see the whole
    article. (spaCy's `--converter ner` groups a fixed number of sentences
    and keeps -DOCSTART- as a sentence.)"""
    from spacy.tokens import DocBin

    from .readers import chunk_docs, conll_ner_docs, uner_docs

    vocab = __import__("spacy").blank("en").vocab
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    read = uner_docs if args.uner else chunk_docs if args.chunks else conll_ner_docs
    docs = list(read(vocab, Path(args.input)))
    DocBin(docs=docs, store_user_data=False).to_disk(out)
    msg.good(f"{args.input} -> {out}: {len(docs)} docs, {sum(len(d) for d in docs):,} tokens, "
             f"{sum(len(d.ents) for d in docs):,} entities")
    return 0


def _load(model: str, n_threads: int = 1):
    """spacy.load, with "default" naming the embedded model."""
    import spacy

    from . import DEFAULT_MODEL_PATH
    from .bench import sparse_components

    nlp = spacy.load(DEFAULT_MODEL_PATH if model == "default" else model)
    for _name, pipe in sparse_components(nlp):
        pipe.n_threads = n_threads
    return nlp


def cmd_tag(args: argparse.Namespace) -> int:
    """Stream a corpus through a pipeline in bounded memory."""
    from tqdm import tqdm

    from .stream import DocBinWriter, JsonlWriter, RecordReader, annotate

    fmt = args.format or ("jsonl" if str(args.input).endswith((".jsonl", ".json")) else "text")
    nlp = _load(args.model, args.n_threads)
    fin = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")
    to_docbin = args.output != "-" and (args.output.endswith(".spacy") or Path(args.output).is_dir())
    if to_docbin:
        writer = DocBinWriter(Path(args.output), args.shard_size)
    else:
        fout = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf8")
        writer = JsonlWriter(fout)
    bar = tqdm(unit=" words", unit_scale=True, file=sys.stderr, disable=True if args.quiet else None,
               mininterval=1.0)
    reader = RecordReader(fin, fmt, args.on_error, report=bar.write if not bar.disable else
                          (lambda m: print(m, file=sys.stderr)))
    try:
        stats = annotate(nlp, reader, writer, batch_size=args.batch_size, n_process=args.n_process,
                         progress=bar.update)
    finally:
        if fin is not sys.stdin.buffer:
            fin.close()
        if not to_docbin and fout is not sys.stdout:
            fout.close()
    bar.close()
    if not args.quiet:
        print(f"{stats['docs']:,} docs, {stats['words']:,} words, {reader.skipped} bad lines skipped", file=sys.stderr)
    if reader.error:
        msg.fail(f"{args.input}, {reader.error} (--on-error fail); the {stats['docs']:,} docs before it were written")
        return 1
    return 0


def cmd_tag_shards(args: argparse.Namespace) -> int:
    """Annotate many input files on a Dask cluster, one output file each."""
    from .scale import annotate_shards

    client = None
    if args.scheduler:
        from dask.distributed import Client

        client = Client(args.scheduler)
    start = time.perf_counter()
    results = annotate_shards(args.model, [Path(p) for p in args.inputs], Path(args.output_dir), client=client,
                              n_workers=args.n_workers, fmt=args.format, on_error=args.on_error,
                              batch_size=args.batch_size, n_threads=args.n_threads)
    seconds = time.perf_counter() - start
    words = sum(r["words"] for r in results)
    msg.good(f"{len(results)} shards, {sum(r['docs'] for r in results):,} docs, {words:,} words in {seconds:.1f}s "
             f"({words / seconds:,.0f} words/s)")
    return 0


def cmd_bench_scale(args: argparse.Namespace) -> int:
    from .bench_scale import run_scale_bench

    r = run_scale_bench(args.model, Path(args.data), n_words=args.words, repeat=args.repeat)
    t = r["threads"]
    msg.info(f"{r['model']}, {r['cpus']} CPUs")
    msg.text(f"in-process, pre-made docs ({t['words']:,} words): 1 thread {t['words_per_second_1']:,.0f} words/s, "
             f"2 threads {t['words_per_second_2']:,.0f} words/s ({t['speedup']:.2f}x, identical: {t['identical']})")
    rows = []
    for key in ("tag_small_1_thread", "tag_1_thread", "tag_2_threads", "tag_2_processes", "dask_local_2_workers"):
        x = r[key]
        rows.append((key, f"{x['words']:,}", f"{x['seconds']:.1f}", f"{x['words_per_second']:,.0f}",
                     f"{x.get('speedup', 1.0):.2f}x" if key != "tag_small_1_thread" else "-", f"{x['peak_rss_mb']:.0f}"))
    x = r["dask_running_cluster_2_workers"]
    rows.append(("dask, cluster already up", f"{x['words']:,}", f"{x['seconds']:.1f}", f"{x['words_per_second']:,.0f}",
                 f"{x['speedup']:.2f}x", "-"))
    msg.table(rows, header=("run", "words", "seconds", "words/s", "vs 1 thread", "peak RSS MB"), divider=True)
    msg.text(f"peak RSS growth from {r['tag_small_1_thread']['words']:,} to {r['tag_1_thread']['words']:,} words: "
             f"{r['rss_growth_mb_small_to_big']:+.1f} MB; same output with 2 threads: {r['tag_same_output_2_threads']}, "
             f"with 2 processes: {r['tag_same_output_2_processes']}")
    if args.json:
        srsly.write_json(args.json, r)
    return 0


def _tag_sample(nlp, text: str) -> None:
    doc = nlp(text)
    pipe = nlp.get_pipe("sparse_tagger")
    attr = "tag_" if pipe.annotate == "tag" else "pos_"
    msg.text(" ".join(f"{t.text}/{getattr(t, attr)}" for t in doc))
    docs = [nlp.make_doc(text) for _ in range(3000)]
    n = sum(len(d) for d in docs)
    start = time.perf_counter()
    for _ in nlp.pipe(docs):
        pass
    msg.info(f"{n / (time.perf_counter() - start):,.0f} words/s ({n:,} words, pre-tokenized, margin {pipe.margin})")


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: tag with the embedded model; with --data, also train
    and evaluate a fresh tagger on a UD treebank directory."""
    from . import load_default

    start = time.perf_counter()
    nlp = load_default()
    msg.good(f"Loaded the embedded en_ewt sparse_tagger in {time.perf_counter() - start:.2f}s")
    _tag_sample(nlp, args.text or SAMPLE_TEXT)
    if not args.data:
        return 0
    from spacy.cli.train import train as spacy_train

    from .bench import run_bench

    out = Path(args.output)
    corpus = out / "corpus"
    cmd_convert_ud(argparse.Namespace(ud_dir=args.data, output=corpus))
    msg.divider("training a fresh sparse_tagger")
    start = time.perf_counter()
    spacy_train(CONFIG_DIR / "tagger.cfg", out / "model",
                overrides={"paths.train": str(corpus / "train.spacy"), "paths.dev": str(corpus / "dev.spacy")})
    msg.good(f"Trained in {time.perf_counter() - start:.0f}s")
    result = run_bench(str(out / "model" / "model-best"), corpus / "test.spacy", [None, 30.0], repeat=3, sents=True)
    msg.divider("test set (gold tokens and sentences)")
    _print_rows(result)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spacy_sparse", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="tag a sample with the embedded model; --data DIR trains and evaluates too")
    p.add_argument("--data", help="a UD treebank directory (*-ud-train/dev/test.conllu), e.g. ../shared/data/ud-english-ewt")
    p.add_argument("--output", default="training/demo", help="where --data writes corpora and the model")
    p.add_argument("--text", help="text to tag instead of the built-in sample")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tag", help="stream text or JSONL through a pipeline to JSONL or .spacy shards")
    p.add_argument("model", help='a pipeline directory, or "default" for the embedded model')
    p.add_argument("input", help="a file of one doc per line, or - for stdin")
    p.add_argument("output", help="a .jsonl file, - for stdout, or a directory/NAME.spacy for DocBin shards")
    p.add_argument("--format", choices=["text", "jsonl"], help='input format (default: by extension; JSONL takes {"text": ...})')
    p.add_argument("--on-error", choices=["skip", "fail"], default="skip", help="a bad input line is skipped (and reported) or stops the run")
    p.add_argument("--n-threads", type=int, default=1, help="threads per process for the sparse components")
    p.add_argument("--n-process", type=int, default=1, help="processes (nlp.pipe n_process)")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--shard-size", type=int, default=10000, help="docs per .spacy shard")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("tag-shards", help="annotate many files on a Dask cluster (extra: spacy-sparse[dask])")
    p.add_argument("model", help='a pipeline directory every worker can read, or "default"')
    p.add_argument("output_dir")
    p.add_argument("inputs", nargs="+", help="input shards (one doc per line)")
    p.add_argument("--scheduler", help="address of a running Dask scheduler (default: a LocalCluster)")
    p.add_argument("--n-workers", type=int, default=2, help="LocalCluster worker processes")
    p.add_argument("--format", choices=["text", "jsonl"], default="text")
    p.add_argument("--on-error", choices=["skip", "fail"], default="skip")
    p.add_argument("--n-threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=1000)
    p.set_defaults(func=cmd_tag_shards)

    p = sub.add_parser("bench", help="accuracy, templates/token and words/s across stop margins")
    p.add_argument("model")
    p.add_argument("data", help="a .spacy DocBin with gold annotation")
    p.add_argument("--margins", default="none,45,35,30,25,20")
    p.add_argument("--decays", help="margin decays to run every margin at, e.g. 1,0.96 (default: the model's own)")
    p.add_argument("--component", help="name of the sparse component whose margin varies (default: the last)")
    p.add_argument("--compare", help="another spaCy pipeline to time on the same docs")
    p.add_argument("--repeat", type=int, default=3, help="timing runs; the best counts")
    p.add_argument("--gold-sents", action="store_true", help="give the pipeline the gold sentence boundaries")
    p.add_argument("--gold-tags", action="store_true",
                   help="give the pipeline the data's tag_ (for models that read it, e.g. the chunker's ptag)")
    p.add_argument("--json", help="write the rows as JSON here")
    p.add_argument("--json-full", help="also write the full result (machine, compare) here")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("bench-scale", help="threads, tag, n_process and Dask words/s and peak RSS on ~1M words")
    p.add_argument("model", help='a pipeline directory or "default"')
    p.add_argument("data", help="a .spacy DocBin whose sentences make the input (repeated)")
    p.add_argument("--words", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", help="write the results here")
    p.set_defaults(func=cmd_bench_scale)

    p = sub.add_parser("report", help="model statistics per sparse component")
    p.add_argument("model")
    p.add_argument("--json", action="store_true")
    p.add_argument("--per-template", action="store_true", help="features per template too")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("order-templates", help="learn a template order: wrapper, group lasso path or GOMP")
    p.add_argument("train")
    p.add_argument("dev", help="dev data (the wrapper method scores on it; the others ignore it)")
    p.add_argument("output", help="ordering file (JSON list of template names)")
    p.add_argument("--factory", default="sparse_tagger")
    p.add_argument("--templates", help="JSON list of templates (default: the factory's default set)")
    p.add_argument("--lang", default="en")
    p.add_argument("--train-words", type=int, default=20000)
    p.add_argument("--dev-words", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=0, help="positions to search (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--method", choices=["wrapper", "group-lasso", "gomp"], default="wrapper")
    p.add_argument("--alpha", type=float, default=0.4, help="GOMP: lambda_i = columns_i ** alpha")
    p.add_argument("--tags", action="store_true", help="give the model the corpus's tags (the chunker's ptag)")
    p.set_defaults(func=cmd_order)

    p = sub.add_parser("prune", help="drop averaged weights below a size threshold (a crude size knob) and save")
    p.add_argument("model")
    p.add_argument("output")
    p.add_argument("--min-weight", type=float, required=True, help="drop weights with |w| below this")
    p.add_argument("--component", help="only this sparse component (default: all)")
    p.set_defaults(func=cmd_prune)

    p = sub.add_parser("quantize", help="QT: round trained weights to a set of 2*zeta+1 values, save grouped")
    p.add_argument("model")
    p.add_argument("output")
    p.add_argument("--zeta", type=int, default=4, help="values per sign")
    p.add_argument("--kappa", type=float, default=4.0, help="ratio between successive values")
    p.add_argument("--eta", type=float, default=None, help="smallest magnitude (default: fit to the weights)")
    p.add_argument("--lambda0", type=float, default=0.0, help="L0 term: zero weights that do not pay for it")
    p.add_argument("--lambda0-feature", type=float, default=0.0, help="L0 term per feature: drop rows that do not pay")
    p.add_argument("--component", help="only this sparse component (default: all)")
    p.set_defaults(func=cmd_quantize)

    p = sub.add_parser("sparsity-bench", help="the sparsity papers' tables on our data (trains every variant)")
    p.add_argument("table", choices=["goldberg", "martins", "suzuki", "composed", "strubell"])
    p.add_argument("corpus", help="directory with train/test(.dev).spacy: corpus/chunk or corpus/ewt")
    p.add_argument("output", help="directory for the trained variants and <table>.json")
    p.set_defaults(func=cmd_sparsity_bench)

    p = sub.add_parser("sparsity-plot", help="figures (PNG) from sparsity-bench JSON (extra: spacy-sparse[plots])")
    p.add_argument("output", help="the sparsity-bench output directory")
    p.set_defaults(func=cmd_sparsity_plot)

    p = sub.add_parser("jackknife", help="tag the training data with k taggers that never saw their fold (for parser training)")
    p.add_argument("config", help="tagger training config, e.g. configs/tagger.cfg")
    p.add_argument("train")
    p.add_argument("dev")
    p.add_argument("output", help=".spacy file: the training docs with predicted tag_")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--max-epochs", type=int, default=0, help="override the config's max_epochs (0: keep)")
    p.set_defaults(func=cmd_jackknife)

    p = sub.add_parser("convert-conll", help="CoNLL-2003 NER (or --uner, --chunks) file -> .spacy")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--uner", action="store_true",
                   help="Universal NER format (index token tag ...); OTH and B-O tags become O")
    p.add_argument("--chunks", action="store_true",
                   help="CoNLL-2000 chunking (token POS chunk): one doc per sentence, POS as tag_, chunks as ents")
    p.set_defaults(func=cmd_convert_conll)

    p = sub.add_parser("ship-default", help="make a trained tagger the package's embedded default")
    p.add_argument("model")
    p.add_argument("--min-weight", type=float, default=0.0, help="drop averaged weights smaller than this (0: none)")
    p.add_argument("--sentencizer", action="store_true", help="put spaCy's rule-based sentencizer before the tagger")
    p.set_defaults(func=cmd_ship_default)

    p = sub.add_parser("convert-ud", help="UD treebank directory -> train/dev/test .spacy")
    p.add_argument("ud_dir")
    p.add_argument("output")
    p.set_defaults(func=cmd_convert_ud)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader of our stdout went away (`... | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, FileNotFoundError, OSError) as err:
        msg.fail(str(err))
        return 1


if __name__ == "__main__":
    sys.exit(main())
