"""The benchmark page's section for the UD user's path: `bench-ud` runs
(benchmarks/results/ud_*.K.json) beside systems published on the same
treebank, which are cited, not run here."""
from typing import Any, Callable, Dict, List, Optional, Sequence

METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS", "CLAS",
           "MLAS", "BLEX")

# Published results on English EWT raw text, as the systems' authors report them (UD version in the name).
PUBLISHED: List[Dict[str, Any]] = [
    {"system": "UDPipe 2 (UD 2.15)", "scores": {"Sentences": 87.55, "UPOS": 96.57, "UFeats": 97.06,
                                                  "Lemmas": 96.94, "LAS": 89.14}},
    {"system": "Stanza 1.5.1 (UD 2.12)", "scores": {"Sentences": 89.16, "UPOS": 96.20, "LAS": 86.77}},
    {"system": "UDPipe 1.2 (UD 2.5)", "scores": {"Sentences": 77.40, "UPOS": 93.26, "LAS": 77.03}},
    {"system": "CoNLL 2018 best LAS (UD 2.2)", "scores": {"LAS": 84.57}},
    {"system": "UDPipe Future (UD 2.2)", "scores": {"LAS": 82.51}},
]


def ud_section(found: Sequence[Dict[str, Any]], span: Callable[..., str], provenance: Callable[..., str]) -> List[str]:
    """Markdown lines of the section, from the runs of one bench-ud setting."""
    first = found[0]
    for other in found[1:]:
        for role in ("model", "baseline"):
            if role in first and other.get(role, {}).get("scores") != first[role]["scores"]:
                raise ValueError("bench-ud runs disagree on scores, so they are not runs of one setting")
    lines = ["## The shared task's metrics on UD-layout text", "",
             f"`python -m spacy_sparse bench-ud`: the text of `{first['gold'].split('/')[-1]}` laid out as UD's "
             f"raw-text files ({first['paragraphs']:,} paragraphs apart by blank lines, lines wrapped at 80; "
             "`ud-text`), each paragraph a doc as `tag --format paragraphs` reads it, written as CoNLL-U and scored "
             "by `evaluate-ud` (the CoNLL 2018 shared task's metrics, F1). words/s counts the treebank's "
             f"{first['words']:,} words over the whole path (tokenizer, pipeline, CoNLL-U writer), pipelines "
             "taking turns; the ratio is within each run. – marks a metric over a column the pipeline does not fill "
             "(the CNN tagger + parser sets no UPOS, features or lemmas). Rows marked published are results on the "
             "same treebank (other UD versions), cited, not run here.", "",
             "| system | " + " | ".join(METRICS) + " | words/s | vs baseline |",
             "|---|" + "---|" * (len(METRICS) + 2)]
    ratios = [x for run in found for x in run.get("speed_ratio", [])]
    for role in ("model", "baseline"):
        if role not in first:
            continue
        row = first[role]
        wps = [x for run in found for x in run[role]["words_per_second"]]
        ratio = span(ratios, "{:.1f}", "×") if role == "model" and ratios else "–"
        lines.append(f"| `{row['path']}` ({', '.join(row['pipes'])}) | "
                     + " | ".join(_cell(row["scores"][m]) for m in METRICS)
                     + f" | {span([w / 1000 for w in wps], '{:.1f}', 'k')} | {ratio} |")
    for pub in PUBLISHED:
        lines.append(f"| {pub['system']}, published | "
                     + " | ".join(_cell(pub["scores"].get(m)) for m in METRICS) + " | – | – |")
    return lines + ["", provenance(found), ""]


def _cell(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}"


BEAM_METRICS = ("Sentences", "UPOS", "XPOS", "UAS", "LAS", "CLAS")


def beam_section(dev: Sequence[Dict[str, Any]], test: Sequence[Dict[str, Any]], span: Callable[..., str],
                 provenance: Callable[..., str]) -> List[str]:
    """Markdown lines of the beam parser's section: the settings tried on dev (each run beside the greedy
    pipeline, timed in turns), then the setting picked there on test, beside spaCy's CNN pipeline."""
    lines = ["## The beam parser on UD-layout text", "",
             "`bench-ud` as above, for the joint recipe trained with a beam (`spacy project run beam`: "
             "`train-beam`, then `bench-beam`). On EWT dev, each setting (`--set`) of the one beam pipeline runs "
             "in turns with the greedy pipeline of the same recipe (`train-joint`), whose scores are the first "
             "row; the ratio is within each run. The setting picked on dev then runs on test beside spaCy's CNN "
             "tagger + parser.", "",
             "| EWT dev: pipeline, setting | " + " | ".join(BEAM_METRICS) + " | words/s | vs greedy |",
             "|---|" + "---|" * (len(BEAM_METRICS) + 2)]
    greedy = next((run for run in dev if "baseline" in run), None)
    if greedy is not None:
        row = greedy["baseline"]
        lines.append(f"| `{row['path']}` (greedy) | " + " | ".join(_cell(row["scores"][m]) for m in BEAM_METRICS)
                     + " | – | 1 |")
    for run in dev:
        row = run["model"]
        setting = ", ".join(f"{k.split('.')[-1]} {v}" for k, v in run.get("settings", {}).items()) or "as saved"
        ratio = span(run["speed_ratio"], "{:.2f}", "×") if run.get("speed_ratio") else "–"
        lines.append(f"| `{row['path']}`, {setting} | " + " | ".join(_cell(row["scores"][m]) for m in BEAM_METRICS)
                     + f" | {span([w / 1000 for w in row['words_per_second']], '{:.1f}', 'k')} | {ratio} |")
    lines += ["", provenance(dev), ""]
    if test:
        lines += ["| EWT test: pipeline | " + " | ".join(BEAM_METRICS) + " | words/s | vs baseline |",
                  "|---|" + "---|" * (len(BEAM_METRICS) + 2)]
        for stem_runs in _by_model(test):
            first = stem_runs[0]
            for role in ("model", "baseline"):
                row = first[role]
                wps = [w for run in stem_runs for w in run[role]["words_per_second"]]
                ratios = [x for run in stem_runs for x in run.get("speed_ratio", [])]
                setting = ", ".join(f"{k.split('.')[-1]} {v}" for k, v in first.get("settings", {}).items())
                name = f"`{row['path']}`" + (f", {setting}" if setting and role == "model" else "")
                lines.append(f"| {name} | " + " | ".join(_cell(row["scores"][m]) for m in BEAM_METRICS)
                             + f" | {span([w / 1000 for w in wps], '{:.1f}', 'k')} | "
                             + (span(ratios, "{:.2f}", "×") if role == "model" and ratios else "–") + " |")
        lines += ["", provenance(test), ""]
    return lines


def _by_model(found: Sequence[Dict[str, Any]]) -> List[List[Dict[str, Any]]]:
    """Runs grouped by the model path and settings they ran, in order of first appearance."""
    groups: Dict[Any, List[Dict[str, Any]]] = {}
    for run in found:
        key = (run["model"]["path"], tuple(sorted(run.get("settings", {}).items())))
        groups.setdefault(key, []).append(run)
    return list(groups.values())
