"""Every committed result says where it comes from; a run records itself; bad input is named."""

import json
import subprocess
from pathlib import Path

import pytest

from seqbook.provenance import (
    _current_runs,
    environment,
    made_here,
    provenance_path,
    read_provenance,
    record,
)

ROOT = Path(__file__).resolve().parents[1]
# what a run must say about itself (the fields a reader needs to rerun and compare it)
FIELDS = {"command", "rows", "date", "commit", "python", "torch", "cpu_capability", "threads",
          "machine", "processor"}


def committed_results() -> list[Path]:
    """The results the chapters load: tables, sweeps and checkpoints inside the package
    (the claims ledger, which records its own runs, aside)."""
    files = subprocess.run(["git", "ls-files", "seqbook"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return [ROOT / f for f in files
            if f.endswith((".csv", ".json", ".pt")) and not f.endswith(".provenance.json")
            and f != "seqbook/claims.json"]


def test_the_package_ships_committed_results():
    assert len(committed_results()) >= 20


@pytest.mark.parametrize("result", committed_results(), ids=lambda p: p.name)
def test_every_committed_result_has_its_provenance(result):
    runs = read_provenance(result)
    assert runs, f"{provenance_path(result)} records no run"
    for run in runs:
        assert FIELDS <= set(run), (result.name, FIELDS - set(run))
        assert run["command"].startswith(("python -m seqbook.", "nice -n 10 python -m seqbook."))
        assert len(run["commit"]) == 40 and int(run["commit"], 16) >= 0
    # the runs that made the current rows ran from committed code (an earlier run
    # from a working tree stays in the history, superseded by a full rewrite)
    assert all(run["uncommitted_changes"] is not True
               for run in _current_runs(result)), result.name


def test_a_run_is_recorded_beside_its_result_and_kept_by_the_next(tmp_path):
    table = tmp_path / "table.csv"
    table.write_text("seed,accuracy\n0,1.0\n")
    record(table, "seqbook.experiments.recall", ["--seeds", "0"], threads=1, rows="seed 0")
    record(table, "seqbook.experiments.recall", ["--seeds", "1"], threads=1, rows="seed 1")
    runs = json.loads((tmp_path / "table.csv.provenance.json").read_text())
    assert [run["rows"] for run in runs] == ["seed 0", "seed 1"]
    assert runs[1]["command"] == "python -m seqbook.experiments.recall --seeds 1"
    here = environment(threads=1)
    assert {k: runs[1][k] for k in ("torch", "cpu_capability", "machine")} == {
        k: here[k] for k in ("torch", "cpu_capability", "machine")}
    assert made_here(table, threads=1)
    assert not made_here(table, threads=3)  # another thread count rounds otherwise


def test_a_run_whose_machine_was_not_recorded_is_not_made_here(tmp_path):
    table = tmp_path / "table.csv"
    table.write_text("x\n1\n")
    provenance_path(table).write_text(json.dumps([{"torch": "not recorded", "rows": "all"}]))
    assert not made_here(table)
    record(table, "seqbook.experiments.recall", [], threads=1, rows="seed 1")
    assert not made_here(table, threads=1)  # the other rows' machine is still unknown
    record(table, "seqbook.experiments.recall", [], threads=1)  # rewrites every row
    assert made_here(table, threads=1)


def test_bad_input_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="result must be the file the run wrote"):
        record(tmp_path / "missing.csv", "seqbook.experiments.recall", [])
    with pytest.raises(FileNotFoundError, match="result must have a provenance sidecar"):
        read_provenance(tmp_path / "missing.csv")


def test_a_run_that_writes_the_same_rows_again_makes_the_earlier_one_history(tmp_path):
    table = tmp_path / "table.csv"
    table.write_text("mixer,accuracy\nmlstm,1.0\n")
    record(table, "seqbook.experiments.recall", ["--mixers", "mlstm"], threads=1,
           rows="mixers mlstm")
    record(table, "seqbook.experiments.recall", ["--mixers", "lstm"], threads=1,
           rows="mixers lstm")
    record(table, "seqbook.experiments.recall", ["--mixers", "mlstm"], threads=1,
           rows="mixers mlstm")
    runs = read_provenance(table)
    assert _current_runs(table) == [runs[1], runs[2]]
