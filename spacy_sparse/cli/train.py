"""Training helpers around `spacy train`: template orders, jackknifed tags, post-hoc compression, shipping."""
import argparse
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import srsly
from wasabi import msg


def cmd_order(args: argparse.Namespace) -> int:
    import spacy
    from ..learn.ordering import ProbeSettings, gomp_order, group_lasso_order, wrapper_order
    from ..readers import gold_token_examples

    nlp = spacy.blank(args.lang)
    train = list(gold_token_examples(nlp, args.train, tags=args.tags))
    factory_cfg = nlp.get_factory_meta(args.factory).default_config
    base = spacy.util.registry.resolve({"t": factory_cfg["templates"]})["t"]
    if args.templates:
        base = srsly.read_json(args.templates)
    probe = ProbeSettings(factory=args.factory, lang=args.lang, train_words=args.train_words, seed=args.seed,
                          clusters=args.clusters, log=msg.text)
    start = time.time()
    if args.method == "wrapper":
        dev = list(gold_token_examples(nlp, args.dev, tags=args.tags))
        order = wrapper_order(train, dev, base, probe, dev_words=args.dev_words, epochs=args.epochs,
                              max_steps=args.max_steps)
    elif args.method == "group-lasso":
        order = group_lasso_order(train, base, probe, epochs=args.epochs)
    else:
        order = gomp_order(train, base, probe, alpha=args.alpha, max_steps=args.max_steps)
    srsly.write_json(args.output, order)
    msg.good(f"Wrote the {args.method} order of {len(order)} templates to {args.output} ({time.time() - start:.0f}s)")
    return 0


def cmd_order_by_weights(args: argparse.Namespace) -> int:
    import spacy

    from ..learn.ordering import weight_norm_order
    from ..loading import resolve_model

    nlp = spacy.load(resolve_model(args.model))
    if args.component not in nlp.pipe_names or getattr(nlp.get_pipe(args.component), "sparse", None) is None:
        raise ValueError(f"{args.model} has no trained sparse component {args.component!r} "
                         f"(it has: {', '.join(nlp.pipe_names)})")
    order = weight_norm_order(nlp.get_pipe(args.component).sparse)
    srsly.write_json(args.output, order)
    msg.good(f"Wrote the weight-norm order of {len(order)} templates of {args.component} to {args.output}")
    return 0


def cmd_jackknife(args: argparse.Namespace) -> int:
    from ..jackknife import jackknife_tags

    overrides = {"training.max_epochs": args.max_epochs} if args.max_epochs else {}
    acc = jackknife_tags(Path(args.config), Path(args.train), Path(args.dev), Path(args.output),
                         folds=args.folds, overrides=overrides)
    msg.good(f"Wrote {args.output}: tags predicted by {args.folds} held-out taggers, {100 * acc:.2f}% correct")
    return 0


def rewrite_components(args: argparse.Namespace, change) -> int:
    """Load args.model, apply `change(model)` (returns a note) to every
    sparse component (or args.component), log sizes, save to args.output."""
    import spacy

    from ..bench import sparse_components

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
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)  # (nlp.to_disk makes only the last level)
    nlp.to_disk(args.output)
    msg.good(f"Saved {args.output}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """Drop small averaged weights of every sparse component and save."""
    return rewrite_components(args, lambda model: f"dropped {model.prune_weights(args.min_weight):,} weights")


def cmd_quantize(args: argparse.Namespace) -> int:
    """QT (Suzuki & Nagata's baseline): round a trained model's weights to
    the nearest value of S and save it as a grouped-weight file."""
    from ..learn.admm import AdmmSettings, quantize

    try:
        eta = args.eta if args.eta in ("auto", "cover") else float(args.eta)
    except ValueError:
        msg.fail(f"quantize: --eta takes a number, 'auto' or 'cover', got {args.eta!r}", exits=1)
    try:
        settings = AdmmSettings(zeta=args.zeta, kappa=args.kappa, eta=eta,
                                lambda0=args.lambda0, lambda0_feature=args.lambda0_feature)
    except ValueError as err:
        msg.fail(f"quantize: {err}", exits=1)
    return rewrite_components(args, lambda model: f"quantized to {quantize(model, settings)['distinct_weights']} values")


DEFAULT_NOTE = """An embedded pipeline of spacy-sparse ({pipes}), trained on UD English-EWT by the project's
{command} and shipped by `python -m spacy_sparse ship-default`.

This model is derived from UD English-EWT, which is licensed under CC BY-SA 4.0
(https://creativecommons.org/licenses/by-sa/4.0/); the model is shared under the same licence.
{pruned}{clusters}"""

CLUSTERS_NOTE = """The word-cluster table in the model files of {pipes} is from en_brown_1000, made from the
en_lexeme_cluster, en_lexeme_prob and en_lemma_* tables of spacy-lookups-data (MIT licence, copyright (c) 2019
ExplosionAI GmbH; the licence text is spacy_sparse/data/clusters/LICENSE in the spacy-sparse package).
"""
# a table with WordNet readings carries WordNet's licence, whose text must go with every copy
WORDNET_NOTE = """The WordNet readings (wnpos) in the model files of {pipes} are derived from WordNet 3.0, under
this licence:

WordNet Release 3.0{licence}"""

# meta names: `spacy package` prefixes the language (en_ewt_sparse, en_ewt_sparse_tagger)
SHIPPED_NAMES = {"full": ("ewt_sparse", "`spacy project run default` (train-joint, compress-default, "
                                        "train-lemma-morph, compress-lemma-morph; the parser again by "
                                        "retrain-default-parser)"),
                 "tagger": ("ewt_sparse_tagger", "`spacy project run train-small`")}


# the runtime settings a shipped component can be given (each has a checking setter)
SHIP_SETTINGS = ("margin", "margin_decay", "start_bias", "beam_width", "beam_density")


def ship_settings(nlp, settings: List[str]) -> Dict[Tuple[str, str], Any]:
    """Apply `--set COMPONENT.SETTING=VALUE` (a number, or none for a
    margin) to the pipeline's sparse components; ValueError for a component,
    setting or value that is not one."""
    from ..pipeline.base import SparsePipe

    done: Dict[Tuple[str, str], Any] = {}
    for setting in settings:
        target, sep, value = setting.partition("=")
        name, _, key = target.rpartition(".")
        pipe = nlp.get_pipe(name) if name in nlp.pipe_names else None
        if not sep or not isinstance(pipe, SparsePipe) or key not in SHIP_SETTINGS or not hasattr(pipe, key):
            raise ValueError(f"--set takes COMPONENT.SETTING=VALUE for a sparse component of the pipeline and one of "
                             f"its settings {SHIP_SETTINGS}, got {setting!r}")
        try:
            setattr(pipe, key, None if value.strip().lower() == "none" else float(value))
        except (TypeError, ValueError) as err:
            raise ValueError(f"--set {setting!r}: {err}") from None
        done[(name, key)] = getattr(pipe, key)
    return done


def save_with_settings(nlp, target: Path, settings: Dict[Tuple[str, str], Any]) -> None:
    """Save the pipeline; its config.cfg says the settings ship_settings
    gave, as the components' own cfg does (what they load with)."""
    import spacy

    nlp.to_disk(target)
    if settings:
        config = spacy.util.load_config(target / "config.cfg")
        for (name, key), value in settings.items():
            config["components"][name][key] = value
        config.to_disk(target / "config.cfg")


def cmd_settings(args: argparse.Namespace) -> int:
    """Copy a pipeline with runtime settings of its sparse components
    changed, e.g. the margins its annotating components had in training
    (`--set sparse_tagger.margin=none`)."""
    import spacy

    from ..loading import resolve_model

    nlp = spacy.load(resolve_model(args.model))
    try:
        settings = ship_settings(nlp, args.set)
    except ValueError as err:
        msg.fail(str(err))
        return 1
    save_with_settings(nlp, Path(args.output), settings)
    msg.good(f"Saved {args.output} with {', '.join(f'{n}.{k}={v}' for (n, k), v in settings.items()) or 'no change'}")
    return 0


def cmd_ship_default(args: argparse.Namespace) -> int:
    """Copy a trained pipeline into the package as an embedded default:
    "full" (segmenter, tagger, parser) or "tagger"."""
    import shutil

    import spacy

    from ..loading import DEFAULT_PIPELINES
    from ..pipeline.base import SparsePipe

    nlp = spacy.load(args.model)
    for other in args.add:
        source = spacy.load(other)
        for name, pipe in source.pipeline:
            if isinstance(pipe, SparsePipe) and name not in nlp.pipe_names:
                nlp.add_pipe(name, source=source)
    sparse = [pipe for _, pipe in nlp.pipeline if isinstance(pipe, SparsePipe)]
    if not sparse:
        msg.fail(f"{args.model} has no spacy-sparse component to ship")
        return 1
    try:
        settings = ship_settings(nlp, args.set)
    except ValueError as err:
        msg.fail(str(err))
        return 1
    dropped = 0
    if args.min_weight > 0:
        dropped = sum(pipe._require_model().prune_weights(args.min_weight) for pipe in sparse)
    if args.sentencizer and "sentencizer" not in nlp.pipe_names:
        # the tagger labels sentence by sentence when a doc has sentence
        # starts; on raw multi-sentence text a rule-based sentencizer supplies
        # them (at a cost: spaCy's sentencizer runs Python per token)
        nlp.add_pipe("sentencizer", first=True)
    name, command = SHIPPED_NAMES[args.kind]
    nlp.meta["name"] = name
    nlp.meta["license"] = "CC BY-SA 4.0"
    nlp.meta["sources"] = [{"name": "UD English-EWT", "license": "CC BY-SA 4.0"}]
    target = DEFAULT_PIPELINES[args.kind]
    if target.exists():
        shutil.rmtree(target)
    save_with_settings(nlp, target, settings)
    # The components read word forms from the docs they get, not from the
    # vocab: ship only the label strings, not the training corpus's word list.
    labels = {label for pipe in sparse for label in pipe.labels}
    srsly.write_json(target / "vocab" / "strings.json", sorted(labels))
    pruned = f"Weights with |w| < {args.min_weight:g} were dropped to keep the package small.\n" if dropped else ""
    with_clusters = [pipe.name for pipe in sparse if pipe._require_model().lex_clusters]
    clusters = CLUSTERS_NOTE.format(pipes=", ".join(with_clusters)) if with_clusters else ""
    with_readings = [pipe.name for pipe in sparse if pipe._require_model().lex_clusters.has_senses]
    if with_readings:
        licence = (Path(__file__).parent.parent / "data" / "clusters" / "LICENSE").read_text(encoding="utf8")
        clusters += WORDNET_NOTE.format(pipes=", ".join(with_readings),
                                        licence=licence.split("WordNet Release 3.0", 1)[1])
    note = DEFAULT_NOTE.format(pipes=", ".join(nlp.pipe_names), command=command, pruned=pruned, clusters=clusters)
    (target / "LICENSE").write_text(note)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    msg.good(f"Shipped {args.model} to {target} ({size / 1e6:.1f} MB, {dropped:,} small weights dropped)")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    """Print or copy a training config the package ships (works from an installed wheel)."""
    from ..loading import config_names, config_path

    if not args.name:
        msg.text("\n".join(config_names()))
        return 0
    text = config_path(args.name).read_text(encoding="utf8")
    if not args.output:
        sys.stdout.write(text)
        return 0
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text, encoding="utf8")
    msg.good(f"Wrote {args.output}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("config", help="list the shipped training configs, or print/copy one (e.g. tagger)")
    p.add_argument("name", nargs="?", help="a config name (without .cfg); none: list them")
    p.add_argument("output", nargs="?", help="write it here instead of stdout")
    p.set_defaults(func=cmd_config)

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
    p.add_argument("--clusters", help='word clusters for templates reading clu* atoms (e.g. "en_brown_1000")')
    p.set_defaults(func=cmd_order)

    p = sub.add_parser("order-by-weights", help="order a trained component's templates by the norm of their weights")
    p.add_argument("model", help='a trained pipeline directory, "default" or "default-tagger"')
    p.add_argument("output", help="ordering file (JSON list of template names)")
    p.add_argument("--component", default="sparse_parser")
    p.set_defaults(func=cmd_order_by_weights)

    p = sub.add_parser("jackknife", help="tag the training data with k taggers that never saw their fold (for parser training)")
    p.add_argument("config", help="tagger training config, e.g. configs/tagger.cfg")
    p.add_argument("train")
    p.add_argument("dev")
    p.add_argument("output", help=".spacy file: the training docs with predicted tag_")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--max-epochs", type=int, default=0, help="override the config's max_epochs (0: keep)")
    p.set_defaults(func=cmd_jackknife)

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
    p.add_argument("--eta", default="auto",
                   help="smallest magnitude: a number, 'auto' (least squares fit to the weights) or 'cover' "
                        "(the largest value is the largest weight; best for a trained model)")
    p.add_argument("--lambda0", type=float, default=0.0, help="L0 term: zero weights that do not pay for it")
    p.add_argument("--lambda0-feature", type=float, default=0.0, help="L0 term per feature: drop rows that do not pay")
    p.add_argument("--component", help="only this sparse component (default: all)")
    p.set_defaults(func=cmd_quantize)

    p = sub.add_parser("settings", help="copy a pipeline with runtime settings of its sparse components changed")
    p.add_argument("model", help="a pipeline directory, or default / default-tagger (the embedded ones)")
    p.add_argument("output")
    p.add_argument("--set", action="append", default=[], metavar="COMPONENT.SETTING=VALUE",
                   help=f"one of {', '.join(SHIP_SETTINGS)} (a number, or none for a margin); repeatable")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("ship-default", help="make a trained pipeline one of the package's embedded defaults")
    p.add_argument("model")
    p.add_argument("--kind", choices=["full", "tagger"], default="full",
                   help="full: segmenter + tagger + parser (load_default()); tagger: load_default('tagger')")
    p.add_argument("--min-weight", type=float, default=0.0, help="drop averaged weights smaller than this (0: none)")
    p.add_argument("--sentencizer", action="store_true", help="put spaCy's rule-based sentencizer before the tagger")
    p.add_argument("--set", action="append", default=[], metavar="COMPONENT.SETTING=VALUE",
                   help="a runtime setting the shipped component loads with: margin (a number or none), margin_decay, "
                        "start_bias, or a parser's beam_width or beam_density; may be repeated")
    p.add_argument("--add", action="append", default=[], metavar="PIPELINE",
                   help="append the sparse components of another trained pipeline that MODEL lacks (the lemmatizer "
                        "and morphologizer of configs/lemma_morph.cfg); repeatable")
    p.set_defaults(func=cmd_ship_default)
