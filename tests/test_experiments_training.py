"""The harness's models, losses, training protocol, recurrent layers and tables."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.experiments import (
    FirstSymbolTask,
    LastOutputClassifier,
    LayerSpec,
    RunRecord,
    StepClassifier,
    StepRegressor,
    ValueStreamTask,
    accuracy,
    classify_loss,
    load_chrono_table,
    load_first_symbol_table,
    load_table,
    long_lag_run,
    masked_mse,
    recurrent_layer,
    rmse,
    save_table,
    train_until_solved,
    value_stream_run,
)
from seqbook.recurrent import GRU, LSTM
from seqbook.utils import seed_everything


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small matrices train several times faster on one thread than on two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_classifiers_read_out_the_last_or_every_output():
    seed_everything(0)
    layer = nn.GRU(3, 5, batch_first=True)
    x = torch.randn(4, 7, 3)
    last, step = LastOutputClassifier(layer, 5, 2), StepClassifier(layer, 5, 2)
    step.readout = last.readout
    outputs = layer(x)[0]
    assert torch.allclose(last(x), last.readout(outputs[:, -1]))
    assert torch.allclose(step(x)[:, -1], last(x)) and step(x).shape == (4, 7, 2)


def _hooked(model):
    """The names of ``model``'s modules, and the set a forward hook on each fills."""
    fired = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda m, args, out, name=name: fired.add(name))
    return {name for name, _ in model.named_modules()}, fired


@pytest.mark.parametrize("make", [
    lambda: LastOutputClassifier(nn.GRU(3, 4, batch_first=True), 4, 2),
    lambda: StepClassifier(nn.LSTM(3, 4, batch_first=True), 4, 2),
    lambda: StepRegressor(nn.RNN(3, 4, batch_first=True), 4),
])
def test_a_forward_hook_on_every_submodule_fires_on_a_call_of_the_model(make):
    model = make()
    names, fired = _hooked(model)
    model(torch.randn(2, 5, 3))
    assert fired == names


def test_classify_loss_and_accuracy_equal_torch_with_ignored_positions():
    seed_everything(1)
    model = StepClassifier(nn.LSTM(3, 4, batch_first=True), 4, 3)
    x = torch.randn(5, 6, 3)
    y = torch.randint(0, 3, (5, 6))
    y[:, :3] = -100
    scores = model(x)
    expected = F.cross_entropy(scores.reshape(-1, 3), y.reshape(-1), ignore_index=-100)
    assert torch.allclose(classify_loss(model, (x, y)), expected)
    keep = y != -100
    expected_acc = (scores.argmax(-1)[keep] == y[keep]).float().mean().item()
    assert accuracy(model, x, y) == pytest.approx(expected_acc)


def test_classifier_bad_input():
    with pytest.raises(TypeError, match="^recurrent must be"):
        LastOutputClassifier("lstm", 4, 2)
    with pytest.raises(ValueError, match="batch-first"):
        LastOutputClassifier(nn.LSTM(3, 4), 4, 2)
    with pytest.raises(ValueError, match="num_classes must be >= 1"):
        LastOutputClassifier(nn.LSTM(3, 4, batch_first=True), 4, 0)
    model = LastOutputClassifier(nn.LSTM(3, 4, batch_first=True), 4, 2)
    with pytest.raises(ValueError, match=r"y must hold one label per score vector.*\(5,\)"):
        classify_loss(model, (torch.randn(5, 6, 3), torch.zeros(5, 6, dtype=torch.long)))
    with pytest.raises(TypeError, match="^y must be"):
        accuracy(model, torch.randn(5, 6, 3), torch.zeros(5))
    with pytest.raises(TypeError, match="^x must be"):
        model(torch.randn(6, 3))
    step = StepClassifier(nn.LSTM(3, 4, batch_first=True), 4, 2)
    with pytest.raises(ValueError, match="at least one position"):
        accuracy(step, torch.randn(2, 3, 3), torch.full((2, 3), -100))


def test_train_until_solved_solves_a_short_lag_and_stops_early():
    seed_everything(0)
    task = FirstSymbolTask(3)
    model = LastOutputClassifier(nn.LSTM(8, 16, batch_first=True), 16, 4)
    result = train_until_solved(model, task, seed=0, max_steps=200)
    assert result.solved and result.accuracy > 0.99 and result.steps < 200
    assert result.describe() == f"{result.accuracy:.2f} ({result.steps})"


def test_train_until_solved_reports_an_unsolved_run():
    seed_everything(0)
    model = LastOutputClassifier(nn.RNN(8, 4, batch_first=True), 4, 4)
    result = train_until_solved(model, FirstSymbolTask(30), seed=0, max_steps=25, lr=1e-4)
    assert not result.solved and result.steps == 25 and result.accuracy < 0.5
    assert result.describe() == f"{result.accuracy:.2f}"


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(seed=-1), ValueError, "seed must be >= 0"),
        (dict(max_steps=10), ValueError, "max_steps must be >= check_every = 25"),
        (dict(lr=0.0), ValueError, "lr must be > 0"),
        (dict(target=1.5), ValueError, "target must be <= 1"),
        (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
        (dict(task="first"), TypeError, "^task must be"),
        (dict(model=nn.Linear), TypeError, "^model must be"),
    ],
)
def test_train_until_solved_bad_input(kwargs, error, words):
    args = dict(model=LastOutputClassifier(nn.RNN(8, 4, batch_first=True), 4, 4),
                task=FirstSymbolTask(3), seed=0)
    args.update(kwargs)
    with pytest.raises(error, match=words):
        train_until_solved(**args)


# --- recurrent layers ----------------------------------------------------------------


def test_layer_labels():
    assert LayerSpec("rnn").label == "RNN"
    assert LayerSpec("gru").label == "GRU"
    assert LayerSpec("gru", update_gate_bias=3.0).label == "GRU, b_z = +3"
    assert LayerSpec("lstm").label == "LSTM"
    assert LayerSpec("lstm", forget_gate_bias=1.0).label == "LSTM, b_f = +1"
    assert LayerSpec("lstm", forget_gate_bias=3.0, input_gate_bias=-2.0).label == (
        "LSTM, b_f = +3, b_i = -2")
    assert LayerSpec("lstm", forget_gate=False).label == "LSTM 1997, b_i = 0"
    assert LayerSpec("lstm", chrono_t_max=100).label == "LSTM, chrono T_max = 100"


def test_recurrent_layers_are_the_books_modules_with_shifted_biases():
    x = torch.randn(2, 9, 5)
    seed_everything(3)
    fused = recurrent_layer(LayerSpec("lstm", forget_gate_bias=1.0, input_gate_bias=-2.0), 5, 6)
    seed_everything(3)
    ours = LSTM(5, 6, input_gate_bias=-2.0)
    with torch.no_grad():
        ours.b_f.add_(1.0)
    assert isinstance(fused, nn.LSTM) and fused.batch_first
    assert torch.allclose(fused(x)[0], ours(x)[0], atol=1e-6)
    seed_everything(4)
    fused = recurrent_layer(LayerSpec("gru", update_gate_bias=3.0), 5, 6)
    seed_everything(4)
    gru = GRU(5, 6)
    with torch.no_grad():
        gru.b_z.add_(3.0)
    assert isinstance(fused, nn.GRU) and torch.allclose(fused(x)[0], gru(x)[0], atol=1e-6)
    old = recurrent_layer(LayerSpec("lstm", forget_gate=False), 5, 6)
    f = torch.sigmoid((old.bias_ih_l0 + old.bias_hh_l0)[6:12])
    assert torch.all(f == 1) and not old.weight_hh_l0[6:12].any()  # pinned open
    assert isinstance(recurrent_layer(LayerSpec("rnn"), 5, 6), nn.RNN)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(kind="transformer"), ValueError, "kind must be one of"),
        (dict(kind="gru", forget_gate_bias=1.0), ValueError, "LSTM options"),
        (dict(kind="rnn", forget_gate=False), ValueError, "LSTM options"),
        (dict(kind="lstm", update_gate_bias=1.0), ValueError, "GRU option"),
        (dict(kind="lstm", forget_gate=False, forget_gate_bias=1.0), ValueError,
         "forget_gate=True"),
        (dict(kind="lstm", input_gate_bias=float("inf")), ValueError, "finite"),
        (dict(kind="lstm", forget_gate=1), TypeError, "^forget_gate must be"),
        (dict(kind="lstm", input_gate_bias="-2"), TypeError, "^input_gate_bias must be"),
        (dict(kind="lstm", chrono_t_max=1.0), ValueError, "chrono_t_max must be 0"),
        (dict(kind="lstm", chrono_t_max=float("inf")), ValueError, "chrono_t_max must be finite"),
        (dict(kind="lstm", chrono_t_max=-5.0), ValueError,
         r"chrono_t_max must be 0 \(off\) or >= 2"),
        (dict(kind="gru", chrono_t_max=100.0), ValueError, "LSTM with forget gate"),
        (dict(kind="lstm", forget_gate=False, chrono_t_max=100.0), ValueError,
         "LSTM with forget gate"),
        (dict(kind="lstm", forget_gate_bias=1.0, chrono_t_max=100.0), ValueError,
         "replaces b_i and b_f"),
        (dict(kind="lstm", chrono_t_max="100"), TypeError, "^chrono_t_max must be"),
    ],
)
def test_layer_spec_bad_input(kwargs, error, words):
    with pytest.raises(error, match=words):
        LayerSpec(**kwargs)


def test_recurrent_layer_bad_input():
    with pytest.raises(TypeError, match="^spec must be .*LayerSpec"):
        recurrent_layer("lstm", 3, 4)
    with pytest.raises(ValueError, match="hidden_size must be >= 1"):
        recurrent_layer(LayerSpec("lstm"), 3, 0)


def test_long_lag_run_is_reproducible():
    spec = LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0)
    a = long_lag_run(spec, T=8, seed=1, max_steps=50)
    b = long_lag_run(spec, T=8, seed=1, max_steps=50)
    assert a == b


# --- value streams -------------------------------------------------------------------


def test_masked_mse_equals_torch_on_the_labelled_steps():
    seed_everything(5)
    model = StepRegressor(nn.GRU(6, 4, batch_first=True), 4)
    x, y = ValueStreamTask(length=40)(3, torch.Generator().manual_seed(0))
    keep = ~y.isnan()
    expected = F.mse_loss(model(x)[keep], y[keep])
    assert torch.allclose(masked_mse(model, (x, y)), expected)
    assert rmse(model, x, y) == pytest.approx(expected.sqrt().item(), rel=1e-6)


def test_masked_mse_bad_input():
    model = StepRegressor(nn.GRU(6, 4, batch_first=True), 4)
    x = torch.randn(2, 30, 6)
    with pytest.raises(ValueError, match="at least one target"):
        masked_mse(model, (x, torch.full((2, 30), float("nan"))))
    with pytest.raises(TypeError, match="^batch must be"):  # y's T is not x's
        masked_mse(model, (x, torch.zeros(2, 29)))
    with pytest.raises(TypeError, match="^batch must be"):  # integer targets
        masked_mse(model, (x, torch.zeros(2, 30, dtype=torch.long)))


def test_value_stream_run_trains_and_measures_three_errors():
    record, model = value_stream_run(LayerSpec("lstm", forget_gate_bias=1.0), seed=0, steps=30,
                                     train_length=40, long_length=80, eval_size=8)
    assert record.label == "LSTM, b_f = +1" and record.steps == 30
    assert 0 < record.rmse_episodes < 1 and 0 < record.rmse_long < 1
    assert record.spec == LayerSpec("lstm", forget_gate_bias=1.0)
    again, _ = value_stream_run(record.spec, seed=0, steps=30, train_length=40,
                                long_length=80, eval_size=8)
    assert again.rmse_long == record.rmse_long
    with pytest.raises(TypeError, match="^spec must be .*LayerSpec"):
        value_stream_run("lstm", 0)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        value_stream_run(record.spec, 0, steps=0)


# --- tables --------------------------------------------------------------------------


def test_tables_round_trip(tmp_path):
    rows = [RunRecord("RNN", "rnn", True, 0.0, 0.0, 0.0, "first_symbol", 10, s, 150,
                      0.25 + s / 10, 150, False, 1.5) for s in range(3)]
    save_table(rows, tmp_path / "t.csv")
    assert load_table(tmp_path / "t.csv", RunRecord) == rows
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_table(tmp_path / "missing.csv", RunRecord)
    with pytest.raises(TypeError, match="record_type must be a dataclass"):
        load_table(tmp_path / "t.csv", dict)
    with pytest.raises(TypeError, match="non-empty sequence of dataclass"):
        save_table([], tmp_path / "u.csv")
    from seqbook.experiments import ValueStreamRecord

    with pytest.raises(ValueError, match="has columns"):
        load_table(tmp_path / "t.csv", ValueStreamRecord)
    chrono = load_chrono_table()  # the committed table: a chrono spec in every row
    assert chrono and all(row.spec == LayerSpec("lstm", chrono_t_max=100.0) for row in chrono)
    assert all(row.chrono_t_max == 0 for row in load_first_symbol_table())
    mixed = [rows[0], copy.copy(rows[1]), "row"]
    with pytest.raises(TypeError, match="must all be RunRecord"):
        save_table(mixed, tmp_path / "v.csv")


def test_runs_use_one_thread_and_restore_the_count():
    from seqbook.experiments._common import one_thread

    torch.set_num_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        long_lag_run(LayerSpec("rnn"), T=3, seed=0, hidden_size=4, max_steps=25)
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), one_thread():
            raise RuntimeError("restored even on errors")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


@pytest.mark.parametrize("clip, error", [(0.0, ValueError), ("1", TypeError)])
def test_train_until_solved_checks_clip_once_up_front(clip, error):
    # clip is checked at the boundary, before any training
    model = LastOutputClassifier(nn.RNN(8, 4, batch_first=True), 4, 4)
    with pytest.raises(error, match="clip must be"):
        train_until_solved(model, FirstSymbolTask(3), seed=0, max_steps=25, clip=clip)
