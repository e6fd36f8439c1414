"""Which sources the kernels are made of, and keeping numba's cache true to them.

numba's on-disk cache (`cache=True`) checks only the file that defines a
kernel. A kernel whose callee in another module changed (scoring.py under
the parser's `predict_parse`, or a constant in layout.py) loads the machine
code of the old callee, with no error: numba tracks no dependency across
files. So the cached kernels are tied here to all kernel sources together:
when these differ from the ones the cache was built from, the kernels' cached
code is removed before any kernel loads it, and numba compiles again once.

This module imports no numba, so the ahead-of-time path (compiled.py) keeps
its cold start.
"""
import hashlib
import os
from pathlib import Path
from typing import Sequence

KERNEL_DIR = Path(__file__).parent.parent / "kernels"
# every file whose code or constants end up inside a compiled kernel (paths from this directory: the
# constants the kernels share with Python live in the package's codes.py)
SOURCES = ("layout.py", "jit.py", "prefetch.py", "hashing.py", "rows.py", "structs.py", "scoring.py", "learner.py",
           "history.py", "floor.py",
           "sequence.py", "arc_hybrid.py", "parser.py", "upos.py", "jsonl.py", "../codes.py", "../runtime/arrays.py")
STAMP = "spacy_sparse_sources.sha256"


def sources_digest(directory: Path = KERNEL_DIR, sources: Sequence[str] = SOURCES) -> str:
    """A hash of the kernel sources' names and bytes."""
    digest = hashlib.sha256()
    for name in sources:
        digest.update(name.encode("utf8") + b"\0")
        digest.update((directory / name).read_bytes())
    return digest.hexdigest()


def refresh_jit_cache(directory: Path = KERNEL_DIR, sources: Sequence[str] = SOURCES) -> bool:
    """Remove numba's cached kernels of `directory` (its __pycache__) when
    the sources differ from the ones they were compiled from; returns whether
    any were removed. Nothing happens where numba does not cache beside the
    sources (NUMBA_CACHE_DIR set, or a read-only install, where numba keeps
    a cache of its own elsewhere)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    cache = directory / "__pycache__"
    stamp = cache / STAMP
    digest = sources_digest(directory, sources)
    try:
        if stamp.read_text(encoding="ascii") == digest:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    removed = False
    try:
        for path in sorted(cache.glob("*.nbi")) + sorted(cache.glob("*.nbc")):
            try:
                path.unlink()
                removed = True
            except FileNotFoundError:  # another process cleared it first
                pass
        cache.mkdir(exist_ok=True)
        partial = cache / f"{STAMP}.{os.getpid()}"
        partial.write_text(digest, encoding="ascii")
        os.replace(partial, stamp)
    except OSError:
        pass
    return removed
