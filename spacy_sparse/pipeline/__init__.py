"""spaCy components backed by sparse linear models."""
from .ner import SparseNER, make_sparse_ner
from .parser import SparseParser, make_sparse_parser
from .senter import SparseSenter, make_sparse_senter
from .tagger import SparseTagger, make_sparse_tagger

__all__ = ["SparseNER", "SparseParser", "SparseSenter", "SparseTagger", "make_sparse_ner", "make_sparse_parser",
           "make_sparse_senter", "make_sparse_tagger"]
