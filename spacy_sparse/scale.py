"""Annotating a corpus split into many files on a Dask cluster
(`pip install spacy-sparse[dask]`).

Each input file (shard) is one task; each task writes one JSONL file. A
worker loads the pipeline the first time one of its tasks needs it and keeps
it for the next ones, so the model is read once per worker process, never
shipped with the tasks: tasks carry only paths, and the model directory and
the shards must be readable by every worker (a shared file system or object
store mount on a real cluster).
"""
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language

from .stream import annotate_file

# one pipeline per (model, n_threads) per worker process
_PIPELINES: Dict[Tuple[str, int], Language] = {}


def worker_pipeline(model: str, n_threads: int = 1) -> Language:
    key = (str(model), n_threads)
    if key not in _PIPELINES:
        from .loading import load_pipeline

        _PIPELINES[key] = load_pipeline(str(model), n_threads)
    return _PIPELINES[key]


def annotate_shard(model: str, src: str, dst: str, fmt: str = "text", on_error: str = "skip",
                   batch_size: int = 1000, n_threads: int = 1) -> Dict[str, Any]:
    """The task: one input shard to one JSONL file, with the worker's pipeline."""
    nlp = worker_pipeline(model, n_threads)
    stats = annotate_file(nlp, Path(src), Path(dst), fmt=fmt, on_error=on_error, batch_size=batch_size)
    return {"input": str(src), "output": str(dst), **stats}


def output_name(src: Path) -> str:
    return Path(src).name.rsplit(".", 1)[0] + ".jsonl"


def annotate_shards(
    model: str,
    inputs: Sequence[Path],
    output_dir: Path,
    *,
    client: Any = None,
    n_workers: int = 2,
    fmt: str = "text",
    on_error: str = "skip",
    batch_size: int = 1000,
    n_threads: int = 1,
) -> List[Dict[str, Any]]:
    """Annotate every shard in `inputs` to `output_dir/NAME.jsonl` on a Dask
    cluster: `client` (a dask.distributed Client connected to any cluster),
    or, without one, a LocalCluster of `n_workers` processes on loopback."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - depends on the extra
        raise ImportError("Dask is an optional extra: pip install 'spacy-sparse[dask]'") from None
    if model != "default" and Path(model).exists():
        model = str(Path(model).resolve())
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    names = [output_name(Path(src)) for src in inputs]
    if len(set(names)) != len(names):
        raise ValueError("Two input shards would write the same output file; give them distinct names")
    cluster: Optional[Any] = None
    if client is None:
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(
            annotate_shard,
            [str(model)] * len(inputs),
            [str(Path(src).resolve()) for src in inputs],
            [str((output_dir / name).resolve()) for name in names],
            fmt=fmt, on_error=on_error, batch_size=batch_size, n_threads=n_threads, pure=False,
        )
        return client.gather(futures)
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
