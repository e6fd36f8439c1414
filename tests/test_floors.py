"""The memory-only floor bench puts beside each component (floors.py): the lines it reads are the lines asked
for, and the counts come from the component's own run on EWT text."""
import numpy as np

import spacy_sparse
from spacy_sparse.floors import BLOCK, component_floors, layout_bytes
from spacy_sparse.kernels.prefetch import LINE


def test_touch_lines_reads_each_asked_line_once():
    from spacy_sparse.kernels.floor import touch_lines

    data = np.zeros(64 * LINE, dtype=np.uint8)
    data[::LINE] = np.arange(64, dtype=np.uint8)  # line i's first byte is i
    tab = np.array([0, 3, 5, 5, 9, 1, 2, 7, 8, 4, 6], dtype=np.int64) * LINE
    rows = np.array([10, 20, 30, 40, 50, 12, 22, 32, 42, 52, 60], dtype=np.int64) * LINE
    for row_lines in (1, 2, 4):
        want = sum(int(t // LINE) + sum(int(r // LINE) + k for k in range(row_lines)) for t, r in zip(tab, rows))
        assert touch_lines(data, tab, rows, row_lines, BLOCK) == want


def test_floors_count_the_templates_each_component_scored(ewt_refs):
    nlp = spacy_sparse.load_default()
    docs = [nlp.make_doc(ref.text) for ref in ewt_refs["dev"][:60]]
    n_words = sum(len(d) for d in docs)
    floors = component_floors(nlp, docs, repeat=1)
    weighted = [name for name, pipe in nlp.pipeline if getattr(pipe, "sparse", None) is not None]
    assert sorted(floors) == sorted(weighted)
    parser = nlp.get_pipe("sparse_parser")
    # the parser's usage is left from the floors' own run over these docs
    assert floors["sparse_parser"]["templates_per_word"] == parser.usage["templates"] / n_words > 0
    for name, floor in floors.items():
        tab_bytes, rows_bytes, row_bytes = layout_bytes(nlp.get_pipe(name))
        row_lines = max(1, int(np.ceil(row_bytes / LINE)))
        assert floor["lines_per_word"] == floor["templates_per_word"] * (1 + row_lines)
        assert floor["table_bytes"] == tab_bytes + rows_bytes > 0
        assert floor["l1_us_per_word"] > 0 and floor["spread_us_per_word"] > 0
