"""Counting a^n b^n with a GRU and two LSTMs: the table of the GRU chapter."""

import pytest
import torch
from torch import nn

from seqbook.experiments.classifier import StepClassifier
from seqbook.experiments.counting import (
    CHECKPOINT,
    NETWORKS,
    RESULTS,
    SEEDS,
    TEST_MAX_N,
    TRAIN_MAX_N,
    CountingRecord,
    anbn_batch,
    largest_n,
    load_counting_model,
    load_counting_table,
    main,
    recognised,
    train_counter,
)
from seqbook.experiments.results import load_table
from seqbook.provenance import read_provenance


def test_the_strings_and_their_labels():
    x, y = anbn_batch([3, 1], length=8)
    assert x.shape == (2, 8, 2) and y.shape == (2, 8)
    assert x[0, :3, 0].eq(1).all() and x[0, 3:6, 1].eq(1).all()
    assert x[0, 6:].eq(0).all() and x[1, 2:].eq(0).all()
    assert y[0].tolist() == [-100, -100, -100, 0, 0, 1, -100, -100]
    assert y[1].tolist() == [-100, 1] + [-100] * 6


@pytest.mark.parametrize("ns, length, error", [
    ([], None, TypeError), ("ab", None, TypeError), (3, None, TypeError),
    ([0, 2], None, ValueError), ([2.0], None, TypeError), ([3], 5, ValueError),
    ([3], 6.0, TypeError),
])
def test_bad_strings_are_refused(ns, length, error):
    with pytest.raises(error, match="ns|length"):
        anbn_batch(ns, length)


def test_a_hand_built_lstm_counter_recognises_every_n():
    # the counter of the chapter: f = 1, i = 1, cell input +1 on a and -1 on b
    # (unit 0 counts; unit 1 is left at zero)
    lstm = nn.LSTM(2, 2, batch_first=True)
    with torch.no_grad():
        for p in lstm.parameters():
            p.zero_()
        i, f, g, o = (slice(2 * k, 2 * k + 2) for k in range(4))
        lstm.bias_ih_l0[i] = 50.0
        lstm.bias_ih_l0[f] = 50.0
        lstm.bias_ih_l0[o] = 50.0
        lstm.weight_ih_l0[g] = torch.tensor([[20.0, -20.0], [0.0, 0.0]])
    model = StepClassifier(lstm, 2, 2)
    with torch.no_grad():       # "end" when the count is 0 after a b
        model.readout.weight.copy_(torch.tensor([[20.0, 0.0], [-40.0, 0.0]]))
        model.readout.bias.copy_(torch.tensor([0.0, 5.0]))
    x, _ = anbn_batch([50])
    with torch.no_grad():
        c = lstm(x)[1][1][0, 0, 0].item()        # a^50 b^50: the count is back at 0
    assert c == pytest.approx(0.0, abs=1e-4)
    assert recognised(model, TEST_MAX_N).all()


def test_the_largest_n_is_the_last_before_the_first_failure():
    assert largest_n(torch.tensor([True, True, False, True])) == 2
    assert largest_n(torch.tensor([False, True])) == 0
    assert largest_n(torch.ones(7, dtype=torch.bool)) == 7
    for bad in ([True, False], torch.tensor([1, 0]), torch.ones(2, 2).bool()):
        with pytest.raises(TypeError, match="ok"):
            largest_n(bad)


def test_recognised_refuses_a_bad_max_n():
    model = StepClassifier(nn.GRU(2, 4, batch_first=True), 4, 2)
    with pytest.raises(ValueError, match="max_n"):
        recognised(model, 0)


def test_training_is_repeatable_and_refuses_unknown_networks():
    first = train_counter("GRU", seed=1, steps=3)
    again = train_counter("GRU", seed=1, steps=3)
    for p, q in zip(first.parameters(), again.parameters(), strict=True):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="network"):
        train_counter("RNN")
    with pytest.raises(ValueError, match="steps"):
        train_counter("GRU", steps=0)


def test_the_committed_table_and_weights_agree():
    rows = load_counting_table()
    assert sorted((row.network, row.seed) for row in rows) == sorted(
        (name, seed) for name in NETWORKS for seed in SEEDS)
    for row in rows:
        assert row.train_max_n == TRAIN_MAX_N and len(row.recognised_bits) == TEST_MAX_N
        assert row.recognised_bits.startswith("1" * row.largest_n)
    row = next(r for r in rows if r.network == "LSTM 1997" and r.seed == 0)
    ok = recognised(load_counting_model("LSTM 1997", 0))
    assert largest_n(ok) == row.largest_n
    assert "".join("1" if b else "0" for b in ok.tolist()) == row.recognised_bits
    assert read_provenance(RESULTS) and read_provenance(CHECKPOINT)
    with pytest.raises(ValueError, match="network"):
        load_counting_model("RNN")
    with pytest.raises(ValueError, match="seed"):
        load_counting_model("GRU", 99)


def test_a_smoke_run_writes_a_table_weights_and_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "counting.csv"
    records = main(["--smoke", "--seeds", "1", "--out", str(out)])
    assert [(row.network, row.seed, row.steps) for row in records] == [
        (name, 1, 5) for name in NETWORKS]
    written = load_table(out, CountingRecord)
    assert [row.recognised_bits for row in written] == [
        row.recognised_bits for row in records]
    model = load_counting_model("GRU", 1, path=tmp_path / "counting_weights.json")
    assert isinstance(model, StepClassifier)
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))
    assert read_provenance(tmp_path / "counting_weights.json")


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "2")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
