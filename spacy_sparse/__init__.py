"""spacy-sparse: sparse linear spaCy components with dynamic feature selection."""
from . import callbacks, readers, templates  # noqa: F401  (registers callbacks, readers and template sets)
from .loading import DEFAULT_MODEL_PATH, config_path, load_default, load_pipeline
from .model import SparseLinearModel
from .pipeline import SparseNER, SparseParser, SparseSenter, SparseTagger

__version__ = "0.1.0"

__all__ = ["SparseLinearModel", "SparseNER", "SparseParser", "SparseSenter", "SparseTagger", "load_default", "load_pipeline",
           "config_path", "DEFAULT_MODEL_PATH", "__version__"]
