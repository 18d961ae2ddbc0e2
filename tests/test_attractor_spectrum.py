"""seqbook.attractor.spectrum: the uniform-attention dynamics as a projected power iteration."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.attractor import (
    BareSelfAttention,
    coupling_matrix,
    effective_partners,
    forgetting_time,
    leading_modes,
    mode_spins,
    power_operator,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _spins(B, N, d, seed=1):
    return F.normalize(torch.randn(B, N, d, generator=_gen(seed), dtype=torch.float64), dim=-1)


def _one_block_model(N=6, d=3, c=0.6, gamma=1.0):
    """J_ij = c w w^T for every pair i != j: the leading mode is w on every token."""
    w = F.normalize(torch.arange(1.0, d + 1, dtype=torch.float64), dim=0)
    model = BareSelfAttention(N, d, lam=0.0, gamma=gamma).double()
    with torch.no_grad():
        model.J.copy_(c * torch.outer(w, w).expand(N, N, d, d))
        model.J[torch.arange(N), torch.arange(N)] = 0.0
    return model, w


def test_coupling_matrix_acts_as_the_sum_over_partners():
    model = BareSelfAttention(5, 3, generator=_gen()).double()
    x = _spins(2, 5, 3)
    total = torch.einsum("ijde,bje->bid", model.J.detach(), x)
    assert torch.allclose((x.flatten(1) @ coupling_matrix(model).T).view(2, 5, 3), total)


@pytest.mark.parametrize("gamma", [1.0, 2.0])
def test_uniform_attention_step_is_the_normalised_power_step(gamma):
    model = BareSelfAttention(7, 3, lam=0.0, gamma=gamma, generator=_gen()).double()
    model.J.data.mul_(30)
    x = _spins(3, 7, 3)
    linear = (x.flatten(1) @ power_operator(model).T).view(3, 7, 3)
    assert torch.allclose(model.step(x), F.normalize(linear, dim=-1), atol=1e-12)
    # with attention (lam = 1) and strong couplings it is not
    hot = BareSelfAttention(7, 3, lam=1.0, gamma=gamma).double()
    hot.load_state_dict(model.state_dict())
    assert not torch.allclose(hot.step(x), F.normalize(linear, dim=-1), atol=1e-3)


def test_effective_partners():
    uniform = (1 - torch.eye(5)) / 4
    assert torch.allclose(effective_partners(uniform), torch.full((5,), 4.0))
    one_hot = torch.zeros(2, 3, 3)
    one_hot[:, :, 0] = 1.0
    assert torch.allclose(effective_partners(one_hot), torch.ones(2, 3))
    model = BareSelfAttention(6, 2, lam=0.0)
    assert torch.allclose(
        effective_partners(model.attention(_spins(1, 6, 2).float())), torch.full((1, 6), 5.0)
    )


def test_leading_modes_and_the_forgetting_time_predict_the_dynamics():
    N, c, gamma = 6, 0.6, 1.0
    model, w = _one_block_model(N, c=c, gamma=gamma)
    mu, modes = leading_modes(model, k=2)
    assert torch.allclose(mu.real, torch.tensor([gamma + c, gamma], dtype=torch.float64))
    assert torch.allclose(mu.imag, torch.zeros(2, dtype=torch.float64))
    spins = mode_spins(modes[0], torch.ones(N, 3, dtype=torch.float64))
    assert torch.allclose(spins, w.expand(N, 3), atol=1e-10)
    tau = forgetting_time(mu)
    assert math.isclose(tau, 1 / math.log((gamma + c) / gamma))
    # every token starts at the same angle from w: tan(angle) shrinks by exactly e^{-1/tau}
    side = F.normalize(torch.tensor([1.0, -1.0, 1.0 / 3.0], dtype=torch.float64) - w * 0, dim=0)
    side = F.normalize(side - (side @ w) * w, dim=0)
    x0 = F.normalize(w + 2.0 * side, dim=0).expand(1, N, 3).clone()
    run = model.run(x0, 10)
    along = (run * w).sum(-1)  # (11, 1, N)
    tan = (1 - along**2).sqrt() / along
    ratios = tan[1:] / tan[:-1]
    assert torch.allclose(ratios, torch.full_like(ratios, math.exp(-1 / tau)), atol=1e-10)


def test_mode_spins_chooses_the_sign_and_normalises():
    v = torch.tensor([[0.0, -3.0], [-4.0, 0.0]], dtype=torch.complex128)
    spins = mode_spins(v, torch.ones(2, 2))
    assert torch.allclose(spins, torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert spins.dtype == torch.float32


def test_bad_input():
    model = BareSelfAttention(4, 2)
    with pytest.raises(TypeError, match="BareSelfAttention"):
        coupling_matrix(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="BareSelfAttention"):
        power_operator("model")
    with pytest.raises(ValueError, match=r"k must be <= N d = 8"):
        leading_modes(model, k=9)
    with pytest.raises(ValueError, match="k must be >= 1"):
        leading_modes(model, k=0)
    with pytest.raises(ValueError, match="rows sum to 1"):
        effective_partners(torch.ones(3, 3))
    with pytest.raises(TypeError, match=r"^alpha must be Float\[Tensor, '\*batch N'\]"):
        effective_partners(torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="real eigenvector"):
        mode_spins(torch.tensor([[1.0 + 1.0j, 0.0]]), torch.ones(1, 2))
    with pytest.raises(TypeError, match=r"^reference must be .*the size of dimension N is 3 "
                                        r"which does not equal the existing value of 2"):
        mode_spins(torch.ones(2, 2), torch.ones(3, 2))
    with pytest.raises(ValueError, match=r"len\(eigenvalues\) must be >= 2, got 1"):
        forgetting_time(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="decreasing modulus"):
        forgetting_time(torch.tensor([1.0, 2.0]))


def test_leading_modes_with_fewer_vectors_finds_the_same_modes():
    model = BareSelfAttention(6, 3, generator=torch.Generator().manual_seed(0))
    mu, modes = leading_modes(model, k=4)
    mu1, modes1 = leading_modes(model, k=4, vectors=2)
    assert torch.allclose(mu1, mu)
    assert modes1.shape == (2, 6, 3)
    for v, w in zip(modes[:2], modes1):  # the same direction, up to the phase
        overlap = torch.vdot(v.flatten(), w.flatten()).abs()
        assert torch.isclose(overlap, torch.tensor(1.0, dtype=torch.float64))
    assert leading_modes(model, k=3, vectors=0)[1].shape == (0, 6, 3)
    with pytest.raises(ValueError, match="vectors must be <= k = 2"):
        leading_modes(model, k=2, vectors=3)
