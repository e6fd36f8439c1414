"""spacy-sparse: sparse linear spaCy components with dynamic feature selection."""
from pathlib import Path

from . import callbacks, readers, templates  # noqa: F401  (registers callbacks, readers and template sets)
from .model import SparseLinearModel
from .pipeline import SparseTagger

__version__ = "0.1.0"

DEFAULT_MODEL_PATH = Path(__file__).parent / "data" / "en_ewt_sparse_tagger"


def load_default(**kwargs):
    """Load the embedded default pipeline: a sparse_tagger trained on UD
    English-EWT (CC BY-SA 4.0; see data/en_ewt_sparse_tagger/LICENSE)."""
    import spacy

    if not (DEFAULT_MODEL_PATH / "config.cfg").exists():
        raise OSError(f"The embedded default model is missing from {DEFAULT_MODEL_PATH}")
    return spacy.load(DEFAULT_MODEL_PATH, **kwargs)


__all__ = ["SparseLinearModel", "SparseTagger", "load_default", "DEFAULT_MODEL_PATH", "__version__"]
