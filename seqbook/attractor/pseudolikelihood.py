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
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor
from tqdm.auto import tqdm

from seqbook._checks import (
    check_callable,
    check_positive_int,
    check_real,
    check_same_dtype,
)
from seqbook.attractor._values import check_device, check_not_empty
from seqbook.attractor.bare import BareSelfAttention
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

# Configurations of the model's N spins of dimension d, and couplings of its shape.
Configurations: TypeAlias = Float[Tensor, "B {model.num_tokens} {model.dim}"]
Couplings: TypeAlias = Float[
    Tensor, "{model.num_tokens} {model.num_tokens} {model.dim} {model.dim}"
]


def _check_data(model: BareSelfAttention, xi: Tensor, lam: float) -> None:
    """What the types cannot say: ``lam > 0``, and ``xi`` holds one configuration at
    least, in the couplings' dtype and on their device."""
    check_real("lam", lam, min_value=0.0, strict_min=True)
    check_not_empty("xi", xi, "configuration")
    check_same_dtype("xi", xi, model.J.dtype, of="the model's couplings")
    check_device("xi", xi, model.J.device, of="the model's couplings")


def pseudo_likelihood_loss(
    model: BareSelfAttention, xi: Configurations, lam: float = 5.0
) -> Float[Tensor, ""]:
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
    _check_data(model, xi, lam)
    return model.local_energies(xi, lam=lam).sum(-1).mean()  # (eq-attr-pl-loss)


def pseudo_likelihood_gradient(
    model: BareSelfAttention, xi: Configurations, lam: float = 5.0
) -> tuple[Float[Tensor, ""], Couplings]:
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
    _check_data(model, xi, lam)  # lam > 0; B >= 1, in the couplings' dtype
    if xi.numel() * xi.shape[1] > _TERMS:  # (B, N, N, d) terms: in chunks
        return _mean_of_chunks(model, xi, lam)
    S = torch.einsum("bid,ijde,bje->bij", xi, model.J.detach(), xi)  # (B, N, N)
    logits = model.partners(lam * S)  # j != i
    # (eq-attr-pl-loss)
    loss = -(torch.logsumexp(logits, dim=-1) / lam).sum(-1).mean()
    alpha = torch.softmax(logits, dim=-1)  # (B, N, N)
    w = alpha.unsqueeze(-1) * xi.unsqueeze(1)  # (B, N, N, d): alpha_ij xi_j
    grad = -torch.einsum("bid,bije->ijde", xi, w) / len(xi)  # (eq-attr-pl-grad)
    return loss, grad


def _mean_of_chunks(
    model: BareSelfAttention, xi: Tensor, lam: float
) -> tuple[Tensor, Tensor]:
    """:func:`pseudo_likelihood_gradient` of a large batch: the mean of its chunks'."""
    B, N, d = xi.shape
    chunks = xi.split(max(1, _TERMS // (N * N * d)))
    parts = [(len(c), pseudo_likelihood_gradient(model, c, lam)) for c in chunks]
    loss, grad = (sum(n * part[k] for n, part in parts) / B for k in (0, 1))
    return loss, grad  # type: ignore[return-value]


def train_pseudo_likelihood(
    model: BareSelfAttention,
    xi: Configurations,
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 5.0,
    lam: float = 5.0,
    clip: float = 1.0,
    generator: torch.Generator | None = None,
    progress: bool = True,
    on_step: Callable[[int], object] | None = None,
    per_block: bool = False,
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
        per_block: hold the norm of every block :math:`J_{ij}` at its initial value
            instead of the norm of the whole tensor (the other reading of the paper's
            constraint; the authors' code fixes the whole tensor's, the default).

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
    check_positive_int("epochs", epochs), check_positive_int("batch_size", batch_size)
    for name, value in dict(lr=lr, clip=clip).items():
        check_real(name, value, min_value=0.0, strict_min=True)
    if on_step is not None:
        check_callable("on_step", on_step, signature="on_step(steps)", nargs=1)
    if not isinstance(per_block, bool):
        raise TypeError(f"per_block must be a bool, got {type(per_block).__name__}")
    _check_data(model, xi, lam)

    def norm_of(t: Tensor) -> Tensor:  # of the whole tensor, or of each block J_ij
        return t.norm(dim=(2, 3), keepdim=True).clamp_min(1e-30) if per_block else t.norm()

    J = model.J.data
    norm = norm_of(J)  # the norm is kept fixed
    diagonal = torch.arange(model.num_tokens, device=J.device)
    history = History()
    kwargs = {} if progress else {"disable": True}
    with Timer() as timer:
        for _ in tqdm(range(epochs), desc="pseudo-likelihood", **kwargs):
            order = torch.randperm(xi.shape[0], generator=generator).to(xi.device)
            losses = []
            for batch in order.split(batch_size):
                # one projected SGD step on J, in place
                loss, g = pseudo_likelihood_gradient(model, xi[batch], lam)
                g_norm = g.norm().item()
                g_hat = g * min(1.0, clip / max(g_norm, 1e-30))  # clipped to norm c
                J.sub_(lr * g_hat)  # (eq-attr-sgd)
                J[diagonal, diagonal] = 0.0  # J_ii = 0
                J.mul_(norm / norm_of(J))  # (eq-attr-sgd): back to the norm of J^(0)
                history.grad_norm.append(g_norm)
                losses.append(loss.item())
                if not math.isfinite(losses[-1]):
                    raise FloatingPointError("the pseudo-likelihood loss is not finite")
                if on_step is not None:
                    on_step(len(history.grad_norm))
            history.step_loss += losses
            history.epoch_loss.append(sum(losses) / len(losses))
    history.seconds = timer.seconds
    return history


def hebbian_couplings(
    xi: Float[Tensor, "P N d"], norm: float | None = None
) -> Float[Tensor, "N N d d"]:
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
    if norm is not None:
        check_real("norm", norm, min_value=0.0, strict_min=True)
    P, N, d = check_not_empty("xi", xi, "configuration").shape
    flat = xi.detach().reshape(P, N * d)  # (P, N d)
    C = (flat.T @ flat / P).view(N, d, N, d)  # (eq-attr-hebb)  (N, d, N, d)
    J = C.permute(0, 2, 1, 3).contiguous()  # (N, N, d, d): J_ij = <xi_i xi_j^T>
    J[torch.arange(N), torch.arange(N)] = 0.0
    if norm is not None:
        J *= norm / J.norm()
    return J
