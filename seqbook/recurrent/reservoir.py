r"""Echo state networks: an untrained Elman RNN and a readout fitted by ridge regression.

Shape letters: ``N`` examples (states), ``H`` hidden units, ``K`` outputs.

Jaeger's echo state network (2001) keeps the recurrent weights of
:math:`h_t = \tanh(W_{xh} x_t + W_{hh} h_{t-1})` random and trains only the linear
readout :math:`y_t = W_{hy} h_t + b_y`, by linear regression on the states that the
network, driven by the training input, runs through. The random :math:`W_{hh}` is
rescaled to a chosen spectral radius :math:`\rho` (its largest eigenvalue modulus),

.. math:: W_{hh} = \rho \, W / \max_i |\lambda_i(W)|,

which sets how fast the network forgets: below 1 the state forgets its initial
condition and keeps a fading trace of its recent input (the *echo state property*).
:func:`~seqbook.recurrent.echo_state_network` builds the reservoir as an
:class:`~seqbook.recurrent.RNN`, :func:`~seqbook.recurrent.ridge_readout` fits the
readout.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int, check_real
from seqbook.recurrent.rnn import RNN
from seqbook.utils import seeded_generator

__all__ = ["echo_state_network", "ridge_readout"]


def echo_state_network(input_size: int, hidden_size: int,
                       spectral_radius: float, *, input_scale: float = 1.0,
                       seed: int = 0) -> RNN:
    r"""An untrained Elman :class:`~seqbook.recurrent.RNN` (``tanh``, no bias) whose
    recurrent weights are Gaussian, rescaled to the spectral radius ``spectral_radius``,

    .. math:: W_{hh} = \rho \, W / \max_i |\lambda_i(W)|, \qquad
              W_{ij} \sim \mathcal{N}(0, 1),

    and whose input weights are uniform in ``[-input_scale, input_scale]``. Its
    parameters do not require gradients: in an echo state network only the readout
    is trained (:func:`~seqbook.recurrent.ridge_readout`).

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, hidden units (>= 1).
        spectral_radius: :math:`\rho`, the largest eigenvalue modulus of
            :math:`W_{hh}` (>= 0); below 1 for fading memory.
        input_scale: the range of the input weights (> 0).
        seed: the seed of the weights (through :func:`~seqbook.utils.seeded_generator`).

    Example:
        >>> rnn = echo_state_network(1, 20, 0.9, seed=0)
        >>> radius = torch.linalg.eigvals(rnn.W_hh).abs().max().item()
        >>> round(radius, 6), rnn.W_hh.requires_grad
        (0.9, False)
    """
    check_positive_int("input_size", input_size)
    H = check_positive_int("hidden_size", hidden_size)
    rho = check_real("spectral_radius", spectral_radius, min_value=0.0,
                     finite=True)
    scale = check_real("input_scale", input_scale, min_value=0.0,
                       strict_min=True, finite=True)
    generator = seeded_generator(check_int("seed", seed, min_value=0))
    with torch.random.fork_rng(devices=[]):  # keep the global generator
        rnn = RNN(input_size, H, bias=False).requires_grad_(False)
    W = torch.randn(H, H, generator=generator, dtype=torch.float64)
    radius = torch.linalg.eigvals(W).abs().max()
    rnn.W_hh.copy_(rho * W / radius)  # (eq-rnn-esn-radius)
    rnn.W_xh.uniform_(-scale, scale, generator=generator)
    return rnn


def ridge_readout(states: Float[Tensor, "N H"], targets: Float[Tensor, "N K"],
                  ridge: float = 1e-4) -> nn.Linear:
    r"""The linear readout :math:`y = W_{hy} h + b_y` that minimises the squared error
    on ``(states, targets)`` plus :math:`\lambda \lVert W_{hy} \rVert^2` (ridge
    regression; the bias is not penalised). With centred states :math:`\bar{H}` and
    targets :math:`\bar{Y}` (their means subtracted),

    .. math:: W_{hy} = \bar{Y}^\top \bar{H} \, (\bar{H}^\top \bar{H}
              + \lambda I)^{-1}, \qquad b_y = \mu_Y - W_{hy} \mu_H.

    Args:
        states: hidden states ``(N, H)``, one per row (for instance, a reservoir's
            states at every step of its training input).
        targets: what the readout should output for each state, ``(N, K)``.
        ridge: :math:`\lambda` (>= 0); 0 is ordinary least squares.

    Returns:
        an ``nn.Linear(H, K)`` with those weights, computed in float64 and stored in
        the dtype of ``states``.

    Example:
        >>> h = torch.randn(100, 3)
        >>> readout = ridge_readout(h, h @ torch.tensor([[1.0], [2.0], [3.0]]) + 1)
        >>> readout.weight.squeeze().round(decimals=3).tolist(), round(
        ...     readout.bias.item(), 3)
        ([1.0, 2.0, 3.0], 1.0)
    """
    lam = check_real("ridge", ridge, min_value=0.0, finite=True)
    if states.shape[0] != targets.shape[0]:
        raise ValueError(f"states and targets must have as many rows, got "
                         f"{states.shape[0]} and {targets.shape[0]}")
    H, Y = states.double(), targets.double()
    mu_H, mu_Y = H.mean(0), Y.mean(0)
    H_c, Y_c = H - mu_H, Y - mu_Y  # (N, H), (N, K)
    gram = H_c.T @ H_c + lam * torch.eye(H.shape[1], dtype=H.dtype)  # (H, H)
    W_hy = torch.linalg.solve(gram, H_c.T @ Y_c).T  # (K, H)  (eq-rnn-ridge)
    readout = nn.utils.skip_init(nn.Linear, H.shape[1], Y.shape[1],
                                 dtype=states.dtype).requires_grad_(False)
    readout.weight.copy_(W_hy)
    readout.bias.copy_(mu_Y - W_hy @ mu_H)
    return readout
