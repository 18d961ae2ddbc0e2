"""State-space models against trusted twins: scipy's zero-order hold, a fine numerical
integration, mambapy's selective scans and Mamba block (outputs and gradients)."""

import math

import numpy as np
import pytest
import torch

from seqbook.ssm import (
    S4D,
    MambaBlock,
    selective_scan,
    selective_scan_sequential,
    semiseparable_matrix,
    ssm_convolution,
    ssm_kernel,
    ssm_recurrence,
    zoh,
)

mambapy = pytest.importorskip("mambapy.mamba")


def _system(N=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(N, N, generator=g, dtype=torch.float64) - 2 * N**0.5 * torch.eye(
        N, dtype=torch.float64)
    B = torch.randn(N, 1, generator=g, dtype=torch.float64)
    C = torch.randn(1, N, generator=g, dtype=torch.float64)
    return A, B, C


def test_zoh_equals_scipy():
    import scipy.signal  # here: importing it costs seconds, in every test process

    A, B, C = _system()
    A_bar, B_bar = zoh(A, B, 0.1)
    Ad, Bd, *_ = scipy.signal.cont2discrete((A.numpy(), B.numpy(), C.numpy(), np.zeros((1, 1))),
                                           0.1, method="zoh")
    assert np.abs(A_bar.numpy() - Ad).max() < 1e-12
    assert np.abs(B_bar.numpy() - Bd).max() < 1e-12


def test_zoh_is_the_exact_solution_for_a_held_input():
    A, B, _ = _system()
    h, x, steps = torch.randn(4, dtype=torch.float64), 0.7, 20000
    fine = h.clone()
    for _ in range(steps):  # Heun's method over one step of 0.1 with x held constant
        k1 = A @ fine + B[:, 0] * x
        k2 = A @ (fine + 0.1 / steps * k1) + B[:, 0] * x
        fine = fine + 0.1 / steps / 2 * (k1 + k2)
    A_bar, B_bar = zoh(A, B, 0.1)
    assert (A_bar @ h + B_bar[:, 0] * x - fine).abs().max() < 1e-9


def test_recurrence_equals_convolution():
    A, B, C = _system()
    A_bar, B_bar = zoh(A, B, 0.05)
    x = torch.randn(3, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = ssm_recurrence(x, A_bar, B_bar, C)
    K = ssm_kernel(A_bar, B_bar, C, 64)
    assert (ssm_convolution(x, K) - y).abs().max() < 1e-12


def test_s4d_convolution_equals_its_recurrence_and_the_general_ssm():
    layer = S4D(3, 8, generator=torch.Generator().manual_seed(0)).double()
    x = torch.randn(2, 50, 3, dtype=torch.float64)
    assert (layer(x) - layer.recurrent(x)).abs().max() < 1e-12
    # channel 0 as a real SSM of 8 states: each complex mode a = alpha + i omega is the
    # block [[alpha, -omega], [omega, alpha]] driven by B = (1, 0) and read by
    # C = (2 Re c, -2 Im c); its ZOH by matrix exponential gives the same kernel
    a = (-torch.exp(layer.A_real_log) + 1j * layer.A_imag)[0]
    c = torch.view_as_complex(layer.C)[0]
    A = torch.zeros(8, 8, dtype=torch.float64)
    B = torch.zeros(8, 1, dtype=torch.float64)
    C = torch.zeros(1, 8, dtype=torch.float64)
    for n in range(4):
        i = 2 * n
        A[i:i + 2, i:i + 2] = torch.tensor([[a[n].real, -a[n].imag], [a[n].imag, a[n].real]])
        B[i, 0] = 1.0
        C[0, i], C[0, i + 1] = 2 * c[n].real, -2 * c[n].imag
    A_bar, B_bar = zoh(A, B, layer.log_dt[0].exp().item())
    assert (layer.kernel(50)[0] - ssm_kernel(A_bar, B_bar, C, 50)).abs().max() < 1e-12


def _scan_inputs(b=2, L=33, D=5, N=4, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, L, D, generator=g, dtype=dtype)
    delta = torch.nn.functional.softplus(torch.randn(b, L, D, generator=g, dtype=dtype))
    A = -torch.rand(D, N, generator=g, dtype=dtype) * 2
    B, C = torch.randn(2, b, L, N, generator=g, dtype=dtype)
    return x, delta, A, B, C, torch.randn(D, generator=g, dtype=dtype)


def _mambapy_block(D=5, N=4):
    config = mambapy.MambaConfig(d_model=D, n_layers=1, d_state=N)
    config.d_inner = D  # the scans only read d_inner and d_state
    block = mambapy.MambaBlock(mambapy.MambaConfig(d_model=8, n_layers=1, d_state=N))
    block.config = config
    return block


def test_scans_equal_mambapys_in_outputs_and_gradients():
    inputs = _scan_inputs()
    reference = _mambapy_block()
    for ours, theirs in ((selective_scan, reference.selective_scan),
                         (selective_scan_sequential, reference.selective_scan_seq)):
        leaves = [t.clone().requires_grad_() for t in inputs]
        mine = ours(*leaves)
        twins = [t.clone().requires_grad_() for t in inputs]
        other = theirs(*twins)
        assert (mine - other).abs().max() < 1e-12
        weights = torch.randn_like(mine)
        grads = torch.autograd.grad((mine * weights).sum(), leaves)
        twin_grads = torch.autograd.grad((other * weights).sum(), twins)
        for g1, g2 in zip(grads, twin_grads):
            assert (g1 - g2).abs().max() < 1e-10


def test_parallel_scan_equals_the_loop_for_every_length():
    for L in (1, 2, 3, 8, 17, 64):
        inputs = _scan_inputs(L=L, seed=L)
        assert (selective_scan(*inputs) - selective_scan_sequential(*inputs)).abs().max() < 1e-12


def test_semiseparable_matrix_equals_the_scan_with_a_scalar_decay():
    x, delta, _, B, C, _ = _scan_inputs(D=1)
    a = -torch.rand(1, 1, dtype=torch.float64)
    A = a.expand(1, 4).contiguous()  # the same decay for every state: A = a I
    y = selective_scan_sequential(x, delta, A, B, C, torch.zeros(1, dtype=torch.float64))
    M = semiseparable_matrix(delta[..., 0] * a[0, 0], B * delta, C)
    assert (M @ x - y).abs().max() < 1e-12


def test_mamba_block_equals_mambapys_in_outputs_and_gradients():
    torch.manual_seed(0)
    theirs = mambapy.MambaBlock(mambapy.MambaConfig(d_model=8, n_layers=1, d_state=4)).double()
    ours = MambaBlock.from_mambapy(theirs)
    u = torch.randn(2, 19, 8, dtype=torch.float64)
    # mambapy computes A and D in float32 even in a float64 model (A_log.float(),
    # D.float() in its ssm), so the two agree to that rounding, not to float64's
    assert (ours(u) - theirs(u)).abs().max() < 1e-10
    weights = torch.randn(2, 19, 8, dtype=torch.float64)
    g_ours = torch.autograd.grad((ours(u) * weights).sum(), list(ours.parameters()))
    g_theirs = dict(zip([n for n, _ in theirs.named_parameters()],
                        torch.autograd.grad((theirs(u) * weights).sum(),
                                            list(theirs.parameters()))))
    for (name, _), g in zip(ours.named_parameters(), g_ours):
        assert (g - g_theirs[name]).abs().max() < 1e-6 * g.abs().max(), name


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: zoh(torch.eye(2), torch.ones(3, 1), 0.1), TypeError,
         r"^B must be Float\[Tensor, 'N M'\].*dimension N is 3 .* existing value of 2"),
        (lambda: zoh(torch.ones(2, 3), torch.ones(2, 1), 0.1), TypeError,
         r"^A must be Float\[Tensor, 'N N'\]"),
        (lambda: zoh(torch.eye(2), torch.ones(2, 1), "0.1"), TypeError, "^delta must be float"),
        (lambda: zoh(torch.eye(2), torch.ones(2, 1, dtype=torch.float64), 0.1), TypeError,
         "B has dtype torch.float64 but A"),
        (lambda: ssm_recurrence(torch.ones(1, 3, dtype=torch.float64), torch.eye(2),
                                torch.ones(2, 1), torch.ones(1, 2)), TypeError,
         "^A_bar has dtype torch.float32 but x has dtype torch.float64"),
        (lambda: ssm_kernel(torch.eye(2), torch.ones(2, 1), torch.ones(1, 2), 0), ValueError,
         "length must be >= 1"),
        (lambda: S4D(3, 4).kernel(-1), ValueError, "length must be >= 1"),
        (lambda: S4D(3, 4, generator=0), TypeError, "^generator must be .*Generator"),
        (lambda: ssm_convolution(torch.ones(2, 5), torch.ones(3, 5)), ValueError,
         r"K must broadcast against x \(2, 5\)"),
        (lambda: S4D(3, 4)(torch.ones(1, 5, 3, dtype=torch.float64)), TypeError,
         r"^x must have the dtype of the module's parameters \(torch.float32\)"),
        (lambda: zoh(torch.eye(2), torch.ones(2, 1), 0.0), ValueError, "delta must be"),
        (lambda: ssm_kernel(torch.eye(2), torch.ones(2, 1), torch.ones(1, 3), 4),
         TypeError, r"^C must be Float\[Tensor, '1 N'\]"),
        (lambda: ssm_convolution(torch.ones(2, 5), torch.ones(4)), TypeError,
         r"^K must be .*dimension L is 4"),
        (lambda: S4D(3, 5), ValueError, r"state_size must be a multiple of 2, got 5"),
        (lambda: S4D(3, 0), ValueError, r"state_size must be >= 1, got 0"),
        (lambda: S4D(3, 4)(torch.ones(1, 5, 2)), TypeError,
         r"^x must be Float\[Tensor, 'b L \{self.channels\}'\].*existing value of "
         r"\{self.channels\}=3"),
        (lambda: selective_scan(*_scan_inputs()[:5], torch.ones(4, dtype=torch.float64)),
         TypeError, r"^D must be .*dimension channels is 4"),
        (lambda: semiseparable_matrix(torch.zeros(1, 3), torch.ones(1, 4, 2),
                                      torch.ones(1, 4, 2)), TypeError,
         r"^B must be Float\[Tensor, 'b L N'\].*dimension L is 4"),
        (lambda: semiseparable_matrix(torch.zeros(1, 3), torch.ones(1, 3, 2),
                                      torch.ones(1, 3, 1)), TypeError,
         r"^C must be Float\[Tensor, 'b L N'\].*dimension N is 1"),
        (lambda: selective_scan(*_scan_inputs()[:2], -torch.ones(4, 3, dtype=torch.float64),
                                *_scan_inputs()[3:]),
         TypeError, r"^A must be Float\[Tensor, 'channels N'\].*dimension channels is 4"),
        (lambda: selective_scan(*_scan_inputs()[:5], torch.ones(5)), TypeError,
         "^D has dtype torch.float32 but x"),
        (lambda: MambaBlock(8)(torch.ones(1, 3, 8, dtype=torch.float64)), TypeError,
         r"^u must have the dtype of the module's parameters \(torch.float32\)"),
        (lambda: MambaBlock(8)(torch.ones(1, 3, 7)), TypeError,
         r"^u must be Float\[Tensor, 'b L \{self.d_model\}'\].*existing value of "
         r"\{self.d_model\}=8"),
        (lambda: MambaBlock(8, state_size=0), ValueError, "^state_size must be >= 1"),
        # empty signals: a loop, an FFT or a convolution over no positions
        (lambda: MambaBlock(8)(torch.ones(1, 0, 8)), ValueError,
         r"u must have shape \(b, L, d_model\) with L >= 1, got \(1, 0, 8\)"),
        (lambda: S4D(3, 4)(torch.ones(1, 0, 3)), ValueError,
         r"x must have shape \(b, L, channels\) with L >= 1"),
        (lambda: S4D(3, 4).recurrent(torch.ones(1, 0, 3)), ValueError,
         r"x must have shape \(b, L, channels\) with L >= 1"),
        (lambda: ssm_recurrence(torch.ones(2, 0), torch.eye(2), torch.ones(2, 1),
                                torch.ones(1, 2)), ValueError,
         r"x must have shape \(b, L\) with L >= 1, got \(2, 0\)"),
        (lambda: ssm_convolution(torch.ones(2, 0), torch.ones(0)), ValueError,
         r"x must have shape \(\.\.\., L\) with L >= 1"),
        (lambda: selective_scan_sequential(*(t[:, :0] for t in _scan_inputs()[:2]),
                                           _scan_inputs()[2],
                                           *(t[:, :0] for t in _scan_inputs()[3:5]),
                                           _scan_inputs()[5]), ValueError,
         r"x must have shape \(b, L, channels\) with L >= 1"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_s4d_recurrent_path_matches_in_float32_too():
    layer = S4D(2, 4, generator=torch.Generator().manual_seed(1))
    x = torch.randn(1, 30, 2)
    assert torch.allclose(layer(x), layer.recurrent(x), atol=1e-5)
    assert math.isfinite(layer.kernel(1000).abs().max().item())


def test_selective_discretize_is_the_first_half_of_the_scan():
    from seqbook.ssm import selective_discretize

    x, delta, A, B, C, D = _scan_inputs(L=1)
    A_bar, Bx = selective_discretize(x, delta, A, B)
    assert A_bar.shape == Bx.shape == (2, 1, 5, 4)
    # one step from h_0 = 0: y_1 = C_1^T (Delta_1 B_1 x_1) + D x_1
    y = (Bx @ C[..., None])[..., 0] + D * x
    assert (y - selective_scan_sequential(x, delta, A, B, C, D)).abs().max() < 1e-12


@pytest.mark.parametrize("make, x", [
    (lambda: S4D(3, 4), torch.randn(2, 5, 3)),
    (lambda: MambaBlock(8, state_size=4), torch.randn(2, 5, 8)),
])
def test_forward_hooks_fire_on_every_submodule(make, x):
    model = make()
    fired = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda *_, name=name: fired.add(name))
    model(x)
    assert fired == {name for name, _ in model.named_modules()}
