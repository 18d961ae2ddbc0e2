"""The Hopfield network module: energies, closed-form updates, and the modern Hopfield link."""

from __future__ import annotations

import math

import pytest
import torch

from seqbook.energy_transformer import HopfieldNetwork
from seqbook.hopfield import modern_energy


def _memory(kind="relu", beta=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return HopfieldNetwork(5, 7, kind, beta=beta, init_std=1.0, generator=g).double()


def _tokens(seed=1):
    return torch.randn(3, 4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["relu", "softmax"])
@pytest.mark.parametrize("seed", range(3))
def test_closed_form_update_is_minus_the_autograd_gradient(kind, seed):
    memory = _memory(kind, beta=0.7, seed=seed)
    g = _tokens(seed + 5).requires_grad_(True)
    (grad,) = torch.autograd.grad(memory.energy(g).sum(), g)
    assert (memory(g) + grad).abs().max() < 1e-10
    assert grad.abs().max() > 1e-2


def test_relu_energy_written_out():
    memory = _memory()
    g = _tokens()
    h = g @ memory.xi.T
    expected = -0.5 * (h.clamp_min(0) ** 2).sum((1, 2))
    torch.testing.assert_close(memory.energy(g), expected, atol=1e-12, rtol=0)
    # only memories with a positive overlap contribute to the update
    torch.testing.assert_close(memory(g), h.clamp_min(0) @ memory.xi, atol=1e-12, rtol=0)


def test_softmax_energy_is_the_modern_hopfield_energy_without_its_quadratic_term():
    beta = 0.8
    memory = _memory("softmax", beta=beta)
    g = _tokens()
    xi = memory.xi.detach()
    M = xi.norm(dim=-1).max()
    modern = modern_energy(g, xi, beta)  # (B, N)
    lse_part = modern - 0.5 * (g * g).sum(-1) - math.log(7) / beta - 0.5 * M**2
    torch.testing.assert_close(memory.energy(g), lse_part.sum(-1), atol=1e-12, rtol=0)


def test_the_relu_update_is_a_tied_two_layer_perceptron():
    memory = _memory()
    g = _tokens()
    mlp = torch.nn.Sequential(torch.nn.Linear(5, 7, bias=False), torch.nn.ReLU(),
                              torch.nn.Linear(7, 5, bias=False)).double()
    with torch.no_grad():
        mlp[0].weight.copy_(memory.xi)
        mlp[2].weight.copy_(memory.xi.T)
    torch.testing.assert_close(memory(g), mlp(g), atol=1e-12, rtol=0)
