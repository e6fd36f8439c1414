"""spaCy components backed by sparse linear models."""
from .tagger import SparseTagger, make_sparse_tagger

__all__ = ["SparseTagger", "make_sparse_tagger"]
