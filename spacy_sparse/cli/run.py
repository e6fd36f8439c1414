"""The main job: `demo` (the embedded default), `tag` (a corpus in bounded memory) and `tag-shards` (Dask)."""
import argparse
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

from wasabi import msg

from ..loading import config_path, load_pipeline
from ..records import FORMATS
from .convert import cmd_convert_ud
from .measure import print_rows

SAMPLE_TEXT = (
    "The ferry left the harbour at dawn, and by noon the passengers could see the cliffs. "
    "Maria counted 42 gulls following the boat while her brother read a novel about volcanoes. "
    "Nobody expected the storm that arrived later that evening."
)


def _tag_sample(nlp, text: str) -> None:
    doc = nlp(text)
    pipe = nlp.get_pipe("sparse_tagger")
    attr = "tag_" if pipe.annotate == "tag" else "pos_"
    parsed = doc.has_annotation("DEP")
    for sent in doc.sents if doc.has_annotation("SENT_START") else [doc[:]]:
        if parsed:
            msg.text(" ".join(f"{t.text}/{getattr(t, attr)}/{t.dep_}<{t.head.i - sent.start}" for t in sent))
        else:
            msg.text(" ".join(f"{t.text}/{getattr(t, attr)}" for t in sent))
    docs = [nlp.make_doc(text) for _ in range(3000)]
    n = sum(len(d) for d in docs)
    start = time.perf_counter()
    for _ in nlp.pipe(docs):
        pass
    msg.info(f"{n / (time.perf_counter() - start):,.0f} words/s ({n:,} words, pre-tokenized, margin {pipe.margin})")


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: tag with the embedded model; with --data, also train
    and evaluate a fresh tagger on a UD treebank directory."""
    from .. import load_default

    start = time.perf_counter()
    nlp = load_default(args.pipeline)
    msg.good(f"Loaded the embedded en_ewt pipeline {args.pipeline!r} ({', '.join(nlp.pipe_names)}) "
             f"in {time.perf_counter() - start:.2f}s")
    _tag_sample(nlp, args.text or SAMPLE_TEXT)
    from ..runtime import compiled

    if not compiled.COMPILED:
        msg.info("The kernels ran through numba's jit: `python -m spacy_sparse compile-kernels` (once, under a "
                 "minute) makes every new process start about half a second sooner")
    if not args.data:
        return 0
    if args.max_epochs is not None and args.max_epochs < 1:
        msg.fail(f"--max-epochs must be at least 1, got {args.max_epochs}", exits=1)
    from spacy.cli.train import train as spacy_train

    from ..bench import run_bench

    out = Path(args.output)
    corpus = out / "corpus"
    cmd_convert_ud(argparse.Namespace(ud_dir=args.data, output=corpus))
    msg.divider("training a fresh sparse_tagger")
    start = time.perf_counter()
    overrides: Dict[str, Any] = {"paths.train": str(corpus / "train.spacy"), "paths.dev": str(corpus / "dev.spacy")}
    if args.max_epochs is not None:
        overrides["training.max_epochs"] = args.max_epochs
    spacy_train(config_path("tagger"), out / "model", overrides=overrides)
    msg.good(f"Trained in {time.perf_counter() - start:.0f}s")
    result = run_bench(str(out / "model" / "model-best"), corpus / "test.spacy", [None, 30.0], repeat=3)
    msg.divider("test set, raw text (spaCy's tokenizer, no sentence boundaries)")
    print_rows(result)
    return 0


def _stop_workers() -> None:
    """After an interrupt with worker processes: stop any that are left and
    leave at once. The output is closed and complete; multiprocessing's exit
    handlers would wait forever on queues whose readers are gone."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.terminate()
    for child in multiprocessing.active_children():
        child.join(timeout=5)
    sys.stderr.flush()
    os._exit(130)


def _tag_settings_problem(args: argparse.Namespace) -> Optional[str]:
    if args.batch_size < 1:
        return f"--batch-size must be at least 1, got {args.batch_size}"
    if args.n_process < 1:
        return f"--n-process must be at least 1, got {args.n_process}"
    if args.n_threads < 1:
        return f"--n-threads must be at least 1, got {args.n_threads}"
    if args.input != "-" and not Path(args.input).exists():
        return f"No such input: {args.input}"
    if args.input != "-" and args.output != "-" and Path(args.output).exists() and \
            os.path.samefile(args.input, args.output):
        return f"The output is the input ({args.output}): writing it would erase what is being read"
    if args.input == "-" and args.output != "-" and Path(args.output).exists() and \
            os.path.samestat(os.fstat(sys.stdin.fileno()), os.stat(args.output)):
        return f"The output is the input ({args.output}, redirected to stdin): writing it would erase what is read"
    return None


def _open_writer(args: argparse.Namespace):
    """The writer the output's name asks for, and the text stream it writes to (None for DocBin shards)."""
    from ..stream import ConlluWriter, DocBinWriter, JsonlWriter

    if args.output != "-" and (args.output.endswith(".spacy") or Path(args.output).is_dir()):
        return DocBinWriter(Path(args.output), args.shard_size), None
    fout = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf8")
    conllu = args.output_format == "conllu" or (args.output_format is None and args.output.endswith(".conllu"))
    return (ConlluWriter if conllu else JsonlWriter)(fout), fout


def cmd_tag(args: argparse.Namespace) -> int:
    """Stream a corpus through a pipeline in bounded memory."""
    from tqdm import tqdm

    from ..records import DirectoryReader, RecordReader, input_format
    from ..stream import UNIT_CHARS, annotate, stop_on_signal
    from ..tokenizer import keeping

    problem = _tag_settings_problem(args)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    fmt = input_format(args.input, args.format)
    nlp = load_pipeline(args.model, args.n_threads)
    # spaCy's own tokenizer keeps few of the pieces it cuts; the same rules that keep more (tokenizer.py)
    nlp.tokenizer = keeping(nlp.tokenizer)
    is_dir = args.input != "-" and Path(args.input).is_dir()
    fin = None if is_dir else (sys.stdin.buffer if args.input == "-" else open(args.input, "rb"))
    writer, fout = _open_writer(args)
    to_docbin = fout is None
    bar = tqdm(unit=" words", unit_scale=True, file=sys.stderr, disable=True if args.quiet else None,
               mininterval=1.0)
    report = bar.write if not bar.disable else (lambda m: print(m, file=sys.stderr))
    stem = "stdin" if args.input == "-" else Path(args.input).stem
    # a text longer than a unit of work is cut at sentence ends, so memory is bounded by characters, not docs
    piece = min(nlp.max_length, UNIT_CHARS)
    reader = DirectoryReader(Path(args.input), args.on_error, report, piece) if is_dir else \
        RecordReader(fin, fmt, args.on_error, report=report, max_length=piece, doc_id=stem)
    stats = {"docs": 0, "words": 0}
    interrupted: Optional[BaseException] = None
    failed: Optional[BaseException] = None
    previous = {sig: signal.signal(sig, stop_on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        annotate(nlp, reader, writer, batch_size=args.batch_size, n_process=args.n_process,
                 progress=bar.update, stats=stats)
    except KeyboardInterrupt as err:
        # SIGINT or SIGTERM: annotate closed the writer, so every complete
        # doc is written (whole lines only); nlp.pipe's workers are stopped
        interrupted = err
    except RuntimeError as err:  # a worker process died
        failed = err
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if fin is not None and fin is not sys.stdin.buffer:
            fin.close()
        if not to_docbin and fout is not sys.stdout:
            fout.close()
    bar.close()
    if failed is not None:
        print(f"Failed, {failed}: {stats['docs']:,} complete docs ({stats['words']:,} words) were written to "
              f"{args.output}", file=sys.stderr)
        if args.n_process > 1:
            # the output is closed; the worker pool's thread may be stuck on the dead
            # worker's pipe and would keep a normal exit waiting (stream.py)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
        return 1
    if interrupted is not None:
        print(f"Interrupted: {stats['docs']:,} complete docs ({stats['words']:,} words) were written to "
              f"{args.output}", file=sys.stderr)
        if args.n_process > 1:
            _stop_workers()
        return 130
    if not args.quiet:
        print(f"{stats['docs']:,} docs, {stats['words']:,} words, {reader.skipped} bad records skipped", file=sys.stderr)
    if reader.error:
        msg.fail(f"{args.input}, {reader.error} (--on-error fail); the {stats['docs']:,} docs before it were written")
        return 1
    return 0


def cmd_tag_shards(args: argparse.Namespace) -> int:
    """Annotate many input files on a Dask cluster, one output file each."""
    import importlib.util

    if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
        msg.fail("tag-shards runs on Dask, which is not installed: pip install 'spacy-sparse[dask]'")
        return 1
    if args.batch_size < 1 or args.n_workers < 1 or args.n_threads < 1:
        msg.fail("--batch-size, --n-workers and --n-threads must be at least 1")
        return 1
    from ..scale import annotate_shards

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


# Texts for compile-kernels to run the pipelines on: short and long docs, a
# blank doc, whitespace tokens, a line break, so every entry kernel is called.
WARM_TEXTS = [
    "The night train to the coast was late again, and nobody on the platform seemed surprised.",
    "Send me the figures by Friday.  I will check them over the weekend!\n\nThanks, Ana",
    "",
    "   ",
    "ok",
]


def as_float_weights(nlp) -> None:
    """Give every sparse component of `nlp` its weights as float rows (the
    shipped ones are one-byte codes), so compile-kernels records the argument
    types a pipeline trained with the float recipes calls the kernels with."""
    from ..codec import dumps, seal_payload
    from ..pipeline.base import SparsePipe

    for _name, pipe in nlp.pipeline:
        if isinstance(pipe, SparsePipe) and pipe.sparse is not None:
            pipe._load_model(seal_payload(dumps(pipe.sparse.to_dict(grouped=False))), where="compile-kernels")


def cmd_compile_kernels(args: argparse.Namespace) -> int:
    """Compile the kernels that loading and labelling call, ahead of time and
    for this machine's CPU (spacy_sparse/runtime/compiled.py): a new process
    then loads a pipeline without setting up numba's compiler."""
    # the jitted kernels must run, to record the argument types they are called with
    os.environ["SPACY_SPARSE_AOT"] = "0"
    from ..jsonl import json_line
    from ..runtime import compiled

    if compiled.COMPILED:
        raise ValueError("compile-kernels must run in a process that has not loaded compiled kernels")
    if not (shutil.which("cc") or shutil.which("gcc")):
        raise OSError("compile-kernels links with the system's C compiler (cc or gcc), and none is on PATH; "
                      "without it the jitted kernels serve, with a slower cold start")
    start = time.perf_counter()
    for model in ["default", "default-tagger"] + list(args.model or []):
        nlp = load_pipeline(model)
        for weights in ("as saved", "float"):
            if weights == "float":  # the layout of a pipeline trained here and saved with float weights
                as_float_weights(nlp)
            docs = list(nlp.pipe(WARM_TEXTS))
            nlp(WARM_TEXTS[0])
            for doc in docs:  # tag's writer
                json_line(doc, 1)
    index = compiled.build(compiled.recorded_signatures(), verbose=args.verbose)
    exports = len(json.loads(index.read_text(encoding="utf8"))["exports"])
    msg.good(f"{exports} kernel versions compiled in {time.perf_counter() - start:.0f} s: {index.with_suffix('')}.*")
    return 0


def register(sub) -> None:
    p = sub.add_parser("demo", help="tag and parse a sample with the embedded pipeline; --data DIR trains and evaluates a tagger too")
    p.add_argument("--data", help="a UD treebank directory (*-ud-train/dev/test.conllu), e.g. ../shared/data/ud-english-ewt")
    p.add_argument("--output", default="training/demo", help="where --data writes corpora and the model")
    p.add_argument("--text", help="text to tag instead of the built-in sample")
    p.add_argument("--pipeline", choices=["full", "tagger"], default="full",
                   help="the embedded pipeline: segmenter + tagger + parser, or the tagger alone")
    p.add_argument("--max-epochs", type=int, help="with --data: train for at most this many epochs (default: "
                   "configs/tagger.cfg's 10) for a quicker look")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tag", help="stream a corpus through a pipeline to JSONL, CoNLL-U or .spacy shards")
    p.add_argument("model", help='a pipeline directory, or "default" / "default-tagger" for an embedded one')
    p.add_argument("input", help="a file, a directory of .txt files (one doc each), or - for stdin")
    p.add_argument("output", help="a .jsonl or .conllu file, - for stdout, or a directory/NAME.spacy for DocBin shards")
    p.add_argument("--format", choices=list(FORMATS) + ["text"],
                   help="input: lines (one doc per line; also 'text'), paragraphs (docs apart by blank lines), "
                        'whole (the file one doc), jsonl ({"text": ...} per line), conllu (tokens and sentences '
                        "given). Default: by extension (.jsonl, .conllu; a directory: whole files; else lines)")
    p.add_argument("--output-format", choices=["jsonl", "conllu"],
                   help="for a file or stdout (default: conllu for a .conllu name, else jsonl)")
    p.add_argument("--on-error", choices=["skip", "fail"], default="skip", help="a bad input record is skipped (and reported) or stops the run")
    p.add_argument("--n-threads", type=int, default=1, help="threads per process for the sparse components")
    p.add_argument("--n-process", type=int, default=1, help="processes (nlp.pipe n_process)")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--shard-size", type=int, default=10000, help="docs per .spacy shard")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("compile-kernels", help="compile the labelling kernels ahead of time for this machine (a faster cold start)")
    p.add_argument("--model", action="append", help="a pipeline directory to run as well (its kernels' argument types)")
    p.add_argument("--verbose", action="store_true", help="show the compiler's commands")
    p.set_defaults(func=cmd_compile_kernels)

    p = sub.add_parser("tag-shards", help="annotate many files on a Dask cluster (extra: spacy-sparse[dask])")
    p.add_argument("model", help='a pipeline directory every worker can read, or "default" / "default-tagger"')
    p.add_argument("output_dir")
    p.add_argument("inputs", nargs="+", help="input shards (one doc per line, or as --format says)")
    p.add_argument("--scheduler", help="address of a running Dask scheduler (default: a LocalCluster)")
    p.add_argument("--n-workers", type=int, default=2, help="LocalCluster worker processes")
    p.add_argument("--format", choices=list(FORMATS) + ["text"], default="lines", help="as tag's --format")
    p.add_argument("--on-error", choices=["skip", "fail"], default="skip")
    p.add_argument("--n-threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=1000)
    p.set_defaults(func=cmd_tag_shards)
