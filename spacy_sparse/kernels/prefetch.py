"""Telling the processor which weight rows a token will read, before it reads them.

A tagger's rows (`configs/tagger.cfg`: 90 MB) are far larger than any cache,
so each multi-word template's row is a trip to memory. The rows of a block
are known once its probes are done; asking for all of them then, before the
first is added, lets their fetches overlap (EWT dev, margin none: 1.11-1.16x
the words/s of the tagger kernel; the parser's packed rows, mostly in cache,
gain nothing: CHANGELOG.md). A prefetch is a hint: it changes no result.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

LINE = 64  # bytes of a cache line


@intrinsic
def prefetch_line(typingctx, arr, row, offset):
    """LLVM's prefetch (read, keep in all cache levels) of the byte
    `offset` of row `row` of a C-ordered 2-D array."""
    sig = types.void(arr, row, offset)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        stride = builder.extract_value(ary.strides, 0)
        base = builder.ptrtoint(ary.data, ir.IntType(64))
        address = builder.add(builder.add(base, builder.mul(args[1], stride)), args[2])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.inttoptr(address, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def prefetch_rows(W, rows, n):
    """Ask for every cache line of the rows W[rows[j]], j < n (none for a
    negative entry: no row)."""
    row_bytes = W.shape[1] * W.itemsize
    for j in range(n):
        r = rows[j]
        if r >= 0:
            for off in range(0, row_bytes + LINE - 1, LINE):
                prefetch_line(W, r, min(off, row_bytes - 1))
