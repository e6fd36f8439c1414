"""Finding what the package ships: the embedded default pipeline and the training configs.

Both are package data, found through `importlib.resources`, so they are there after a normal
(non-editable) `pip install` as well as in a clone of the repository.
"""
from importlib import resources
from pathlib import Path
from typing import List, Union

DEFAULT_MODEL_PATH = Path(__file__).parent / "data" / "en_ewt_sparse_tagger"


def config_names() -> List[str]:
    """The training configs the package ships (`tagger`, `ner`, `parser`, ...)."""
    folder = resources.files("spacy_sparse") / "configs"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".cfg"))


def config_path(name: str) -> Path:
    """The path of a shipped training config, by name (`"tagger"` or `"tagger.cfg"`)."""
    stem = name[:-4] if name.endswith(".cfg") else name
    if stem not in config_names():
        raise ValueError(f"No shipped config named {name!r}; the package has: {', '.join(config_names())}")
    return Path(str(resources.files("spacy_sparse") / "configs" / f"{stem}.cfg"))


def load_default(**kwargs):
    """Load the embedded default pipeline: a sparse_tagger trained on UD
    English-EWT (CC BY-SA 4.0; see data/en_ewt_sparse_tagger/LICENSE)."""
    import spacy

    if not (DEFAULT_MODEL_PATH / "config.cfg").exists():
        raise OSError(f"The embedded default model is missing from {DEFAULT_MODEL_PATH}")
    return spacy.load(DEFAULT_MODEL_PATH, **kwargs)


def load_pipeline(model: Union[str, Path], n_threads: int = 1):
    """spacy.load, with "default" naming the embedded model, and every sparse
    component set to label with `n_threads` threads."""
    import spacy

    from .pipeline.base import SparsePipe

    nlp = load_default() if str(model) == "default" else spacy.load(model)
    for _name, pipe in nlp.pipeline:
        if isinstance(pipe, SparsePipe):
            pipe.n_threads = n_threads
    return nlp
