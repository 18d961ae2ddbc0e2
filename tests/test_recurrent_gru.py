import pytest
import torch
from torch import nn

from seqbook.recurrent import GRU, GRUTrace, jacobian_norms, state_gradient_norms, state_jacobians
from seqbook.utils import seed_everything

# the type of forward's x, as a TypeError names it
X_TYPE = r"^x must be Float\[Tensor, '_ _ \{self.input_size\}'\]"


@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-6), (torch.float64, 1e-12)])
@pytest.mark.parametrize("bias", [True, False])
def test_equals_torch_gru(dtype, atol, bias):
    seed_everything(0)
    reference = nn.GRU(5, 16, bias=bias, batch_first=True).to(dtype)
    ours = GRU.from_torch(reference)
    assert ours.W_hz.dtype == dtype
    x, h0 = torch.randn(4, 30, 5, dtype=dtype), torch.randn(1, 4, 16, dtype=dtype)
    out, h_n = ours(x, h0)
    ref_out, ref_h = reference(x, h0)
    assert torch.allclose(out, ref_out, atol=atol)
    assert h_n.shape == (1, 4, 16)
    assert torch.allclose(h_n, ref_h, atol=atol)


def test_from_torch_maps_torch_gate_order_to_ours():
    reference = nn.GRU(2, 3)
    ours = GRU.from_torch(reference)
    r, z, n = reference.weight_hh_l0.chunk(3)  # torch: r, z, n
    assert torch.equal(ours.W_hr, r) and torch.equal(ours.W_hz, z) and torch.equal(ours.W_hh, n)
    assert torch.equal(ours.b_hh, reference.bias_hh_l0.chunk(3)[2])
    assert torch.equal(ours.b_xh, reference.bias_ih_l0.chunk(3)[2])
    assert torch.allclose(
        ours.b_z, reference.bias_ih_l0.chunk(3)[1] + reference.bias_hh_l0.chunk(3)[1]
    )


def test_gradients_equal_torch_gru():
    seed_everything(1)
    reference = nn.GRU(3, 8, batch_first=True).double()
    ours = GRU.from_torch(reference)
    x = torch.randn(2, 12, 3, dtype=torch.float64)
    ours(x)[0].pow(2).sum().backward()
    reference(x)[0].pow(2).sum().backward()
    W_ih = torch.cat([ours.W_xr.grad, ours.W_xz.grad, ours.W_xh.grad])
    W_hh = torch.cat([ours.W_hr.grad, ours.W_hz.grad, ours.W_hh.grad])
    assert torch.allclose(W_ih, reference.weight_ih_l0.grad, atol=1e-10)
    assert torch.allclose(W_hh, reference.weight_hh_l0.grad, atol=1e-10)
    b_ih = reference.bias_ih_l0.grad.chunk(3)
    b_hh = reference.bias_hh_l0.grad.chunk(3)
    assert torch.allclose(ours.b_r.grad, b_ih[0], atol=1e-10)  # d/db_ir = d/db_r
    assert torch.allclose(ours.b_z.grad, b_hh[1], atol=1e-10)
    assert torch.allclose(ours.b_xh.grad, b_ih[2], atol=1e-10)
    assert torch.allclose(ours.b_hh.grad, b_hh[2], atol=1e-10)


def test_equations_3_3_to_3_6():
    seed_everything(2)
    gru = GRU(2, 3).double()
    x = torch.randn(1, 1, 2, dtype=torch.float64)
    h0 = torch.randn(1, 3, dtype=torch.float64)
    trace = gru.trace(x, h0[None])
    x0 = x[:, 0]
    z = torch.sigmoid(x0 @ gru.W_xz.T + h0 @ gru.W_hz.T + gru.b_z)
    r = torch.sigmoid(x0 @ gru.W_xr.T + h0 @ gru.W_hr.T + gru.b_r)
    h_tilde = torch.tanh(x0 @ gru.W_xh.T + gru.b_xh + r * (h0 @ gru.W_hh.T + gru.b_hh))
    h = (1 - z) * h_tilde + z * h0
    assert torch.allclose(trace.update_gate[:, 0], z)
    assert torch.allclose(trace.reset_gate[:, 0], r)
    assert torch.allclose(trace.candidate[:, 0], h_tilde)
    assert torch.allclose(trace.hidden[:, 0], h)


def test_update_gate_near_one_keeps_the_old_state():
    gru = GRU(2, 3).double()
    with torch.no_grad():
        gru.b_z.fill_(50.0)  # z = 1 to machine precision
    h0 = torch.randn(1, 2, 3, dtype=torch.float64)
    x = torch.randn(2, 20, 2, dtype=torch.float64)
    out, h_T = gru(x, h0)
    assert torch.equal(h_T, h0)
    J = state_jacobians(gru, x, h0)
    assert torch.equal(J, torch.eye(3, dtype=torch.float64).expand_as(J))
    with torch.no_grad():
        gru.b_z.fill_(-50.0)  # z = 0: the state is the candidate, the past is gone
        gru.W_hh.zero_()
        gru.W_hr.zero_()
        gru.b_hh.zero_()
    out, h_T = gru(x, h0)
    assert torch.allclose(h_T[0], torch.tanh(x[:, -1] @ gru.W_xh.T + gru.b_xh))


def test_trace_returns_everything():
    gru = GRU(2, 3)
    x = torch.randn(2, 5, 2)
    trace = gru.trace(x)
    assert isinstance(trace, GRUTrace)
    assert torch.allclose(trace.hidden, gru(x)[0])
    for gate in (trace.update_gate, trace.reset_gate):
        assert gate.shape == (2, 5, 3) and gate.min() > 0 and gate.max() < 1
    assert trace.candidate.abs().max() < 1


def test_parameter_count():
    gru = GRU(7, 11)
    assert sum(p.numel() for p in gru.parameters()) == 3 * (11 * 7 + 11 * 11) + 4 * 11
    torch_count = sum(p.numel() for p in nn.GRU(7, 11).parameters())
    assert torch_count - 2 * 11 == sum(p.numel() for p in gru.parameters())


def test_diagnostics_work_with_the_gru():
    seed_everything(6)
    reference = nn.GRU(3, 4, batch_first=True).double()
    gru = GRU.from_torch(reference)
    x = torch.randn(2, 8, 3, dtype=torch.float64)
    assert torch.allclose(jacobian_norms(gru, x), jacobian_norms(reference, x), atol=1e-10)
    norms = state_gradient_norms(gru, x, lambda out, h: h.sum())
    assert norms.shape == (2, 8)
    assert torch.allclose(norms[:, -1], torch.full((2,), 2.0, dtype=torch.float64))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(input_size=0, hidden_size=3), ValueError),
        (dict(input_size=2, hidden_size=0), ValueError),
        (dict(input_size=2, hidden_size=3.5), TypeError),
        (dict(input_size=2, hidden_size=3, batch_first=None), TypeError),
    ],
)
def test_bad_constructor_arguments(kwargs, error):
    with pytest.raises(error):
        GRU(**kwargs)


def test_bad_forward_input():
    gru = GRU(2, 3)
    with pytest.raises(TypeError, match=X_TYPE + r".*, got f32\[5,2\]"):
        gru(torch.randn(5, 2))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, input_size\) with T >= 1"):
        gru(torch.randn(4, 0, 2))
    with pytest.raises(TypeError, match=X_TYPE + r".*, got f32\[4,5,3\]"):
        gru(torch.randn(4, 5, 3))
    with pytest.raises(TypeError, match=X_TYPE + r".*, got i64\[4,5,2\]"):
        gru(torch.ones(4, 5, 2, dtype=torch.long))
    with pytest.raises(TypeError, match=r"^h0 must be Float\[Tensor, '.* B \{self.hidden_size\}'\] "
                                        r"\| None, got f32\[1,4,4\]"):
        gru(torch.randn(4, 5, 2), torch.zeros(1, 4, 4))
    with pytest.raises(TypeError, match=r"^h0 must be Float\[Tensor, .*, got f32\[4,3\]"):
        gru(torch.randn(4, 5, 2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"lengths must hold values in \[0, inf\], got values "
                       r"from -1 to 1"):
        gru(torch.randn(2, 5, 2), lengths=torch.tensor([-1, 1]))
    with pytest.raises(TypeError, match=r"^lengths must be Int\[Tensor, 'B'\] \| None, got "
                                        r"f32\[2\]"):
        gru(torch.randn(2, 5, 2), lengths=torch.tensor([5.0, 1.0]))
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, '_ _ \{self.input_size\}'\], "
                                        r"got 'not a tensor'"):
        gru.trace("not a tensor")


def test_bad_cell_input():
    gru = GRU(2, 3)
    with pytest.raises(TypeError, match=r"^x_t must be Float\[Tensor, 'B \{self.input_size\}'\], "
                                        r"got f32\[2\]"):
        gru.cell(torch.randn(2), torch.zeros(1, 3))
    with pytest.raises(TypeError, match=r"^x_t must be .*the dimension size 4 does not equal "
                                        r"the existing value of \{self.input_size\}=2"):
        gru.cell(torch.randn(1, 4), torch.zeros(1, 3))
    with pytest.raises(TypeError, match=r"^h_prev must be Float\[Tensor, 'B \{self.hidden_size\}'"
                                        r"\].* the size of dimension B is 1 which does not equal"):
        gru.cell(torch.randn(2, 2), torch.zeros(1, 3))


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(TypeError, match="^gru must be torch.nn.modules.rnn.GRU"):
        GRU.from_torch(nn.LSTM(2, 3))


def test_reset_parameters_uses_the_torch_bound():
    gru = GRU(3, 25)
    bound = 1 / 25**0.5
    assert all(p.abs().max() <= bound for p in gru.parameters())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_to_torch_computes_the_same_function_and_round_trips(dtype):
    seed_everything(8)
    gru = GRU(3, 5).to(dtype)
    with torch.no_grad():
        gru.b_z.add_(2.0)
    fused = gru.to_torch()
    assert isinstance(fused, nn.GRU) and fused.batch_first
    assert fused.weight_ih_l0.dtype == dtype
    x, h0 = torch.randn(2, 9, 3, dtype=dtype), torch.randn(1, 2, 5, dtype=dtype)
    assert torch.allclose(fused(x, h0)[0], gru(x, h0)[0], atol=1e-6)
    back = GRU.from_torch(fused)
    for name, p in gru.named_parameters():
        assert torch.allclose(getattr(back, name), p)
    time_major = GRU(3, 5, batch_first=False).to_torch()
    assert not time_major.batch_first
