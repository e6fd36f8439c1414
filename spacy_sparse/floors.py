"""How far each component is from what its memory reads alone cost on this machine.

A component's time per word is instructions plus waiting for memory. Its memory part has a floor: the cache
lines its decisions read (for every template scored, the table slot its key probes and its weight row), read
with no arithmetic at all. Which of those lines are already in cache depends on the text (common words' rows
stay hot), so the floor is measured at both ends: every line in L1, and every line at a random place in
arrays as large as the component's tables (each line then comes from wherever a table of that size lives:
L2, L3 or memory). The component's real reads lie between; a component far above both ends spends its time
in instructions, not in memory.

The line count is an upper count: templates a tagger reads through a word's cached sums, and slots found in
the same line as another, cost less.
"""
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc

from .kernels.prefetch import LINE
from .kernels.rows import HOT, span_values
from .pipeline.base import SparsePipe

# an L1 data cache's size or less, on any machine we know
L1_BYTES = 16 * 1024
# templates whose loads are asked for together (the kernels' blocks are of this order)
BLOCK = 8
# enough reads for a stable timing, few enough to keep the floor's arrays small
MAX_TEMPLATES = 4_000_000


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


def layout_bytes(pipe: SparsePipe) -> Tuple[int, int, float]:
    """The bytes of the component's prediction tables (hash slots) and weights, and the mean bytes of the
    weights one template's row holds."""
    model = pipe.sparse
    if getattr(pipe, "template_kind", "sequence") == "state":
        ptab, _, lv, lc, book, dense = model.packed()
        return int(ptab.nbytes), int(lv.nbytes + lc.nbytes + book.nbytes + dense.nbytes), weight_row_bytes(pipe)
    coded = model.coded_weights()
    W = coded[0] if coded is not None else model.weights()
    return int(model.tab.nbytes), int(W.nbytes), float(W.shape[1] * W.itemsize)


def floor_seconds(tab_bytes: int, rows_bytes: int, row_lines: int, n_templates: int, repeat: int,
                  seed: int = 0) -> float:
    """Best-of-`repeat` seconds to read `n_templates` (slot line, row lines) pairs placed at random in arrays
    of these sizes (kernels/floor.py)."""
    from .kernels.floor import touch_lines

    rng = np.random.default_rng(seed)
    data = np.ones(tab_bytes + rows_bytes + row_lines * LINE, dtype=np.uint8)  # its pages touched, not zero pages
    tab_starts = rng.integers(0, max(1, tab_bytes // LINE), n_templates, dtype=np.int64) * LINE
    row_starts = tab_bytes + rng.integers(0, max(1, rows_bytes // LINE), n_templates, dtype=np.int64) * LINE
    touch_lines(data, tab_starts[:BLOCK], row_starts[:BLOCK], row_lines, BLOCK)  # compiled before timing
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        touch_lines(data, tab_starts, row_starts, row_lines, BLOCK)
        best = min(best, time.perf_counter() - start)
    return best


def component_floors(nlp: Language, docs: List[Doc], repeat: int) -> Dict[str, Dict[str, Any]]:
    """Per sparse component with weights: templates and cache lines read per word as it runs over `docs`
    (as the components before it left them), and the floor of those reads in microseconds per word, all in L1
    and spread over arrays of its tables' size."""
    n_words = sum(len(d) for d in docs)
    current = [d.copy() for d in docs]
    out: Dict[str, Dict[str, Any]] = {}
    for name, proc in nlp.pipeline:
        pipe: Optional[SparsePipe] = proc if isinstance(proc, SparsePipe) and proc.sparse is not None else None
        if pipe is not None:
            pipe.reset_usage()
        current = list(proc.pipe(current, batch_size=nlp.batch_size)) if hasattr(proc, "pipe") \
            else [proc(d) for d in current]
        if pipe is None or not n_words:
            continue
        per_word = pipe.usage["templates"] / n_words
        tab_bytes, rows_bytes, row_bytes = layout_bytes(pipe)
        row_lines = max(1, int(np.ceil(row_bytes / LINE)))
        n = max(BLOCK, min(MAX_TEMPLATES, int(round(per_word * n_words))))
        words = n / per_word if per_word else float(n_words)
        spread = floor_seconds(tab_bytes, rows_bytes, row_lines, n, repeat)
        cached = floor_seconds(L1_BYTES // 2, L1_BYTES // 2, row_lines, n, repeat)
        out[name] = {"templates_per_word": per_word, "lines_per_word": per_word * (1 + row_lines),
                     "table_bytes": tab_bytes + rows_bytes,
                     "l1_us_per_word": 1e6 * cached / words, "spread_us_per_word": 1e6 * spread / words}
    return out
