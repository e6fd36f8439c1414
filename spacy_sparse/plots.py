"""The speed/accuracy figure of dynamic feature selection (Strubell et al.'s
Fig. 2 in spirit): accuracy and words/s against the stop margin, one line per
model, from `bench` results. Needs matplotlib (`pip install spacy-sparse[plots]`)."""
from pathlib import Path
from typing import Any, Dict, List, Sequence


def _margin_label(row: Dict[str, Any]) -> str:
    if row["margin"] is None:
        return "none"
    decay = row.get("margin_decay", 1.0)
    return f"{row['margin']:g}" + (f"\nr={decay:g}" if decay != 1.0 else "")


def plot_bench(results: Sequence[Dict[str, Any]], path: Path) -> Path:
    """Two panels sharing the margin axis (margin none first, then the
    margins as given): accuracy, and words/s. Returns the written path."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("bench --plot needs matplotlib: pip install 'spacy-sparse[plots]'") from err
    if not results:
        raise ValueError("No bench results to plot")
    labels: List[str] = []
    for result in results:
        for row in result["rows"]:
            label = _margin_label(row)
            if label not in labels:
                labels.append(label)
    fig, (ax_acc, ax_speed) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for result in results:
        xs = [labels.index(_margin_label(r)) for r in result["rows"]]
        name = Path(str(result["model"])).name or str(result["model"])
        ax_acc.plot(xs, [100 * r["accuracy"] for r in result["rows"]], marker="o", label=name)
        ax_speed.plot(xs, [r["words_per_second"] for r in result["rows"]], marker="o", label=name)
    metric = results[0]["rows"][0]["metric"]
    ax_acc.set_ylabel(f"{metric} (%)")
    ax_speed.set_ylabel("words/s")
    ax_speed.set_xlabel("stop margin")
    ax_speed.set_xticks(range(len(labels)))
    ax_speed.set_xticklabels(labels)
    ax_acc.legend(fontsize="small")
    text = results[0].get("text", "gold")
    ax_acc.set_title(f"dynamic feature selection ({'raw text' if text == 'raw' else 'gold tokens'})")
    for ax in (ax_acc, ax_speed):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
