"""Corpus-scale benchmark: threads in one process, the streaming `tag`
command (one process, two threads, two processes), and Dask shards, on the
same input, with peak memory. A benchmark, not a test: it prints numbers.

    python benchmarks/scale.py MODEL DATA [--words N] [--json OUT]
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import srsly
from wasabi import msg

from spacy_sparse.bench import bare_docs, read_references, sparse_components, time_pipe
from spacy_sparse.loading import load_pipeline


def _write_corpus(lines: List[str], n_words: int, path: Path) -> int:
    """Write sentences (repeated as needed) until about n_words words."""
    total = 0
    with path.open("w", encoding="utf8") as f:
        while total < n_words:
            for line in lines:
                f.write(line + "\n")
                total += len(line.split())
                if total >= n_words:
                    break
    return total


def _run(args: List[str]) -> Dict[str, float]:
    """Run a command; its wall time and the peak RSS of it and its children."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{err[-2000:]}")
    return {"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024}


def run_scale_bench(model: str, data: Path, n_words: int = 1_000_000, small_words: int = 100_000,
                    repeat: int = 3) -> Dict[str, Any]:
    nlp = load_pipeline(model)
    name, pipe = sparse_components(nlp)[0]
    refs = read_references(nlp, data)
    result: Dict[str, Any] = {"model": model, "data": str(data), "cpus": os.cpu_count()}

    # 1. threads inside one process, on pre-made docs (the component's share of the work)
    docs = bare_docs(nlp, refs) * max(1, 200_000 // max(1, sum(len(d) for d in refs)))
    threads = {}
    outputs = {}
    for n in (1, 2):
        pipe.n_threads = n
        threads[n] = time_pipe(nlp, docs, repeat)
        outputs[n] = [[t.tag_ for t in d] for d in nlp.pipe(docs[:500])]
    pipe.n_threads = 1
    result["threads"] = {"words": sum(len(d) for d in docs), "words_per_second_1": threads[1],
                         "words_per_second_2": threads[2], "speedup": threads[2] / threads[1],
                         "identical": outputs[1] == outputs[2]}

    # 2. the tag command and Dask, on the same text (tokenizer and JSON output included)
    lines = [sent.text for doc in refs for sent in doc.sents]
    cli = [sys.executable, "-m", "spacy_sparse"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        big, small = tmp_path / "big.txt", tmp_path / "small.txt"
        words_big = _write_corpus(lines, n_words, big)
        words_small = _write_corpus(lines, small_words, small)
        shard_lines = big.read_text(encoding="utf8").splitlines()
        shards = []
        for k in range(4):
            shard = tmp_path / f"shard{k}.txt"
            shard.write_text("\n".join(shard_lines[k::4]) + "\n", encoding="utf8")
            shards.append(str(shard))
        runs = {
            "tag_small_1_thread": (cli + ["tag", model, str(small), str(tmp_path / "s.jsonl"), "--quiet"], words_small),
            "tag_1_thread": (cli + ["tag", model, str(big), str(tmp_path / "a.jsonl"), "--quiet"], words_big),
            "tag_2_threads": (cli + ["tag", model, str(big), str(tmp_path / "b.jsonl"), "--quiet", "--n-threads", "2"], words_big),
            "tag_2_processes": (cli + ["tag", model, str(big), str(tmp_path / "c.jsonl"), "--quiet", "--n-process", "2"], words_big),
            "dask_local_2_workers": (cli + ["tag-shards", model, str(tmp_path / "dask"), *shards, "--n-workers", "2"], words_big),
        }
        for key, (args, words) in runs.items():
            r = _run(args)
            r["words"] = words
            r["words_per_second"] = words / r["seconds"]
            result[key] = r
        # a cluster that is already up, as a real one would be: time the
        # tasks only (each worker still loads the pipeline on its first task)
        from dask.distributed import Client, LocalCluster

        from spacy_sparse.scale import annotate_shards

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.run(lambda: None)
            start = time.perf_counter()
            annotate_shards(model, [Path(x) for x in shards], tmp_path / "dask_warm", client=client)
            seconds = time.perf_counter() - start
        result["dask_running_cluster_2_workers"] = {"seconds": seconds, "words": words_big,
                                                    "words_per_second": words_big / seconds}
        result["tag_same_output_2_threads"] = (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
        result["tag_same_output_2_processes"] = (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "c.jsonl").read_bytes()
    base = result["tag_1_thread"]["words_per_second"]
    for key in ("tag_2_threads", "tag_2_processes", "dask_local_2_workers", "dask_running_cluster_2_workers"):
        result[key]["speedup"] = result[key]["words_per_second"] / base
    result["rss_growth_mb_small_to_big"] = result["tag_1_thread"]["peak_rss_mb"] - result["tag_small_1_thread"]["peak_rss_mb"]
    return result


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python benchmarks/scale.py", description=__doc__.split("\n")[0])
    parser.add_argument("model", help='a pipeline directory or "default"')
    parser.add_argument("data", help="a .spacy DocBin whose sentences make the input (repeated)")
    parser.add_argument("--words", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    r = run_scale_bench(args.model, Path(args.data), n_words=args.words, repeat=args.repeat)
    t = r["threads"]
    msg.info(f"{r['model']}, {r['cpus']} CPUs")
    msg.text(f"in-process, pre-made docs ({t['words']:,} words): 1 thread {t['words_per_second_1']:,.0f} words/s, "
             f"2 threads {t['words_per_second_2']:,.0f} words/s ({t['speedup']:.2f}x, identical: {t['identical']})")
    rows = []
    for key in ("tag_small_1_thread", "tag_1_thread", "tag_2_threads", "tag_2_processes", "dask_local_2_workers"):
        x = r[key]
        rows.append((key, f"{x['words']:,}", f"{x['seconds']:.1f}", f"{x['words_per_second']:,.0f}",
                     f"{x.get('speedup', 1.0):.2f}x" if key != "tag_small_1_thread" else "-", f"{x['peak_rss_mb']:.0f}"))
    x = r["dask_running_cluster_2_workers"]
    rows.append(("dask, cluster already up", f"{x['words']:,}", f"{x['seconds']:.1f}", f"{x['words_per_second']:,.0f}",
                 f"{x['speedup']:.2f}x", "-"))
    msg.table(rows, header=("run", "words", "seconds", "words/s", "vs 1 thread", "peak RSS MB"), divider=True)
    msg.text(f"peak RSS growth from {r['tag_small_1_thread']['words']:,} to {r['tag_1_thread']['words']:,} words: "
             f"{r['rss_growth_mb_small_to_big']:+.1f} MB; same output with 2 threads: {r['tag_same_output_2_threads']}, "
             f"with 2 processes: {r['tag_same_output_2_processes']}")
    if args.json:
        srsly.write_json(args.json, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
