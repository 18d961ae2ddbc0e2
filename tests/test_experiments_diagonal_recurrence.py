"""The first-symbol task with diagonal recurrent matrices: the LSTM chapter's table."""

import pytest
import torch
from torch import nn

from seqbook.experiments import LayerSpec, long_lag_run
from seqbook.experiments.diagonal_recurrence import (
    DIAGONAL_SUFFIX,
    SEEDS,
    SPECS,
    TS,
    diagonal_lag_run,
    diagonal_recurrence,
    load_diagonal_table,
    main,
)
from seqbook.provenance import read_provenance


def _off_diagonal(layer: nn.LSTM) -> torch.Tensor:
    H = layer.hidden_size
    blocks = layer.weight_hh_l0.detach().reshape(4, H, H)
    return blocks * (1 - torch.eye(H))


def test_the_committed_table_has_every_cell_from_every_seed():
    rows = load_diagonal_table()
    expected = sorted((spec.label + suffix, T, seed) for spec in SPECS
                      for suffix in ("", DIAGONAL_SUFFIX) for T in TS for seed in SEEDS)
    assert sorted((row.label, row.T, row.seed) for row in rows) == expected
    assert read_provenance(
        "seqbook/experiments/results/diagonal_recurrence.csv")[-1]["threads"] == 1


def test_a_diagonal_layer_stays_diagonal_while_it_trains():
    torch.manual_seed(0)
    layer = diagonal_recurrence(nn.LSTM(3, 4, batch_first=True))
    assert _off_diagonal(layer).abs().max() == 0
    diagonal_before = torch.diagonal(
        layer.weight_hh_l0.detach().reshape(4, 4, 4), dim1=1, dim2=2).clone()
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        layer(torch.randn(2, 5, 3))[0].pow(2).sum().backward()
        optimizer.step()
    assert _off_diagonal(layer).abs().max() == 0
    diagonal_after = torch.diagonal(layer.weight_hh_l0.detach().reshape(4, 4, 4), dim1=1, dim2=2)
    assert not torch.equal(diagonal_before, diagonal_after)  # the diagonal learns


def test_without_diagonal_the_run_is_the_first_symbol_tables_run():
    spec = LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0)
    ours = diagonal_lag_run(spec, T=5, seed=3, diagonal=False, hidden_size=4, max_steps=25)
    assert ours == long_lag_run(spec, T=5, seed=3, hidden_size=4, max_steps=25)


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="layer must be"):
        diagonal_recurrence(nn.GRU(2, 3))
    with pytest.raises(ValueError, match="layer must have one layer"):
        diagonal_recurrence(nn.LSTM(2, 3, num_layers=2))
    with pytest.raises(ValueError, match="spec must be an LSTM"):
        diagonal_lag_run(LayerSpec("gru"), T=5, seed=0)


def test_the_script_runs(tmp_path):
    out = tmp_path / "table.csv"
    rows = main(["--smoke", "--out", str(out)])
    assert [row.label for row in rows] == [SPECS[0].label, SPECS[0].label + DIAGONAL_SUFFIX]
    assert out.is_file()
