"""The ring and next-symbol seed table of the chapter on deep and bidirectional RNNs."""

import pytest

from seqbook.experiments.depth_direction import (
    P_RULE,
    ROWS,
    SEEDS,
    DepthDirectionRecord,
    accuracy_as_generated,
    load_depth_direction_table,
    main,
    next_accuracy,
    next_symbol_tagger,
    ring_contestant,
    symbols,
)
from seqbook.experiments.results import load_table
from seqbook.provenance import read_provenance
from seqbook.utils import seeded_generator


def test_the_committed_table_has_every_row_from_every_seed():
    rows = load_depth_direction_table()
    assert sorted((row.row, row.seed) for row in rows) == sorted(
        (name, seed) for name in ROWS for seed in SEEDS)
    for row in rows:
        assert row.steps == (300 if row.row.startswith("ring") else 100)
        assert (row.accuracy_cut >= 0) == row.row.startswith("generation")


def test_a_run_is_repeatable():
    first = ring_contestant(2, 6, seed=3, steps=5)[1]
    assert ring_contestant(2, 6, seed=3, steps=5)[1] == first


def test_a_left_to_right_tagger_scores_the_same_cut_and_whole():
    model = next_symbol_tagger(False, seed=1, p_next=P_RULE, steps=5)
    batch = symbols(64, seeded_generator(2), p_next=P_RULE)
    assert accuracy_as_generated(model, batch) == pytest.approx(next_accuracy(model, batch))


def test_a_smoke_run_writes_a_readable_table_with_its_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "depth_direction.csv"
    records = main(["--smoke", "--seeds", "2", "--out", str(out)])
    assert [(row.row, row.seed, row.steps) for row in records] == [
        ("ring: 2 layers, H = 12", 2, 5), ("generation: both ways", 2, 5)]
    written = load_table(out, DepthDirectionRecord)
    assert [row.accuracy for row in written] == pytest.approx(
        [row.accuracy for row in records], rel=1e-5)
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "1")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
