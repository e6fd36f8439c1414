"""The sparsity papers' tables, reproduced in shape on our data.

Each table trains its variants with `spacy train` on our configs (so it
measures exactly what a user gets), evaluates model-last on the test file,
and reads sizes from the saved model:

- goldberg: averaged learner vs rare-feature pruning (k = 5, 10) vs
  min-update (SAP5, SAP10) on CoNLL-2000 chunking;
- martins: the full model vs sparseptron budgets on CoNLL-2000, plus
  features made per epoch (the memory curve of their Fig. 2);
- suzuki: float vs QT vs DC-ADMM at zeta in {1, 2, 4} on EWT tagging;
- composed: every method on one EWT tagger, with words/s at margin None
  and at a stop margin;
- strubell: taggers on the first 6, 10, 15, 23 templates of the wrapper,
  group-lasso and GOMP orders, with words/s against all templates.

Rows go to OUTPUT/<table>.json; the printed table is Markdown.

Run from the repository root (or through `spacy project run sparsity-*`):

    python benchmarks/sparsity.py TABLE CORPUS OUTPUT
    python benchmarks/sparsity.py plot OUTPUT
"""
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import srsly
from wasabi import msg

CONFIGS = Path(__file__).resolve().parent.parent / "spacy_sparse" / "configs"


def train(config: Path, out: Path, train_path: Path, dev_path: Path, overrides: Sequence[str] = ()) -> Path:
    """`spacy train` in a subprocess (a fresh process per variant, as a
    user runs it); returns model-last. The log goes to out/train.log."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(out),
           "--paths.train", str(train_path), "--paths.dev", str(dev_path), *overrides]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    (out / "train.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"spacy train failed for {config} {' '.join(overrides)}; see {out / 'train.log'}")
    msg.info(f"trained {out.name} in {time.perf_counter() - start:.0f} s")
    return out / "model-last"


def measure(model: Path, test_path: Path, *, tags: bool = False, sents: bool = False,
            transform: Optional[Callable[[Any], None]] = None) -> Dict[str, Any]:
    """Accuracy on the test file and the sizes of the (last) sparse
    component; `transform` changes the loaded pipeline first (e.g. QT)."""
    import spacy

    from spacy_sparse.bench import sparse_components
    from spacy_sparse.pipeline.settings import ACCURACY_KEYS
    from spacy_sparse.readers import gold_token_examples

    nlp = spacy.load(model)
    name, pipe = sparse_components(nlp)[-1]
    if transform is not None:
        transform(pipe)
    scores = nlp.evaluate(list(gold_token_examples(nlp, test_path, tags=tags, sents=sents)))
    key = next(k for k in ACCURACY_KEYS if scores.get(k) is not None)
    stats = pipe._require_model().stats()
    meta = srsly.read_json(Path(model) / "meta.json") if (Path(model) / "meta.json").exists() else {}
    return {"metric": key, "accuracy": round(100 * float(scores[key]), 2),
            "templates": stats["templates"], "features": stats["features"],
            "nonzero_features": stats["nonzero_features"], "nonzero_weights": stats["nonzero_weights"],
            "distinct_weights": stats["distinct_weights"], "file_bytes": stats["bytes"],
            "history": meta.get("sparsity", {}).get(name, [])}


def goldberg(corpus: Path, out: Path) -> List[Dict[str, Any]]:
    tr, te = corpus / "train.spacy", corpus / "test.spacy"
    variants = [
        ("averaged", "chunker.cfg", []),
        ("pruned(5)", "chunker.cfg", ["--components.chunker.min_count", "5"]),
        ("pruned(10)", "chunker.cfg", ["--components.chunker.min_count", "10"]),
        ("SAP5", "chunker_min_update.cfg", ["--training.before_update.min_update.k", "5"]),
        ("SAP10", "chunker_min_update.cfg", ["--training.before_update.min_update.k", "10"]),
    ]
    rows = []
    for label, cfg, ov in variants:
        model = train(CONFIGS / cfg, out / "goldberg" / label.replace("(", "").replace(")", ""), tr, te, ov)
        rows.append({"model": label, **measure(model, te, tags=True)})
    return rows


def martins(corpus: Path, out: Path, budgets: Sequence[int] = (10, 20, 30, 40, 50),
            own_loss_budgets: Sequence[int] = (30, 50), refit_budgets: Sequence[int] = (50,),
            refit_k: int = 10) -> List[Dict[str, Any]]:
    """The full model (5 epochs, as in the Goldberg table, and 15, the
    sparseptron's total as in the paper) against budgets under Martins'
    protocol (configs/chunker_sparseptron.cfg: 5 epochs selecting with the
    perceptron loss, 10 of frozen refit), the earlier protocol (the
    chunker's own loss, a fresh refit, 3 + 5 epochs) and a refit with
    min-update."""
    tr, te = corpus / "train.spacy", corpus / "test.spacy"
    sp = "--training.before_update.sparseptron."
    variants = [("full", "chunker.cfg", []), ("full, 15 epochs", "chunker.cfg", ["--training.max_epochs", "15"])]
    variants += [(f"B = {b}", "chunker_sparseptron.cfg", [sp + "budget", str(b)]) for b in budgets]
    variants += [(f"B = {b}, own loss, fresh refit, 3 + 5 epochs", "chunker_sparseptron.cfg",
                  [sp + "budget", str(b), sp + "loss", "component", sp + "refit", "fresh", sp + "epochs", "3",
                   "--training.max_epochs", "8"]) for b in own_loss_budgets]
    variants += [(f"B = {b}, refit with min-update k = {refit_k}", "chunker_sparseptron.cfg",
                  [sp + "budget", str(b), "--training.before_update.min_update.k", str(refit_k)])
                 for b in refit_budgets]
    rows = []
    for label, cfg, ov in variants:
        where = label.replace(" = ", "").replace(", ", "_").replace(" ", "_").replace("+", "")
        model = train(CONFIGS / cfg, out / "martins" / where, tr, te, ov)
        rows.append({"model": label, **measure(model, te, tags=True)})
    full = rows[0]["nonzero_features"]
    for row in rows:
        row["share_of_full"] = f"{100 * row['nonzero_features'] / full:.1f} %"
    return rows


# the sparse rows of the Suzuki table: QT and DC-ADMM at zeta 4 with kappa = 2
# (8 finer values) and the L0 terms, per weight and per feature
SPARSE_ADMM = ({"kappa": 2.0, "lambda0": 1.5}, {"kappa": 2.0, "lambda0": 1.0, "lambda0_feature": 4.0})


def suzuki(corpus: Path, out: Path, zetas: Sequence[int] = (1, 2, 4)) -> List[Dict[str, Any]]:
    from spacy_sparse.learn.admm import AdmmSettings, quantize

    tr, dev, te = corpus / "train.spacy", corpus / "dev.spacy", corpus / "test.spacy"
    float_model = train(CONFIGS / "tagger.cfg", out / "suzuki" / "float", tr, dev)
    rows = [{"model": "float", **measure(float_model, te, sents=True)}]
    qt_rows, admm_rows = [], []
    for z, extra in [(z, {}) for z in zetas] + [(4, e) for e in SPARSE_ADMM]:
        name = f"zeta={z}" + "".join(f", {k}={v:g}" for k, v in extra.items())

        def qt(pipe, z=z, extra=extra):
            quantize(pipe._require_model(), AdmmSettings(zeta=z, **extra))
        qt_rows.append({"model": f"QT {name}", **measure(float_model, te, sents=True, transform=qt)})
        where = f"admm{z}" + "".join(f"_{k}{v:g}" for k, v in extra.items())
        settings = [("zeta", z), *extra.items()]
        overrides = [a for k, v in settings for a in (f"--training.before_update.dc_admm.{k}", str(v))]
        model = train(CONFIGS / "tagger_dc_admm.cfg", out / "suzuki" / where, tr, dev, overrides)
        admm_rows.append({"model": f"DC-ADMM {name}", **measure(model, te, sents=True)})
    n = len(zetas)
    rows += qt_rows[:n] + admm_rows[:n] + [r for pair in zip(qt_rows[n:], admm_rows[n:]) for r in pair]
    for row in rows:
        row["smaller_than_float"] = round(rows[0]["file_bytes"] / row["file_bytes"], 1)
    return rows


def composed(corpus: Path, out: Path, stops: Sequence[Tuple[float, float]] = ((20.0, 1.0), (30.0, 0.95))
             ) -> List[Dict[str, Any]]:
    """The float tagger and the composed one, trained in the same run, with
    words/s and accuracy at margin None and at each (margin, decay) stop
    rule of dynamic feature selection (settings timed in turns, best of 5)."""
    from spacy_sparse.bench import run_bench

    tr, dev, te = corpus / "train.spacy", corpus / "dev.spacy", corpus / "test.spacy"
    rows = []
    for label, cfg in (("float", "tagger.cfg"), ("composed", "tagger_composed.cfg")):
        model = train(CONFIGS / cfg, out / "composed" / label, tr, dev)
        row = {"model": label, **measure(model, te, sents=True)}
        margins = [None] + sorted({m for m, _ in stops}, reverse=True)
        speed = run_bench(str(model), te, margins, text="gold", sents=True, repeat=5,
                          decays=sorted({d for _, d in stops}, reverse=True))["rows"]
        row["wps_margin_none"] = round(speed[0]["words_per_second"])
        for margin, decay in stops:
            got = next(r for r in speed if r["margin"] == margin and r["margin_decay"] == decay)
            name = f"{margin:g}" + ("" if decay == 1.0 else f"_decay_{decay:g}")
            row[f"speedup_margin_{name}"] = round(got["speedup"], 2)
            row[f"accuracy_margin_{name}"] = round(100 * got["accuracy"], 2)
        rows.append(row)
    return rows


def strubell(corpus: Path, out: Path, sizes: Sequence[int] = (6, 10, 15, 23)) -> List[Dict[str, Any]]:
    """Template orders learned by the wrapper method, the group-lasso path
    and GOMP; a tagger trained on the first k templates of each (all
    templates scored: margin None), against the full set in the same run."""
    import spacy
    from spacy.util import load_config, registry

    from spacy_sparse.bench import run_bench
    from spacy_sparse.learn.ordering import ProbeSettings, gomp_order, group_lasso_order, wrapper_order
    from spacy_sparse.readers import gold_token_examples

    tr, dev, te = corpus / "train.spacy", corpus / "dev.spacy", corpus / "test.spacy"
    nlp = spacy.blank("en")
    train_egs = list(gold_token_examples(nlp, tr))
    dev_egs = list(gold_token_examples(nlp, dev))
    base = registry.resolve({"t": {"@misc": "spacy_sparse.tagger_templates.v1"}})["t"]
    quiet = ProbeSettings(log=lambda text: None)
    orders = {
        "wrapper": wrapper_order(train_egs, dev_egs, base, quiet, max_steps=max(sizes)),
        "group lasso": group_lasso_order(train_egs, base, quiet),
        "GOMP": gomp_order(train_egs, base, quiet, max_steps=max(sizes)),
    }
    (out / "strubell").mkdir(parents=True, exist_ok=True)
    variants = [("all", len(base), base)] + [(m, k, o[:k]) for m, o in orders.items() for k in sizes]
    rows = []
    for method, k, templates in variants:
        cfg = load_config(CONFIGS / "tagger.cfg")
        cfg["components"]["sparse_tagger"]["templates"] = {"@misc": "spacy_sparse.template_list.v1",
                                                          "templates": list(templates)}
        cfg["training"]["max_epochs"] = 5
        where = out / "strubell" / f"{method.replace(' ', '_')}_{k}"
        where.mkdir(parents=True, exist_ok=True)
        cfg.to_disk(where / "config.cfg")
        model = train(where / "config.cfg", where, tr, dev)
        row = {"model": f"{method} {k}", **measure(model, te, sents=True)}
        row["words_per_second"] = round(run_bench(str(model), te, [None], text="gold", sents=True, repeat=3)["rows"][0]
                                        ["words_per_second"])
        rows.append(row)
    for r in rows:
        r["speedup"] = round(r["words_per_second"] / rows[0]["words_per_second"], 2)
    srsly.write_json(out / "strubell" / "orders.json", orders)
    return rows


TABLES = {"goldberg": goldberg, "martins": martins, "suzuki": suzuki, "composed": composed, "strubell": strubell}
COLUMNS = ["model", "accuracy", "templates", "nonzero_features", "distinct_weights", "file_bytes"]


def markdown(rows: List[Dict[str, Any]]) -> str:
    extra = [k for k in rows[0] if k.startswith(("wps_", "words_per", "speedup", "accuracy_margin", "smaller_than",
                                            "share_of"))]
    cols = COLUMNS + extra
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r.get(c):,}" if isinstance(r.get(c), int) else str(r.get(c))
                                       for c in cols) + " |")
    return "\n".join(lines)


def read_rows(path: Path) -> List[Dict[str, Any]]:
    """A table's rows from its JSON (with its provenance, or a bare list)."""
    data = srsly.read_json(path)
    return data["rows"] if isinstance(data, dict) else data


def plot_tables(out: Path) -> List[Path]:
    """PNG figures from the tables' JSON in `out` (those that exist):
    Martins' Fig. 2 (features made per epoch, per budget, against the full
    model), Strubell's Table 4 as accuracy over templates per order, and
    accuracy over file size for the Goldberg and Suzuki variants. Needs
    matplotlib (`pip install spacy-sparse[plots]`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("Plots need matplotlib: pip install 'spacy-sparse[plots]'") from None
    out = Path(out)
    written = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
        written.append(out / name)

    if (out / "martins.json").exists():
        rows = read_rows(out / "martins.json")
        fig, ax = plt.subplots(figsize=(6, 4))
        for r in rows:
            hist = [h for h in r.get("history", []) if h["features"] > 0]
            if hist:
                ax.plot([h["epoch"] for h in hist], [h["features"] for h in hist], marker="o", label=r["model"])
            else:
                ax.axhline(r["features"], color="grey", linestyle="--", label=f"{r['model']} (final)")
        ax.set(xlabel="epoch", ylabel="features made", title="Sparseptron: features over epochs")
        ax.legend(fontsize=7)
        save(fig, "martins_memory.png")
    if (out / "strubell.json").exists():
        rows = read_rows(out / "strubell.json")
        fig, ax = plt.subplots(figsize=(6, 4))
        methods: Dict[str, List[Any]] = {}
        for r in rows:
            method, k = r["model"].rsplit(" ", 1)
            methods.setdefault(method, []).append((int(k), r["accuracy"]))
        for method, points in methods.items():
            points.sort()
            ax.plot(*zip(*points), marker="o", label=method)
        ax.set(xlabel="templates", ylabel="accuracy", title="Template orders")
        ax.legend(fontsize=8)
        save(fig, "strubell_orders.png")
    for table in ("goldberg", "suzuki"):
        if (out / f"{table}.json").exists():
            rows = read_rows(out / f"{table}.json")
            fig, ax = plt.subplots(figsize=(6, 4))
            for r in rows:
                ax.scatter(r["file_bytes"] / 1e6, r["accuracy"])
                ax.annotate(r["model"], (r["file_bytes"] / 1e6, r["accuracy"]), fontsize=7)
            ax.set(xlabel="model file (MB)", ylabel="accuracy", title=f"{table}: accuracy and size")
            save(fig, f"{table}_size.png")
    if not written:
        raise ValueError(f"No table JSON in {out} to plot (run a table first)")
    return written


def run_table(table: str, corpus: Path, out: Path) -> List[Dict[str, Any]]:
    if table not in TABLES:
        raise ValueError(f"Unknown table {table!r}; one of {sorted(TABLES)}")
    corpus, out = Path(corpus), Path(out)
    for name in ("train.spacy", "test.spacy") + (("dev.spacy",) if table in ("suzuki", "composed", "strubell") else ()):
        if not (corpus / name).exists():
            raise ValueError(f"{corpus / name} is missing (make it with convert-conll --chunks or convert-ud)")
    rows = TABLES[table](corpus, out)
    from spacy_sparse.provenance import provenance

    srsly.write_json(out / f"{table}.json", {"meta": provenance(), "table": table, "rows": rows})
    print(markdown(rows))
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python benchmarks/sparsity.py", description=__doc__.split("\n")[0])
    parser.add_argument("table", choices=["goldberg", "martins", "suzuki", "composed", "strubell", "plot"],
                        help="a table to reproduce, or plot: figures (PNG) from the JSON in OUTPUT")
    parser.add_argument("corpus_or_output", help="TABLE: directory with train/dev/test .spacy; plot: OUTPUT")
    parser.add_argument("output", nargs="?", help="directory for the trained variants and <table>.json")
    args = parser.parse_args(argv)
    if args.table == "plot":
        for path in plot_tables(Path(args.corpus_or_output)):
            msg.good(f"Wrote {path}")
        return 0
    if not args.output:
        parser.error("OUTPUT is required")
    run_table(args.table, Path(args.corpus_or_output), Path(args.output))
    msg.good(f"Wrote {Path(args.output) / (args.table + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
