"""Where one `nlp(text)` call's time goes: the tokenizer, our kernels, and the rest (the Python around the
kernels in every component, and spaCy's own calls).

A user who labels one sentence at a time pays per call what a batch spreads over many docs, so `bench --calls`
splits the call's time. The kernels are timed by wrapping every entry kernel the package's modules hold
(runtime/compiled.py's ENTRY_KERNELS) for one pass; the wrapper's own cost, a fraction of a microsecond per kernel
call, is counted with the kernels. The three parts come from separate passes, each the best of `repeat`.
"""
import sys
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List, Sequence

from spacy.language import Language

from .runtime import compiled


@contextmanager
def timed_kernels(spent: List[float]) -> Iterator[None]:
    """Within the block, every entry kernel held by a spacy_sparse module adds its seconds to spent[0]."""
    originals = {name: getattr(compiled, name) for name in compiled.ENTRY_KERNELS}
    replaced = []
    wrappers = {}
    for name, kernel in originals.items():
        def call(*args, _kernel=kernel):
            start = time.perf_counter()
            try:
                return _kernel(*args)
            finally:
                spent[0] += time.perf_counter() - start
        wrappers[name] = call
    holders = [m for key, m in list(sys.modules.items())
               if key.startswith("spacy_sparse") and m is not None and m is not compiled]
    for module in holders:
        for name, kernel in originals.items():
            if getattr(module, name, None) is kernel:
                setattr(module, name, wrappers[name])
                replaced.append((module, name, kernel))
    try:
        yield
    finally:
        for module, name, kernel in replaced:
            setattr(module, name, kernel)


def call_split(nlp: Language, texts: Sequence[str], repeat: int) -> Dict[str, float]:
    """Microseconds per `nlp(text)` call over `texts`: in all, in the tokenizer, in the kernels, and the rest."""
    def best(run) -> float:
        return min(run() for _ in range(max(1, repeat)))

    def whole() -> float:
        start = time.perf_counter()
        for text in texts:
            nlp(text)
        return time.perf_counter() - start

    def tokenizer() -> float:
        start = time.perf_counter()
        for text in texts:
            nlp.make_doc(text)
        return time.perf_counter() - start

    def kernels() -> float:
        spent = [0.0]
        with timed_kernels(spent):
            whole()
        return spent[0]

    n = max(1, len(texts))
    total, tok, kern = best(whole) / n, best(tokenizer) / n, best(kernels) / n
    return {"total_us": 1e6 * total, "tokenizer_us": 1e6 * tok, "kernels_us": 1e6 * kern,
            "rest_us": 1e6 * max(0.0, total - tok - kern)}
