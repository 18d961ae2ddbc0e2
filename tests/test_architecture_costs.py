"""The cost-table layers and measurements: against torch twins and exact formulas."""

import math

import pytest
import torch
from torch import nn

from seqbook.attention import MultiHeadAttention
from seqbook.costs import (
    CausalConvolution,
    SelfAttentionLayer,
    attention_stack,
    convolution_stack,
    count_flops,
    count_operations,
    cpu_seconds,
    path_length,
    power_law_exponent,
)
from seqbook.recurrent import RNN


@pytest.mark.parametrize("kernel_size, dilation", [(1, 1), (3, 1), (2, 4), (4, 3)])
@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_causal_convolution_equals_torch_conv1d(kernel_size, dilation, dtype, atol):
    torch.manual_seed(0)
    padding = (kernel_size - 1) * dilation
    reference = nn.Conv1d(6, 6, kernel_size, dilation=dilation, padding=padding).to(dtype)
    ours = CausalConvolution.from_torch(reference)
    x = torch.randn(3, 11, 6, dtype=dtype)                     # (B, n, d)
    expected = reference(x.transpose(1, 2))[:, :, :11].transpose(1, 2)
    got = ours(x)
    assert got.dtype == dtype
    assert torch.allclose(got, expected, atol=atol, rtol=0)


def test_causal_convolution_reads_exactly_its_taps():
    torch.manual_seed(0)
    conv = CausalConvolution(4, kernel_size=3, dilation=2)
    x = torch.randn(1, 12, 4, requires_grad=True)
    conv(x)[0, 9].sum().backward()
    read = (x.grad[0].abs().sum(1) > 0).nonzero().flatten().tolist()
    assert read == [5, 7, 9]                 # t, t - 2, t - 4


def test_causal_convolution_bad_input():
    conv = CausalConvolution(4)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B n \{self.d\}'\], got "
                       r"f32\[1,5,3\].*existing value of \{self.d\}=4"):
        conv(torch.randn(1, 5, 3))
    with pytest.raises(TypeError, match=r"^x must be .*, got f32\[5,4\].*2 dimensions"):
        conv(torch.randn(5, 4))
    with pytest.raises(ValueError, match="kernel_size must be >= 1"):
        CausalConvolution(4, kernel_size=0)
    with pytest.raises(TypeError, match="^module must be .*Conv1d, got Linear"):
        CausalConvolution.from_torch(nn.Linear(3, 3))
    with pytest.raises(ValueError, match="map d channels to d channels"):
        CausalConvolution.from_torch(nn.Conv1d(3, 4, 2))
    with pytest.raises(ValueError, match="groups=1 and stride=1"):
        CausalConvolution.from_torch(nn.Conv1d(4, 4, 2, stride=2))


def test_self_attention_layer_is_multi_head_attention_of_x_with_itself():
    torch.manual_seed(0)
    layer = SelfAttentionLayer(8, num_heads=2)
    x = torch.randn(2, 5, 8)
    assert torch.equal(layer(x), layer.attention(x, x, x)[0])
    torch_mha = nn.MultiheadAttention(8, 2, batch_first=True)
    layer.attention = MultiHeadAttention.from_torch(torch_mha)
    assert torch.allclose(layer(x), torch_mha(x, x, x)[0], atol=1e-6)
    causal = SelfAttentionLayer(8, num_heads=2, causal=True)
    changed = x.clone()
    changed[:, 3] += 1
    assert torch.equal(causal(x)[:, :3], causal(changed)[:, :3])
    assert not torch.equal(layer(x)[:, :3], layer(changed)[:, :3])
    with pytest.raises(TypeError, match="^causal must be bool, got 1"):
        SelfAttentionLayer(8, 2, causal=1)


def test_flops_follow_the_formulas_of_the_cost_table():
    B, n, d, k = 2, 10, 8, 3
    x = torch.randn(B, n, d)
    attention = SelfAttentionLayer(d, num_heads=2)
    # four d x d projections per position, and Q K^T and weights @ V: n^2 d each
    expected = 4 * 2 * B * n * d * d + 2 * 2 * B * n * n * d
    assert count_flops(lambda: attention(x)) == expected
    rnn = RNN(d, d)
    assert count_flops(lambda: rnn(x)) == 2 * 2 * B * n * d * d       # W_xh x, W_hh h
    conv = CausalConvolution(d, k)
    assert count_flops(lambda: conv(x)) == k * 2 * B * n * d * d


def test_operations_run_one_after_another():
    d = 8
    attention, rnn, conv = SelfAttentionLayer(d, 2), RNN(d, d), CausalConvolution(d)
    torch_rnn = nn.RNN(d, d, batch_first=True)
    counts = {name: [count_operations(lambda: f(torch.randn(1, n, d))) for n in (10, 20, 40)]
              for name, f in (("attention", attention), ("rnn", rnn), ("conv", conv),
                              ("torch_rnn", torch_rnn))}
    assert counts["attention"][0] == counts["attention"][2]
    assert counts["conv"][0] == counts["conv"][2]
    for name in ("rnn", "torch_rnn"):        # a loop over time, in Python or in C++
        a, b, c = counts[name]
        assert b - a == (c - b) / 2 > 0


@pytest.mark.parametrize("n", [8, 17, 32])
def test_path_lengths(n):
    torch.manual_seed(0)
    d = 4
    x = torch.randn(1, n, d)
    in_stack = lambda stack: (lambda x, depth: stack[:depth](x))
    assert path_length(in_stack(attention_stack(d, 3, num_heads=2)), x, 3) == 1
    contiguous = convolution_stack(d, n, kernel_size=3)
    assert path_length(in_stack(contiguous), x, n) == math.ceil((n - 1) / 2)
    dilated = convolution_stack(d, 6, kernel_size=2, dilated=True)
    assert path_length(in_stack(dilated), x, 6) == math.ceil(math.log2(n))
    rnn = RNN(d, d)

    def last_steps(x, depth):   # the state is cut `depth` steps before the end
        h, outputs = torch.zeros(1, d), []
        for t in range(n):
            h = rnn.cell(x[:, t], h.detach() if t == n - depth else h)
            outputs.append(h)
        return torch.stack(outputs, 1)

    assert path_length(last_steps, x, n) == n
    assert path_length(last_steps, x, n - 1) == n       # not reached: max_depth + 1


def test_power_law_exponent_and_bad_input():
    sizes = [16, 32, 64, 128]
    assert math.isclose(power_law_exponent(sizes, [5 * s**1.5 for s in sizes]), 1.5)
    # the fit uses the largest sizes only: a fixed cost at small sizes is ignored
    assert math.isclose(power_law_exponent(sizes, [100, 64, 128, 256]), 1.0)
    with pytest.raises(ValueError, match="same length"):
        power_law_exponent([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="positive"):
        power_law_exponent([1, 2, 3], [1, 0, 2])
    with pytest.raises(ValueError, match="last must be >= 2"):
        power_law_exponent([1, 2, 3], [1, 2, 3], last=1)


def test_measuring_functions_reject_what_they_cannot_run():
    with pytest.raises(TypeError, match=r"^fn must be .*Callable\[\[\], Any\], got 3"):
        count_flops(3)
    with pytest.raises(TypeError, match="^fn must be .*Callable"):
        count_operations("x")
    with pytest.raises(TypeError, match="^fns must be .*Sequence"):
        cpu_seconds([1, 2])
    with pytest.raises(TypeError, match=r"^fns must be .*Callable.*: list index 1 item int 2"):
        cpu_seconds([lambda: None, 2])            # every item, not one drawn at random
    with pytest.raises(TypeError, match="^fns must be .*Sequence"):
        cpu_seconds(3)
    with pytest.raises(TypeError, match="^output_at_depth must be .*Callable"):
        path_length(3, torch.randn(1, 3, 2), 2)
    with pytest.raises(TypeError, match=r"^output_at_depth must be callable as "
                       r"output_at_depth\(x, depth\) \(with 2 positional arguments\)"):
        path_length(lambda x: x, torch.randn(1, 3, 2), 2)
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        cpu_seconds([lambda: None], repeats=0)
    with pytest.raises(ValueError, match="max_depth must be >= 1"):
        path_length(lambda x, depth: x, torch.randn(1, 3, 2), 0)
    times = cpu_seconds([lambda: None, lambda: sum(range(10**5))], repeats=2)
    assert len(times) == 2 and 0 <= times[0] < times[1]


def test_convolution_stack_bad_input():
    with pytest.raises(ValueError, match="kernel_size must be >= 2"):
        convolution_stack(4, 3, kernel_size=1)
    with pytest.raises(TypeError, match="^dilated must be bool, got 'yes'"):
        convolution_stack(4, 3, dilated="yes")
    with pytest.raises(ValueError, match="num_layers must be >= 1"):
        attention_stack(4, 0, num_heads=2)


def test_self_attention_layer_bad_input():
    from seqbook.costs import SelfAttentionLayer

    with pytest.raises(ValueError, match=r"^d must be a multiple of num_heads = 3, got 8"):
        SelfAttentionLayer(d=8, num_heads=3)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B n \{self.d\}'\], got "
                       r"f32\[2,3,6\]"):
        SelfAttentionLayer(d=8, num_heads=2)(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="^d must be >= 1"):
        SelfAttentionLayer(d=0)
    with pytest.raises(TypeError, match="^causal must be bool"):
        SelfAttentionLayer(d=8, causal=1)


@pytest.mark.parametrize("training", [True, False])
def test_causal_convolution_from_torch_copies_the_training_mode(training):
    reference = nn.Conv1d(4, 4, 2, padding=1).train(training)
    assert CausalConvolution.from_torch(reference).training is training


@pytest.mark.parametrize("make", [
    lambda: CausalConvolution(4, kernel_size=3, dilation=2),
    lambda: SelfAttentionLayer(4, num_heads=2, causal=True),
    lambda: attention_stack(4, 2, num_heads=2),
    lambda: convolution_stack(4, 3, kernel_size=2, dilated=True),
])
def test_a_forward_hook_on_every_submodule_fires(make):
    model = make()
    fired = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda *_, name=name: fired.add(name))
    model(torch.randn(2, 7, 4))
    assert fired == {name for name, _ in model.named_modules()}
