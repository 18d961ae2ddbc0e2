"""The experiment harness's tasks: what they draw, and bad input."""

import math

import pytest
import torch

from seqbook.experiments import CoincidenceTask, FirstSymbolTask, ValueStreamTask


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --- first symbol --------------------------------------------------------------------


@pytest.mark.parametrize("position", [0, 3, 9])
def test_first_symbol_puts_the_label_at_the_signal_position_only(position):
    task = FirstSymbolTask(10, num_signals=3, num_distractors=5, signal_position=position)
    x, y = task(200, gen())
    assert x.shape == (200, 10, 8) and x.dtype == torch.float32
    assert y.shape == (200,) and y.dtype == torch.int64
    assert torch.all(x.sum(-1) == 1)  # one-hot rows
    symbols = x.argmax(-1)  # (B, T)
    assert torch.equal(symbols[:, position], y)
    others = torch.cat([symbols[:, :position], symbols[:, position + 1 :]], dim=1)
    assert torch.all(others >= 3)  # only distractors elsewhere
    assert set(y.tolist()) == {0, 1, 2} and set(others.flatten().tolist()) == {3, 4, 5, 6, 7}
    assert task.lag == 10 - position and task.input_size == 8 and task.num_classes == 3


def test_first_symbol_is_reproducible_and_position_zero_is_the_original_task():
    a = FirstSymbolTask(6)(4, gen(3))
    b = FirstSymbolTask(6)(4, gen(3))
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    # the chapters' original draw: first the signals, then the distractors
    g = gen(3)
    first = torch.randint(0, 4, (4,), generator=g)
    rest = torch.randint(4, 8, (4, 5), generator=g)
    ids = torch.cat([first[:, None], rest], dim=1)
    assert torch.equal(a[0].argmax(-1), ids) and torch.equal(a[1], first)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(length=0), ValueError, "length"),
        (dict(length=5, num_signals=1), ValueError, "num_signals"),
        (dict(length=5, num_distractors=0), ValueError, "num_distractors"),
        (dict(length=5, signal_position=5), ValueError, "signal_position must be < length = 5"),
        (dict(length=5, signal_position=-1), ValueError, "signal_position must be >= 0"),
        (dict(length=5.0), TypeError, "length"),
    ],
)
def test_first_symbol_rejects_bad_settings(kwargs, error, words):
    with pytest.raises(error, match=words):
        FirstSymbolTask(**kwargs)


def test_tasks_reject_bad_calls():
    for task in (FirstSymbolTask(5), CoincidenceTask(5), ValueStreamTask(30)):
        with pytest.raises(TypeError, match="^generator must be"):
            task(3, 0)
        with pytest.raises(ValueError, match="batch must be >= 1"):
            task(0, gen())
        with pytest.raises(TypeError, match="^batch must be"):
            task(2.0, gen())


# --- coincidence ---------------------------------------------------------------------


def test_coincidence_class_0_has_exactly_one_coincidence_class_1_none():
    x, y = CoincidenceTask(length=40, p_on=0.3)(500, gen(1))
    assert x.shape == (500, 40, 3) and set(x.unique().tolist()) <= {0.0, 1.0}
    both = (x[:, :, 0] * x[:, :, 1]).sum(1)
    assert torch.equal(both, (y == 0).float())
    assert 0.4 < (y == 0).float().mean() < 0.6
    assert abs(x[:, :, 2].mean().item() - 0.3) < 0.02  # the noise feature


@pytest.mark.parametrize("p_on", [0.0, 1.0, -0.1, float("nan")])
def test_coincidence_rejects_bad_probabilities(p_on):
    with pytest.raises(ValueError, match="p_on"):
        CoincidenceTask(p_on=p_on)


# --- value stream --------------------------------------------------------------------


def test_value_stream_targets_are_the_values_at_episode_ends():
    task = ValueStreamTask(length=200, min_gap=5, max_gap=9)
    x, y = task(16, gen(2))
    assert x.shape == (16, 200, 6) and y.shape == (16, 200)
    for b in range(16):
        starts = x[b, :, 0].nonzero().flatten()
        assert starts[0] == 0
        gaps = starts.diff()
        assert gaps.min() >= 5 and gaps.max() <= 9
        targets = (~y[b].isnan()).nonzero().flatten()
        assert torch.equal(targets, starts[1:] - 1)  # just before the next marker
        assert torch.equal(y[b, targets], x[b, starts[:-1], 1])
        # a marker step holds nothing else; other steps hold one distractor
        assert torch.all(x[b, starts, 2:] == 0)
        assert int(x[b, :, 2:].sum()) == 200 - len(starts)
    assert x[:, :, 1].abs().max() <= 1


def test_value_stream_without_continuation_holds_one_episode():
    x, y = ValueStreamTask(length=21, continual=False)(50, gen(3))
    assert torch.all(x[:, :, 0].sum(1) == 1) and torch.all(x[:, 0, 0] == 1)
    assert torch.all((~y.isnan()).sum(1) == 1)
    ends = (~y.isnan()).float().argmax(1)
    assert ends.min() >= 9 and ends.max() <= 19


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(length=20, min_gap=10, max_gap=20),
         r"max_gap must be < length = 20 \(the argument length\), got 20"),
        (dict(min_gap=5, max_gap=4), "max_gap must be >= min_gap = 5"),
        (dict(min_gap=0), "min_gap"),
        (dict(num_distractors=0), "num_distractors"),
    ],
)
def test_value_stream_rejects_bad_settings(kwargs, words):
    with pytest.raises(ValueError, match=words):
        ValueStreamTask(**kwargs)
    with pytest.raises(TypeError, match="^continual must be"):
        ValueStreamTask(continual=1)


@pytest.mark.parametrize("kwargs, name", [
    (dict(length=60.0), "length"), (dict(max_gap=20.0), "max_gap"),
])
def test_value_stream_refuses_sizes_that_are_not_ints(kwargs, name):
    # length bounds max_gap: a length that is no int must not skip that bound
    with pytest.raises(TypeError, match=f"^{name} must be"):
        ValueStreamTask(**kwargs)


def test_value_stream_values_are_uniform():
    x, y = ValueStreamTask(length=400)(32, gen(4))
    values = y[~y.isnan()]
    assert len(values) > 500
    assert abs(values.mean().item()) < 0.1 and abs(values.var().item() - 1 / 3) < 0.05
    assert not math.isnan(values.sum().item())
