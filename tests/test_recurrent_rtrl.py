import pytest
import torch
from torch import nn

from seqbook.recurrent import RNN, RTRLResult, rtrl
from seqbook.utils import seed_everything


def bptt_gradients(rnn, x, losses_of_outputs, h0=None):
    rnn.zero_grad()
    out, _ = rnn(x, h0)
    loss = losses_of_outputs(out)
    loss.backward()
    return loss, {name: p.grad.clone() for name, p in rnn.named_parameters()}


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rtrl_gradients_equal_bptt_on_random_problems(seed, nonlinearity):
    seed_everything(seed)
    generator = torch.Generator().manual_seed(seed)
    B, T, D, H = 1 + seed % 3, 3 + 4 * seed, 1 + seed % 4, 2 + seed
    rnn = RNN(D, H, nonlinearity=nonlinearity).double()
    readout = nn.Linear(H, 2).double()
    x = torch.randn(B, T, D, generator=generator, dtype=torch.float64)
    y = torch.randn(B, T, 2, generator=generator, dtype=torch.float64)
    h0 = torch.randn(1, B, H, generator=generator, dtype=torch.float64)
    weights = torch.rand(T, generator=generator, dtype=torch.float64)  # some steps weigh more

    def step_loss(t, h_t):
        return weights[t] * ((readout(h_t) - y[:, t]) ** 2).sum()

    result = rtrl(rnn, x, step_loss, h0=h0)
    rtrl_readout_grad = readout.weight.grad.clone()
    readout.zero_grad()
    loss, grads = bptt_gradients(
        rnn, x, lambda out: (weights * ((readout(out) - y) ** 2).sum(-1)).sum(), h0
    )
    assert isinstance(result, RTRLResult)
    assert result.loss.item() == pytest.approx(loss.item(), rel=1e-12)
    for name in ("W_xh", "W_hh", "b_h"):
        assert result.grads[name].shape == getattr(rnn, name).shape
        assert torch.allclose(result.grads[name], grads[name], atol=1e-5, rtol=0)
        assert torch.allclose(result.grads[name], grads[name], atol=1e-10)
    assert torch.allclose(rtrl_readout_grad, readout.weight.grad, atol=1e-10)
    assert torch.allclose(result.h_T, rnn(x, h0)[1], atol=1e-12)


def test_loss_only_at_some_steps_and_parameters_untouched():
    seed_everything(0)
    rnn = RNN(2, 4).double()
    x = torch.randn(3, 6, 2, dtype=torch.float64)
    result = rtrl(rnn, x, lambda t, h: h.pow(2).sum() if t in (2, 5) else None)
    assert all(p.grad is None for p in rnn.parameters())
    _, grads = bptt_gradients(rnn, x, lambda out: out[:, [2, 5]].pow(2).sum())
    for name, grad in grads.items():
        assert torch.allclose(result.grads[name], grad, atol=1e-10)


def test_memory_does_not_grow_with_T():
    rnn = RNN(3, 5)
    sizes = {rtrl(rnn, torch.randn(2, T, 3), lambda t, h: None).state_bytes for T in (1, 10, 40)}
    assert sizes == {4 * (2 * 5 + 2 * 5 * 5 * 3 + 2 * 5**3 + 2 * 5 * 5)}


def test_without_bias():
    seed_everything(1)
    rnn = RNN(2, 4, bias=False).double()
    x = torch.randn(3, 6, 2, dtype=torch.float64)
    result = rtrl(rnn, x, lambda t, h: h.pow(2).sum())
    assert set(result.grads) == {"W_xh", "W_hh"}
    _, grads = bptt_gradients(rnn, x, lambda out: out.pow(2).sum())
    for name, grad in grads.items():
        assert torch.allclose(result.grads[name], grad, atol=1e-10)
    assert result.state_bytes == 8 * (3 * 4 + 3 * 4 * 4 * 2 + 3 * 4**3)


def test_no_loss_gives_zero_gradients():
    result = rtrl(RNN(2, 3), torch.randn(1, 4, 2), lambda t, h: None)
    assert result.loss.item() == 0 and all((g == 0).all() for g in result.grads.values())


def test_bad_arguments():
    rnn = RNN(2, 3)
    loss = lambda t, h: h.sum()
    with pytest.raises(TypeError, match="^rnn must be seqbook.recurrent.rnn.RNN"):
        rtrl(nn.RNN(2, 3), torch.randn(1, 4, 2), loss)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B T \{rnn.input_size\}'\], "
                                        r"got f32\[4,2\]"):
        rtrl(rnn, torch.randn(4, 2), loss)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, rnn.input_size\) with T >= 1"):
        rtrl(rnn, torch.randn(1, 0, 2), loss)
    with pytest.raises(TypeError, match=r"^x must be .*the dimension size 3 does not equal the "
                                        r"existing value of \{rnn.input_size\}=2"):
        rtrl(rnn, torch.randn(1, 4, 3), loss)
    with pytest.raises(TypeError, match=r"^h0 must be Float\[Tensor, '1 B \{rnn.hidden_size\}'\] "
                                        r"\| None, got f32\[1,2,3\]"):
        rtrl(rnn, torch.randn(1, 4, 2), loss, h0=torch.zeros(1, 2, 3))
    with pytest.raises(TypeError, match=r"^h0 must be .*, got f32\[1,3\]"):
        rtrl(rnn, torch.randn(1, 4, 2), loss, h0=torch.zeros(1, 3))
    with pytest.raises(ValueError, match="num_layers=1 and bidirectional=False"):
        rtrl(RNN(2, 3, num_layers=2), torch.randn(1, 4, 2), loss)
    with pytest.raises(TypeError, match=r"x has dtype torch.float64 but the parameters of rnn"):
        rtrl(rnn, torch.randn(1, 4, 2, dtype=torch.float64), loss)
    with pytest.raises(TypeError, match="^step_loss must be .*Callable"):
        rtrl(rnn, torch.randn(1, 4, 2), None)
    with pytest.raises(TypeError, match="scalar"):
        rtrl(rnn, torch.randn(1, 4, 2), lambda t, h: h)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_rtrl_on_cuda():
    seed_everything(0)
    rnn = RNN(2, 4).double().cuda()
    x = torch.randn(3, 5, 2, dtype=torch.float64, device="cuda")
    result = rtrl(rnn, x, lambda t, h: h.pow(2).sum())
    rnn(x)[0].pow(2).sum().backward()
    assert result.grads["W_hh"].is_cuda
    assert torch.allclose(result.grads["W_hh"], rnn.W_hh.grad, atol=1e-10)
