"""The plain RNN's long-lag and clipping table of the vanishing-gradients chapter."""

import pytest

from seqbook.experiments.results import load_table
from seqbook.experiments.vanishing_lag import (
    ROWS,
    SEEDS,
    VanishingLagRecord,
    load_vanishing_lag_table,
    main,
    train_long_lag,
)
from seqbook.provenance import read_provenance


def test_the_committed_table_has_every_row_from_every_seed():
    rows = load_vanishing_lag_table()
    assert sorted((row.row, row.seed) for row in rows) == sorted(
        (name, seed) for name in ROWS for seed in SEEDS)
    assert all(row.steps == 300 for row in rows)
    for row in rows:
        task, clip, radius = ROWS[row.row]
        assert (row.T, row.signal_position) == (task.length, task.signal_position)
        assert (row.clip, row.radius) == (clip or 0.0, radius or 0.0)


def test_a_run_is_repeatable_and_clipping_bounds_what_the_optimizer_sees():
    task, clip, radius = ROWS["radius 3, clipped at 1"]
    first = train_long_lag(task, clip, radius, seed=3, steps=30)
    again = train_long_lag(task, clip, radius, seed=3, steps=30)
    assert first[:2] == again[:2] and first[2].grad_norm == again[2].grad_norm
    assert first[1] > 1  # spectral radius 3: the gradient grows back in time
    assert max(first[2].grad_norm) > 1  # norms are recorded before clipping


def test_a_smoke_run_writes_a_readable_table_with_its_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "vanishing_lag.csv"
    records = main(["--smoke", "--seeds", "2", "--out", str(out)])
    assert [(row.row, row.seed, row.steps) for row in records] == [
        ("T = 5", 2, 30), ("radius 3, no clipping", 2, 30)]
    written = load_table(out, VanishingLagRecord)  # floats to 6 significant digits
    assert [(row.row, row.seed) for row in written] == [(r.row, r.seed) for r in records]
    assert [row.reach for row in written] == pytest.approx(
        [row.reach for row in records], rel=1e-5)
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "1")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
