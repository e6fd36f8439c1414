"""Weight arrays that grow without a second copy.

Training grows its row arrays (weights, averaging sums, AdaGrad sums) by half
each time the rows run out. Copying into a larger array holds old and new at
once, and at the end of a full EWT run one parser array is 0.35 GB. Large
arrays therefore live in anonymous private memory maps, which the kernel
enlarges in place (mremap) while the rows past the old end stay untouched
zero pages until used. Where that is not possible (a view of the array is
still alive, a platform without it) the array is copied as before.

Loading a model makes temporaries (decoded rows, tables, the layouts' parts)
of a few MB each; glibc keeps such freed blocks in the process's heap, where
they stayed resident (30 MB of the shipped pipeline's), so the heap's free
pages are handed back once a model's prediction layouts are built.
"""
import ctypes
import mmap
from typing import Any, Callable, List, Optional

import numpy as np

# smaller arrays are plain numpy arrays: a map costs a system call and a page
MIN_MAPPED_BYTES = 1 << 24
_MAP_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)


def grow_rows(owner: Any, name: str, n_rows: int) -> None:
    """Give owner.<name> (a C-contiguous array) n_rows rows; rows past its
    old end are zero. The array is replaced, so other references to the
    old one must not be kept."""
    arr: np.ndarray = getattr(owner, name)
    if arr.shape[0] >= n_rows:
        return
    tail, dtype, old_rows = arr.shape[1:], arr.dtype, arr.shape[0]
    new_bytes = n_rows * int(np.prod(tail, dtype=np.int64)) * dtype.itemsize
    mm = _own_mapping(arr)
    if mm is not None:
        setattr(owner, name, None)
        del arr  # the last views of the map go: it may then be resized
        try:
            mm.resize(new_bytes)
        except (BufferError, OSError, ValueError, SystemError):
            arr = _view(mm, dtype, (old_rows,) + tail)
        else:
            setattr(owner, name, _view(mm, dtype, (n_rows,) + tail))
            return
    if new_bytes >= MIN_MAPPED_BYTES and _MAP_FLAGS:
        out = _view(mmap.mmap(-1, new_bytes, flags=_MAP_FLAGS), dtype, (n_rows,) + tail)
    else:
        out = np.zeros((n_rows,) + tail, dtype=dtype)
    out[:old_rows] = arr
    setattr(owner, name, out)


def _view(mm: mmap.mmap, dtype: np.dtype, shape: tuple) -> np.ndarray:
    return np.frombuffer(mm, dtype=dtype, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)


def _own_mapping(arr: np.ndarray) -> Optional[mmap.mmap]:
    """The map arr covers whole (made by grow_rows), or None."""
    base: Any = arr
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if isinstance(base, mmap.mmap) and arr.flags.c_contiguous and arr.nbytes == len(base):
        return base
    return None


_TRIM: List[Optional[Callable[[int], int]]] = []


def release_free_heap() -> None:
    """Return the heap's free pages to the OS (glibc's malloc_trim; a no-op
    elsewhere). It changes no data, only which free memory stays resident,
    and takes well under a millisecond after a load."""
    if not _TRIM:
        try:  # the process's own symbols: glibc's malloc_trim where the C library is glibc
            trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
        except OSError:
            trim = None
        _TRIM.append(trim)
    if _TRIM[0] is not None:
        _TRIM[0](0)
