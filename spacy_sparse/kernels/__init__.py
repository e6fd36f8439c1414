"""numba kernels: the only place per-token work happens."""
from ..runtime.jit_cache import refresh_jit_cache

# before any kernel loads cached code: numba's cache does not see a change in another kernel module
refresh_jit_cache()
