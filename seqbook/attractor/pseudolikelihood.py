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
from collections.abc import Callable

import torch
from tqdm.auto import tqdm

from seqbook._contracts import (
    CallableAs,
    PositiveInt,
    PositiveReal,
    RandomGenerator,
    Shaped,
)
from seqbook.attractor.bare import BareModel, BareSelfAttention
from seqbook.train import History
from seqbook.utils import Timer

__all__ = [
    "hebbian_couplings",
    "pseudo_likelihood_gradient",
    "pseudo_likelihood_loss",
    "train_pseudo_likelihood",
]


# The (B, N, N, d) terms alpha_ij xi_j of one chunk of a large batch: about 64 MB.
_TERMS = 16_000_000


# Finite configurations (one at least) of the model's N spins of dimension d, in its
# couplings' dtype and device.
Configurations = Shaped("B model.num_tokens model.dim", floating=True, finite=True,
                        min_size={"B": 1}, dtype_of="model", device_of="model")


def pseudo_likelihood_loss(
    model: BareModel, xi: Configurations, lam: PositiveReal = 5.0
) -> torch.Tensor:
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
    return model.local_energies(xi, lam=lam).sum(-1).mean()  # (eq-attr-pl-loss)


@torch.no_grad()
def pseudo_likelihood_gradient(
    model: BareModel, xi: Configurations, lam: PositiveReal = 5.0
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
    return _loss_and_gradient(model, xi, lam)


def _loss_and_gradient(
    model: BareSelfAttention, xi: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`pseudo_likelihood_gradient` on checked arguments, a large batch in chunks."""
    B, N, d = xi.shape
    if B * N * N * d > _TERMS:  # a large batch: the mean of the chunks' means
        chunks = xi.split(max(1, _TERMS // (N * N * d)))
        parts = [(len(c), _loss_and_gradient(model, c, lam)) for c in chunks]
        return tuple(sum(n * part[k] for n, part in parts) / B for k in (0, 1))
    return _pseudo_likelihood_gradient(model.J.detach(), xi, lam, model._partners)


def _pseudo_likelihood_gradient(
    J: torch.Tensor, xi: torch.Tensor, lam: float, partners: Callable
) -> tuple[torch.Tensor, torch.Tensor]:
    # (B, N, N): xi_i^T J_ij xi_j
    S = torch.einsum("bid,ijde,bje->bij", xi, J, xi)
    logits = partners(lam * S, None)  # j != i
    # (eq-attr-pl-loss)
    loss = -(torch.logsumexp(logits, dim=-1) / lam).sum(-1).mean()
    alpha = torch.softmax(logits, dim=-1)  # (B, N, N)
    # (B, N, N, d): alpha_ij xi_j
    weighted = alpha.unsqueeze(-1) * xi.unsqueeze(1)
    # (eq-attr-pl-grad)
    grad = -torch.einsum("bid,bije->ijde", xi, weighted) / len(xi)
    return loss, grad


def train_pseudo_likelihood(
    model: BareModel,
    xi: Configurations,
    epochs: PositiveInt = 1,
    batch_size: PositiveInt = 32,
    lr: PositiveReal = 5.0,
    lam: PositiveReal = 5.0,
    clip: PositiveReal = 1.0,
    generator: RandomGenerator = None,
    progress: bool = True,
    on_step: CallableAs("on_step(steps)", nargs=1) | None = None,
) -> History:
    r"""Minimise the energy of the training data by SGD on the couplings, with the paper's
    precautions.

    Each step, for a shuffled mini-batch: the closed-form gradient
    :math:`\mathbf g` (:func:`pseudo_likelihood_gradient`) at inverse temperature
    ``lam``; its norm clipped to ``clip``; a step down the gradient; :math:`J_{ii}
    \leftarrow 0`; and :math:`J` rescaled to its initial L2 norm, without which the
    loss would fall without bound as :math:`\lVert J\rVert` grows:

    .. math::
        J \leftarrow \lVert J^{(0)}\rVert\,
            \frac{J - \eta\,\hat{\mathbf g}}{\lVert J - \eta\,\hat{\mathbf g}\rVert},
        \qquad \hat{\mathbf g} = \mathbf g\,\min\bigl(1, c/\lVert\mathbf g\rVert\bigr)

    With the gradient clipped to norm :math:`c = 1`, the learning rate :math:`\eta` is
    the length of a step in the space of couplings (the norm of :math:`J` is about
    :math:`N/\sqrt{12}`).

    Args:
        model: the bare self-attention (its ``J`` is updated in place).
        xi: embedded clean training images (the paper used 50,000 MNIST digits).
        epochs: passes over the training set.
        batch_size: mini-batch size (32 in the paper).
        lr: SGD learning rate :math:`\eta`.
        lam: training inverse temperature (5 in the paper; evaluate with 1).
        clip: maximal gradient norm :math:`c`.
        generator: random generator of the shuffles.
        progress: show a tqdm bar (silenced by ``TQDM_DISABLE=1``).
        on_step: called after every step with the number of steps taken so far
            (for example to take snapshots of the couplings).

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
    J, norm = model.J.data, model.J.data.norm()  # the norm is kept fixed
    history = History()
    kwargs = {} if progress else {"disable": True}
    with Timer() as timer:
        for _ in tqdm(range(epochs), desc="pseudo-likelihood", **kwargs):
            order = torch.randperm(xi.shape[0], generator=generator).to(xi.device)
            losses = []
            for batch in order.split(batch_size):
                loss, grad = _loss_and_gradient(model, xi[batch], lam)
                history.grad_norm.append(_sgd_step(J, grad, lr, clip, norm))
                losses.append(loss.item())
                if not math.isfinite(losses[-1]):
                    raise FloatingPointError("the pseudo-likelihood loss is not finite")
                if on_step is not None:
                    on_step(len(history.grad_norm))
            history.step_loss += losses
            history.epoch_loss.append(sum(losses) / len(losses))
    history.seconds = timer.seconds
    return history


def _sgd_step(
    J: torch.Tensor, g: torch.Tensor, lr: float, clip: float, norm: torch.Tensor
) -> float:
    """One projected SGD step on ``J``, in place; returns the norm of ``g`` before clipping."""
    g_norm = g.norm().item()
    g_hat = g * min(1.0, clip / max(g_norm, 1e-30))  # clipped to norm c
    J.sub_(lr * g_hat)  # (eq-attr-sgd)
    N = J.shape[0]
    J[torch.arange(N), torch.arange(N)] = 0.0  # J_ii = 0
    J.mul_(norm / J.norm())  # (eq-attr-sgd): back to the norm of J^(0)
    return g_norm


@torch.no_grad()
def hebbian_couplings(
    xi: Shaped("P N d", floating=True, min_size={"P": 1}),
    norm: PositiveReal | None = None,
) -> torch.Tensor:
    r"""The plain Hebbian couplings of the data: the training gradient at uniform attention.

    .. math::
        J^{\text{Hebb}}_{ij} \propto \frac{1}{P}\sum_{\mu=1}^{P}
            \boldsymbol\xi^\mu_i\,\boldsymbol\xi^{\mu\top}_j \quad (i \ne j),
        \qquad J^{\text{Hebb}}_{ii} = 0

    This is minus the gradient (eq-attr-pl-grad) when every
    :math:`\alpha_{i\leftarrow j} = 1/(N-1)`: the couplings that training would
    accumulate without attention, in one pass and without SGD (a control).

    Args:
        xi: embedded training images.
        norm: the L2 norm of the returned couplings (default: that of the mean
            outer products themselves).

    Shapes:
        xi: ``(P, N, d)``.
        returns: ``(N, N, d, d)``, to load into a
        :class:`~seqbook.attractor.BareSelfAttention`.

    Example:
        >>> xi = torch.nn.functional.normalize(torch.randn(10, 4, 2), dim=-1)
        >>> J = hebbian_couplings(xi, norm=3.0)
        >>> tuple(J.shape), round(J.norm().item(), 4), J[0, 0].abs().max().item()
        ((4, 4, 2, 2), 3.0, 0.0)
    """
    P, N, d = xi.shape
    flat = xi.reshape(P, N * d)  # (P, N d)
    C = (flat.T @ flat / P).view(N, d, N, d)  # (eq-attr-hebb)  (N, d, N, d)
    J = C.permute(0, 2, 1, 3).contiguous()  # (N, N, d, d): J_ij = <xi_i xi_j^T>
    J[torch.arange(N), torch.arange(N)] = 0.0
    if norm is not None:
        J *= norm / J.norm()
    return J
