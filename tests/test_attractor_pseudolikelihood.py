"""seqbook.attractor.pseudolikelihood: training by minimising the energy of the data."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.attractor import (
    BareSelfAttention,
    PatchEmbedding,
    pseudo_likelihood_gradient,
    pseudo_likelihood_loss,
    train_pseudo_likelihood,
)
from seqbook.train import History


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _spins(B, N, d, seed=1):
    return F.normalize(torch.randn(B, N, d, generator=_gen(seed), dtype=torch.float64), dim=-1)


@pytest.mark.parametrize("lam", [1.0, 5.0])
def test_closed_form_gradient_equals_autograd(lam):
    # no backpropagation needed: the gradient is an attention-weighted Hebbian term
    model = BareSelfAttention(7, 3, generator=_gen()).double()
    model.J.data.mul_(4)
    xi = _spins(5, 7, 3)
    loss, grad = pseudo_likelihood_gradient(model, xi, lam)
    auto = pseudo_likelihood_loss(model, xi, lam)
    auto.backward()
    assert torch.allclose(loss, auto.detach())
    assert torch.allclose(grad, model.J.grad, atol=1e-12)
    alpha = model.attention(xi) if lam == model.lam else None
    if alpha is not None:
        hebb = -torch.einsum("bij,bid,bje->ijde", alpha, xi, xi) / 5
        assert torch.allclose(grad, hebb, atol=1e-12)


def test_loss_is_the_mean_total_energy_at_the_training_temperature():
    model = BareSelfAttention(5, 2, generator=_gen()).double()
    xi = _spins(4, 5, 2)
    assert torch.allclose(pseudo_likelihood_loss(model, xi, 5.0), model.energy(xi, lam=5.0).mean())


def test_loss_is_unbounded_below_without_the_norm_constraint():
    model = BareSelfAttention(5, 2, generator=_gen()).double()
    xi = _spins(4, 5, 2)
    losses = []
    for scale in (1.0, 10.0, 100.0):
        scaled = BareSelfAttention(5, 2).double()
        scaled.J.data.copy_(scale * model.J.data)
        losses.append(pseudo_likelihood_loss(scaled, xi).item())
    assert losses[0] > losses[1] > losses[2]


def test_training_keeps_the_precautions_and_lowers_the_loss():
    g = _gen()
    embedding = PatchEmbedding(patch_size=2, image_size=8)
    images = torch.zeros(64, 8, 8)
    images[:, 2:6, 3:5] = torch.rand(64, 4, 2, generator=g)  # a bar with random ink
    xi = embedding(images)
    model = BareSelfAttention(embedding.num_tokens, embedding.dim, generator=g)
    norm = model.J.norm().item()
    history = train_pseudo_likelihood(model, xi, epochs=3, batch_size=16, lr=1.0, generator=g,
                                      progress=False)
    assert isinstance(history, History)
    assert len(history.step_loss) == 12 and len(history.epoch_loss) == 3
    assert history.epoch_loss[-1] < history.epoch_loss[0]
    assert math.isclose(model.J.norm().item(), norm, rel_tol=1e-5)  # fixed L2 norm
    diagonal = model.J[torch.arange(16), torch.arange(16)]
    assert (diagonal == 0).all()  # J_ii = 0


def test_training_is_reproducible_with_a_generator():
    xi = _spins(32, 6, 2).float()
    runs = []
    for _ in range(2):
        model = BareSelfAttention(6, 2, generator=_gen(5))
        train_pseudo_likelihood(
            model, xi, epochs=2, batch_size=8, generator=_gen(6), progress=False
        )
        runs.append(model.J.detach().clone())
    assert torch.equal(runs[0], runs[1])


def test_bad_input():
    model = BareSelfAttention(4, 2)
    xi = _spins(3, 4, 2).float()
    with pytest.raises(TypeError, match="BareSelfAttention"):
        pseudo_likelihood_loss(torch.nn.Linear(2, 2), xi)
    with pytest.raises(ValueError, match="lam must be > 0"):
        pseudo_likelihood_gradient(model, xi, lam=0.0)
    with pytest.raises(TypeError, match=r"^xi must be .*the dimension size 5 does not equal the "
                                        r"existing value of \{model.num_tokens\}=4"):
        train_pseudo_likelihood(model, torch.rand(3, 5, 2), progress=False)
    with pytest.raises(ValueError, match=r"xi must hold at least one configuration"):
        train_pseudo_likelihood(model, torch.rand(0, 4, 2), progress=False)
    with pytest.raises(ValueError, match="clip must be > 0"):
        train_pseudo_likelihood(model, xi, clip=0.0, progress=False)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        train_pseudo_likelihood(model, xi, epochs=0, progress=False)


def test_large_batches_are_summed_in_chunks(monkeypatch):
    import seqbook.attractor.pseudolikelihood as pl

    model = BareSelfAttention(5, 2, generator=_gen()).double()
    model.J.data.mul_(4)
    xi = _spins(7, 5, 2)
    whole = pseudo_likelihood_gradient(model, xi)
    monkeypatch.setattr(pl, "_TERMS", 2 * 5 * 5 * 2)  # chunks of 2 configurations
    chunked = pseudo_likelihood_gradient(model, xi)
    assert torch.allclose(whole[0], chunked[0]) and torch.allclose(whole[1], chunked[1])


def test_hebbian_couplings_are_the_gradient_at_uniform_attention():
    from seqbook.attractor import hebbian_couplings

    model = BareSelfAttention(6, 3, generator=_gen()).double()
    xi = _spins(9, 6, 3)
    _, grad = pseudo_likelihood_gradient(model, xi, lam=1e-9)  # alpha = 1 / (N - 1)
    H = hebbian_couplings(xi)
    assert torch.allclose(-grad * 5, H, atol=1e-7)
    assert torch.allclose(
        hebbian_couplings(xi, norm=2.0).norm(), torch.tensor(2.0, dtype=torch.float64)
    )
    assert (H[torch.arange(6), torch.arange(6)] == 0).all()


def test_on_step_sees_every_step():
    seen = []
    model = BareSelfAttention(4, 2, generator=_gen())
    train_pseudo_likelihood(model, _spins(10, 4, 2).float(), epochs=2, batch_size=4,
                            on_step=seen.append, progress=False)
    assert seen == [1, 2, 3, 4, 5, 6]  # 3 batches per epoch


def test_per_block_training_keeps_every_block_norm():
    g = _gen()
    xi = _spins(48, 6, 2).float()
    model = BareSelfAttention(6, 2, generator=g)
    with torch.no_grad():
        model.J[torch.arange(6), torch.arange(6)] = 0.0
    blocks = model.J.detach().norm(dim=(2, 3))
    history = train_pseudo_likelihood(model, xi, epochs=3, batch_size=8, lr=1.0, generator=g,
                                      progress=False, per_block=True)
    assert history.epoch_loss[-1] < history.epoch_loss[0]
    assert torch.allclose(model.J.detach().norm(dim=(2, 3)), blocks, rtol=1e-5, atol=1e-7)
    # the whole tensor's constraint lets the block norms move
    other = BareSelfAttention(6, 2, generator=_gen())
    with torch.no_grad():
        other.J[torch.arange(6), torch.arange(6)] = 0.0
    train_pseudo_likelihood(other, xi, epochs=3, batch_size=8, lr=1.0, generator=_gen(),
                            progress=False)
    assert (other.J.detach().norm(dim=(2, 3)) - blocks).abs().max() > 1e-2
    with pytest.raises(TypeError, match="per_block must be"):
        train_pseudo_likelihood(model, xi, progress=False, per_block=1)  # type: ignore[arg-type]
