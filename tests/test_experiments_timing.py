"""The harness's forward and backward passes, timed and counted by seqbook.costs."""

import pytest
import torch
from torch import nn

from seqbook.recurrent import RNN


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small matrices: one thread, as in the chapters (and timings stay steady)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

from seqbook.costs import count_flops, cpu_seconds
from seqbook.experiments import forward_backward, forward_backward_ms


@pytest.mark.slow  # the flop counter's first use takes seconds (it loads its rules)
def test_count_flops_counts_the_recurrent_layers_matrix_products_exactly():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert count_flops(lambda: a @ b) == 2 * 3 * 4 * 5
    rnn, fused = RNN(2, 3), nn.LSTM(2, 3, batch_first=True)
    x = torch.randn(1, 4, 2)
    # our RNN: W_xh x for all steps at once, then W_hh h per step
    assert count_flops(lambda: rnn(x)) == 2 * 4 * 2 * 3 + 4 * 2 * 3 * 3
    assert count_flops(lambda: fused(x)) == 0  # a fused kernel is not counted


def test_cpu_seconds_orders_work_and_takes_the_minimum():
    small, large = cpu_seconds([lambda: sum(range(100)), lambda: sum(range(200_000))], 3)
    assert 0 <= small < large


def test_forward_backward_accumulates_gradients():
    layer = nn.GRU(2, 3, batch_first=True)
    forward_backward(layer, torch.randn(2, 5, 2))()
    assert layer.weight_hh_l0.grad is not None
    assert forward_backward_ms(layer, torch.randn(2, 5, 2), repeats=2) > 0


def test_timing_bad_input():
    with pytest.raises(TypeError, match="^module must be"):
        forward_backward(lambda x: x, torch.randn(1))
    with pytest.raises(TypeError, match="^x must be"):
        forward_backward(nn.GRU(2, 3), torch.zeros(1, 2, dtype=torch.long))
