"""The histograms of an unsmoothed transformer's logits, for the transformer chapter."""

import numpy as np
import pytest
import torch

from seqbook.experiments.results import load_table
from seqbook.experiments.smoothing_logits import (
    GAP_EDGES,
    LEFTOVER_EDGES,
    SEEDS,
    LogitHistogramRecord,
    load_smoothing_logits,
    logit_histograms,
    main,
)
from seqbook.provenance import read_provenance


def test_the_committed_table_has_both_histograms_for_every_seed():
    for seed in SEEDS:
        hist = load_smoothing_logits(seed)
        gap_counts, gap_edges = hist["gap"]
        leftover_counts, leftover_edges = hist["leftover"]
        assert gap_edges == pytest.approx(GAP_EDGES, rel=1e-5)
        assert leftover_edges == pytest.approx(LEFTOVER_EDGES, rel=1e-5)
        assert gap_counts.sum() > 1000  # every test token, clipped into range
        assert 0 < leftover_counts.sum() <= gap_counts.sum()


def test_histograms_count_every_gap_and_drop_leftovers_out_of_range():
    confidence = torch.tensor([0.5, 0.999999, 0.9])
    gap = torch.tensor([-1.0, 3.0, 100.0])
    counts = logit_histograms(confidence, gap)
    assert counts["gap"][0] == 1 and counts["gap"][-1] == 1 and counts["gap"].sum() == 3
    assert counts["leftover"].sum() == 2  # 1e-6 is below the first edge
    assert len(counts["leftover"]) == len(LEFTOVER_EDGES) - 1


def test_a_smoke_run_writes_a_readable_table_with_its_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "smoothing_logits.csv"
    records = main(["--smoke", "--seeds", "2", "--out", str(out)])
    assert {(row.seed, row.quantity) for row in records} == {(2, "gap"), (2, "leftover")}
    written = load_table(out, LogitHistogramRecord)
    assert [row.count for row in written] == [row.count for row in records]
    gaps = np.array([row.count for row in records if row.quantity == "gap"])
    assert gaps.sum() > 0
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "1")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
