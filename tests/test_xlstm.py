"""sLSTM and mLSTM against the PyTorch code of the xlstm package (its CPU paths: the
vanilla sLSTM recurrence and the mLSTM's parallel and recurrent backends), outputs and
gradients, in float64."""

import math

import pytest
import torch

from seqbook.xlstm import SLSTM, mlstm_parallel, mlstm_recurrent

slstm_vanilla = pytest.importorskip("xlstm.blocks.slstm.src.vanilla")
mlstm_backends = pytest.importorskip("xlstm.blocks.mlstm.backends")


def _theirs_slstm(layer, x):
    """The xlstm package's vanilla sLSTM (one head) with our layer's weights."""
    B, T, _ = x.shape
    H = layer.hidden_size
    Wx = (x @ layer.W_x.T).transpose(0, 1)  # (T, B, 4H)
    states = torch.zeros(4, B, H, dtype=x.dtype)
    pointwise = slstm_vanilla.slstm_pointwise_function_registry["slstm"]
    all_states, _, _ = slstm_vanilla.slstm_forward(Wx, states, layer.W_h[None], layer.b, pointwise)
    return all_states[0, 1:].transpose(0, 1)  # the hidden states y, (B, T, H)


def test_slstm_equals_the_xlstm_packages_vanilla_recurrence():
    torch.manual_seed(0)
    layer = SLSTM(3, 5).double()
    with torch.no_grad():
        layer.b.normal_(0.0, 2.0)  # gates away from zero, where the stabiliser acts
    x = torch.randn(2, 30, 3, dtype=torch.float64)
    ours, _ = layer(x)
    theirs = _theirs_slstm(layer, x)
    assert (ours - theirs).abs().max() < 1e-12
    weights = torch.randn_like(ours)
    g_ours = torch.autograd.grad((ours * weights).sum(), list(layer.parameters()))
    g_theirs = torch.autograd.grad((_theirs_slstm(layer, x) * weights).sum(),
                                   list(layer.parameters()))
    for a, b in zip(g_ours, g_theirs):
        assert (a - b).abs().max() < 1e-10


def test_slstm_stays_finite_where_plain_exponentials_overflow():
    layer = SLSTM(1, 1).double()
    with torch.no_grad():
        layer.W_x.fill_(1.0), layer.W_h.zero_(), layer.b.zero_()
    x = torch.full((1, 5, 1), 800.0, dtype=torch.float64)  # exp(800) overflows float64
    h, state = layer(x)
    assert torch.isfinite(h).all() and torch.isfinite(state.c).all()


def _gate_inputs(B=2, T=17, d=6, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(3, B, T, d, generator=g, dtype=dtype)
    i_pre = torch.randn(B, T, generator=g, dtype=dtype) * 3
    f_pre = torch.randn(B, T, generator=g, dtype=dtype) * 3 + 2
    return q, k, v, i_pre, f_pre


def test_mlstm_parallel_and_recurrent_forms_are_equal():
    inputs = _gate_inputs()
    assert (mlstm_parallel(*inputs) - mlstm_recurrent(*inputs)).abs().max() < 1e-12


def test_mlstm_equals_the_xlstm_packages_parallel_backend():
    q, k, v, i_pre, f_pre = [t.requires_grad_() for t in _gate_inputs()]
    ours = mlstm_parallel(q, k, v, i_pre, f_pre)
    theirs = mlstm_backends.parallel_stabilized_simple(
        q[:, None], k[:, None], v[:, None], i_pre[:, None, :, None], f_pre[:, None, :, None],
        eps=0.0)[:, 0]
    assert (ours - theirs).abs().max() < 1e-12
    weights = torch.randn_like(ours)
    leaves = [q, k, v, i_pre, f_pre]
    for a, b in zip(torch.autograd.grad((ours * weights).sum(), leaves),
                    torch.autograd.grad((theirs * weights).sum(), leaves)):
        assert (a - b).abs().max() < 1e-10


def test_mlstm_equals_the_xlstm_packages_recurrent_steps():
    q, k, v, i_pre, f_pre = _gate_inputs(B=1)
    B, T, d = q.shape
    C, n, m = torch.zeros(B, 1, d, d, dtype=q.dtype), torch.zeros(B, 1, d, 1, dtype=q.dtype), \
        torch.zeros(B, 1, 1, 1, dtype=q.dtype)
    theirs = []
    for t in range(T):
        h, (C, n, m) = mlstm_backends.recurrent_step_stabilized_simple(
            C, n, m, q[:, None, t:t + 1].clone(), k[:, None, t:t + 1].clone(),
            v[:, None, t:t + 1].clone(), i_pre[:, None, t, None, None],
            f_pre[:, None, t, None, None], eps=0.0)
        theirs.append(h[:, 0, 0])
    assert (mlstm_recurrent(q, k, v, i_pre, f_pre) - torch.stack(theirs, 1)).abs().max() < 1e-12


def test_mlstm_with_open_gates_is_linear_attention_with_a_bounded_normaliser():
    q, k, v, _, _ = _gate_inputs()
    zeros, opened = torch.zeros(q.shape[:2], dtype=q.dtype), torch.full(q.shape[:2], 60.0,
                                                                        dtype=q.dtype)
    A = (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])).tril()  # (B, T, T)
    expected = (A @ v) / A.sum(-1, keepdim=True).abs().clamp(min=1.0)
    assert (mlstm_parallel(q, k, v, zeros, opened) - expected).abs().max() < 1e-12


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: SLSTM(3, 4)(torch.ones(1, 5, 2)), TypeError,
         r"^x must be Float\[Tensor, 'B T \{self.input_size\}'\], got f32\[1,5,2\].*"
         r"size 2 does not equal the existing value of \{self.input_size\}=3"),
        (lambda: SLSTM(3, 4)(torch.ones(2, 5, 3), SLSTM(3, 4).init_state(1)), ValueError,
         r"state.h must have shape \(2, 4\)"),
        (lambda: SLSTM(3, 4)(torch.ones(2, 5, 3), (torch.zeros(2, 4),) * 4), TypeError,
         "^state must be .*SLSTMState"),
        (lambda: SLSTM(3, 4)(torch.ones(1, 5, 3, dtype=torch.float64)), TypeError,
         r"^x must have the dtype of the module's parameters \(torch.float32\), got "
         "torch.float64"),
        (lambda: SLSTM(3, 4).init_state("2"), TypeError, "^batch_size must be int"),
        (lambda: SLSTM(3, 4).init_state(0), ValueError, "^batch_size must be >= 1"),
        (lambda: SLSTM.step(torch.ones(2, 16), SLSTM(3, 4).init_state(1)), ValueError,
         r"state.h must have shape \(2, 4\)"),
        (lambda: SLSTM.step(torch.ones(1, 17), SLSTM(3, 4).init_state(1)), ValueError,
         r"pre must have shape \(B, 4H\) with 4H a multiple of 4, got \(1, 17\)"),
        (lambda: SLSTM.step(torch.ones(1, 16), "state"), TypeError,
         "^state must be .*SLSTMState"),
        (lambda: SLSTM.step(torch.ones(16), SLSTM(3, 4).init_state(1)), TypeError,
         r"^pre must be Float\[Tensor, 'B H4'\], got f32\[16\].*1 dimensions"),
        (lambda: SLSTM(0, 4), ValueError, "input_size"),
        (lambda: mlstm_parallel(torch.ones(1, 3, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 4),
                                torch.ones(1, 3), torch.ones(1, 3)), TypeError,
         r"^v must be Float\[Tensor, 'B T d'\].*dimension d is 4"),
        (lambda: mlstm_parallel(torch.ones(1, 3, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 2),
                                torch.ones(1, 3), torch.ones(1, 3, dtype=torch.float64)),
         TypeError, "^f_pre has dtype torch.float64 but q"),
        (lambda: mlstm_recurrent(torch.ones(1, 3, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 2),
                                 torch.ones(1, 4), torch.ones(1, 3)), TypeError,
         r"^i_pre must be .*dimension T is 4"),
        (lambda: mlstm_parallel(torch.ones(1, 3, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 2),
                                torch.ones(1, 3), [1.0]), TypeError, "^f_pre must be Float"),
        # empty sequences: a loop or a max over no steps
        (lambda: mlstm_parallel(*(torch.ones(1, 0, 2),) * 3, *(torch.ones(1, 0),) * 2),
         ValueError, r"q must have shape \(B, T, d\) with T >= 1, got \(1, 0, 2\)"),
        (lambda: mlstm_recurrent(*(torch.ones(1, 0, 2),) * 3, *(torch.ones(1, 0),) * 2),
         ValueError, r"q must have shape \(B, T, d\) with T >= 1"),
        (lambda: SLSTM(3, 4)(torch.ones(2, 0, 3)), ValueError,
         r"x must have shape \(B, T, input_size\) with T >= 1, got \(2, 0, 3\)"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_mlstm_step_is_one_step_of_the_recurrent_form():
    from seqbook.xlstm import mlstm_step

    q, k, v, i_pre, f_pre = _gate_inputs(T=1)
    B, _, d = q.shape
    C, n, m = torch.zeros(B, d, d, dtype=q.dtype), torch.zeros(B, d, dtype=q.dtype), \
        torch.full((B,), -math.inf, dtype=q.dtype)
    *_, h = mlstm_step(C, n, m, q[:, 0], k[:, 0] / math.sqrt(d), v[:, 0], i_pre[:, 0],
                       f_pre[:, 0])
    assert (h - mlstm_recurrent(q, k, v, i_pre, f_pre)[:, 0]).abs().max() < 1e-12
    with pytest.raises(TypeError, match=r"^n must be Float\[Tensor, 'B d'\]"):
        mlstm_step(C, n[:, :1], m, q[:, 0], k[:, 0], v[:, 0], i_pre[:, 0], f_pre[:, 0])


def test_forward_hooks_fire_on_every_submodule():
    layer = SLSTM(3, 4)
    fired = set()
    for name, module in layer.named_modules():
        module.register_forward_hook(lambda *_, name=name: fired.add(name))
    layer(torch.randn(2, 5, 3))
    assert fired == {name for name, _ in layer.named_modules()}
