"""numba kernels: the only place per-token work happens."""
