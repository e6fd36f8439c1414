"""spaCy components backed by sparse linear models.

The classes are imported on first use: `spacy_sparse.factories` imports
`pipeline.settings`, and with it this package, whenever spaCy makes any
pipeline, so importing the package must not import numba's kernels.
"""
import importlib
from typing import Any

_CLASSES = {"SparseNER": "ner", "SparseParser": "parser", "SparseSenter": "senter", "SparseTagger": "tagger",
            "SparseLemmatizer": "lemmatizer", "SparseMorphologizer": "morphologizer"}

__all__ = list(_CLASSES)


def __getattr__(name: str) -> Any:
    if name not in _CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_CLASSES[name]}", __name__), name)
    globals()[name] = value
    return value
