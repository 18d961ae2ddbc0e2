"""seqbook.attractor.bare: the bare self-attention's dynamics and local energies."""

import pytest
import torch
import torch.nn.functional as F

from seqbook.attention import scaled_dot_product_attention
from seqbook.attractor import BareSelfAttention


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _spins(B, N, d, seed=1, dtype=torch.float32):
    x = torch.randn(B, N, d, generator=_gen(seed), dtype=torch.float64)
    return F.normalize(x, dim=-1).to(dtype)


def _reference_field(x, J, lam, key_mask=None):
    """Eqs. (1)-(2) with explicit loops over i and j."""
    B, N, d = x.shape
    h = torch.zeros_like(x)
    for b in range(B):
        for i in range(N):
            js = [j for j in range(N) if j != i and (key_mask is None or key_mask[b, j])]
            scores = torch.stack([x[b, i] @ J[i, j] @ x[b, j] for j in js])
            alpha = torch.softmax(lam * scores, 0)
            h[b, i] = sum(a * (J[i, j] @ x[b, j]) for a, j in zip(alpha, js))
    return h


def test_initialisation_follows_the_paper():
    model = BareSelfAttention(7, 3, generator=_gen())
    J = model.J.detach()
    assert J.shape == (7, 7, 3, 3)
    assert J.abs().max() <= 1 / 6  # uniform in [-1/(2d), 1/(2d)]
    assert (J[torch.arange(7), torch.arange(7)] == 0).all()  # J_ii = 0
    assert J.abs().min() == 0 and (J != 0).sum() == 7 * 6 * 9


@pytest.mark.parametrize("lam", [1.0, 5.0])
def test_local_field_matches_the_equations_written_out(lam):
    model = BareSelfAttention(5, 3, lam=lam, generator=_gen())
    model.J.data.mul_(10)  # stronger couplings: a non-uniform attention
    x = _spins(2, 5, 3)
    assert torch.allclose(
        model.local_field(x), _reference_field(x, model.J.detach(), lam), atol=1e-5
    )
    key_mask = torch.tensor([[True, False, True, True, False], [True] * 5])
    assert torch.allclose(
        model.local_field(x, key_mask),
        _reference_field(x, model.J.detach(), lam, key_mask),
        atol=1e-5,
    )


def test_attention_rows_are_distributions_without_self_attention():
    model = BareSelfAttention(6, 4, generator=_gen())
    alpha = model.attention(_spins(3, 6, 4))
    assert torch.allclose(alpha.sum(-1), torch.ones(3, 6))
    assert (alpha[:, torch.arange(6), torch.arange(6)] == 0).all()
    scores = model.scores(_spins(3, 6, 4))
    assert torch.isinf(scores[:, torch.arange(6), torch.arange(6)]).all()


@pytest.mark.parametrize("lam", [1.0, 5.0])
def test_update_is_minus_the_gradient_of_the_local_energy_plus_gamma_x(lam):
    # eq. (3): x_i(t+1) = -d e_i / d x_i + gamma x_i, with e_i of eq. (4) at temperature lam
    model = BareSelfAttention(6, 4, lam=lam, gamma=0.7, generator=_gen()).double()
    model.J.data.mul_(5)
    x = _spins(3, 6, 4, dtype=torch.float64).requires_grad_(True)
    energies = model.local_energies(x, others=x.detach(), lam=lam)
    (grad,) = torch.autograd.grad(energies.sum(), x)
    x = x.detach()
    assert torch.allclose(model.local_field(x), -grad, atol=1e-12)
    expected = F.normalize(-grad + 0.7 * x, dim=-1)
    assert torch.allclose(model.step(x), expected, atol=1e-12)


def test_local_energy_matches_eq_4_and_total_energy_is_their_sum():
    model = BareSelfAttention(4, 2, generator=_gen()).double()
    x = _spins(2, 4, 2, dtype=torch.float64)
    J = model.J.detach()
    e = torch.tensor(
        [[-torch.log(sum(torch.exp(x[b, i] @ J[i, j] @ x[b, j]) for j in range(4) if j != i))
          for i in range(4)] for b in range(2)],
        dtype=torch.float64,
    )
    assert torch.allclose(model.local_energies(x), e)
    assert torch.allclose(model.energy(x), e.sum(-1))
    # at temperature lam: -(1/lam) log sum exp(lam ...), which tends to -max_j as lam grows
    S = model.scores(x)
    hot = model.local_energies(x, lam=1e4)
    assert torch.allclose(hot, -S.max(-1).values, atol=1e-3)


def test_full_gradient_of_the_total_energy_is_not_the_update():
    # d E / d x_i also collects the terms of the other spins' energies: the dynamics
    # descends each local energy, not the total energy
    model = BareSelfAttention(5, 3, generator=_gen()).double()
    model.J.data.mul_(5)
    x = _spins(1, 5, 3, dtype=torch.float64).requires_grad_(True)
    (grad,) = torch.autograd.grad(model.energy(x).sum(), x)
    assert not torch.allclose(model.local_field(x.detach()), -grad, atol=1e-3)


def test_position_independent_couplings_give_self_attention_with_tied_values():
    # J = W_Q W_K^T for every pair: scores are q_i . k_j and the values are J x_j
    N, d, d_k = 6, 4, 3
    W_Q = torch.randn(d, d_k, generator=_gen(2), dtype=torch.float64)
    W_K = torch.randn(d, d_k, generator=_gen(3), dtype=torch.float64)
    model = BareSelfAttention(N, d, lam=1.0).double()
    J = W_Q @ W_K.T
    model.J.data.copy_(J.expand(N, N, d, d))
    model.J.data[torch.arange(N), torch.arange(N)] = 0.0
    x = _spins(2, N, d, dtype=torch.float64)
    not_self = ~torch.eye(N, dtype=torch.bool)
    out, _ = scaled_dot_product_attention(x @ W_Q, x @ W_K, x @ J.T, not_self, scale=1.0)
    assert torch.allclose(model.local_field(x), out, atol=1e-12)


def test_run_returns_the_trajectory_and_masks_only_the_first_step():
    model = BareSelfAttention(8, 4, generator=_gen())
    model.J.data.mul_(20)
    x = _spins(2, 8, 4)
    visible = torch.ones(2, 8, dtype=torch.bool)
    visible[:, :3] = False
    x = x * visible.unsqueeze(-1)  # masked tokens: zero vectors
    trajectory = model.run(x, 4, key_mask=visible)
    assert trajectory.shape == (5, 2, 8, 4)
    assert torch.equal(trajectory[0], x)
    assert torch.allclose(trajectory[1:].norm(dim=-1), torch.ones(4, 2, 8), atol=1e-5)
    assert torch.allclose(trajectory[1], model.step(x, visible))
    assert torch.allclose(trajectory[2], model.step(trajectory[1]))
    assert not torch.allclose(trajectory[1], model.step(x), atol=1e-4)
    assert model.run(x, 0).shape == (1, 2, 8, 4)


def test_chunking_does_not_change_the_result(monkeypatch):
    import seqbook.attractor.bare as bare

    model = BareSelfAttention(10, 3, generator=_gen())
    model.J.data.mul_(10)
    x = _spins(4, 10, 3)
    whole = model.step(x), model.local_energies(x), model.attention(x), model.scores(x)
    monkeypatch.setattr(bare, "_CHUNK_ELEMENTS", 1)  # one configuration at a time
    assert torch.allclose(model.step(x), whole[0], atol=1e-6)
    assert torch.allclose(model.local_energies(x), whole[1], atol=1e-6)
    assert torch.allclose(model.attention(x), whole[2], atol=1e-6)
    assert torch.equal(model.scores(x).isinf(), whole[3].isinf())


def test_bad_input():
    with pytest.raises(ValueError, match="num_tokens must be >= 2"):
        BareSelfAttention(1, 4)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        BareSelfAttention(4, 2, lam=-1.0)
    with pytest.raises(ValueError, match="lam must be > 0 for the energies"):
        BareSelfAttention(4, 2, lam=0.0).energy(_spins(1, 4, 2))
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        BareSelfAttention(4, 2, gamma=-1.0)
    model = BareSelfAttention(4, 2)
    with pytest.raises(TypeError, match=r"^x must be .*the dimension size 5 does not equal the "
                                        r"existing value of \{self.num_tokens\}=4"):
        model.step(torch.rand(3, 5, 2))
    with pytest.raises(TypeError, match=r"^x must be .*got f32\[4,2\]"):
        model.step(torch.rand(4, 2))
    with pytest.raises(ValueError, match="finite"):
        model.step(torch.full((1, 4, 2), float("nan")))
    with pytest.raises(TypeError, match=r"^key_mask must be Bool\[Tensor, .*got f32\[1,4\]"):
        model.step(torch.rand(1, 4, 2), torch.ones(1, 4))
    with pytest.raises(TypeError, match=r"^key_mask must be .*got bool\[2,4\]"):
        model.step(torch.rand(1, 4, 2), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="at least two tokens"):
        model.step(torch.rand(1, 4, 2), torch.tensor([[True, False, False, False]]))
    # a mask on another device than the couplings: refused by name, not moved silently
    # (the meta device stands for a GPU here)
    with pytest.raises(ValueError, match=r"key_mask is on meta but the module's parameters "
                                         r"are on cpu"):
        model.attention(torch.rand(1, 4, 2), torch.ones(1, 4, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match="steps must be >= 0"):
        model.run(torch.rand(1, 4, 2), -1)
    with pytest.raises(TypeError, match=r"^others must be .*got f32\[2,4,2\]"):
        model.local_energies(torch.rand(1, 4, 2), others=torch.rand(2, 4, 2))


def test_zero_temperature_inverse_is_uniform_attention():
    # lam = 0: every partner weighs 1 / (N - 1) (masked keys excluded): attention switched off
    model = BareSelfAttention(6, 3, lam=0.0, generator=_gen())
    model.J.data.mul_(20)
    x = _spins(2, 6, 3)
    alpha = model.attention(x)
    expected = (1 - torch.eye(6)) / 5
    assert torch.allclose(alpha, expected.expand(2, 6, 6))
    field = torch.einsum("ijde,bje->bid", model.J.detach(), x) / 5
    assert torch.allclose(model.local_field(x), field, atol=1e-6)
    key_mask = torch.tensor([[True, True, False, True, True, True]] * 2)
    masked = model.attention(x, key_mask)
    assert (masked[:, :, 2] == 0).all() and torch.allclose(masked.sum(-1), torch.ones(2, 6))
    assert not torch.isnan(model.run(x, 3, key_mask=key_mask)).any()


def test_float64_computes_in_float64_and_mixed_dtypes_are_refused():
    model = BareSelfAttention(5, 3, generator=_gen()).double()
    x = _spins(2, 5, 3, dtype=torch.float64)
    assert model.step(x).dtype == torch.float64
    assert model.local_energies(x).dtype == torch.float64
    with pytest.raises(
        TypeError,
        match=r"^x must have the dtype of the module's parameters \(torch.float64\), got "
              r"torch.float32",
    ):
        model.step(x.float())
