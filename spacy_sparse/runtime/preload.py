"""Decoding a pipeline's weight files in a background thread while spaCy builds the rest of it.

`spacy.load` builds the tokenizer (a few tenths of a second of Python and regular expressions, holding the GIL)
and the components before any component reads its weights. Decoding the weights is mostly zlib, numpy and
compiled kernels, which let the GIL go. So `decoding(path)`, entered before `spacy.load(path)`, starts one thread
that decodes the sparse components' model files while the main thread builds the pipeline, and each component's
`from_disk` takes its decoded model (`take`) instead of decoding the file again.

The decoding thread lets the GIL go and takes it back many times (each zlib call, numpy operation and kernel),
and CPython hands it back to a waiting thread only after its switch interval (5 ms by default) when the other
thread is busy in Python: the decoding then took longer than the whole load did without it. So while decoding
runs the switch interval is SWITCH_INTERVAL, and it is put back when the last such block ends.

Nothing changes what is loaded: a file that was not decoded ahead, changed since (size or modification time),
or failed to decode is read and decoded by its component as without this, which then reports any error with its
own message. A decoded model that no component took is dropped when the block ends.
"""
import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, Optional, Tuple

if TYPE_CHECKING:
    from ..model import SparseLinearModel

# the factories whose components keep their weights in a `model` file (sparse_upos has none)
WEIGHTED_FACTORIES = frozenset({"sparse_tagger", "sparse_senter", "sparse_parser", "sparse_ner", "sparse_morphologizer",
                                "sparse_lemmatizer"})

# seconds; measured on the shipped pipeline (2 cores): 5 ms (CPython's default) decoded in 0.72 s what 0.2 ms did
# in 0.45 s (docs/decisions/measurement-log.md)
SWITCH_INTERVAL = 0.0002

THREAD_NAME = "spacy-sparse-decode"

Stamp = Tuple[int, int]
_lock = threading.Lock()
_pending: Dict[str, Tuple[Stamp, "Future[SparseLinearModel]"]] = {}
# blocks running, and the switch interval before the first of them
_active = [0, 0.0]


def _stamp(path: Path) -> Optional[Stamp]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def weight_files(pipeline: Path, exclude: Iterable[str] = ()) -> Iterator[Path]:
    """The model files of the pipeline's sparse components with weights, in
    pipeline order, from its config.cfg (none if that cannot be read)."""
    from spacy import util

    try:
        config = util.load_config(pipeline / "config.cfg", interpolate=False)
        names = list(config["nlp"]["pipeline"])
        components = config["components"]
    except Exception:  # spacy.load reports a bad config itself
        return
    skip = set(exclude)
    for name in names:
        factory = components.get(name, {}).get("factory") if isinstance(components.get(name), dict) else None
        path = pipeline / name / "model"
        if factory in WEIGHTED_FACTORIES and name not in skip and path.is_file():
            yield path


def _decode(path: Path) -> "SparseLinearModel":
    from ..codec import read_model_file
    from ..model import SparseLinearModel

    return SparseLinearModel.from_bytes(read_model_file(path))


@contextmanager
def decoding(pipeline: Path, exclude: Iterable[str] = ()) -> Iterator[None]:
    """Decode the pipeline's weight files in one background thread for the
    duration of the block (wrap `spacy.load(pipeline)` in it)."""
    pipeline = Path(pipeline)
    files = list(weight_files(pipeline, exclude))
    if not files:
        yield
        return
    keys = []
    _quicker_switches(True)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME)
    try:
        for path in files:
            stamp = _stamp(path)
            if stamp is None:
                continue
            key = str(path.resolve())
            with _lock:
                _pending[key] = (stamp, executor.submit(_decode, path))
            keys.append(key)
        yield
    finally:
        with _lock:
            for key in keys:
                entry = _pending.pop(key, None)
                if entry is not None:
                    entry[1].cancel()
        # no thread outlives the block: a process may fork right after loading (`tag --n-process`); after a
        # load that took every model this waits for nothing, after a failed one for at most the decode under way
        executor.shutdown(wait=True)
        _quicker_switches(False)


def _quicker_switches(start: bool) -> None:
    """Lower the GIL's switch interval for the first block that starts; put
    it back when the last one ends."""
    with _lock:
        if start:
            _active[0] += 1
            if _active[0] == 1:
                _active[1] = sys.getswitchinterval()
                sys.setswitchinterval(min(_active[1], SWITCH_INTERVAL))
        else:
            _active[0] -= 1
            if _active[0] == 0:
                sys.setswitchinterval(_active[1])


def take(path: Path) -> Optional["SparseLinearModel"]:
    """The model decoded ahead from `path`, if one is pending and the file is
    as it was read; else None (the caller decodes the file itself). Each
    decoded model is taken once."""
    if not _pending:
        return None
    path = Path(path)
    with _lock:
        entry = _pending.pop(str(path.resolve()), None)
    if entry is None:
        return None
    stamp, future = entry
    try:
        model = future.result()
    except Exception:  # the component decodes the file again and reports the error in its own words
        return None
    return model if _stamp(path) == stamp else None
