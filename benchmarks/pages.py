"""Write the benchmark pages from the JSON that benchmark commands wrote.

    python benchmarks/pages.py            # docs/benchmarks.md and README.md's headline table

Every number on the pages comes from a file in benchmarks/results/, and every table names the command,
commit, date and machine of the run behind it. Runs of one setting are files `NAME.K.json`
(K = 1, 2, ...): accuracies must agree (they are deterministic) and words/s is shown as the range
over the runs. A results file that is missing leaves its section out; it is never filled in by hand.
"""
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import srsly

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pages_ud import beam_section, ud_section  # noqa: E402 (benchmarks/ is not a package on the script's path)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
HEADLINE_START, HEADLINE_END = "<!-- headline:start -->", "<!-- headline:end -->"

# (results stem, section title, what the reader should know about the setting)
BENCH_SECTIONS = [
    ("full_raw", "Embedded full pipeline on raw text",
     "`spacy_sparse.load_default()` (the segmenter and tagger of `configs/tagger_parser.cfg` rounded by QT with L0 "
     "terms, `spacy project run compress-default`, its `sparse_upos` table, a parser trained over them with DC-ADMM, "
     "`train-default`, and the morphologizer and lemmatizer of `configs/lemma_morph.cfg`) "
     "on EWT test: each document's text through the pipeline's own tokenizer (spaCy's English tokenizer with UD English's tokens where they differ, `spacy_sparse.UDTokenizer.v1`; the CNN keeps spaCy's own), no sentence boundaries, scored by spaCy's scorer "
     "through the alignment (what `spacy evaluate` does without `--gold-preproc`). The margin is the parser's. "
     "Compared with spaCy's CNN efficiency tagger + parser (`configs/cnn_tagger_parser.cfg`, trained on spaCy's "
     "tokens of the same data), timed in the same run."),
    ("full_raw_sents", "Embedded full pipeline on raw text with the gold sentence starts",
     "The same pipeline, test docs and tokens as on raw text above, with the treebank's sentence starts set on "
     "the tokens before the pipeline runs (`bench --raw-gold-sents`: a token starts a sentence where a gold "
     "sentence starts at its first character, every other token is marked inside; the segmenter and spaCy's "
     "parser both keep given starts). What the tagger and parser score with perfect segmentation, to tell what "
     "the segmentation costs on raw text from what the tokens and the models do. Compared with the same CNN "
     "pipeline given the same starts, in the same run."),
    ("full_lines", "Embedded full pipeline on raw text in lines",
     "The same pipeline and test docs, their text laid out as plain-text files and e-mail often are (`bench "
     "--lines`): a blank line where the treebank's paragraphs start (`convert-ud` keeps them), lines wrapped at 72 "
     "characters. spaCy's tokenizer makes the line breaks tokens; the sparse components read around them "
     "([components.md](components.md#whitespace-tokens)). Sentences are scored on the words (without the "
     "whitespace tokens), since spaCy's scorer matches a sentence by its text; tags and arcs as spaCy scores them. "
     "The word count and words/s include the whitespace tokens, for both pipelines. Compared with the same CNN "
     "pipeline in the same run."),
    ("full_lower", "Embedded full pipeline on raw text in lower case",
     "The same pipeline and test docs, their text in lower case, as text typed without capitals comes (`bench "
     "--case lower`), scored against the treebank's annotation as it is (spaCy's alignment and scorer match "
     "tokens and sentences whatever their case). Compared with the same CNN pipeline in the same run."),
    ("full_upper", "Embedded full pipeline on raw text in upper case",
     "The same, the text in upper case (`bench --case upper`), as headlines and shouted text come. spaCy's "
     "tokenizer cuts such text differently (its exceptions know few upper-case forms: `WON'T` stays whole, `MR.` "
     "is cut), for both pipelines alike."),
    ("pipeline_raw", "Float pipeline (`configs/tagger_parser.cfg`) on raw text",
     "The float segmenter + tagger + parser of `configs/tagger_parser.cfg` on the same input: the `model-best` of "
     "`spacy project run train-joint` (`spacy train` with that recipe as a user runs it; the embedded pipeline is "
     "made from it)."),
    ("parser_qt_raw", "The float pipeline's parser rounded by QT on raw text",
     "`spacy project run compress-default`: the float pipeline above with each component's weights rounded once by "
     "QT with L0 terms (the parser: 64 values per sign, kappa 1.08, L0 weight 0.3), on the same input, against that "
     "float pipeline in the same run. The margin and the model file are the parser's."),
    ("parser_small_raw", "A parser trained with DC-ADMM over the QT pipeline on raw text",
     "`spacy project run train-default` (`configs/tagger_parser_small.cfg`): the tagger, segmenter and UPOS table of "
     "the QT pipeline above, and a new parser trained over them with DC-ADMM inside its own run (16 values per sign, "
     "L0 terms), on the same input, against the float pipeline in the same run. The embedded pipeline's parser is "
     "made the same way over the shipped components "
     "([decisions/2026-11-29-parser-compression.md](decisions/2026-11-29-parser-compression.md))."),
    ("full_gold", "Embedded full pipeline with gold tokens and gold sentences",
     "Second to the raw-text numbers: the treebank's tokens and sentence boundaries are given."),
    ("pipeline_gold", "Float pipeline (`configs/tagger_parser.cfg`) with gold tokens and gold sentences",
     "The same setting for the float pipeline of `configs/tagger_parser.cfg`."),
    ("senter_raw", "Sentence segmenter (`configs/senter.cfg`) on raw text",
     "The segmenter alone (`spacy project run train-senter`: no tags, spaCy's tokens of the raw text) on EWT test "
     "raw text as above, against spaCy's rule-based `sentencizer` on the same docs in the same run (`bench "
     "--compare sentencizer`). The segmenter of the full pipelines reads the tagger's tags as well; its sentence F "
     "is in their tables."),
    ("default_raw", "Embedded tagger on raw text",
     "`spacy_sparse.load_default(\"tagger\")` (the small DC-ADMM tagger the package ships) on EWT test, raw text "
     "as above. Compared with spaCy's CNN efficiency tagger (`configs/cnn_tagger.cfg`) trained on the same data, "
     "timed in the same run."),
    ("tagger_raw", "Trained tagger (`configs/tagger.cfg`) on raw text",
     "The float tagger `spacy train configs/tagger.cfg` makes, on the same input as above."),
    ("default_gold", "Embedded tagger with gold tokens and gold sentences",
     "Second to the raw-text numbers: the treebank's tokens and sentence boundaries are given."),
    ("tagger_gold", "Trained tagger with gold tokens and gold sentences",
     "The same setting for the float tagger of `configs/tagger.cfg`."),
    ("composed_raw", "Every sparsity method on one tagger (`configs/tagger_composed.cfg`) on raw text",
     "`model-best` of `spacy train configs/tagger_composed.cfg` on EWT train/dev: the templates, word table (its "
     "common forms) and word dropout of `configs/tagger.cfg`, sparseptron selection of 46 templates, a refit with "
     "min-update (k = 4), five DC-ADMM iterations with L0 terms (8 weight values); the same raw-text input as above, "
     "with `margin_decay` 0.95 beside the single margin, against the float tagger of `configs/tagger.cfg` (the "
     "recipe it compresses) in the same run."),
    ("tagger_wsj", "Another domain: the trained tagger on Wall Street Journal text",
     "The float tagger of `configs/tagger.cfg`, trained on EWT (web text) only, tagging CoNLL-2000's test split "
     "(WSJ section 20 news, one doc per sentence, gold tokens: `spacy project run convert-chunks`), against spaCy's "
     "CNN tagger trained on the same EWT data, in the same run. The reference tags are CoNLL-2000's, which came from "
     "the Brill tagger, not from the treebank's annotators, and follow WSJ's conventions where EWT's differ (`to` "
     "is always `TO` there, EWT tags the preposition `IN`; brackets are `(` `)`, not `-LRB-` `-RRB-`), so no "
     "model reaches the in-domain figures; the comparison is what counts."),
    ("full_wsj", "Another domain: the embedded full pipeline's tags on Wall Street Journal text",
     "`load_default()` on the same WSJ sentences (gold tokens and sentences, so sentence F is 100; only tags can "
     "be scored there), against spaCy's CNN tagger + parser trained on EWT, in the same run."),
    ("heldout_email_raw", "Another domain: the full recipe on e-mail it never saw",
     "`configs/tagger_parser.cfg` trained on EWT without its e-mail documents (`spacy project run heldout`: "
     "`convert-ud --hold-out email` keeps them out of train and dev, so they neither taught the models nor picked "
     "their checkpoints), on those e-mails' raw text (train's and dev's; test is not used), against spaCy's CNN "
     "tagger + parser trained on the same data (4,600 steps), in the same run: text of a kind neither model "
     "learned from, as the package will meet other English. The float pipeline (no QT rounding)."),
    ("heldout_email_lines", "Another domain: the full recipe on e-mail it never saw, in lines",
     "The same models and e-mails, their text laid out in lines as e-mail is written (`bench --lines`, as for the "
     "test text above: blank lines between paragraphs, lines wrapped at 72 characters), against the same CNN in "
     "the same run."),
    ("heldout_reviews_raw", "Another domain: the full recipe on reviews it never saw",
     "The same with EWT's reviews held out instead (`spacy project run heldout . --vars.heldout_genre reviews`): "
     "short reviews of local businesses and services."),
    ("heldout_reviews_lines", "Another domain: the full recipe on reviews it never saw, in lines",
     "The same models and reviews, their text laid out in lines (`bench --lines`)."),
    ("heldout_beam_email_raw", "Another domain: the beam recipe on e-mail it never saw",
     "The beam recipe (`train-beam`: `beam_width` 8, `beam_margin` 20) trained on EWT without its e-mail documents "
     "(`spacy project run heldout-beam`), on the same e-mails' raw text, against the greedy recipe trained on the "
     "same data (`train-heldout`), in the same run: the rows are the beam pipeline as it loads, the compared "
     "model the greedy one."),
    ("heldout_beam_reviews_raw", "Another domain: the beam recipe on reviews it never saw",
     "The same with EWT's reviews held out (`--vars.heldout_genre reviews`)."),
    ("ner_gold", "Entity recognizer (`configs/ner.cfg`) on CoNLL-2003 test",
     "`spacy train configs/ner.cfg` on CoNLL-2003 train/dev (one doc per article, `convert-conll --docstart-every 2`), measured on the "
     "test split as `spacy convert --converter ner -n 10` makes it: gold tokens, docs of 10 sentences, no sentence "
     "boundaries given. Compared with spaCy's CNN efficiency NER (`configs/cnn_ner.cfg`, 3 epochs) trained on the "
     "same data, timed in the same run."),
    ("ner_uner", "Another domain: the entity recognizer on web text",
     "The same CoNLL-2003-trained NER (news) on Universal NER's English-EWT test split (web text, gold tokens, "
     "`spacy project run convert-uner`), against the same CNN NER in the same run. UNER annotates PER, ORG and LOC "
     "only, so every MISC entity a model predicts counts as a false positive, for both models alike."),
]


def runs(stem: str) -> List[Dict[str, Any]]:
    return [srsly.read_json(p) for p in sorted(RESULTS.glob(f"{stem}.*.json"))]


def check_same_accuracy(found: Sequence[Dict[str, Any]], stem: str) -> None:
    first = [(r["margin"], r["margin_decay"], round(r["accuracy"], 6)) for r in found[0]["rows"]]
    for other in found[1:]:
        again = [(r["margin"], r["margin_decay"], round(r["accuracy"], 6)) for r in other["rows"]]
        if again != first:
            raise ValueError(f"{stem}: runs disagree on accuracy, so they are not runs of one setting")


def span(values: Sequence[float], fmt: str = "{:,.0f}", unit: str = "") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) + unit if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}{unit}"


def mb(n: Optional[int]) -> str:
    return "–" if not n else f"{n / 1e6:.2f} MB"


def provenance(found: Sequence[Dict[str, Any]]) -> str:
    lines = []
    for k, run in enumerate(found, 1):
        meta = run.get("meta", {})
        m = meta.get("machine", {})
        lines.append(f"- run {k}: `{meta.get('command', '?')}` at commit `{meta.get('commit', '?')}`, "
                     f"{meta.get('date', '?')}; {m.get('cores', '?')} cores ({m.get('cpu', '?')}), "
                     f"{m.get('memory_gib', '?')} GiB, Python {m.get('python', '?')}, spaCy {m.get('spacy', '?')}, "
                     f"numba {m.get('numba', '?')}" + (", kernels compiled ahead of time" if m.get("kernels") == "compiled" else ""))
    return "\n".join(lines)


SCORE_NAMES = {"tag_acc": "tag acc", "pos_acc": "POS acc", "ents_f": "ents F", "dep_uas": "UAS", "dep_las": "LAS",
               "sents_f": "sents F", "morph_acc": "features", "lemma_acc": "lemmas"}


def score_keys(result: Dict[str, Any]) -> List[str]:
    """The pipeline scores a run has beyond its one metric (a full pipeline's tags, UAS, LAS and sentence F)."""
    scores = result["rows"][0].get("scores") or {}
    return [k for k in SCORE_NAMES if k in scores] if len(scores) > 1 else []


def is_own(result: Dict[str, Any], row: Dict[str, Any]) -> bool:
    """Whether a row is the pipeline as it loads (its own margin; runs
    before the bench recorded it were all margin none)."""
    margin = result.get("own_margin")
    if margin is None:
        return row["margin"] is None
    return row["margin"] == margin and row["margin_decay"] == result.get("own_margin_decay", 1.0)


def bench_table(found: Sequence[Dict[str, Any]]) -> str:
    first = found[0]
    metric = first["rows"][0]["metric"]
    keys = score_keys(first)
    has_cmp = "compare" in first
    head = ["margin", "decay"] + ([SCORE_NAMES[k] for k in keys] or [metric]) + \
        ["templates/token", "words/s", "vs margin none"] + \
        (["vs compared"] if has_cmp else []) + ["ns/template", "row bytes/token"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, row in enumerate(first["rows"]):
        wps = [run["rows"][i]["words_per_second"] for run in found]
        ups = [run["rows"][i]["speedup"] for run in found if run["rows"][i]["speedup"]]
        accs = [f"{100 * row['scores'][k]:.2f}" for k in keys] or [f"{100 * row['accuracy']:.2f}"]
        own = is_own(first, row) and first.get("own_margin") is not None
        cells = ["none" if row["margin"] is None else f"{row['margin']:g}" + (" (as it loads)" if own else ""),
                 "–" if row["margin"] is None else f"{row['margin_decay']:g}",
                 *accs, f"{row['templates_per_token']:.2f}", span(wps),
                 span(ups, "{:.2f}", "×") if ups else "–"]
        if has_cmp:
            cells.append(span([run["rows"][i]["ratio_vs_compare"] for run in found], "{:.1f}", "×"))
        ns = [run["rows"][i].get("ns_per_template") for run in found]
        cells.append(span(ns, "{:.0f}") if all(ns) else "–")
        cells.append(f"{row['row_bytes_per_token']:,.0f}" if row.get("row_bytes_per_token") is not None else "–")
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    words = f"{first['words']:,} words, " + {"raw": "raw text", "lines": "raw text in lines",
                                              "lower": "raw text in lower case",
                                              "upper": "raw text in upper case"}.get(
        first.get("text"), "gold tokens") + \
        ((", the gold sentence starts given" if first.get("text") == "raw" else ", gold sentences")
         if first.get("gold_sentences") else "")
    sizes = f"{mb(first.get('pipeline_bytes'))} directory"
    if first.get("component_bytes"):
        sizes += f", {first['component']} model file {first['component_bytes']:,} bytes"
    text += f"\n\n`{first['model']}` ({sizes}), {words}, best of {first['repeat']} " \
            f"timings per run, {len(found)} run(s)."
    others = other_margins(first)
    if others:
        text += " In every row " + ", ".join(f"{n} runs at its own margin {m}" for n, m in others.items()) + "."
    if has_cmp:
        c = [run["compare"] for run in found]
        acc = c[0].get("accuracy")
        other = c[0].get("scores") or {}
        if keys and other:
            text += f" Compared: `{c[0]['model']}` ({mb(c[0].get('pipeline_bytes'))}), " + \
                ", ".join(f"{SCORE_NAMES[k]} {100 * other[k]:.2f}" for k in keys if k in other) + ", "
        else:
            text += f" Compared: `{c[0]['model']}` ({mb(c[0].get('pipeline_bytes'))}), " \
                    f"{metric} {100 * acc:.2f}, " if acc is not None else f" Compared: `{c[0]['model']}`, "
        text += f"{span([x['words_per_second'] for x in c])} words/s."
    text += first_pass_sentence(found)
    calls = [run["calls"] for run in found if run.get("calls")]
    if calls:
        text += f" One `nlp(text)` call per sentence ({calls[0]['texts']:,} texts, the tokenizer timed too), " \
                f"the pipeline as it loads: {span([x['words_per_second'] for x in calls])} words/s"
        if all("ratio_vs_compare" in x for x in calls):
            text += f", {span([x['ratio_vs_compare'] for x in calls], '{:.1f}', '×')} the compared pipeline " \
                    f"called the same way ({span([x['compare_words_per_second'] for x in calls])} words/s)"
        text += "."
        splits = [x.get("split") for x in calls]
        if all(splits):
            parts = [(k, span([x[f"{k}_us"] for x in splits], "{:,.0f}", " us")) for k in
                     ("total", "tokenizer", "kernels", "rest")]
            text += f" A call takes {parts[0][1]}: the tokenizer {parts[1][1]}, our kernels {parts[2][1]}, and " \
                    f"{parts[3][1]} the rest, the Python around the kernels and spaCy's own calls (`spacy_sparse/calls.py`)."
    return text + breakdowns(found)


def breakdowns(found: Sequence[Dict[str, Any]]) -> str:
    """Below a bench table: the sentence starts the pipeline as it loads
    found, by kind, beside the compared pipeline's (deterministic, from the
    first run); then microseconds per word by component over the runs."""
    first = found[0]
    text = ""
    row = next((r for r in first["rows"] if is_own(first, r)), None)
    if row is not None and row.get("boundaries"):
        mine, theirs = row["boundaries"], first.get("compare", {}).get("boundaries")
        head = ["sentence starts after a doc's first word (gold)", "gold", "found, as it loads"] + \
            (["found, compared"] if theirs else [])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for kind, c in mine["kinds"].items():
            cells = [kind, f"{c['gold']:,}", found_share(c)] + ([found_share(theirs["kinds"][kind])] if theirs else [])
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("| starts where gold has none | – | " + f"{mine['false_starts']:,}" +
                     (f" | {theirs['false_starts']:,}" if theirs else "") + " |")
        text += "\n\nSentence starts by kind, matched by character offset: whether the treebank starts a paragraph " \
                "there (the text on one line does not show it) and whether the words before end in `.`, `!` or " \
                "`?` (a closing quote or bracket may follow).\n\n" + "\n".join(lines)
    own = [run.get("component_words_per_second") for run in found]
    other = [run.get("compare", {}).get("component_words_per_second") for run in found]
    if all(own):
        text += "\n\nMicroseconds per word by component, each run alone over the docs the components before it " \
                "labelled (best of the timings, range over the runs), as it loads: " + per_word(own)
        if all(other):
            text += "; the compared pipeline: " + per_word(other)
        text += "."
    floors = [run.get("component_floors") for run in found]
    if all(floors) and all(own):
        text += "\n\n" + floor_text(own, floors)
    return text


def floor_text(speeds: Sequence[Dict[str, float]], floors: Sequence[Dict[str, Dict[str, float]]]) -> str:
    """Each sparse component's time beside the floor of its memory reads (spacy_sparse/floors.py)."""
    parts = []
    for name in floors[0]:
        measured = [1e6 / run[name] for run in speeds]
        l1 = [f[name]["l1_us_per_word"] for f in floors]
        spread = [f[name]["spread_us_per_word"] for f in floors]
        lines = span([f[name]["lines_per_word"] for f in floors], "{:.0f}")
        mb = floors[0][name]["table_bytes"] / 1e6
        if max(f[name]["lines_per_word"] for f in floors) < 0.5:
            # a component that scored nothing (a segmenter given the sentence starts): no floor to compare with
            parts.append(f"`{name}` {span(measured, '{:.2f}')} us, no template scored")
            continue
        parts.append(f"`{name}` {span(measured, '{:.2f}')} us, floor {span(l1, '{:.2f}')} us in L1 and "
                     f"{span(spread, '{:.2f}')} us spread ({lines} lines per word over {mb:.1f} MB; the time is "
                     f"{min(measured) / max(spread):.1f}× the spread floor)")
    return ("Distance to the machine's limit: each component's time per word (as above) against the floor of its "
            "memory reads alone, the cache lines its decisions read (for every template scored, the slot its key "
            "probes and its weight row) read with no arithmetic, timed in the same run, from all in L1 to all "
            "spread at random over arrays of its tables' size (`spacy_sparse/floors.py`): " + ", ".join(parts) + ".")


def found_share(counts: Dict[str, int]) -> str:
    return f"{100 * counts['found'] / counts['gold']:.1f} %" if counts["gold"] else "–"


def per_word(speeds: Sequence[Dict[str, float]]) -> str:
    """"`name` 0.64-0.65 us, ..." from each run's words/s per component."""
    return ", ".join(f"`{n}` {span([1e6 / run[n] for run in speeds], '{:.2f}', ' us')}" for n in speeds[0])


def first_pass(found: Sequence[Dict[str, Any]]) -> Optional[Tuple[str, Optional[Tuple[str, str]]]]:
    """The first pass after loading (bench's first_pass_words_per_second) over the runs, formatted: its
    words/s, and (its ratio to the compared pipeline's first pass, that pipeline's words/s), or None where
    no pipeline was compared; None for runs made before bench timed it."""
    if not found or not all(run.get("first_pass_words_per_second") for run in found):
        return None
    own = [run["first_pass_words_per_second"] for run in found]
    other = [run.get("compare", {}).get("first_pass_words_per_second") for run in found]
    if not all(other):
        return span(own), None
    return span(own), (span([a / b for a, b in zip(own, other)], "{:.1f}", "×"), span(other))


def first_pass_sentence(found: Sequence[Dict[str, Any]]) -> str:
    got = first_pass(found)
    if got is None:
        return ""
    own, compared = got
    text = f" The first pass after loading, which meets the data's word types for the first time, as it loads: " \
           f"{own} words/s"
    if compared is not None:
        text += f", {compared[0]} the compared pipeline's ({compared[1]} words/s)"
    return text + "."


def stop_rule(margin: float, decay: float = 1.0) -> str:
    """A margin as the pages write it: with its decay, the lead after template t."""
    return f"{margin:g}" if decay == 1.0 else f"{margin:g} × {decay:g}^t"


def other_margins(result: Dict[str, Any]) -> Dict[str, str]:
    """The stop rules the pipeline's other sparse components ran at in every
    row (bench records them; none: every template; runs before it recorded
    decays had none)."""
    decays = result.get("other_margin_decays") or {}
    return {n: stop_rule(m, decays.get(n, 1.0)) for n, m in (result.get("other_margins") or {}).items()
            if m is not None}


def sparsity_table(data: Dict[str, Any]) -> str:
    sys.path.insert(0, str(ROOT))
    from benchmarks.sparsity import markdown

    return markdown(data["rows"])


def page() -> str:
    parts = ["# Benchmarks", "",
             "Generated by `python benchmarks/pages.py` from the JSON in `benchmarks/results/`; do not edit by hand.",
             "Speeds are words per second of `nlp.pipe` over pre-made docs in one process (tokenizer not timed), "
             "the best of several timings; ratios are taken within one run, because these machines are noisy. "
             "ns/template is the time per template scored (1 / (words/s × templates/token)); row bytes/token the "
             "weight bytes those templates read (a dense float32 row of every label for the taggers and the NER), "
             "a measure of how far a setting is from the machine's memory limit. At margin none the taggers and "
             "the NER read their one-word templates as about five summed vectors per token instead of one row each "
             "([how-it-works.md](how-it-works.md)), so there the figure is an upper bound.", ""]
    for stem, title, about in BENCH_SECTIONS:
        found = runs(stem)
        if not found:
            continue
        check_same_accuracy(found, stem)
        parts += [f"## {title}", "", about, "", bench_table(found), "", provenance(found), ""]
    ud = runs("ud_ewt_test")
    if ud:
        parts += ud_section(ud, span, provenance)
    beam_dev = [srsly.read_json(p) for p in sorted(RESULTS.glob("beam_dev_*.json"))]
    if beam_dev:
        parts += beam_section(beam_dev, runs("beam_test") + runs("beam_greedy_test"), span, provenance)
    cold = runs("cold_start")
    if cold:
        parts += ["## Cold start", "",
                  "Seconds from a new Python process to one labelled sentence (`import spacy, spacy_sparse`, "
                  "`spacy_sparse.load_default(...)` for the shipped pipelines, `spacy.load` for others, "
                  "`nlp(sentence)`), minus the same for `spacy.blank(\"en\")`, processes taking turns; "
                  "numba's cache was warm, and the command wrote this package's bytecode cache first, as pip "
                  "does at install. The `numba-floor` row is `spacy.blank(\"en\")` and one call of a cached "
                  "numba kernel of this package: numba's import, the registries its first call sets up and its "
                  "share of the interpreter's teardown, which no jitted numba component can go below. With the "
                  "kernels compiled ahead of time (`python -m spacy_sparse compile-kernels`), the shipped "
                  "pipelines load and label without numba's compiler; their `(jit)` rows are the same "
                  "pipelines with `SPACY_SPARSE_AOT=0`.", "",
                  "| model | extra seconds over spacy.blank (median) | range over all processes | on disk | "
                  "memory over spacy.blank at its peak / after the sentence (medians) |",
                  "|---|---|---|---|---|"]
        for i, row in enumerate(cold[0]["rows"]):
            extras = [x for run in cold for x in run["rows"][i]["extra_seconds"]]
            medians = [run["rows"][i]["median_extra"] for run in cold]
            peak = [run["rows"][i].get("extra_rss_bytes") for run in cold]
            end = [run["rows"][i].get("extra_end_rss_bytes") for run in cold]
            memory = "–" if None in peak + end else \
                f"{span([m / 1e6 for m in peak], '{:+.0f}', ' MB')} / {span([m / 1e6 for m in end], '{:+.0f}', ' MB')}"
            parts.append(f"| `{row['model']}` | {span(medians, '{:+.2f}', ' s')} | "
                         f"{min(extras):+.2f} to {max(extras):+.2f} s | {mb(row.get('pipeline_bytes'))} | "
                         f"{memory} |")
        blank = [sorted(run["rows"][0]["blank_seconds"])[len(run["rows"][0]["blank_seconds"]) // 2] for run in cold]
        parts += ["", f"`spacy.blank(\"en\")` itself took {span(blank, '{:.2f}', ' s')} (median of each run): "
                      "on a slower spell of the machine every extra grows with it.", "", provenance(cold), ""]
    for stem, text in (("tag_speed", "EWT train, one doc per line, repeated: each process meets every word type "
                                      "of it in its first pass"),
                       ("tag_speed_3m", "EWT train, one doc per line, repeated to three times as many words: the "
                                        "start-up and each process's first meeting with the word types weigh less"),
                       ("tag_speed_mixed", "every split of EWT, CoNLL-2003 and the CoNLL-2000 WSJ sections, one doc "
                                           "per line, each once")):
        speed = runs(stem)
        if not speed:
            continue
        first = speed[0]
        parts += [f"## Streaming raw text with `tag`: {first['words']:,} words", "",
                  f"Wall-clock seconds of `python -m spacy_sparse tag {first['model']} INPUT OUT.jsonl` on "
                  f"{first['words']:,} words of raw text ({text}; `benchmarks/raw_text.py`), start-up included "
                  "(with this package's bytecode cache written first, as pip does at install), settings taking "
                  "turns. Every setting wrote the same bytes. With `--n-process N` the workers tokenize, annotate "
                  "and serialize, and the parent writes in input order; `--n-threads` only splits the labelling "
                  "kernels, while spaCy's tokenizer and the JSON writer hold the GIL.", "",
                  "| --n-process | --n-threads | seconds | words/s | vs the first setting |", "|---|---|---|---|---|"]
        for i, row in enumerate(first["rows"]):
            secs = [x for run in speed for x in run["rows"][i]["seconds"]]
            wps = [x for run in speed for x in run["rows"][i]["words_per_second"]]
            ups = [x for run in speed for x in run["rows"][i]["speedup"]]
            parts.append(f"| {row['n_process']} | {row['n_threads']} | {span(secs, '{:.2f}', '')} | "
                         f"{span([w / 1000 for w in wps], '{:.0f}', 'k')} | {span(ups, '{:.2f}', 'x')} |")
        parts += ["", provenance(speed), ""]
    cost = runs("train_cost")
    if cost:
        first = cost[0]
        parts += ["## Training cost", "",
                  f"`python -m spacy train {first['config']}` on EWT train/dev as a user runs it, one process per run "
                  "(start-up and the saving of model-best included), runs one after the other on an otherwise idle "
                  "machine. Peak RSS is the training process's own (`getrusage`); the dev scores are those of the "
                  "model-best it wrote (raw text for this recipe).", "",
                  "| runs | wall-clock | peak RSS | model-best on disk | dev tag acc | dev LAS | dev sentence F |",
                  "|---|---|---|---|---|---|---|"]
        rows = [row for run in cost for row in run["rows"]]
        scores = [row["dev_scores"] for row in rows]

        def dev(key: str) -> str:
            found = [100 * s[key] for s in scores if s.get(key) is not None]
            return span(found, "{:.2f}", "") if found else "–"

        parts.append(f"| {len(rows)} | {span([r['seconds'] / 60 for r in rows], '{:.1f}', ' min')} | "
                     f"{span([r['peak_rss_bytes'] / 2**30 for r in rows], '{:.2f}', ' GiB')} "
                     f"({span([r['peak_rss_bytes'] / 1e9 for r in rows], '{:.2f}', ' GB')}) | "
                     f"{span([r['model_best_bytes'] / 2**20 for r in rows], '{:.1f}', ' MiB')} | "
                     f"{dev('tag_acc')} | {dev('dep_las')} | {dev('sents_f')} |")
        parts += ["", provenance(cost), ""]
    for path in sorted(RESULTS.glob("sparsity_*.json")):
        data = srsly.read_json(path)
        parts += [f"## Sparsity table: {data['table']}", "",
                  f"`python benchmarks/sparsity.py {data['table']} ...` (see [sparsity.md](sparsity.md) for the "
                  "methods and `project.yml` for the corpora).", "", sparsity_table(data), "", provenance([data]), ""]
    return "\n".join(parts).rstrip() + "\n"


def _pct(scores: Dict[str, Any], key: str) -> str:
    return f"{100 * scores[key]:.2f}" if scores.get(key) is not None else "–"


# A margin picked on EWT dev for a model whose configs keep margin none (docs/decisions/measurement-log.md): README shows it as a row
# of its own, from the same runs.
PICKED_MARGINS = {"tagger_raw": 10.0}


def _lemmas_features(scores: Dict[str, Any], gold_scores: Dict[str, Any]) -> str:
    """"lemmas / features (the same with gold tokens)" where the pipeline sets them, else "–"."""
    keys = ("lemma_acc", "morph_acc")
    if not any(k in scores for k in keys):
        return "–"
    text = " / ".join(_pct(scores, k) for k in keys)
    if any(k in gold_scores for k in keys):
        text += " (" + " / ".join(_pct(gold_scores, k) for k in keys) + ")"
    return text


def _row_index(result: Dict[str, Any], margin: Optional[float]) -> Optional[int]:
    """The row of the pipeline as it loads (margin None), or of `margin` at decay 1."""
    for i, r in enumerate(result["rows"]):
        if (is_own(result, r) if margin is None else (r["margin"] == margin and r["margin_decay"] == 1.0)):
            return i
    return None


def against_cnn(result: Dict[str, Any]) -> bool:
    """Whether a run was compared with a spaCy CNN pipeline (README's last column), not with another sparse one."""
    c = result.get("compare")
    return bool(c) and not any(k.startswith("sparse_") for k in c.get("component_words_per_second") or {})


def headline() -> Optional[str]:
    """README's table: accuracy on raw text (then gold tokens), words/s against the CNN, size."""
    rows: List[str] = []
    meta: Dict[str, Any] = {}
    cnns: Dict[str, Dict[str, Any]] = {}
    commits: Dict[str, None] = {}  # the rows' commits, in row order
    per_call: List[str] = []  # one nlp(text) per sentence, where a run timed it (bench --calls)
    first_passes: List[str] = []  # the first pass after loading, where the runs timed it
    machines: Dict[str, List[str]] = {}  # machine -> the pipelines measured on it
    for stem, name in (("full_raw", "embedded full pipeline (`load_default()`)"),
                       ("pipeline_raw", "`configs/tagger_parser.cfg`"),
                       ("default_raw", "embedded tagger (`load_default(\"tagger\")`)"),
                       ("tagger_raw", "`configs/tagger.cfg`"),
                       ("composed_raw", "`configs/tagger_composed.cfg`")):
        found = runs(stem)
        if not found:
            continue
        first = found[0]
        gold = runs(stem.replace("_raw", "_gold"))
        for margin in [None] + [m for k, m in PICKED_MARGINS.items() if k == stem]:
            i = _row_index(first, margin)
            if i is None:
                continue
            row = first["rows"][i]
            label = name
            if margin is not None:
                label += f" at margin {margin:g} (picked on dev)"
            elif row["margin"] is not None:
                label += f" (margin {stop_rule(row['margin'], row['margin_decay'])}" + "".join(
                    f", {n.replace('sparse_', '')} {m}" for n, m in other_margins(first).items()) + ")"
            scores = dict(row.get("scores") or {}, **{row["metric"]: row["accuracy"]})
            gold_scores = {}
            g = _row_index(gold[0], margin) if gold else None
            if g is not None:
                gr = gold[0]["rows"][g]
                gold_scores = dict(gr.get("scores") or {}, **{gr["metric"]: gr["accuracy"]})
            gold_text = " / ".join(_pct(gold_scores, k) for k in ("tag_acc", "dep_las") if k in gold_scores) or "–"
            words = _lemmas_features(scores, gold_scores)
            ratio = span([r["rows"][i]["ratio_vs_compare"] for r in found], "{:.1f}", "×") if against_cnn(first) else "–"
            rows.append(f"| {label} | {_pct(scores, 'tag_acc')} | {_pct(scores, 'dep_las')} | "
                        f"{_pct(scores, 'sents_f')} | {gold_text} | {words} | "
                        f"{span([r['rows'][i]['words_per_second'] for r in found])} | {ratio} | "
                        f"{mb(first.get('pipeline_bytes'))} |")
        if against_cnn(first) and first["compare"]["model"] not in cnns:
            c = first["compare"]
            own = first["rows"][_row_index(first, None)]
            cnns[c["model"]] = dict(c, words=span([r["compare"]["words_per_second"] for r in found]),
                                    scores=c.get("scores") or {own["metric"]: c.get("accuracy")})
        got = first_pass(found)
        if got is not None and got[1] is not None and against_cnn(first):
            first_passes.append(f"{name} {got[0]} words/s, {got[1][0]}")
        calls = [r["calls"] for r in found if r.get("calls")]
        if calls and all("ratio_vs_compare" in x for x in calls) and against_cnn(first):
            per_call.append(f"{name} {span([x['words_per_second'] for x in calls])} words/s, "
                            f"{span([x['ratio_vs_compare'] for x in calls], '{:.1f}', '×')}")
        meta = meta or first.get("meta", {})
        commits.setdefault(first.get("meta", {}).get("commit", "?"), None)
        machine = first.get("meta", {}).get("machine", {})
        machines.setdefault(f"{machine.get('cores', '?')}-core {machine.get('cpu', '?')}", []).append(name)
    if not rows:
        return None
    table = ["| EWT test, raw text | tag acc | LAS | sentence F | tag / LAS, gold tokens + sentences | "
             "lemmas / features (gold tokens + sentences) | words/s | vs spaCy CNN | on disk |",
             "|---|---|---|---|---|---|---|---|---|", *rows]
    for model, c in cnns.items():
        scores = dict(c.get("scores") or {})
        table.append(f"| spaCy CNN (`{model}`) | {_pct(scores, 'tag_acc')} | {_pct(scores, 'dep_las')} | "
                     f"{_pct(scores, 'sents_f')} | – | – | {c['words']} | 1× | {mb(c.get('pipeline_bytes'))} |")
    m = meta.get("machine", {})
    where = f"{m.get('cores', '?')}-core {m.get('cpu', '?')}" if len(machines) == 1 else \
        "Measured on more than one machine (" + "; ".join(f"{cpu}: {', '.join(names)}" for cpu, names in
                                                         machines.items()) + ")"
    table.append("")
    table.append(f"Each pipeline as it loads (margin none: every template, unless the row names its margin), "
                 f"and a margin picked on EWT dev where a row says so. Each row is compared with the CNN that does the same job, in the same "
                 f"run (– where no CNN ran beside it). {where}, "
                 f"{meta.get('date', '?')}, commit{'s' if len(commits) > 1 else ''} "
                 f"{', '.join(f'`{c}`' for c in commits)}; words/s is the range over the runs; commands, dates "
                 "and the other margins: [docs/benchmarks.md](docs/benchmarks.md).")
    if first_passes:
        table.append("")
        table.append("The first pass over the test text right after loading, where each pipeline meets the text's "
                     "word types for the first time (the rows above are the best of later passes), against its CNN "
                     "timed the same way: " + "; ".join(first_passes) + ".")
    if per_call:
        table.append("")
        table.append("Called once per sentence instead (`nlp(text)` in a loop, the tokenizer timed too), as each "
                     "loads, against its CNN called the same way: " + "; ".join(per_call) + ".")
    return "\n".join(table)


def main() -> int:
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page(), encoding="utf8")
    print(f"Wrote {PAGE}")
    table = headline()
    text = README.read_text(encoding="utf8")
    if table and HEADLINE_START in text:
        block = f"{HEADLINE_START}\n{table}\n{HEADLINE_END}"
        text = re.sub(re.escape(HEADLINE_START) + ".*?" + re.escape(HEADLINE_END), lambda _m: block, text, flags=re.S)
        README.write_text(text, encoding="utf8")
        print(f"Updated the headline table in {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
