"""How the kernels reach a process, and what keeps their memory bounded: an optimisation layer over plain numba.

The contract (docs/how-it-works.md, "Runtime"): every kernel is an ordinary `@njit(cache=True)` function in
`kernels/`, and everything here may be absent without changing a result.

- jit_cache.py: numba's on-disk cache keyed by all kernel sources together (numba checks only the defining file);
- compiled.py: the entry kernels from an ahead-of-time build when one matches the sources, the versions and the
  CPU, each call checked against the types it was built for; otherwise the jitted kernel;
- preload.py: model files decoded in a background thread while spaCy builds the rest of a pipeline;
- mapped.py: training arrays that grow in place, and freed heap pages handed back after a load;
- guard.py: many predicting threads or one training writer over a model's arrays;
- arrays.py: numpy helpers that avoid first-call imports on the labelling path.

Nothing here imports numba at module level.
"""
