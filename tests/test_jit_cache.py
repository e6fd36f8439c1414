"""numba's on-disk cache and the kernel sources (runtime/jit_cache.py): a
kernel must not run the cached code of a callee in another module that has
changed since."""
import os
import subprocess
import sys
import textwrap

from spacy_sparse.runtime.jit_cache import SOURCES, STAMP, refresh_jit_cache, sources_digest

# A two-module kernel package like spacy_sparse.kernels: `outer` in a.py calls `inner` in b.py.
INIT = """
from pathlib import Path
from spacy_sparse.runtime.jit_cache import refresh_jit_cache
if GUARD:
    refresh_jit_cache(Path(__file__).parent, ("a.py", "b.py"))
"""
A = """
from numba import njit
from .b import inner

@njit(cache=True)
def outer(x):
    return inner(x) * 10
"""
B = """
from numba import njit

@njit(cache=True)
def inner(x):
    return x + {add}
"""


def _toy(tmp_path, guard: bool):
    pkg = tmp_path / "toykernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(INIT).replace("GUARD", str(guard)))
    (pkg / "a.py").write_text(A)
    (pkg / "b.py").write_text(B.format(add=1))
    return pkg


def _outer_of_one(tmp_path) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", "from toykernels.a import outer; print(outer(1))"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout)


def test_a_changed_callee_in_another_module_is_compiled_again(tmp_path):
    pkg = _toy(tmp_path, guard=True)
    assert _outer_of_one(tmp_path) == 20
    assert list((pkg / "__pycache__").glob("*.nbi"))  # numba cached both kernels
    (pkg / "b.py").write_text(B.format(add=2))  # a.py, which holds the caller, is unchanged
    assert _outer_of_one(tmp_path) == 30
    assert _outer_of_one(tmp_path) == 30  # and the new code is cached in its turn


def test_without_the_guard_numba_runs_the_old_callee(tmp_path):
    """Why the guard exists: numba alone keeps the caller's stale machine code."""
    pkg = _toy(tmp_path, guard=False)
    assert _outer_of_one(tmp_path) == 20
    (pkg / "b.py").write_text(B.format(add=2))
    assert _outer_of_one(tmp_path) == 20


def test_refresh_keeps_a_cache_that_matches_and_tolerates_a_missing_one(tmp_path):
    tmp_path = tmp_path / "package" / "kernels"  # the sources outside kernels/ are named from it ("../codes.py")
    for name in SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"# {name}\n")
    assert refresh_jit_cache(tmp_path) is False  # no __pycache__ yet: nothing to remove, the stamp is written
    assert (tmp_path / "__pycache__" / STAMP).read_text() == sources_digest(tmp_path)
    cached = tmp_path / "__pycache__" / "parser.predict_parse-1.py311.nbi"
    cached.write_bytes(b"index")
    assert refresh_jit_cache(tmp_path) is False and cached.exists()
    (tmp_path / "scoring.py").write_text("# changed\n")
    assert refresh_jit_cache(tmp_path) is True and not cached.exists()
