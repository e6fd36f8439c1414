"""What using the package costs outside one pipeline call, each measured in new processes as a user meets it:
start-up to one labelled sentence (`cold-start`), the `tag` command's throughput (`tag-speed`) and a training
run's time and memory (`train-cost`)."""
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import spacy
import srsly

from .loading import DEFAULT_PIPELINES, resolve_model
from .provenance import directory_bytes


COLD_SENTENCE = "The ferry left the harbour at dawn."
# the cold-start row of a blank pipeline plus one cached numba kernel: what no numba component can go below
NUMBA_FLOOR = "numba-floor"


def compile_bytecode() -> bool:
    """Write this package's bytecode caches, as `pip install` does for a
    wheel, before timing new processes. An editable install gets them on its
    first import, unless PYTHONDONTWRITEBYTECODE is set (as on the machines
    these benchmarks ran on): each process then compiles every module of
    ours from source again, which no installed user pays (0.4 s of the `tag`
    command's start-up, 2026-11-25). compileall writes them whatever that
    variable says; a read-only install keeps what it has."""
    import compileall

    return bool(compileall.compile_dir(str(Path(__file__).parent), quiet=1))


def has_sparse_components(path: Path) -> bool:
    """Whether the pipeline directory's config names a factory of ours."""
    try:
        config = spacy.util.load_config(Path(path) / "config.cfg")
    except (OSError, ValueError):
        return False
    return any(str(c.get("factory", "")).startswith("sparse_") for c in config.get("components", {}).values())


def cold_start(models: Sequence[str], runs: int = 5) -> Dict[str, Any]:
    """Seconds from a new Python process to one labelled sentence, for
    each model and for `spacy.blank("en")` as the baseline, runs taking
    turns (a slow spell hits every model alike), and the peak resident
    memory of those processes and what was resident at their end (medians;
    over the baseline's too). A model is "default",
    "default-tagger" or a path; each process imports what a user's would.
    With kernels compiled ahead of time (`compile-kernels`), each model
    with sparse components is timed with numba's jit as well (a "(jit)"
    row); another pipeline (spaCy's CNN) is a row of its own, for scale."""
    from .runtime import compiled as compiled_kernels

    jit = dict(os.environ, SPACY_SPARSE_AOT="0")
    # row name -> (code, environment (None: ours), the model whose directory it loads)
    code = {"blank": ("import spacy; nlp = spacy.blank('en')", None, None),
            # numba's share, common to any numba component: its import, the registries its first
            # call sets up, one cached kernel, and the collector's passes over its objects at exit
            NUMBA_FLOOR: ("import spacy; nlp = spacy.blank('en'); import numpy as np; "
                          "from spacy_sparse.kernels.hashing import mix; mix(np.uint64(1), np.uint64(2))", None, None)}
    for model in models:
        shipped = {str(path): name for name, path in DEFAULT_PIPELINES.items()}.get(str(resolve_model(model)))
        if shipped:  # as the README loads them
            load = f"import spacy, spacy_sparse; nlp = spacy_sparse.load_default({shipped!r})"
        else:
            load = f"import spacy, spacy_sparse; nlp = spacy.load({str(resolve_model(model))!r})"
        code[model] = (load, None, model)
        if compiled_kernels.COMPILED and (shipped or has_sparse_components(resolve_model(model))):
            code[f"{model} (jit)"] = (load, jit, model)
    times: Dict[str, List[float]] = {name: [] for name in code}
    peaks: Dict[str, List[int]] = {name: [] for name in code}
    bytecode = compile_bytecode()
    # each process reports, as it ends, its peak resident memory and what is resident then (VmHWM, VmRSS in kB;
    # Linux; 0 elsewhere). Not ru_maxrss, which a new process inherits from the one that forked it (this one).
    report = (r"; import os, re; s = open('/proc/self/status').read() if os.path.exists('/proc/self/status') "
              r"else ''; print(*[(re.findall(k + r':\s*(\d+)', s) or ['0'])[0] for k in ('VmHWM', 'VmRSS')])")
    resident: Dict[str, List[int]] = {name: [] for name in code}
    for load, env, _ in code.values():  # untimed: numba's cache is written, if it was not
        subprocess.run([sys.executable, "-c", f"{load}; nlp({COLD_SENTENCE!r})"], check=True, env=env)
    for _ in range(max(1, runs)):
        for name, (load, env, _) in code.items():
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", f"{load}; nlp({COLD_SENTENCE!r}){report}"], check=True,
                                  env=env, stdout=subprocess.PIPE, text=True)
            times[name].append(time.perf_counter() - start)
            peak_kb, now_kb = done.stdout.split()[-2:]
            peaks[name].append(int(peak_kb) * 1024)
            resident[name].append(int(now_kb) * 1024)
    base = sorted(times["blank"])

    def median(values: List[int]) -> int:
        return sorted(values)[len(values) // 2]
    rows = []
    for name, (_, _, model) in code.items():
        if name == "blank":
            continue
        own = sorted(times[name])
        # pair runs by rank: the k-th fastest of each
        extra = [a - b for a, b in zip(own, base)]
        rows.append({"model": str(name), "seconds": own, "blank_seconds": base,
                     "extra_seconds": extra, "median_extra": sorted(extra)[len(extra) // 2],
                     "peak_rss_bytes": median(peaks[name]),
                     "extra_rss_bytes": median(peaks[name]) - median(peaks["blank"]),
                     "end_rss_bytes": median(resident[name]),
                     "extra_end_rss_bytes": median(resident[name]) - median(resident["blank"]),
                     "pipeline_bytes": None if model is None else directory_bytes(model)})
    return {"runs": runs, "sentence": COLD_SENTENCE, "bytecode_compiled": bytecode,
            "compiled_kernels": bool(compiled_kernels.COMPILED), "rows": rows}


def tag_speed(model: str, source: Path, settings: Sequence[Tuple[int, int]], runs: int = 2,
              workdir: Optional[Path] = None) -> Dict[str, Any]:
    """Wall-clock seconds of the `tag` command on a raw-text file (one doc
    per line) for each (processes, threads) setting, runs taking turns,
    start-up included as a user meets it. The outputs must be byte-identical
    across settings; their hash is recorded."""
    import hashlib
    import tempfile

    source = Path(source)
    words = 0
    with source.open(encoding="utf8") as f:
        for line in f:
            words += len(line.split())
    times: Dict[Tuple[int, int], List[float]] = {s: [] for s in settings}
    digests: Dict[Tuple[int, int], str] = {}
    compiled = compile_bytecode()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        # untimed: numba's cache is written, if it was not
        first = Path(tmp) / "first-line.txt"
        with source.open(encoding="utf8") as f:
            first.write_text(f.readline(), encoding="utf8")
        subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", str(model), str(first), str(first) + ".jsonl",
                        "--quiet"], check=True)
        for _ in range(max(1, runs)):
            for n_process, n_threads in settings:
                out = Path(tmp) / f"out-{n_process}-{n_threads}.jsonl"
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "spacy_sparse", "tag", str(model), str(source), str(out),
                                "--quiet", "--n-process", str(n_process), "--n-threads", str(n_threads)], check=True)
                times[(n_process, n_threads)].append(time.perf_counter() - start)
                digests[(n_process, n_threads)] = hashlib.sha256(out.read_bytes()).hexdigest()
    if len(set(digests.values())) != 1:
        raise RuntimeError(f"tag wrote different outputs for different settings: {digests}")
    base = times[settings[0]]
    rows = [{"n_process": p, "n_threads": t, "seconds": times[(p, t)],
             "words_per_second": [words / x for x in times[(p, t)]],
             "speedup": [b / x for b, x in zip(base, times[(p, t)])]} for p, t in settings]
    return {"model": str(model), "input": str(source), "words": words, "runs": runs, "bytecode_compiled": compiled,
            "output_sha256": next(iter(digests.values())), "rows": rows}


# Runs one command and prints the peak resident set of its process tree's largest member, in KiB (Linux
# getrusage: of the waited-for child, the wrapper's only one).
_PEAK_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def train_cost(config: Path, train: Path, dev: Path, output: Path, runs: int = 2,
               overrides: Sequence[str] = ()) -> Dict[str, Any]:
    """Wall-clock seconds and peak RSS of `python -m spacy train CONFIG` as
    a user runs it (a new process each run, loading included), with the
    dev scores and size on disk of the model-best it wrote. Each run goes
    through a small wrapper process, so its peak is its own, not the
    largest of all runs so far."""
    rows = []
    for i in range(max(1, runs)):
        out = Path(output) / f"run{i + 1}"
        cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(out),
               "--paths.train", str(train), "--paths.dev", str(dev), *overrides]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _PEAK_RSS, *cmd], check=True, stdout=subprocess.PIPE,
                              text=True)
        seconds = time.perf_counter() - start
        best = out / "model-best"
        meta = srsly.read_json(best / "meta.json")
        rows.append({"seconds": seconds, "peak_rss_bytes": int(done.stdout.split()[-1]) * 1024,
                     "dev_scores": {k: v for k, v in meta.get("performance", {}).items()
                                    if isinstance(v, (int, float))},
                     "model_best_bytes": directory_bytes(best)})
    return {"config": str(config), "train": str(train), "dev": str(dev), "overrides": list(overrides),
            "runs": runs, "rows": rows}
