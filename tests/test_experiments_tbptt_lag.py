"""Truncated BPTT on an 8-step lag: the table of the RNN chapter."""

import pytest
import torch

from seqbook.experiments.results import load_table
from seqbook.experiments.tbptt_lag import (
    LAG,
    SEEDS,
    SETUPS,
    TBPTTRecord,
    bit_stream,
    load_tbptt_table,
    main,
    train_tbptt,
)
from seqbook.provenance import read_provenance


def test_the_committed_table_has_every_setting_from_every_seed():
    rows = load_tbptt_table()
    assert sorted((row.setup, row.seed) for row in rows) == sorted(
        (name, seed) for name in SETUPS for seed in SEEDS)
    for row in rows:
        assert (row.k1, row.k2, row.pieces, row.train_rnn) == SETUPS[row.setup]
        assert row.predictions == 256 * (200 - LAG)


def test_the_target_is_the_bit_lag_steps_back():
    x, y = bit_stream(3, 20, torch.Generator().manual_seed(1))
    assert x.shape == (3, 20, 1) and set(x.unique().tolist()) <= {-1.0, 1.0}
    assert (y[:, :LAG] == -100).all()
    assert torch.equal(y[:, LAG:], (x[:, :-LAG, 0] > 0).long())


def test_a_run_is_repeatable_and_the_control_trains_only_the_readout():
    first = train_tbptt(16, 16, seed=2, pieces=1)
    assert first == train_tbptt(16, 16, seed=2, pieces=1)
    assert first[1] == 16  # 250 steps in chunks of 16
    readout_only = train_tbptt(16, 16, seed=2, pieces=1, train_rnn=False)
    assert readout_only[1] == first[1] and readout_only[0] != first[0]


def test_a_smoke_run_writes_a_readable_table_with_its_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "tbptt_lag.csv"
    records = main(["--smoke", "--seeds", "1", "--out", str(out)])
    assert [(row.setup, row.seed, row.updates) for row in records] == [
        ("TBPTT(16, 16)", 1, 32)]
    written = load_table(out, TBPTTRecord)
    assert written[0].accuracy == pytest.approx(records[0].accuracy, rel=1e-5)
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "2")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
