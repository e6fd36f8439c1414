"""Telling the processor which memory a decision will read, before it reads it.

A tagger's rows (`configs/tagger.cfg`: 90 MB) and the hash tables in front of
them are far larger than the caches, so each template costs trips to memory.
A probe's loop branches on the key it loads, so probes one after the other
barely overlap their misses; asking for every home slot of a block first,
and for every dense row once the probes found them, lets them overlap;
a tagger asks for the next token's summed vectors while it labels one
(docs/decisions/measurement-log.md). A prefetch is a hint: it changes no result.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import leaf

LINE = 64  # bytes of a cache line


@intrinsic
def prefetch_byte(typingctx, arr, offset):
    """LLVM's prefetch (read, keep in all cache levels) of the cache line
    holding byte `offset` of a C-ordered array's data."""
    sig = types.void(arr, offset)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        address = builder.add(builder.ptrtoint(ary.data, ir.IntType(64)), args[1])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.inttoptr(address, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@leaf
def prefetch_rows(W, rows, n):
    """Ask for every cache line of the rows W[rows[j]], j < n (none for a
    negative entry: no row)."""
    for j in range(n):
        if rows[j] >= 0:
            prefetch_row(W, rows[j])


@leaf
def prefetch_row(W, r):
    """Ask for every cache line of the row W[r]."""
    row_bytes = W.shape[1] * W.itemsize
    for off in range(0, row_bytes + LINE - 1, LINE):
        prefetch_byte(W, r * row_bytes + min(off, row_bytes - 1))


@leaf
def prefetch_span(entries, span):
    """Ask for the first and the last cache line of a packed span
    (start << 16 | count) of `entries`' rows."""
    start = span >> 16
    count = span & 0xFFFF
    if count > 0:
        prefetch_byte(entries, start * entries.strides[0])
        prefetch_byte(entries, (start + count) * entries.strides[0] - 1)


@leaf
def prefetch_sum(sums, w, k):
    """Ask for every cache line of the summed vector sums[w, k]."""
    vec_bytes = sums.shape[2] * sums.itemsize
    base = (w * sums.shape[1] + k) * vec_bytes
    for off in range(0, vec_bytes + LINE - 1, LINE):
        prefetch_byte(sums, base + min(off, vec_bytes - 1))


@leaf
def prefetch_lex(lex, w):
    """Ask for every cache line of lexicon row w (a word's atoms)."""
    row_bytes = lex.shape[1] * lex.itemsize
    for off in range(0, row_bytes + LINE - 1, LINE):
        prefetch_byte(lex, w * row_bytes + min(off, row_bytes - 1))
