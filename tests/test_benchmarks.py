"""The paper-table benchmarks in benchmarks/ (not installed): figures from their JSON."""
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


def test_cold_start_command_times_new_processes_against_blank(tmp_path):
    """`cold-start` starts new processes for the model and for spacy.blank, taking turns, and writes JSON the
    benchmark page reads."""
    import srsly

    from conftest import run

    out = tmp_path / "cold.json"
    run("spacy_sparse", "cold-start", "default-tagger", "--runs", "2", "--json", str(out))
    data = srsly.read_json(out)
    assert data["meta"]["command"].startswith("python -m spacy_sparse cold-start")
    (row,) = data["rows"]
    assert row["model"] == "default-tagger" and len(row["seconds"]) == len(row["blank_seconds"]) == 2
    assert all(s > 0 for s in row["seconds"]) and row["pipeline_bytes"] > 100_000
    assert row["median_extra"] == sorted(row["extra_seconds"])[1]
