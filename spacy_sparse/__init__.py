"""spacy-sparse: sparse linear spaCy components with dynamic feature selection.

Importing the package is light (no numba): spaCy imports every installed
plugin's factories whenever it makes a pipeline, `spacy.blank("en")`
included, so the components, the model and the kernels are imported when
first used. The training callbacks are registered by entry point.
"""
import importlib
from typing import Any

from . import factories, readers, templates, tokenizer, word_templates  # noqa: F401  (registers the factories, readers, template sets, tokenizer)
from .loading import DEFAULT_MODEL_PATH, config_path, load_default, load_pipeline

__version__ = "0.1.0"

_LAZY = {"SparseLinearModel": ".model", "SparseNER": ".pipeline", "SparseParser": ".pipeline",
         "SparseSenter": ".pipeline", "SparseTagger": ".pipeline"}

__all__ = ["SparseLinearModel", "SparseNER", "SparseParser", "SparseSenter", "SparseTagger", "load_default", "load_pipeline",
           "config_path", "DEFAULT_MODEL_PATH", "__version__"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value
