"""How the kernels' helpers are compiled.

`leaf` is numba's njit (on-disk cache, GIL released) without numba's
reference counting (NRT). A jitted function that is handed arrays counts a
reference to each on entry and releases it on exit, with locked (atomic)
instructions, and the hot loops call their helpers per token, per decision
and per feature: without those counts the parser kernel runs 5-15 % faster
on EWT dev, with the same parses (docs/decisions/measurement-log.md). A leaf must allocate
nothing and return no array or view: a view returned without a counted
reference would not keep its parent alive (a test checks the return types).
Kernels that allocate (the entry kernels, training) stay plain njit and may
call leaves.
"""
from numba import njit
from numba.core.cpu import CPUTargetOptions

# `_nrt` is numba's own option (its tests use it); should a numba drop it, leaves count references again:
# slower, the same results
NO_NRT = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
leaf = njit(cache=True, nogil=True, **NO_NRT)
# a leaf numba inlines into its caller's IR: numba compiles each jitted function on its own and links it after
# optimizing, so LLVM never inlines a leaf, and a hot helper pays a call (and its arguments' spills) each time
inline_leaf = njit(cache=True, nogil=True, inline="always", **NO_NRT)
