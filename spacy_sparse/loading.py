"""Finding what the package ships: the embedded default pipeline and the training configs.

Both are package data, found through `importlib.resources`, so they are there after a normal
(non-editable) `pip install` as well as in a clone of the repository.
"""
from importlib import resources
from pathlib import Path
from typing import List, Union

DATA_PATH = Path(__file__).parent / "data"
# the pipelines the package ships: the full one (sentence segmenter, tagger, parser) and the smallest (tagger)
DEFAULT_PIPELINES = {"full": DATA_PATH / "en_ewt_sparse", "tagger": DATA_PATH / "en_ewt_sparse_tagger"}
DEFAULT_MODEL_PATH = DEFAULT_PIPELINES["full"]


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


def default_path(name: str = "full") -> Path:
    """Where the shipped pipeline `name` ("full" or "tagger") lives."""
    if name not in DEFAULT_PIPELINES:
        raise ValueError(f"No shipped pipeline {name!r}; the package has: {', '.join(DEFAULT_PIPELINES)}")
    path = DEFAULT_PIPELINES[name]
    if not (path / "config.cfg").exists():
        raise OSError(f"The embedded pipeline {name!r} is missing from {path}")
    return path


def load_default(name: str = "full", **kwargs):
    """Load an embedded pipeline trained on UD English-EWT (CC BY-SA 4.0;
    see its LICENSE): "full" (tagger, segmenter, parser, UPOS, morphologizer,
    lemmatizer; UD noun chunks) or "tagger" (sparse_tagger alone, the smallest)."""
    import spacy

    from .runtime import preload

    path = default_path(name)
    # the weights are decoded in a thread while spacy.load builds the tokenizer and the components (preload.py);
    # the shipped tokenizer (spacy_sparse.UDTokenizer.v1) skips reading back its own file
    with preload.decoding(path, kwargs.get("exclude", ())):
        return spacy.load(path, **kwargs)


def resolve_model(model: Union[str, Path]) -> Path:
    """A model argument of the commands: "default" (the full shipped
    pipeline), "default-tagger", or a path."""
    text = str(model)
    if text == "default":
        return default_path("full")
    if text.startswith("default-") and text[len("default-"):] in DEFAULT_PIPELINES:
        return default_path(text[len("default-"):])
    return Path(text)


def load_pipeline(model: Union[str, Path], n_threads: int = 1):
    """spacy.load, with "default" / "default-tagger" naming the embedded pipelines, and every sparse
    component set to label with `n_threads` threads."""
    import spacy

    from .runtime import preload
    from .pipeline.base import SparsePipe

    path = resolve_model(model)
    with preload.decoding(path):
        nlp = spacy.load(path)
    for _name, pipe in nlp.pipeline:
        if isinstance(pipe, SparsePipe):
            pipe.n_threads = n_threads
    return nlp
