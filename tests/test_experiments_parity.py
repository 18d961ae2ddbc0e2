"""Parity with the sLSTM, the sLSTM without memory mixing, the mLSTM and linear
attention: the task, the models, the run and the xLSTM chapter's table."""

import pytest
import torch

from seqbook.experiments.parity import (
    GRID,
    MODELS,
    RESULTS,
    SEEDS,
    TEST_LENGTHS,
    ParityTask,
    load_parity_table,
    main,
    parity_accuracy,
    parity_classifier,
    parity_run,
)
from seqbook.experiments.results import load_table
from seqbook.provenance import read_provenance
from seqbook.xlstm import SLSTM


def test_the_targets_are_the_running_parity():
    x, y = ParityTask(40)(64, torch.Generator().manual_seed(0))
    assert x.shape == (64, 40, 2) and y.shape == (64, 40)
    assert (x.sum(-1) == 1).all()  # one-hot bits
    bits = x[..., 1].long()
    for t in (0, 7, 39):
        assert (y[:, t] == bits[:, : t + 1].sum(1) % 2).all()
    again = ParityTask(40)(64, torch.Generator().manual_seed(0))
    assert all((a == b).all() for a, b in zip((x, y), again))


def test_every_model_reads_every_step_and_the_ablation_has_no_recurrent_matrix():
    x = torch.randn(3, 7, 2)
    for model in MODELS:
        for readout in ("linear", "mlp"):
            assert parity_classifier(model, 8, readout)(x).shape == (3, 7, 2)
    mixing, ablated = parity_classifier("slstm", 8), parity_classifier("slstm_no_mixing", 8)
    assert isinstance(ablated.rnn, SLSTM) and ablated.rnn.W_h.eq(0).all()
    assert not ablated.rnn.W_h.requires_grad and mixing.rnn.W_h.requires_grad
    assert mixing.rnn.W_h.abs().sum() > 0


def test_without_memory_mixing_the_output_at_t_does_not_depend_on_earlier_gates():
    # W_h = 0: the gates at step t see x_t only, so two strings that end alike are
    # told apart only through the cell's sum of writes, never through h_{t-1}
    net = parity_classifier("slstm_no_mixing", 8).double()
    layer, g = net.rnn, torch.Generator().manual_seed(3)
    x = torch.nn.functional.one_hot(torch.randint(0, 2, (4, 9), generator=g), 2).double()
    _, state = layer(x[:, :8])
    pre = x[:, 8] @ layer.W_x.T + layer.b
    other = state._replace(h=torch.randn(4, 8, generator=g, dtype=torch.float64))
    assert torch.equal(SLSTM.step(pre + state.h @ layer.W_h.T, state).c,
                       SLSTM.step(pre + other.h @ layer.W_h.T, other).c)
    optimizer = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=1.0)
    net(x).sum().backward()
    optimizer.step()
    assert layer.W_h.eq(0).all() and layer.W_h.grad is None  # never trained


def test_a_run_at_some_lengths_repeats_those_rows_of_a_run_at_all():
    some = parity_run("linear", 0, steps=3, test_lengths=(8,))
    every = parity_run("linear", 0, steps=3, test_lengths=(4, 8, 16))
    assert [r.test_length for r in every] == [4, 8, 16]
    assert some[0].accuracy == every[1].accuracy
    assert some[0].train_loss == every[1].train_loss


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="length must be >= 1"):
        ParityTask(0)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        ParityTask(4)(0, torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        ParityTask(4)(2, 0)
    with pytest.raises(ValueError, match="model must be one of"):
        parity_classifier("mamba")
    with pytest.raises(ValueError, match="readout must be one of"):
        parity_classifier("slstm", readout="attention")
    with pytest.raises(ValueError, match="hidden_size must be >= 1"):
        parity_classifier("slstm", 0)
    with pytest.raises(ValueError, match="strings must be >= 1"):
        parity_accuracy(parity_classifier("linear", 4), 8, strings=0)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        parity_run("linear", steps=0)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        parity_run("linear", seed=-1, steps=1)
    with pytest.raises(ValueError, match="test_lengths must hold"):
        parity_run("linear", steps=1, test_lengths=())
    with pytest.raises(ValueError, match="test_lengths must be >= 1"):
        parity_run("linear", steps=1, test_lengths=(4, 0))
    with pytest.raises(TypeError, match="test_lengths must be"):
        parity_run("linear", steps=1, test_lengths=(4.5,))


def test_the_smoke_run_writes_a_table_and_its_provenance(tmp_path):
    out = tmp_path / "parity.csv"
    records = main(["--smoke", "--seeds", "0", "--out", str(out)])
    assert load_table(out, type(records[0])) == records
    assert [r.test_length for r in records] == list(TEST_LENGTHS)
    assert read_provenance(out)[-1]["command"].endswith(f"--out {out}")


def test_the_committed_table_has_every_model_seed_and_length():
    rows = load_parity_table()
    cells = sorted((r.model, r.readout, r.seed, r.test_length) for r in rows)
    assert cells == sorted((m, r, s, n) for m, r in GRID for s in SEEDS for n in TEST_LENGTHS)
    assert read_provenance(RESULTS)[-1]["command"].startswith(
        "python -m seqbook.experiments.parity")
