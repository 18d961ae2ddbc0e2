r"""Training the bare self-attention without backpropagation: minimise the energy of the data.

Shape letters: ``P`` training configurations, ``B`` a mini-batch, ``N`` tokens, ``d``
the spin dimension.

The loss is the total energy of the training examples :math:`\boldsymbol\xi^\mu`
(D'Amico & Negri 2024, eqs. 6-7), here averaged over a mini-batch,

.. math::
    \mathcal L = \frac{1}{B}\sum_{\mu}\sum_i e_i(\boldsymbol\xi^\mu), \qquad
    e_i = -\frac{1}{\lambda}\log\sum_{j\ne i}\exp\bigl(\lambda\,
        \boldsymbol\xi_i^\top J_{ij}\boldsymbol\xi_j\bigr),

a sum of per-token terms of a one-layer model, each like the negative log of a
conditional probability in Besag's pseudo-likelihood. Its gradient needs no chain
through layers or time steps: it is an attention-weighted Hebbian term,

.. math::
    \frac{\partial\mathcal L}{\partial J_{ij}} = -\frac{1}{B}\sum_\mu
        \alpha^\mu_{i\leftarrow j}\,\boldsymbol\xi^\mu_i\,\boldsymbol\xi^{\mu\top}_j .
"""

from __future__ import annotations

import math

import torch
from tqdm.auto import tqdm

from seqbook._checks import check_int, check_positive_int, check_real, check_tensor
from seqbook.attractor.bare import BareSelfAttention
from seqbook.train import History
from seqbook.utils import Timer

__all__ = ["pseudo_likelihood_loss", "pseudo_likelihood_gradient", "train_pseudo_likelihood"]


def _check_model(model: object) -> BareSelfAttention:
    if not isinstance(model, BareSelfAttention):
        raise TypeError(
            f"model must be a seqbook.attractor.BareSelfAttention, got {type(model).__name__}"
        )
    return model


def pseudo_likelihood_loss(model: BareSelfAttention, xi: torch.Tensor, lam: float = 5.0) -> torch.Tensor:
    r"""The mean total energy of the configurations ``xi``, eq. (eq-attr-pl-loss).

    Differentiable with respect to the couplings by autograd (a one-layer model: no
    iteration of the dynamics is involved).

    Args:
        model: the bare self-attention whose couplings are trained.
        xi: embedded training images :math:`\boldsymbol\xi^\mu`.
        lam: the training inverse temperature :math:`\lambda` (5 in the paper).

    Shapes:
        xi: ``(B, N, d)``.
        returns: ``()``.

    Example:
        >>> model = BareSelfAttention(4, 2, generator=torch.Generator().manual_seed(0))
        >>> xi = torch.nn.functional.normalize(torch.ones(3, 4, 2), dim=-1)
        >>> loss = pseudo_likelihood_loss(model, xi)
        >>> torch.allclose(loss, model.energy(xi, lam=5.0).mean())
        True
    """
    model = _check_model(model)
    lam = check_real("lam", lam, min_value=0.0, strict_min=True)
    return model.local_energies(xi, lam=lam).sum(-1).mean()  # (eq-attr-pl-loss)


@torch.no_grad()
def pseudo_likelihood_gradient(
    model: BareSelfAttention, xi: torch.Tensor, lam: float = 5.0
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The loss of eq. (eq-attr-pl-loss) and its gradient in closed form, eq. (eq-attr-pl-grad).

    :math:`\partial\mathcal L/\partial J_{ij} = -\frac1B\sum_\mu
    \alpha^\mu_{i\leftarrow j}\boldsymbol\xi^\mu_i\boldsymbol\xi^{\mu\top}_j`, with the
    attention :math:`\alpha` at the training temperature; equal to autograd of
    :func:`pseudo_likelihood_loss`, at a fraction of the memory.

    Shapes:
        xi: ``(B, N, d)``.
        returns: the loss ``()`` and the gradient ``(N, N, d, d)`` (zero for ``i = j``).

    Example:
        >>> model = BareSelfAttention(4, 2, generator=torch.Generator().manual_seed(0))
        >>> xi = torch.nn.functional.normalize(torch.randn(3, 4, 2), dim=-1)
        >>> loss, grad = pseudo_likelihood_gradient(model, xi)
        >>> pseudo_likelihood_loss(model, xi).backward()
        >>> torch.allclose(grad, model.J.grad, atol=1e-6)
        True
    """
    model = _check_model(model)
    lam = check_real("lam", lam, min_value=0.0, strict_min=True)
    xi = model._check_x("xi", xi)
    B, N, d = xi.shape
    loss = xi.new_zeros(())
    rows = []
    for queries, _, S, alpha in model._chunks(xi, xi, None, lam):
        loss = loss - (torch.logsumexp(lam * S, dim=-1) / lam).sum()
        weighted = (alpha.unsqueeze(-1) * xi).flatten(-2)  # (k, B, N d): alpha_ij xi_j
        xi_i = xi[:, queries].permute(1, 2, 0)  # (k, d, B)
        rows.append(-torch.bmm(xi_i, weighted) / B)  # (eq-attr-pl-grad)  (k, d, N d)
    grad = torch.cat(rows).view(N, d, N, d).permute(0, 2, 1, 3)  # (N, N, d, d)
    return loss / B, grad.contiguous()


def train_pseudo_likelihood(
    model: BareSelfAttention,
    xi: torch.Tensor,
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 5.0,
    lam: float = 5.0,
    clip: float = 1.0,
    generator: torch.Generator | None = None,
    progress: bool = True,
) -> History:
    r"""Minimise the energy of the training data by SGD on the couplings, with the paper's precautions.

    Each step, for a shuffled mini-batch: the closed-form gradient
    (:func:`pseudo_likelihood_gradient`) at inverse temperature ``lam``; its norm
    clipped to ``clip``; :math:`J \leftarrow J - \text{lr}\, \nabla_J\mathcal L`;
    :math:`J_{ii} \leftarrow 0`; and :math:`J` rescaled to its initial L2 norm,
    without which the loss would fall without bound as :math:`\lVert J\rVert` grows.
    With the gradient clipped to norm 1, ``lr`` is the length of a step in the
    space of couplings (the norm of :math:`J` is about :math:`N/\sqrt{12}`).

    Args:
        model: the bare self-attention (its ``J`` is updated in place).
        xi: embedded clean training images (the paper used 50,000 MNIST digits).
        epochs: passes over the training set.
        batch_size: mini-batch size (32 in the paper).
        lr: SGD learning rate.
        lam: training inverse temperature (5 in the paper; evaluate with 1).
        clip: maximal gradient norm.
        generator: random generator of the shuffles.
        progress: show a tqdm bar (silenced by ``TQDM_DISABLE=1``).

    Shapes:
        xi: ``(P, N, d)``.

    Returns:
        A :class:`seqbook.train.History` (loss and gradient norm per step).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> model = BareSelfAttention(6, 2, generator=g)
        >>> xi = torch.nn.functional.normalize(torch.randn(64, 6, 2, generator=g), dim=-1)
        >>> norm = model.J.norm().item()
        >>> history = train_pseudo_likelihood(model, xi, epochs=3, lr=0.1,
        ...                                   generator=g, progress=False)
        >>> history.epoch_loss[-1] < history.epoch_loss[0]
        True
        >>> math.isclose(model.J.norm().item(), norm, rel_tol=1e-5)
        True
    """
    model = _check_model(model)
    xi = model._check_x("xi", xi)
    if xi.shape[0] == 0:
        raise ValueError("xi must hold at least one training configuration, got 0")
    epochs = check_positive_int("epochs", epochs)
    batch_size = check_positive_int("batch_size", batch_size)
    lr = check_real("lr", lr, min_value=0.0, strict_min=True)
    lam = check_real("lam", lam, min_value=0.0, strict_min=True)
    clip = check_real("clip", clip, min_value=0.0, strict_min=True)
    N = model.num_tokens
    diagonal = torch.arange(N, device=model.J.device)
    J = model.J.data
    norm = J.norm()  # kept fixed
    history = History()
    kwargs = {} if progress else {"disable": True}
    with Timer() as timer:
        for _ in tqdm(range(epochs), desc="pseudo-likelihood", **kwargs):
            order = torch.randperm(xi.shape[0], generator=generator).to(xi.device)
            losses = []
            for batch in order.split(batch_size):
                loss, grad = pseudo_likelihood_gradient(model, xi[batch], lam)
                grad_norm = grad.norm()
                history.grad_norm.append(grad_norm.item())
                if grad_norm > clip:
                    grad = grad * (clip / grad_norm)
                J.sub_(lr * grad)
                J[diagonal, diagonal] = 0.0
                J.mul_(norm / J.norm())
                losses.append(loss.item())
                if not math.isfinite(losses[-1]):
                    raise FloatingPointError("the pseudo-likelihood loss is not finite")
            history.step_loss += losses
            history.epoch_loss.append(sum(losses) / len(losses))
    history.seconds = timer.seconds
    return history
