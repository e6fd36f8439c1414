"""The paper-table benchmarks in benchmarks/ (not installed): figures from their JSON."""
from pathlib import Path

import pytest


def test_sparsity_plot_writes_figures(tmp_path):
    import srsly

    from benchmarks.sparsity import plot_tables

    with pytest.raises(ValueError, match="No table JSON"):
        plot_tables(tmp_path)
    history = [{"epoch": e, "phase": "select", "features": 1000 * (e + 1), "training_bytes": 1} for e in range(3)]
    srsly.write_json(tmp_path / "martins.json", [{"model": "full", "features": 5000, "history": []},
                                                 {"model": "B = 2", "features": 900, "history": history}])
    srsly.write_json(tmp_path / "strubell.json", [{"model": "all 4", "accuracy": 90.0},
                                                  {"model": "GOMP 2", "accuracy": 85.0}])
    written = plot_tables(tmp_path)
    assert [p.name for p in written] == ["martins_memory.png", "strubell_orders.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


@pytest.mark.full
def test_cold_start_command_times_new_processes_against_blank(tmp_path):
    """`cold-start` starts new processes for the model and for spacy.blank, taking turns, and writes JSON the
    benchmark page reads."""
    import srsly

    from conftest import run

    out = tmp_path / "cold.json"
    run("spacy_sparse", "cold-start", "default-tagger", "--runs", "2", "--json", str(out))
    data = srsly.read_json(out)
    assert data["meta"]["command"].startswith("python -m spacy_sparse cold-start")
    floor, row, *jit = data["rows"]  # numba's own share first: blank + one cached kernel of this package
    # with kernels compiled ahead of time, the pipeline with numba's jit too
    assert [r["model"] for r in jit] == (["default-tagger (jit)"] if data["compiled_kernels"] else [])
    assert floor["model"] == "numba-floor" and floor["pipeline_bytes"] is None and len(floor["seconds"]) == 2
    assert row["model"] == "default-tagger" and len(row["seconds"]) == len(row["blank_seconds"]) == 2
    assert all(s > 0 for s in row["seconds"]) and row["pipeline_bytes"] > 100_000
    assert row["median_extra"] == sorted(row["extra_seconds"])[1]
    # each process's own peak memory: the tagger's tables and rows come on top of spaCy's
    assert 50e6 < row["peak_rss_bytes"] < 2e9 and 1e6 < row["extra_rss_bytes"] < row["peak_rss_bytes"]
    assert 50e6 < row["end_rss_bytes"] <= row["peak_rss_bytes"] and row["extra_end_rss_bytes"] <= row["extra_rss_bytes"]
    # the package's bytecode was written first, as pip writes it at install, whatever PYTHONDONTWRITEBYTECODE says
    import importlib.util

    import spacy_sparse.readers

    assert data["bytecode_compiled"] is True
    assert Path(importlib.util.cache_from_source(spacy_sparse.readers.__file__)).exists()


def test_tag_speed_command_times_settings_that_write_the_same_bytes(tmp_path, ewt_refs):
    """`tag-speed` runs the tag command per processes x threads setting, checks the outputs are identical and
    writes JSON the benchmark page reads."""
    import srsly

    from conftest import run

    src = tmp_path / "raw.txt"
    src.write_text("\n".join(" ".join(r.text.split()) for r in ewt_refs["dev"][:30]) + "\n", encoding="utf8")
    out = tmp_path / "speed.json"
    run("spacy_sparse", "tag-speed", "default-tagger", str(src), "--settings", "1x1,2x1", "--runs", "1",
        "--json", str(out))
    data = srsly.read_json(out)
    assert data["words"] == len(src.read_text(encoding="utf8").split()) and len(data["output_sha256"]) == 64
    assert [(r["n_process"], r["n_threads"]) for r in data["rows"]] == [(1, 1), (2, 1)]
    assert data["rows"][0]["speedup"] == [1.0] and data["rows"][1]["seconds"][0] > 0


@pytest.mark.full
def test_train_cost_command_reports_time_peak_memory_and_dev_scores(tmp_path, corpus):
    """`train-cost` runs spacy train in new processes and records each run's own peak RSS, the dev scores of the
    model-best it wrote and its size, as JSON the benchmark page reads."""
    import subprocess
    import sys

    import srsly

    from conftest import ROOT, run

    out = tmp_path / "cost.json"
    run("spacy_sparse", "train-cost", "configs/tagger.cfg", str(corpus / "train.spacy"), str(corpus / "dev.spacy"), "--output", str(tmp_path / "runs"), "--runs", "2",
        "--set", "training.max_epochs=1", "--json", str(out))
    data = srsly.read_json(out)
    assert data["overrides"] == ["--training.max_epochs", "1"] and len(data["rows"]) == 2
    for row in data["rows"]:
        # spaCy and a tagger alone take far more than 100 MB, and a 120-doc tagger far less than 20 GB
        assert 100e6 < row["peak_rss_bytes"] < 20e9 and row["seconds"] > 0
        assert 0.5 < row["dev_scores"]["tag_acc"] <= 1.0 and row["model_best_bytes"] > 10_000
    bad = subprocess.run([sys.executable, "-m", "spacy_sparse", "train-cost", "configs/tagger.cfg", "a", "b", "--set",
                          "nokey"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and "KEY=VALUE" in bad.stdout + bad.stderr
