"""spaCy components backed by sparse linear models."""
from .ner import SparseNER, make_sparse_ner
from .parser import SparseParser, make_sparse_parser
from .tagger import SparseTagger, make_sparse_tagger

__all__ = ["SparseNER", "SparseParser", "SparseTagger", "make_sparse_ner", "make_sparse_parser", "make_sparse_tagger"]
