"""The Energy Transformer block: closed form == autograd, and the energy never increases."""

from __future__ import annotations

import pytest
import torch
from torch.func import jvp

from seqbook.energy_transformer import EnergyTransformer


def _block(kind="relu", seed=0, std=0.5, D=6):
    g = torch.Generator().manual_seed(seed)
    block = EnergyTransformer(D, num_heads=2, head_dim=3, num_memories=10, hopfield=kind,
                              init_std=std, generator=g).double()
    with torch.no_grad():  # independent keys and a non-trivial layer norm
        block.attention.W_K.normal_(0, std, generator=g)
        block.norm.delta.normal_(0, 0.3, generator=g)
        block.norm.log_gamma.fill_(0.4)
    return block


def _x(B=3, N=5, D=6, seed=1, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    return scale * torch.randn(B, N, D, dtype=torch.float64, generator=gen)


@pytest.mark.parametrize("kind", ["relu", "softmax"])
@pytest.mark.parametrize("seed", range(3))
def test_closed_form_gradient_equals_autograd(kind, seed):
    block = _block(kind, seed)
    g = block.norm(_x(seed=seed + 7))
    closed = block.gradient(g, "closed")
    auto = block.gradient(g, "autograd")
    assert (closed - auto).abs().max() < 1e-10
    assert closed.abs().max() > 1e-2


def test_energy_is_the_sum_of_attention_and_hopfield_energies():
    block = _block()
    x = _x()
    g = block.norm(x)
    expected = block.attention.energy(g) + block.hopfield.energy(g)
    torch.testing.assert_close(block.energy(x), expected)


@pytest.mark.parametrize("kind", ["relu", "softmax"])
def test_continuous_time_energy_derivative_is_minus_a_hessian_quadratic_form(kind):
    # dE/dt along tau dx/dt = -dE/dg (tau = 1) is -xdot^T (d2L/dx2) xdot <= 0
    block = _block(kind)
    x = _x(B=1)
    xdot = -block.gradient(block.norm(x))
    _, dE = jvp(lambda v: block.energy(v), (x,), (xdot,))
    hessian_form = 0.0
    for A in range(x.shape[1]):
        hessian = torch.autograd.functional.hessian(
            lambda v: block.norm.lagrangian(v), x[0, A])
        hessian_form += xdot[0, A] @ hessian @ xdot[0, A]
    torch.testing.assert_close(dE, -hessian_form.reshape(1), atol=1e-10, rtol=1e-10)
    assert dE.item() < 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["relu", "softmax"])
@pytest.mark.parametrize("seed", range(3))
def test_energy_never_increases_along_the_dynamics_for_a_small_step(kind, seed):
    block = _block(kind, seed, std=1.0)
    with torch.no_grad():
        trajectory = block.run(_x(seed=seed), steps=200, alpha=0.01)
        energies = block.energy(trajectory.flatten(0, 1)).view(201, -1)
    assert (energies.diff(dim=0) <= 1e-12).all()
    assert (energies[-1] < energies[0] - 1e-3).all()  # it does descend


def _two_token_attention(seed=0):
    # two tokens, one head with Y = D, no Hopfield memories: the energy is a bilinear
    # form of the two tokens, concave in each one but not in both together
    g = torch.Generator().manual_seed(seed)
    block = EnergyTransformer(6, num_heads=1, head_dim=6, num_memories=4, init_std=1.0,
                              generator=g).double()
    with torch.no_grad():
        block.attention.W_K.normal_(0, 1.0, generator=g)
        block.hopfield.xi.zero_()
    return block, torch.randn(64, 2, 6, dtype=torch.float64, generator=g)


def test_a_large_step_can_raise_the_energy():
    block, x = _two_token_attention()
    with torch.no_grad():
        for alpha, rises in ((0.01, False), (1.0, True)):
            trajectory = block.run(x, steps=10, alpha=alpha)
            energies = block.energy(trajectory.flatten(0, 1)).view(11, -1)
            assert bool((energies.diff(dim=0) > 1e-6).any()) == rises, alpha


def test_one_token_at_a_time_never_raises_the_energy_even_for_a_large_step():
    # E is concave in each g_A alone, and a step moves g_A towards -dE/dg_A
    block, x = _two_token_attention()
    with torch.no_grad():
        energies = [block.energy(x)]
        for _ in range(5):
            for A in range(x.shape[1]):
                step = block(x, alpha=10.0)
                x = x.clone()
                x[:, A] = step[:, A]
                energies.append(block.energy(x))
    assert (torch.stack(energies).diff(dim=0) <= 1e-9).all()


def test_run_steps_and_trajectory():
    block = _block()
    x = _x()
    trajectory = block.run(x, steps=3, alpha=0.1)
    assert trajectory.shape == (4, 3, 5, 6)
    torch.testing.assert_close(trajectory[0], x)
    torch.testing.assert_close(trajectory[1], block(x, 0.1))
    torch.testing.assert_close(trajectory[1], x - 0.1 * block.gradient(block.norm(x)))


def test_training_through_the_closed_form_equals_training_through_autograd():
    # backpropagation through the closed-form dynamics == double backward through
    # the autograd dynamics: the parameter gradients of a loss after 3 steps agree
    block = _block("relu")
    x = _x()
    grads = {}
    for method in ("closed", "autograd"):
        block.zero_grad()
        final = block.run(x, steps=3, alpha=0.2, method=method)[-1]
        (final ** 2).sum().backward()
        grads[method] = {n: p.grad.clone() for n, p in block.named_parameters()}
    for name, grad in grads["closed"].items():
        torch.testing.assert_close(grad, grads["autograd"][name], atol=1e-10, rtol=1e-8)
        assert grad.abs().max() > 0, name


def test_autograd_method_works_under_no_grad():
    block = _block()
    with torch.no_grad():
        out = block.run(_x(), steps=2, method="autograd")
    assert not out.requires_grad
    torch.testing.assert_close(out, block.run(_x(), steps=2).detach())
