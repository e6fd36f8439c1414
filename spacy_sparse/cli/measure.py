"""Measuring a trained pipeline: `bench` (accuracy and words/s across margins), `report` (model sizes),
`cold-start`, `tag-speed` and `train-cost`."""
import argparse
from typing import Any, Dict, List, Optional
from pathlib import Path

import srsly
from wasabi import msg


def print_rows(result: dict) -> None:
    header = ("margin", "decay", result["rows"][0]["metric"], "templates/token", "words/s", "speed-up", "ns/template")
    data = []
    for r in result["rows"]:
        data.append((
            "none" if r["margin"] is None else f"{r['margin']:g}",
            "-" if r["margin"] is None else f"{r['margin_decay']:g}",
            f"{100 * r['accuracy']:.2f}",
            f"{r['templates_per_token']:.2f}",
            f"{r['words_per_second']:,.0f}",
            "-" if r["speedup"] is None else f"{r['speedup']:.2f}x",
            "-" if not r.get("ns_per_template") else f"{r['ns_per_template']:.0f}",
        ))
    msg.table(data, header=header, divider=True)
    if "compare" in result:
        other = result["compare"]
        msg.info(f"compare: {other['model']} at {other['words_per_second']:,.0f} words/s")
        for r in result["rows"]:
            m = "none" if r["margin"] is None else f"{r['margin']:g}, decay {r['margin_decay']:g}"
            msg.text(f"  margin {m}: {r['ratio_vs_compare']:.1f}x the words/s of {other['model']}")


def time_shares(speeds: Dict[str, float]) -> str:
    """"name 0.65 us (7%), ..." from words/s per component."""
    us = {name: 1e6 / wps for name, wps in speeds.items()}
    total = sum(us.values()) or 1.0
    return ", ".join(f"{name} {t:.2f} us ({100 * t / total:.0f}%)" for name, t in us.items())


def print_breakdowns(result: Dict[str, Any]) -> None:
    """Where a bench run's time goes per component, and which sentence
    starts the pipeline found, by kind (the compared pipeline's beside)."""
    other = result.get("compare", {})
    msg.text("time per word by component, as it loads: " + time_shares(result["component_words_per_second"]))
    if other.get("component_words_per_second"):
        msg.text(f"  {other['model']}: " + time_shares(other["component_words_per_second"]))
    for name, floor in (result.get("component_floors") or {}).items():
        msg.text(f"  {name}: {1e6 / result['component_words_per_second'][name]:.2f} us; memory-only floor "
                 f"{floor['l1_us_per_word']:.2f} us in L1, {floor['spread_us_per_word']:.2f} us spread over "
                 f"{floor['table_bytes'] / 1e6:.1f} MB ({floor['lines_per_word']:.0f} lines per word)")
    own = next((r for r in result["rows"] if r["margin"] == result["own_margin"]
                and r["margin_decay"] == result["own_margin_decay"]), None)
    if own is None or "boundaries" not in own:
        return
    mine, theirs = own["boundaries"], other.get("boundaries")
    data = [(kind, c["gold"], f"{100 * c['found'] / c['gold']:.1f}" if c["gold"] else "-",
             *([f"{100 * theirs['kinds'][kind]['found'] / c['gold']:.1f}" if c["gold"] else "-"] if theirs else []))
            for kind, c in mine["kinds"].items()]
    data.append(("false starts", "", mine["false_starts"], *([theirs["false_starts"]] if theirs else [])))
    msg.text("sentence starts found, as it loads:")
    msg.table(data, header=("kind", "gold", "found %", *(["compared: found %"] if theirs else [])), divider=True)


def cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import parse_decays, parse_margins, run_bench
    from ..provenance import provenance

    decays = parse_decays(args.decays) if args.decays else None
    gold = args.gold_tokens or args.gold_sents or args.gold_tags
    if args.case and (gold or args.lines):
        msg.fail("--case recases raw text: it does not go with --lines or gold tokens", exits=1)
    if args.raw_gold_sents and (gold or args.lines or args.case):
        msg.fail("--raw-gold-sents gives sentence starts to the raw text as it is: it does not go with "
                 "--lines, --case or gold tokens", exits=1)
    result = run_bench(args.model, Path(args.data), parse_margins(args.margins), component=args.component,
                       compare=args.compare, repeat=args.repeat, sents=args.gold_sents or args.raw_gold_sents,
                       tags=args.gold_tags,
                       decays=decays, text="gold" if gold else "lines" if args.lines else args.case or "raw",
                       calls=args.calls)
    result = {"meta": provenance(), **result}
    inputs = "gold tokens" + (", gold sentences" if result["gold_sentences"] else "") if gold else \
        "raw text" + (" in lines" if args.lines else f" in {args.case} case" if args.case else "") + \
        (" (the pipeline's tokenizer, the gold sentence starts given)" if args.raw_gold_sents else
         " (the pipeline's tokenizer, no sentence boundaries)")
    msg.info(f"{result['component']} of {result['model']} on {result['data']} ({result['words']:,} words, {inputs}; "
             f"best of {result['repeat']})")
    print_rows(result)
    print_breakdowns(result)
    line = f"first pass after loading (new word types), as it loads: {result['first_pass_words_per_second']:,.0f} words/s"
    if "compare" in result:
        line += f"; {result['compare']['model']}: {result['compare']['first_pass_words_per_second']:,.0f}"
    msg.text(line)
    calls = result.get("calls")
    if calls:
        line = f"one nlp(text) per sentence ({calls['texts']:,} texts), as it loads: {calls['words_per_second']:,.0f} words/s"
        if "ratio_vs_compare" in calls:
            line += f", {calls['ratio_vs_compare']:.1f}x {result['compare']['model']} ({calls['compare_words_per_second']:,.0f})"
        msg.text(line)
        split = calls.get("split")
        if split:
            msg.text(f"  per call: {split['total_us']:,.0f} us, tokenizer {split['tokenizer_us']:,.0f}, kernels "
                     f"{split['kernels_us']:,.0f}, the rest {split['rest_us']:,.0f}")
    write_result(args.json, result)
    if args.plot:
        from ..plots import plot_bench

        plot_bench([result], Path(args.plot))
        msg.good(f"Wrote {args.plot}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..bench import sparse_components
    from ..loading import load_pipeline

    nlp = load_pipeline(args.model)  # a path, or "default" / "default-tagger" as the other commands take
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


def write_result(path: Optional[str], result: Dict[str, Any]) -> None:
    """A measuring command's JSON (what benchmarks/pages.py reads), if asked for."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path, result)
        msg.good(f"Wrote {path}")


def cmd_cold_start(args: argparse.Namespace) -> int:
    """New-process time to one labelled sentence, over spacy.blank("en")."""
    from ..costs import cold_start
    from ..provenance import provenance

    result = {"meta": provenance(), **cold_start(args.models, runs=args.runs)}
    for row in result["rows"]:
        extra = row["extra_seconds"]
        msg.text(f"{row['model']}: {row['median_extra']:+.2f} s over spacy.blank (median of {len(extra)}; "
                 f"range {min(extra):+.2f} to {max(extra):+.2f}; blank itself {row['blank_seconds'][0]:.2f} s); "
                 f"memory over blank: {row['extra_rss_bytes'] / 1e6:+.0f} MB at its peak, "
                 f"{row['extra_end_rss_bytes'] / 1e6:+.0f} MB at the end")
    write_result(args.json, result)
    return 0


def cmd_tag_speed(args: argparse.Namespace) -> int:
    """The `tag` command's wall-clock time per (processes, threads) setting."""
    from ..costs import tag_speed
    from ..provenance import provenance

    settings = []
    for item in args.settings.split(","):
        p, _, t = item.partition("x")
        settings.append((int(p), int(t or 1)))
    result = {"meta": provenance(), **tag_speed(args.model, Path(args.input), settings, runs=args.runs)}
    for row in result["rows"]:
        msg.text(f"--n-process {row['n_process']} --n-threads {row['n_threads']}: "
                 f"{min(row['seconds']):.2f}-{max(row['seconds']):.2f} s, "
                 f"{min(row['speedup']):.2f}-{max(row['speedup']):.2f}x the first setting")
    write_result(args.json, result)
    return 0


def config_overrides(items: List[str]) -> List[str]:
    """["training.max_epochs=2"] -> ["--training.max_epochs", "2"], as spacy train takes them."""
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            msg.fail(f"--set wants KEY=VALUE, got {item!r}", exits=1)
        out += [f"--{key.strip().lstrip('-')}", value]
    return out


def cmd_train_cost(args: argparse.Namespace) -> int:
    """Time and peak memory of `spacy train` on a config, per run."""
    from ..costs import train_cost
    from ..provenance import provenance

    result = {"meta": provenance(), **train_cost(Path(args.config), Path(args.train), Path(args.dev),
                                                 Path(args.output), runs=args.runs,
                                                 overrides=config_overrides(args.overrides))}
    for row in result["rows"]:
        scores = ", ".join(f"{k} {100 * v:.2f}" for k, v in row["dev_scores"].items() if v and k.endswith(("acc", "las",
                                                                                                     "_f")))
        msg.text(f"{row['seconds']:.0f} s, peak RSS {row['peak_rss_bytes'] / 2**30:.2f} GiB, "
                 f"model-best {row['model_best_bytes'] / 2**20:.1f} MiB; dev: {scores}")
    write_result(args.json, result)
    return 0


def register(sub) -> None:
    p = sub.add_parser("train-cost", help="wall-clock time and peak memory of spacy train on a config")
    p.add_argument("config", help="a training config")
    p.add_argument("train", help="training .spacy")
    p.add_argument("dev", help="development .spacy")
    p.add_argument("--output", default="training/train_cost", help="where the runs write their pipelines")
    p.add_argument("--runs", type=int, default=2, help="training runs, one after the other")
    p.add_argument("--json", help="write the times and peaks (and command, commit, date, machine) as JSON here")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override for spacy train, e.g. training.max_epochs=2 (repeatable)")
    p.set_defaults(func=cmd_train_cost)

    p = sub.add_parser("tag-speed", help="wall-clock time of the tag command per processes x threads setting")
    p.add_argument("model", help='a pipeline directory, "default" or "default-tagger"')
    p.add_argument("input", help="a raw-text file, one doc per line")
    p.add_argument("--settings", default="1x1,1x2,2x1",
                   help="comma-separated PROCESSESxTHREADS settings; ratios are against the first")
    p.add_argument("--runs", type=int, default=2, help="runs per setting (they take turns)")
    p.add_argument("--json", help="write the times (and command, commit, date, machine) as JSON here")
    p.set_defaults(func=cmd_tag_speed)

    p = sub.add_parser("cold-start", help="new-process time to one tagged sentence, over spacy.blank('en')")
    p.add_argument("models", nargs="+", help='pipeline directories, "default" or "default-tagger"')
    p.add_argument("--runs", type=int, default=5, help="processes per model (they take turns)")
    p.add_argument("--json", help="write the times (and command, commit, date, machine) as JSON here")
    p.set_defaults(func=cmd_cold_start)

    p = sub.add_parser("bench", help="accuracy, templates/token and words/s across stop margins")
    p.add_argument("model")
    p.add_argument("data", help="a .spacy DocBin with gold annotation")
    p.add_argument("--margins", default="none,45,35,30,25,20")
    p.add_argument("--decays", help="margin decays to run every margin at, e.g. 1,0.96 (default: the model's own)")
    p.add_argument("--component", help="name of the sparse component whose margin varies (default: the last)")
    p.add_argument("--compare", help='another spaCy pipeline to time on the same docs, or "sentencizer" '
                   "(spaCy's rule-based sentence splitter alone)")
    p.add_argument("--repeat", type=int, default=3, help="timing runs; the best counts")
    p.add_argument("--lines", action="store_true",
                   help="raw text laid out in lines: a blank line where the data's paragraphs start (convert-ud "
                        "keeps them), lines wrapped at 72 characters")
    p.add_argument("--case", choices=("lower", "upper"),
                   help="raw text in one case (text typed without capitals, or shouted); scored against the "
                        "data's gold annotation as it is")
    p.add_argument("--gold-tokens", action="store_true",
                   help="feed the gold tokens instead of raw text through the pipeline's tokenizer")
    p.add_argument("--gold-sents", action="store_true",
                   help="gold tokens and the gold sentence boundaries (implies --gold-tokens)")
    p.add_argument("--raw-gold-sents", action="store_true",
                   help="raw text through the pipeline's tokenizer with the gold sentence starts set on its tokens: "
                        "what the rest of the pipeline scores with perfect segmentation")
    p.add_argument("--gold-tags", action="store_true",
                   help="gold tokens with the data's tag_ (for models that read it, e.g. the chunker's ptag)")
    p.add_argument("--calls", action="store_true",
                   help="also time one nlp(text) call per sentence of the data (the pipeline as it loads, and "
                        "--compare), tokenizer included")
    p.add_argument("--json", help="write the result (rows, compare, command, commit, date, machine) as JSON here")
    p.add_argument("--plot", help="draw accuracy and words/s against the margin to this PNG (extra: plots)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("report", help="model statistics per sparse component")
    p.add_argument("model", help='a pipeline directory, "default" or "default-tagger"')
    p.add_argument("--json", action="store_true")
    p.add_argument("--per-template", action="store_true", help="features per template too")
    p.set_defaults(func=cmd_report)
