"""spaCy components backed by sparse linear models."""
from .ner import SparseNER, make_sparse_ner
from .tagger import SparseTagger, make_sparse_tagger

__all__ = ["SparseNER", "SparseTagger", "make_sparse_ner", "make_sparse_tagger"]
