import pytest
import torch
from torch import nn

from seqbook.recurrent import (
    RNN,
    jacobian_norms,
    state_gradient_norms,
    state_jacobians,
    unroll_with_probes,
)
from seqbook.utils import seed_everything


def modules():
    seed_everything(0)
    return [
        RNN(3, 4).double(),
        RNN(3, 4, nonlinearity="relu").double(),
        nn.RNN(3, 4, batch_first=True).double(),
        nn.GRU(3, 4, batch_first=True).double(),
        nn.LSTM(3, 4, batch_first=True).double(),
    ]


@pytest.mark.parametrize("module", modules(), ids=lambda m: type(m).__name__)
def test_unrolled_with_probes_equals_the_whole_run(module):
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    out, state, probes = unroll_with_probes(module, x)
    ref_out, ref_state = module(x)
    assert torch.allclose(out, ref_out, atol=1e-12)
    parts = state if isinstance(state, tuple) else (state,)
    ref_parts = ref_state if isinstance(ref_state, tuple) else (ref_state,)
    for a, b in zip(parts, ref_parts):
        assert torch.allclose(a, b, atol=1e-12)
    assert len(probes) == 7 and len(probes[0]) == len(parts)
    assert all((p == 0).all() and p.requires_grad for step in probes for p in step)


def perturbed_loss(module, x, loss_fn, t, delta, component=0):
    """The loss with h_t (state tensor `component` after step t) replaced by h_t + delta."""
    state = None
    outputs = []
    for s in range(x.shape[1]):
        out, state = module(x[:, s : s + 1], state)
        if s + 1 == t:
            parts = list(state) if isinstance(state, tuple) else [state]
            parts[component] = parts[component] + delta.reshape(parts[component].shape)
            if component == 0:
                out = out + delta.reshape(out.shape)
            state = tuple(parts) if isinstance(state, tuple) else parts[0]
        outputs.append(out)
    return loss_fn(torch.cat(outputs, 1), state)


def loss_fn(out, state):
    final = state[0] if isinstance(state, tuple) else state
    return (out**3).sum() + final.sum() ** 2 + out[:, 1].sum()


@pytest.mark.parametrize("module", modules(), ids=lambda m: type(m).__name__)
def test_state_gradient_norms_are_total_derivatives(module):
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    norms = state_gradient_norms(module, x, loss_fn)
    assert norms.shape == (2, 5)
    for t in range(1, 6):
        delta = torch.zeros(2, 4, dtype=torch.float64, requires_grad=True)
        (grad,) = torch.autograd.grad(perturbed_loss(module, x, loss_fn, t, delta), delta)
        assert torch.allclose(norms[:, t - 1], grad.norm(dim=-1), atol=1e-10)
    assert all(p.grad is None for p in module.parameters())


def test_lstm_cell_state_component():
    module = modules()[-1]
    x = torch.randn(1, 4, 3, dtype=torch.float64)
    norms = state_gradient_norms(module, x, loss_fn, component=1)
    for t in range(1, 5):
        delta = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
        loss = perturbed_loss(module, x, loss_fn, t, delta, component=1)
        (grad,) = torch.autograd.grad(loss, delta, allow_unused=True, materialize_grads=True)
        assert torch.allclose(norms[0, t - 1], grad.norm(), atol=1e-10)
    assert norms[0, -1] == 0  # the loss does not read c_T
    assert state_jacobians(module, x, component=1).shape == (1, 4, 4, 4)


def test_jacobians_of_a_linear_regime_are_matrix_powers():
    seed_everything(1)
    rnn = RNN(2, 5).double()
    with torch.no_grad():
        rnn.b_h.zero_()
    x = 1e-7 * torch.randn(3, 6, 2, dtype=torch.float64)  # tanh'(a) = 1 to 1e-12
    J = state_jacobians(rnn, x)
    assert J.shape == (3, 6, 5, 5)
    W = rnn.W_hh.detach()
    for t in range(1, 7):
        expected = torch.linalg.matrix_power(W, 6 - t)
        assert torch.allclose(J[:, t - 1], expected.expand(3, 5, 5), atol=1e-9)
    norms = jacobian_norms(rnn, x)
    assert torch.allclose(norms[0], torch.linalg.matrix_norm(J[0], ord=2))
    frobenius = jacobian_norms(rnn, x, ord="fro")
    assert torch.allclose(frobenius[:, -1], torch.full((3,), 5**0.5, dtype=torch.float64))


def test_jacobian_is_the_chain_of_one_step_jacobians():
    seed_everything(2)
    rnn = RNN(2, 3).double()
    x = torch.randn(1, 4, 2, dtype=torch.float64)
    J = state_jacobians(rnn, x)[0]
    out, _ = rnn(x)
    h = [torch.zeros(3, dtype=torch.float64)] + list(out[0].detach())
    step = [
        torch.autograd.functional.jacobian(lambda hp: rnn.cell(x[:, k], hp[None])[0], h[k])
        for k in range(1, 4)
    ]  # step[k-1] = dh_{k+1}/dh_k
    assert torch.allclose(J[2], step[2], atol=1e-12)
    assert torch.allclose(J[1], step[2] @ step[1], atol=1e-12)
    assert torch.allclose(J[0], step[2] @ step[1] @ step[0], atol=1e-12)


def test_initial_state_is_used():
    rnn = RNN(2, 3).double()
    x = torch.randn(1, 3, 2, dtype=torch.float64)
    h0 = torch.randn(1, 1, 3, dtype=torch.float64)
    a = state_jacobians(rnn, x, h0)
    b = state_jacobians(rnn, x)
    assert not torch.allclose(a[:, 0], b[:, 0])


def test_bad_arguments():
    rnn = RNN(2, 3)
    x = torch.randn(1, 4, 2)
    with pytest.raises(TypeError, match="^module must be torch.nn.modules.module.Module"):
        state_gradient_norms("rnn", x, loss_fn)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B T D'\], got f32\[4,2\]"):
        jacobian_norms(rnn, torch.randn(4, 2))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, D\) with T >= 1"):
        state_jacobians(rnn, torch.randn(1, 0, 2))
    with pytest.raises(ValueError, match="input_size"):
        state_jacobians(rnn, torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match="component must be < 1"):
        state_gradient_norms(rnn, x, loss_fn, component=1)
    with pytest.raises(ValueError, match="component must be >= 0"):
        state_jacobians(rnn, x, component=-1)
    with pytest.raises(TypeError, match="^loss_fn must be .*Callable"):
        state_gradient_norms(rnn, x, None)
    with pytest.raises(TypeError, match="scalar"):
        state_gradient_norms(rnn, x, lambda out, h: out)
    with pytest.raises(ValueError, match="batch-first"):
        jacobian_norms(nn.RNN(2, 3), x)
    with pytest.raises(ValueError, match="one layer"):
        jacobian_norms(nn.RNN(2, 3, num_layers=2, batch_first=True), x)
    with pytest.raises(ValueError, match="one direction"):
        state_jacobians(RNN(2, 3, bidirectional=True), x)
    with pytest.raises(ValueError, match="ord must be one of"):
        jacobian_norms(rnn, x, ord=3)
    with pytest.raises(TypeError, match="ord must be one of 2, -2, 1, .*, not a bool; got True"):
        jacobian_norms(rnn, x, ord=True)
    with pytest.raises(TypeError, match="x has dtype torch.float64 but the module's"):
        state_jacobians(rnn, x.double())
    with pytest.raises(TypeError, match="x has dtype torch.float16"):
        state_gradient_norms(nn.GRU(2, 3, batch_first=True), x.half(), loss_fn)
    with pytest.raises(ValueError, match=r"state\[0\] must have shape \(1, B, H\)"):
        unroll_with_probes(nn.GRU(2, 3, batch_first=True), x, torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match=r"state\[1\] must have 2 or 3 dimensions"):
        state_gradient_norms(nn.LSTM(2, 3, batch_first=True), x, loss_fn,
                             (torch.zeros(1, 1, 3), torch.zeros(3)))


class NotARecurrentModule(nn.Module):
    """Outputs something other than its hidden state: breaks the protocol."""

    def forward(self, x, state=None):
        h = x.sum(-1)  # (B, T)
        return 2 * x, h[:, -1:]


def test_protocol_violations_are_reported():
    with pytest.raises(ValueError, match="outputs must be its hidden states"):
        unroll_with_probes(NotARecurrentModule(), torch.randn(2, 3, 1) + 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_diagnostics_on_cuda():
    rnn = RNN(2, 3).cuda()
    x = torch.randn(2, 4, 2, device="cuda")
    norms = jacobian_norms(rnn, x)
    assert norms.is_cuda and norms.shape == (2, 4)
    grads = state_gradient_norms(nn.LSTM(2, 3, batch_first=True).cuda(), x, loss_fn)
    assert grads.is_cuda
