import pytest
import torch
from torch import nn

from seqbook.recurrent import LSTM, LSTMTrace, jacobian_norms, state_gradient_norms, state_jacobians
from seqbook.utils import seed_everything

# the type of forward's x, as a TypeError names it
X_TYPE = r"^x must be Float\[Tensor, '_ _ \{self.input_size\}'\]"


@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-6), (torch.float64, 1e-12)])
@pytest.mark.parametrize("bias", [True, False])
def test_equals_torch_lstm(dtype, atol, bias):
    seed_everything(0)
    reference = nn.LSTM(5, 16, bias=bias, batch_first=True).to(dtype)
    ours = LSTM.from_torch(reference)
    assert ours.W_xg.dtype == dtype
    x = torch.randn(4, 30, 5, dtype=dtype)
    y0, c0 = torch.randn(1, 4, 16, dtype=dtype), torch.randn(1, 4, 16, dtype=dtype)
    out, (y_T, c_T) = ours(x, (y0, c0))
    ref_out, (ref_y, ref_c) = reference(x, (y0, c0))
    assert torch.allclose(out, ref_out, atol=atol)
    assert y_T.shape == ref_y.shape == c_T.shape == (1, 4, 16)
    assert torch.allclose(y_T, ref_y, atol=atol)
    assert torch.allclose(c_T, ref_c, atol=atol)


def test_from_torch_maps_torch_gate_order_to_ours():
    reference = nn.LSTM(2, 3)
    ours = LSTM.from_torch(reference)
    i, f, g, o = reference.weight_ih_l0.chunk(4)  # torch: i, f, g, o
    assert torch.equal(ours.W_xi, i) and torch.equal(ours.W_xf, f)
    assert torch.equal(ours.W_xg, g) and torch.equal(ours.W_xo, o)
    b = reference.bias_ih_l0 + reference.bias_hh_l0
    assert torch.allclose(ours.b_g, b.chunk(4)[2])


def test_gradients_equal_torch_lstm():
    seed_everything(1)
    reference = nn.LSTM(3, 8, batch_first=True).double()
    ours = LSTM.from_torch(reference)
    x = torch.randn(2, 12, 3, dtype=torch.float64)
    ours(x)[0].pow(2).sum().backward()
    reference(x)[0].pow(2).sum().backward()
    grads = {
        "W_x": torch.cat([ours.W_xi.grad, ours.W_xf.grad, ours.W_xg.grad, ours.W_xo.grad]),
        "W_h": torch.cat([ours.W_hi.grad, ours.W_hf.grad, ours.W_hg.grad, ours.W_ho.grad]),
        "b": torch.cat([ours.b_i.grad, ours.b_f.grad, ours.b_g.grad, ours.b_o.grad]),
    }
    assert torch.allclose(grads["W_x"], reference.weight_ih_l0.grad, atol=1e-10)
    assert torch.allclose(grads["W_h"], reference.weight_hh_l0.grad, atol=1e-10)
    assert torch.allclose(grads["b"], reference.bias_ih_l0.grad, atol=1e-10)


def test_formulas_gate_by_gate():
    seed_everything(4)
    lstm = LSTM(2, 3).double()
    x = torch.randn(1, 1, 2, dtype=torch.float64)
    h0, c0 = torch.randn(1, 3, dtype=torch.float64), torch.randn(1, 3, dtype=torch.float64)
    trace = lstm.trace(x, (h0[None], c0[None]))

    def act(gate, fn):
        W_x, W_h, b = (getattr(lstm, f"{k}{gate}") for k in ("W_x", "W_h", "b_"))
        return fn(x[:, 0] @ W_x.T + h0 @ W_h.T + b)

    g, i = act("g", torch.tanh), act("i", torch.sigmoid)
    f, o = act("f", torch.sigmoid), act("o", torch.sigmoid)
    c = i * g + f * c0
    assert torch.allclose(trace.cell_input[:, 0], g)
    assert torch.allclose(trace.input_gate[:, 0], i)
    assert torch.allclose(trace.forget_gate[:, 0], f)
    assert torch.allclose(trace.output_gate[:, 0], o)
    assert torch.allclose(trace.cell_state[:, 0], c)
    assert torch.allclose(trace.outputs[:, 0], o * torch.tanh(c))


def test_without_forget_gate_the_cell_integrates():
    seed_everything(5)
    lstm = LSTM(3, 4, forget_gate=False)
    assert lstm.gate_names == ("g", "i", "o")
    assert not hasattr(lstm, "W_xf")
    n_params = sum(p.numel() for p in lstm.parameters())
    assert n_params == 3 * (4 * 3 + 4 * 4 + 4)
    x = torch.randn(2, 9, 3)
    trace = lstm.trace(x)
    assert trace.forget_gate is None
    increments = trace.input_gate * trace.cell_input  # (B, T, H)
    assert torch.allclose(trace.cell_state, increments.cumsum(dim=1), atol=1e-6)


def test_carousel_gradient_is_exactly_one_along_the_cell():
    """With the recurrent gate inputs cut, dc_T/dc_t is the identity, to the bit."""
    lstm = LSTM(3, 4, forget_gate=False).double()
    with torch.no_grad():
        for gate in lstm.gate_names:
            getattr(lstm, f"W_h{gate}").zero_()
    J = state_jacobians(lstm, torch.randn(2, 50, 3, dtype=torch.float64), component=1)
    assert torch.equal(J, torch.eye(4, dtype=torch.float64).expand_as(J))


def test_forget_gate_shrinks_the_carousel_gradient():
    lstm = LSTM(3, 4).double()
    with torch.no_grad():
        for gate in lstm.gate_names:
            getattr(lstm, f"W_h{gate}").zero_()
    x = torch.randn(1, 30, 3, dtype=torch.float64)
    J = state_jacobians(lstm, x, component=1)[0]  # (T, H, H)
    f = lstm.trace(x).forget_gate[0]  # (T, H)
    for t in (0, 10, 28):  # dc_T/dc_t = diag(f_{t+1} ... f_T)
        expected = torch.diag(f[t + 1 :].prod(dim=0))
        assert torch.allclose(J[t], expected, atol=1e-12)


def test_input_gate_bias_shifts_the_initial_bias():
    seed_everything(6)
    plain = LSTM(2, 100)
    seed_everything(6)
    shifted = LSTM(2, 100, input_gate_bias=-3.0)
    assert torch.allclose(shifted.b_i, plain.b_i - 3.0)
    assert torch.equal(shifted.b_g, plain.b_g)
    assert shifted.b_i.max() < -3.0 + 0.11  # bound 1/sqrt(100)
    shifted.reset_parameters()
    assert shifted.b_i.max() < -2.8


def test_trace_returns_everything():
    lstm = LSTM(2, 3)
    x = torch.randn(2, 5, 2)
    trace = lstm.trace(x)
    assert isinstance(trace, LSTMTrace)
    out, (y_T, c_T) = lstm(x)
    assert torch.allclose(trace.outputs, out)
    assert torch.allclose(trace.cell_state[:, -1], c_T[0])
    for gate in (trace.input_gate, trace.forget_gate, trace.output_gate):
        assert gate.shape == (2, 5, 3) and gate.min() > 0 and gate.max() < 1
    assert trace.cell_input.abs().max() < 1


def test_diagnostics_work_with_the_lstm():
    seed_everything(8)
    lstm = LSTM(3, 4).double()
    reference = nn.LSTM(3, 4, batch_first=True).double()
    with torch.no_grad():
        for name, p in LSTM.from_torch(reference).named_parameters():
            getattr(lstm, name).copy_(p)
    x = torch.randn(2, 8, 3, dtype=torch.float64)
    for component in (0, 1):
        ours = jacobian_norms(lstm, x, component=component)
        theirs = jacobian_norms(reference, x, component=component)
        assert ours.shape == (2, 8)
        assert torch.allclose(ours, theirs, atol=1e-10)
    norms = state_gradient_norms(lstm, x, lambda out, state: state[1].sum(), component=1)
    assert torch.allclose(norms[:, -1], torch.full((2,), 2.0, dtype=torch.float64))
    # the cell-state probe holds y_t fixed: a loss on y_T alone gives dL/dc_T = 0
    norms = state_gradient_norms(lstm, x, lambda out, state: state[0].sum(), component=1)
    assert torch.all(norms[:, -1] == 0) and torch.all(norms[:, :-1] > 0)


def test_follows_the_input_dtype():
    lstm = LSTM(2, 3).double()
    out, (y, c) = lstm(torch.randn(1, 2, 2, dtype=torch.float64))
    assert out.dtype == y.dtype == c.dtype == torch.float64


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(input_size=0, hidden_size=3), ValueError),
        (dict(input_size=2, hidden_size=-1), ValueError),
        (dict(input_size=2.0, hidden_size=3), TypeError),
        (dict(input_size=2, hidden_size=3, forget_gate="no"), TypeError),
        (dict(input_size=2, hidden_size=3, batch_first=1), TypeError),
        (dict(input_size=2, hidden_size=3, input_gate_bias="low"), TypeError),
        (dict(input_size=2, hidden_size=3, input_gate_bias=float("nan")), ValueError),
        (dict(input_size=2, hidden_size=3, input_gate_bias=float("-inf")), ValueError),
    ],
)
def test_bad_constructor_arguments(kwargs, error):
    with pytest.raises(error):
        LSTM(**kwargs)


def test_bad_forward_input():
    lstm = LSTM(2, 3)
    with pytest.raises(TypeError, match=X_TYPE + r".*, got f32\[5,2\]"):
        lstm(torch.randn(5, 2))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, input_size\) with T >= 1"):
        lstm(torch.randn(4, 0, 2))
    with pytest.raises(TypeError, match=X_TYPE + r".*, got f32\[4,5,3\]"):
        lstm(torch.randn(4, 5, 3))
    with pytest.raises(TypeError, match=X_TYPE + r".*, got i64\[4,5,2\]"):
        lstm(torch.ones(4, 5, 2, dtype=torch.long))
    with pytest.raises(TypeError, match=X_TYPE):
        lstm([[1.0, 2.0]])
    with pytest.raises(TypeError, match=r"^state must be tuple\[.*, got f32\[1,4,3\]"):
        lstm(torch.randn(4, 5, 2), torch.zeros(1, 4, 3))
    with pytest.raises(TypeError, match=r"^state must be tuple\[.*, got \(f32\[1,4,3\]\(torch\), "
                                        r"f32\[1,4,4\]"):
        lstm(torch.randn(4, 5, 2), (torch.zeros(1, 4, 3), torch.zeros(1, 4, 4)))
    with pytest.raises(TypeError, match=r"^state must be tuple\[.*, got \(f32\[4,3\]"):
        lstm(torch.randn(4, 5, 2), (torch.zeros(4, 3), torch.zeros(1, 4, 3)))
    with pytest.raises(ValueError, match=r"lengths must hold values in \[0, T = 5 \(as in "
                                         r"x\)\], got values from 1 to 6"):
        lstm(torch.randn(2, 5, 2), lengths=torch.tensor([6, 1]))
    with pytest.raises(ValueError, match=r"lengths must have shape \(B\) with B = 2 \(as in "
                                         r"x\), got \(1,\)"):
        lstm(torch.randn(2, 5, 2), lengths=torch.tensor([5]))
    with pytest.raises(TypeError, match=r"^lengths must be Int\[Tensor, 'B'\] \| None, got "
                                        r"f32\[2\]"):
        lstm(torch.randn(2, 5, 2), lengths=torch.tensor([5.0, 1.0]))
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, .*, got f32\[5,2\]"):
        lstm.trace(torch.randn(5, 2))


def test_bad_cell_input():
    lstm = LSTM(2, 3)
    zeros = (torch.zeros(1, 3), torch.zeros(1, 3))
    with pytest.raises(TypeError, match=r"^x_t must be Float\[Tensor, 'B \{self.input_size\}'\], "
                                        r"got f32\[2\]"):
        lstm.cell(torch.randn(2), zeros)
    with pytest.raises(TypeError, match=r"^x_t must be .*the dimension size 4 does not equal "
                                        r"the existing value of \{self.input_size\}=2"):
        lstm.cell(torch.randn(1, 4), zeros)
    with pytest.raises(TypeError, match=r"^state must be tuple\[.*the size of dimension B is 1 "
                                        r"which does not equal the existing value of 2"):
        lstm.cell(torch.randn(2, 2), zeros)
    with pytest.raises(TypeError, match=r"^state must be tuple\[.*, got None"):
        lstm.cell(torch.randn(1, 2), None)


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(TypeError, match="^lstm must be torch.nn.modules.rnn.LSTM"):
        LSTM.from_torch(nn.GRU(2, 3))


def test_reset_parameters_uses_the_torch_bound():
    lstm = LSTM(3, 25)
    bound = 1 / 25**0.5
    assert all(p.abs().max() <= bound for p in lstm.parameters())
    assert all(p.std() > bound / 4 for p in lstm.parameters())


@pytest.mark.parametrize("forget_gate", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_to_torch_computes_the_same_function(forget_gate, dtype):
    seed_everything(10)
    lstm = LSTM(3, 5, forget_gate=forget_gate, input_gate_bias=-1.0).to(dtype)
    fused = lstm.to_torch()
    assert isinstance(fused, nn.LSTM) and fused.weight_ih_l0.dtype == dtype
    x = torch.randn(2, 40, 3, dtype=dtype)
    state = (torch.randn(1, 2, 5, dtype=dtype), torch.randn(1, 2, 5, dtype=dtype))
    out, (y, c) = lstm(x, state)
    ref_out, (ref_y, ref_c) = fused(x, state)
    assert torch.allclose(out, ref_out, atol=1e-6)
    assert torch.allclose(c, ref_c, atol=1e-6)
    back = LSTM.from_torch(fused, forget_gate=forget_gate)
    for name, p in lstm.named_parameters():
        assert torch.allclose(getattr(back, name), p)


def test_to_torch_keeps_a_missing_forget_gate_pinned_during_training():
    lstm = LSTM(3, 4, forget_gate=False)
    fused = lstm.to_torch()
    H = 4
    pinned = [fused.weight_ih_l0[H : 2 * H].clone(), fused.weight_hh_l0[H : 2 * H].clone(),
              fused.bias_ih_l0[H : 2 * H].clone(), fused.bias_hh_l0[H : 2 * H].clone()]
    optimizer = torch.optim.Adam(fused.parameters(), lr=0.1)
    x = torch.randn(2, 6, 3)
    for _ in range(5):
        optimizer.zero_grad()
        fused(x)[0].pow(2).sum().backward()
        optimizer.step()
    after = [fused.weight_ih_l0[H : 2 * H], fused.weight_hh_l0[H : 2 * H],
             fused.bias_ih_l0[H : 2 * H], fused.bias_hh_l0[H : 2 * H]]
    for before, now in zip(pinned, after):
        assert torch.equal(before, now)
    assert not torch.equal(fused.weight_ih_l0[:H], lstm.W_xi)  # the rest did train
    trained = LSTM.from_torch(fused, forget_gate=False)
    assert torch.allclose(trained(x)[0], fused(x)[0], atol=1e-6)


def test_from_torch_without_forget_gate_needs_a_pinned_gate():
    with pytest.raises(ValueError, match="forget gates are exactly 1"):
        LSTM.from_torch(nn.LSTM(2, 3), forget_gate=False)
    with pytest.raises(TypeError, match="^forget_gate must be bool, got 0"):
        LSTM.from_torch(nn.LSTM(2, 3), forget_gate=0)


def test_traces_are_batch_first_and_hold_the_cell_over_padding():
    seed_everything(2)
    lstm = LSTM(3, 4, batch_first=False)
    x = torch.randn(7, 2, 3)  # (T, B, D)
    trace = lstm.trace(x)
    assert trace.outputs.shape == (2, 7, 4)  # traces are batch-first
    assert torch.allclose(trace.outputs, lstm(x)[0].transpose(0, 1))
    lstm.batch_first = True
    x = x.transpose(0, 1)  # (B, T, D)
    lengths = torch.tensor([7, 2])
    _, (_, c_T) = lstm(x, lengths=lengths)
    trace = lstm.trace(x, lengths=lengths)
    assert torch.allclose(trace.cell_state[1, 2:], c_T[0, 1].expand(5, 4))


@pytest.mark.parametrize("layers, bidirectional", [(1, False), (2, False), (3, True)])
def test_without_forget_gate_in_every_layer_and_direction(layers, bidirectional):
    seed_everything(11)
    lstm = LSTM(3, 4, num_layers=layers, bidirectional=bidirectional, forget_gate=False,
                input_gate_bias=-1.0).double()
    assert not any("_f" in name for name, _ in lstm.named_parameters())
    b_i = [p for name, p in lstm.named_parameters() if name.split("_")[:2] == ["b", "i"]]
    assert len(b_i) == layers * lstm.num_directions
    assert all(p.max() < -1.0 + 0.5 + 1e-12 for p in b_i)  # shifted by input_gate_bias
    fused = lstm.to_torch()  # every forget gate pinned at 1
    x = torch.randn(2, 12, 3, dtype=torch.float64)
    assert torch.allclose(lstm(x)[0], fused(x)[0], atol=1e-12)
    back = LSTM.from_torch(fused, forget_gate=False)
    assert torch.allclose(back(x)[0], lstm(x)[0], atol=1e-12)
    for layer_trace in (lstm.trace(x, layer=0), lstm.trace(x)):
        increments = layer_trace.input_gate * layer_trace.cell_input  # (B, T, dirs H)
        forward = slice(0, 4)  # the forward direction integrates left to right
        assert torch.allclose(layer_trace.cell_state[..., forward],
                              increments[..., forward].cumsum(dim=1), atol=1e-12)
        if bidirectional:  # the backward one right to left
            backward = slice(4, 8)
            expected = increments[..., backward].flip(1).cumsum(dim=1).flip(1)
            assert torch.allclose(layer_trace.cell_state[..., backward], expected, atol=1e-12)


def test_a_forget_gate_free_lstm_without_bias_has_no_torch_twin():
    lstm = LSTM(2, 3, bias=False, forget_gate=False)
    with pytest.raises(ValueError, match="no nn.LSTM twin"):
        lstm.to_torch()
    with pytest.raises(ValueError, match="forget gates are exactly 1"):
        LSTM.from_torch(nn.LSTM(2, 3, bias=False), forget_gate=False)


def test_projection_shapes_and_formula():
    seed_everything(12)
    lstm = LSTM(3, 6, proj_size=2).double()
    assert lstm.W_proj.shape == (2, 6) and lstm.W_hg.shape == (6, 2)
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    out, (h_n, c_n) = lstm(x)
    assert out.shape == (2, 5, 2) and h_n.shape == (1, 2, 2) and c_n.shape == (1, 2, 6)
    trace = lstm.trace(x)
    unprojected = trace.output_gate * torch.tanh(trace.cell_state)  # (B, T, H)
    assert torch.allclose(out, unprojected @ lstm.W_proj.T, atol=1e-12)
    y, c = lstm.cell(x[:, 0], (torch.zeros(2, 2, dtype=torch.float64),
                               torch.zeros(2, 6, dtype=torch.float64)))
    assert torch.allclose(y, out[:, 0], atol=1e-12) and c.shape == (2, 6)


# --- chrono initialisation (Tallec and Ollivier, 2018) ------------------------------


def test_chrono_init_sets_b_f_log_uniform_and_b_i_its_negative():
    from seqbook.recurrent import chrono_init
    from seqbook.utils import seeded_generator

    seed_everything(0)
    lstm = LSTM(3, 2000)
    before = {n: p.detach().clone() for n, p in lstm.named_parameters()}
    assert chrono_init(lstm, t_max=50, generator=seeded_generator(1)) is lstm
    u = torch.exp(lstm.b_f.double())  # U[1, T_max - 1]
    assert u.min() >= 1 - 1e-6 and u.max() <= 49 + 1e-4
    assert abs(u.mean().item() - 25.0) < 1.0  # the uniform's mean, (1 + 49) / 2
    assert torch.equal(lstm.b_i, -lstm.b_f)
    # the time constants 1 / (1 - sigma(b_f)) = 1 + u lie between 2 and T_max
    tau = 1 / (1 - torch.sigmoid(lstm.b_f.double()))
    assert torch.allclose(tau, 1 + u, rtol=1e-5)
    for name, value in before.items():  # only b_f and b_i change
        if name not in ("b_f", "b_i"):
            assert torch.equal(getattr(lstm, name), value), name
    # the same generator seed draws the same biases; t_max = 2 gives b_f = 0
    again = chrono_init(LSTM(3, 2000), t_max=50, generator=seeded_generator(1))
    assert torch.equal(again.b_f, lstm.b_f)
    assert torch.equal(chrono_init(LSTM(3, 5), t_max=2).b_f, torch.zeros(5))


def test_chrono_init_reaches_every_layer_and_direction_and_survives_to_torch():
    from seqbook.recurrent import chrono_init

    seed_everything(2)
    lstm = chrono_init(LSTM(3, 4, num_layers=2, bidirectional=True), t_max=100)
    suffixes = ("", "_reverse", "_l1", "_l1_reverse")
    for suffix in suffixes:
        b_f, b_i = getattr(lstm, "b_f" + suffix), getattr(lstm, "b_i" + suffix)
        assert torch.equal(b_i, -b_f)
        assert b_f.min() >= 0 and b_f.max() <= torch.log(torch.tensor(99.0))
    assert len({getattr(lstm, "b_f" + s)[0].item() for s in suffixes}) == 4
    fused = lstm.to_torch()  # the biases reach nn.LSTM: torch's order i, f, g, o
    b = (fused.bias_ih_l0 + fused.bias_hh_l0).chunk(4)
    assert torch.allclose(b[1], lstm.b_f) and torch.allclose(b[0], lstm.b_i)
    x = torch.randn(2, 6, 3)
    assert torch.allclose(fused(x)[0], lstm(x)[0], atol=1e-6)


def test_chrono_layer_spec_builds_a_chrono_lstm():
    from seqbook.experiments import LayerSpec, recurrent_layer

    seed_everything(4)
    fused = recurrent_layer(LayerSpec("lstm", chrono_t_max=100.0), 5, 64)
    b = (fused.bias_ih_l0 + fused.bias_hh_l0).chunk(4)  # i, f, g, o
    assert torch.allclose(b[0], -b[1])
    assert b[1].min() >= 0 and b[1].max() <= torch.log(torch.tensor(99.0)) + 1e-6
    assert b[1].std() > 0.5  # drawn, not a constant
