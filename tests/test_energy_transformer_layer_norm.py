"""The energy layer norm: equal to nn.LayerNorm, the gradient of its Lagrangian, convex."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.energy_transformer import EnergyLayerNorm


def _norm(dim=6, gamma=1.7, seed=0, dtype=torch.float64):
    norm = EnergyLayerNorm(dim, gamma=gamma).to(dtype)
    with torch.no_grad():
        norm.delta.copy_(torch.randn(dim, generator=torch.Generator().manual_seed(seed)))
    return norm


def test_equals_torch_layer_norm_with_a_scalar_gain():
    norm = _norm(dtype=torch.float32)
    x = torch.randn(3, 5, 6)
    weight = norm.gamma.detach().expand(6)
    expected = F.layer_norm(x, (6,), weight, norm.delta.detach(), eps=norm.eps)
    torch.testing.assert_close(norm(x), expected, atol=1e-6, rtol=1e-6)


def test_is_the_gradient_of_the_lagrangian():
    norm = _norm()
    x = torch.randn(4, 3, 6, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(norm.lagrangian(x).sum(), x)
    torch.testing.assert_close(grad, norm(x), atol=1e-12, rtol=0)


def test_lagrangian_value():
    norm = _norm(dim=4, gamma=2.0)
    x = torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)
    variance = ((x - 3.0) ** 2).mean()
    gamma = norm.gamma.item()  # 2 up to the float32 rounding of log(2)
    assert math.isclose(gamma, 2.0, rel_tol=1e-7)
    expected = 4 * gamma * math.sqrt(variance + 1e-5) + (norm.delta * x).sum()
    assert math.isclose(norm.lagrangian(x).item(), expected.item(), rel_tol=1e-12)


def test_hessian_is_positive_semidefinite_with_the_constant_direction_in_its_kernel():
    norm = _norm()
    for seed in range(5):
        x = torch.randn(6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) * 3
        hessian = torch.autograd.functional.hessian(lambda v: norm.lagrangian(v), x)
        torch.testing.assert_close(hessian, hessian.T, atol=1e-12, rtol=0)
        eigenvalues = torch.linalg.eigvalsh(hessian)
        assert eigenvalues.min() > -1e-12
        assert eigenvalues.max() > 1e-3          # not trivially zero
        ones = torch.ones(6, dtype=torch.float64)
        assert (hessian @ ones).abs().max() < 1e-12   # shifting x changes nothing


def test_gamma_stays_positive_and_is_trained_through_its_logarithm():
    norm = EnergyLayerNorm(3, gamma=0.5)
    assert math.isclose(norm.gamma.item(), 0.5, rel_tol=1e-6)
    names = {name for name, _ in norm.named_parameters()}
    assert names == {"log_gamma", "delta"}


@pytest.mark.parametrize("gamma", [0.0, -1.0])
def test_gamma_must_be_positive(gamma):
    with pytest.raises(ValueError, match="gamma"):
        EnergyLayerNorm(3, gamma=gamma)
