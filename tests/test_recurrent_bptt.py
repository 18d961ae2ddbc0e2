import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.recurrent import RNN, TruncatedBPTTResult, activation_bytes, truncated_bptt
from seqbook.utils import seed_everything


def problem(T=12, B=3, dtype=torch.float64):
    seed_everything(0)
    rnn = RNN(2, 5).to(dtype)
    readout = nn.Linear(5, 1).to(dtype)
    x = torch.randn(B, T, 2, dtype=dtype)
    y = torch.randn(B, T, 1, dtype=dtype)
    return rnn, readout, x, y


def mse_for(readout):
    return lambda out, y: ((readout(out) - y) ** 2).sum()


def test_one_window_as_long_as_the_sequence_is_full_bptt():
    rnn, readout, x, y = problem()
    twin, twin_readout = copy.deepcopy(rnn), copy.deepcopy(readout)
    opt = torch.optim.SGD([*rnn.parameters(), *readout.parameters()], lr=0.01)
    result = truncated_bptt(rnn, x, y, mse_for(readout), opt, k1=12)
    assert isinstance(result, TruncatedBPTTResult) and result.update_steps == [12]

    twin_opt = torch.optim.SGD([*twin.parameters(), *twin_readout.parameters()], lr=0.01)
    out, _ = twin(x)
    loss = mse_for(twin_readout)(out, y)
    loss.backward()
    twin_opt.step()
    assert result.losses[0] == pytest.approx(loss.item())
    for ours, full in zip(rnn.parameters(), twin.parameters()):
        assert torch.allclose(ours, full, atol=1e-12)


def test_k1_equals_k2_is_detaching_every_k_steps():
    rnn, readout, x, y = problem(T=10)
    twin, twin_readout = copy.deepcopy(rnn), copy.deepcopy(readout)
    opt = torch.optim.SGD([*rnn.parameters(), *readout.parameters()], lr=0.05)
    result = truncated_bptt(rnn, x, y, mse_for(readout), opt, k1=4)
    assert result.update_steps == [4, 8, 10]  # a last, shorter chunk

    twin_opt = torch.optim.SGD([*twin.parameters(), *twin_readout.parameters()], lr=0.05)
    h = None
    for start in range(0, 10, 4):
        out, h = twin(x[:, start : start + 4], h)
        loss = mse_for(twin_readout)(out, y[:, start : start + 4])
        twin_opt.zero_grad()
        loss.backward()
        twin_opt.step()
        h = h.detach()
    for ours, common in zip(rnn.parameters(), twin.parameters()):
        assert torch.allclose(ours, common, atol=1e-12)
    assert torch.allclose(result.final_state, h, atol=1e-12)


def test_k2_limits_how_far_back_the_gradient_reaches():
    # The loss at the last step only; with lr=0 nothing changes but the gradient norm.
    rnn, readout, x, y = problem(T=8)
    last_only = lambda out, y: readout(out[:, -1]).sum() if out.shape[1] else out.sum()
    norms = []
    for k2 in (1, 3, 8):
        opt = torch.optim.SGD(rnn.parameters(), lr=0.0)
        norms.append(truncated_bptt(rnn, x, y, last_only, opt, k1=1, k2=k2).grad_norms[-1])
    # the gradient of W_xh through k2 steps: compare with autograd over the last k2 steps
    for k2, norm in zip((1, 3, 8), norms):
        h = rnn(x[:, : 8 - k2])[1].detach() if k2 < 8 else None
        out, _ = rnn(x[:, 8 - k2 :], h)
        grads = torch.autograd.grad(readout(out[:, -1]).sum(), list(rnn.parameters()))
        assert norm == pytest.approx(torch.cat([g.flatten() for g in grads]).norm().item())
    assert len(set(norms)) == 3


def test_overlapping_windows_recompute_from_the_stored_state():
    rnn, readout, x, y = problem(T=9)
    opt = torch.optim.SGD([*rnn.parameters(), *readout.parameters()], lr=0.0)
    result = truncated_bptt(rnn, x, y, mse_for(readout), opt, k1=2, k2=5)
    assert result.update_steps == [2, 4, 6, 8, 9]
    # with lr = 0 the carried state is the ordinary forward pass
    assert torch.allclose(result.final_state, rnn(x)[1], atol=1e-12)
    # each window's loss is the loss of its own steps
    out, _ = rnn(x)
    chunks = [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)]
    expected = [mse_for(readout)(out[:, a:b], y[:, a:b]).item() for a, b in chunks]
    assert result.losses == pytest.approx(expected)


def test_learns_a_delay_it_can_reach_with_clipping_and_a_stream_state():
    seed_everything(0)
    rnn, readout = RNN(1, 8), nn.Linear(8, 2)
    opt = torch.optim.Adam([*rnn.parameters(), *readout.parameters()], lr=0.02)
    loss_fn = lambda out, y: F.cross_entropy(readout(out).reshape(-1, 2), y.reshape(-1))
    state = None
    for _ in range(4):
        bits = torch.randint(0, 2, (16, 100))
        x, y = bits[..., None].float(), torch.roll(bits, 1, dims=1)  # y_t = x_{t-1}
        result = truncated_bptt(rnn, x, y, loss_fn, opt, k1=5, k2=5, state=state, clip=1.0)
        state = result.final_state
        assert not state.requires_grad
    assert result.losses[-1] < 0.2
    assert max(result.grad_norms) > 0


def test_bad_arguments():
    rnn, readout, x, y = problem()
    opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
    loss = mse_for(readout)
    with pytest.raises(ValueError, match=r"k2 must be >= k1 = 4 \(the argument k1\), got 2"):
        truncated_bptt(rnn, x, y, loss, opt, k1=4, k2=2)
    with pytest.raises(TypeError, match=r"^k2 must be int \| None, got 2.5"):
        truncated_bptt(rnn, x, y, loss, opt, k1=2, k2=2.5)
    with pytest.raises(ValueError, match="k1 must be >= 1"):
        truncated_bptt(rnn, x, y, loss, opt, k1=0)
    with pytest.raises(TypeError, match="^k1 must be int, got 2.5"):
        truncated_bptt(rnn, x, y, loss, opt, k1=2.5)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B T D'\], got f64\[12,2\]"):
        truncated_bptt(rnn, x[0], y, loss, opt, k1=2)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, D\) with T >= 1"):
        truncated_bptt(rnn, x[:, :0], y[:, :0], loss, opt, k1=2)
    with pytest.raises(TypeError, match=r"^targets must be Shaped\[Tensor, 'B T ...'\].*the "
                                        r"size of dimension T is 5"):
        truncated_bptt(rnn, x, y[:, :5], loss, opt, k1=2)
    with pytest.raises(TypeError, match=r"^targets must be Shaped\[Tensor, 'B T ...'\].*the "
                                        r"size of dimension B is 1"):
        truncated_bptt(rnn, x, y[:1], loss, opt, k1=2)
    with pytest.raises(TypeError, match=r"^targets must be Shaped\[Tensor, 'B T ...'\], got "
                                        r"f64\[1\]"):
        truncated_bptt(rnn, x, y[0, 0], loss, opt, k1=2)
    with pytest.raises(TypeError, match="^optimizer must be"):
        truncated_bptt(rnn, x, y, loss, "sgd", k1=2)
    with pytest.raises(TypeError, match="^loss_fn must be"):
        truncated_bptt(rnn, x, y, None, opt, k1=2)
    with pytest.raises(TypeError, match="^module must be"):
        truncated_bptt(lambda x, s: x, x, y, loss, opt, k1=2)
    with pytest.raises(ValueError, match="clip must be > 0"):
        truncated_bptt(rnn, x, y, loss, opt, k1=2, clip=0.0)
    with pytest.raises(TypeError, match="scalar"):
        truncated_bptt(rnn, x, y, lambda out, y: out, opt, k1=2)


def test_activation_bytes_grow_linearly_with_T_and_exclude_parameters():
    rnn = RNN(4, 32)
    sizes = [activation_bytes(lambda: rnn(torch.randn(2, T, 4))[0], rnn) for T in (10, 20, 40)]
    assert sizes[1] - sizes[0] == pytest.approx((sizes[2] - sizes[1]) / 2, rel=0.01)
    with_weights = activation_bytes(lambda: rnn(torch.randn(2, 10, 4))[0])
    # W_hh is saved for the backward pass (W_xh is not: x needs no gradient)
    assert with_weights - sizes[0] == rnn.W_hh.numel() * rnn.W_hh.element_size()
    assert activation_bytes(lambda: torch.randn(3).sum()) == 0


def test_activation_bytes_bad_arguments():
    with pytest.raises(TypeError, match="^fn must be .*Callable"):
        activation_bytes(3)
    with pytest.raises(TypeError, match="^exclude must be"):
        activation_bytes(lambda: torch.zeros(1), exclude="rnn")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_truncated_bptt_on_cuda():
    rnn, readout = RNN(2, 4).cuda(), nn.Linear(4, 1).cuda()
    opt = torch.optim.SGD([*rnn.parameters(), *readout.parameters()], lr=0.1)
    x, y = torch.randn(2, 9, 2, device="cuda"), torch.randn(2, 9, 1, device="cuda")
    result = truncated_bptt(rnn, x, y, mse_for(readout), opt, k1=3, k2=5)
    assert result.final_state.is_cuda and len(result.losses) == 3
