"""Reading cache lines and doing nothing else with them: the memory-only floor that `bench` puts beside each
component's time (floors.py)."""
from .jit import leaf
from .prefetch import LINE, prefetch_byte


@leaf
def touch_lines(data, tab_starts, row_starts, row_lines, block):
    """Read one byte of the table line at each of tab_starts[j] and of the
    row_lines lines from each row_starts[j] (byte offsets into `data`),
    asking for a block of them before reading any, as the kernels ask for a
    block's slots and rows: a block's loads overlap as theirs do. Returns the
    bytes' sum, so that no read is left out."""
    total = 0
    n = tab_starts.shape[0]
    for b in range(0, n, block):
        e = min(n, b + block)
        for j in range(b, e):
            prefetch_byte(data, tab_starts[j])
            for k in range(row_lines):
                prefetch_byte(data, row_starts[j] + k * LINE)
        for j in range(b, e):
            total += data[tab_starts[j]]
            for k in range(row_lines):
                total += data[row_starts[j] + k * LINE]
    return total
