r"""Hopfield layers: the continuous Hopfield update as a layer of a neural network.

Shapes: ``B`` batch, ``S`` state patterns (queries), ``N`` stored patterns (keys),
``d_r`` / ``d_y`` their raw dimensions, ``d_k`` the associative (hidden) space,
``d_v`` the output dimension.

With raw state patterns :math:`\mathbf R` and raw stored patterns :math:`\mathbf Y`
(one per row), the layer projects

.. math::

    \mathbf Q = \mathbf R\mathbf W_Q, \quad \mathbf K = \mathbf Y\mathbf W_K, \quad
    \mathbf V = \mathbf K\mathbf W_V, \qquad
    \mathbf Z = \operatorname{softmax}(\beta\,\mathbf Q\mathbf K^\top)\,\mathbf K\mathbf W_V

and with :math:`\beta = 1/\sqrt{d_k}` this is scaled dot-product attention. The
states can be updated more than once (``steps``) before the output projection: each
step is one update of the continuous modern Hopfield network in the space of keys.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqbook._checks import check_positive_int, check_real, check_tensor

__all__ = ["HopfieldLayer", "HopfieldPooling", "hopfield_attention"]


def _check_mask(mask: torch.Tensor | None, B: int, S: int, N: int) -> torch.Tensor | None:
    if mask is None:
        return None
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = stored pattern present), got {mask.dtype}")
    if mask.shape == (B, N):
        mask = mask.unsqueeze(1)  # (B, 1, N)
    elif mask.shape != (B, S, N):
        raise ValueError(f"mask must have shape ({B}, {N}) or ({B}, {S}, {N}), got {tuple(mask.shape)}")
    if not mask.any(-1).all():
        raise ValueError("mask leaves some state pattern with no stored pattern to attend to")
    return mask


def hopfield_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    beta: float,
    steps: int = 1,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Update the state patterns ``steps`` times: :math:`\mathbf Q \leftarrow \operatorname{softmax}(\beta\mathbf Q\mathbf K^\top)\mathbf K`.

    No argument checks (the layers check); ``mask`` is True where a stored pattern
    may be attended to, of shape ``(B, 1, N)`` or ``(B, S, N)``.

    Shapes:
        Q: ``(B, S, d_k)``.
        K: ``(B, N, d_k)``.
        returns: the updated Q ``(B, S, d_k)`` and the weights of the last step
        ``(B, S, N)``.
    """
    for _ in range(steps):
        scores = beta * (Q @ K.transpose(-1, -2))  # (B, S, N)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        A = torch.softmax(scores, dim=-1)  # (B, S, N)
        Q = A @ K  # (eq-hopfield-mhn-update)  (B, S, d_k)
    return Q, A


def _projection(rows: int, cols: int) -> nn.Parameter:
    W = torch.empty(rows, cols)
    nn.init.xavier_uniform_(W)
    return nn.Parameter(W)


def _check_beta(beta: float | None, hidden_size: int) -> float:
    if beta is None:
        return 1.0 / math.sqrt(hidden_size)
    return check_real("beta", beta, min_value=0.0, strict_min=True)


class HopfieldLayer(nn.Module):
    r"""Associate state patterns :math:`\mathbf R` with stored patterns :math:`\mathbf Y`.

    .. math::

        \mathbf Z = \operatorname{softmax}\big(\beta\,\mathbf R\mathbf W_Q
                    (\mathbf Y\mathbf W_K)^\top\big)\,\mathbf Y\mathbf W_K\mathbf W_V

    Args:
        state_size: :math:`d_r`, the features of a state pattern (a row of R).
        stored_size: :math:`d_y`, the features of a stored pattern (a row of Y).
        hidden_size: :math:`d_k`, the dimension of the associative space.
        value_size: :math:`d_v`, the output features (default ``hidden_size``).
        beta: inverse temperature (default :math:`1/\sqrt{d_k}`: attention).
        steps: Hopfield updates before the output projection (1: attention).

    Shapes:
        R: ``(B, S, d_r)``.
        Y: ``(B, N, d_y)``.
        mask: ``(B, N)`` or ``(B, S, N)``, True where a stored pattern is present.
        returns: Z ``(B, S, d_v)`` (and the weights ``(B, S, N)``).

    Example:
        >>> layer = HopfieldLayer(state_size=6, stored_size=5, hidden_size=4)
        >>> Z, A = layer(torch.randn(2, 3, 6), torch.randn(2, 7, 5), return_weights=True)
        >>> tuple(Z.shape), tuple(A.shape)
        ((2, 3, 4), (2, 3, 7))
    """

    def __init__(
        self,
        state_size: int,
        stored_size: int,
        hidden_size: int,
        value_size: int | None = None,
        beta: float | None = None,
        steps: int = 1,
    ) -> None:
        super().__init__()
        self.state_size = check_positive_int("state_size", state_size)
        self.stored_size = check_positive_int("stored_size", stored_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.value_size = hidden_size if value_size is None else check_positive_int("value_size", value_size)
        self.beta = _check_beta(beta, self.hidden_size)
        self.steps = check_positive_int("steps", steps)
        self.W_Q = _projection(self.state_size, self.hidden_size)  # (d_r, d_k)
        self.W_K = _projection(self.stored_size, self.hidden_size)  # (d_y, d_k)
        self.W_V = _projection(self.hidden_size, self.value_size)  # (d_k, d_v)

    def forward(
        self,
        R: torch.Tensor,
        Y: torch.Tensor,
        mask: torch.Tensor | None = None,
        return_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        check_tensor("R", R, ndim=3, floating=True)
        check_tensor("Y", Y, ndim=3, floating=True)
        if R.shape[-1] != self.state_size:
            raise ValueError(f"R must have last dimension state_size = {self.state_size}, got shape {tuple(R.shape)}")
        if Y.shape[-1] != self.stored_size:
            raise ValueError(f"Y must have last dimension stored_size = {self.stored_size}, got shape {tuple(Y.shape)}")
        if R.shape[0] != Y.shape[0]:
            raise ValueError(f"R and Y must have the same batch size, got {R.shape[0]} and {Y.shape[0]}")
        if Y.shape[1] == 0:
            raise ValueError("Y must hold at least one stored pattern, got N = 0")
        mask = _check_mask(mask, R.shape[0], R.shape[1], Y.shape[1])
        Q = R @ self.W_Q  # (eq-hopfield-q)  (B, S, d_k)
        K = Y @ self.W_K  # (eq-hopfield-k)  (B, N, d_k)
        Q_new, A = hopfield_attention(Q, K, self.beta, self.steps, mask)
        Z = Q_new @ self.W_V  # (eq-hopfield-layer)  (B, S, d_v)
        return (Z, A) if return_weights else Z

    def extra_repr(self) -> str:
        return (
            f"state_size={self.state_size}, stored_size={self.stored_size}, hidden_size={self.hidden_size}, "
            f"value_size={self.value_size}, beta={self.beta:.4g}, steps={self.steps}"
        )


class HopfieldPooling(nn.Module):
    r"""Pool a set of instances with a learned prototype query (a static state pattern).

    .. math::

        \mathbf z = \operatorname{softmax}\big(\beta\,\mathbf q\,(\mathbf Y\mathbf W_K)^\top\big)
                    \,\mathbf Y\mathbf W_K\mathbf W_V

    The query :math:`\mathbf q` is a parameter, the same for every input: the layer
    learns *what to look for* and returns a weighted average of the instances that
    match it. With :math:`\mathbf q = \mathbf 0` all weights are :math:`1/N` and the
    layer is mean pooling. The output does not depend on the order of the instances.

    Args:
        input_size: :math:`d_y`, the features of one instance.
        hidden_size: :math:`d_k`, the dimension of the associative space.
        value_size: :math:`d_v` (default ``hidden_size``).
        num_queries: number of prototypes; their outputs are concatenated.
        beta: inverse temperature (default :math:`1/\sqrt{d_k}`).

    Shapes:
        Y: ``(B, N, d_y)``.
        mask: ``(B, N)``, True at real instances.
        returns: ``(B, num_queries * d_v)`` (and the weights ``(B, num_queries, N)``).

    Example:
        >>> pool = HopfieldPooling(input_size=5, hidden_size=8)
        >>> bag = torch.randn(3, 10, 5)
        >>> tuple(pool(bag).shape)
        (3, 8)
        >>> torch.allclose(pool(bag), pool(bag[:, torch.randperm(10)]), atol=1e-6)
        True
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        value_size: int | None = None,
        num_queries: int = 1,
        beta: float | None = None,
    ) -> None:
        super().__init__()
        self.input_size = check_positive_int("input_size", input_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.value_size = hidden_size if value_size is None else check_positive_int("value_size", value_size)
        self.num_queries = check_positive_int("num_queries", num_queries)
        self.beta = _check_beta(beta, self.hidden_size)
        self.query = nn.Parameter(0.1 * torch.randn(self.num_queries, self.hidden_size))  # (S, d_k)
        self.W_K = _projection(self.input_size, self.hidden_size)  # (d_y, d_k)
        self.W_V = _projection(self.hidden_size, self.value_size)  # (d_k, d_v)

    def forward(
        self, Y: torch.Tensor, mask: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        check_tensor("Y", Y, ndim=3, floating=True)
        if Y.shape[-1] != self.input_size:
            raise ValueError(f"Y must have last dimension input_size = {self.input_size}, got shape {tuple(Y.shape)}")
        if Y.shape[1] == 0:
            raise ValueError("Y must hold at least one instance, got N = 0")
        B = Y.shape[0]
        mask = _check_mask(mask, B, self.num_queries, Y.shape[1])
        K = Y @ self.W_K  # (B, N, d_k)
        Q = self.query.unsqueeze(0).expand(B, -1, -1)  # (B, S, d_k)
        Q_new, A = hopfield_attention(Q, K, self.beta, 1, mask)
        Z = (Q_new @ self.W_V).reshape(B, -1)  # (B, S * d_v)
        return (Z, A) if return_weights else Z

    def extra_repr(self) -> str:
        return (
            f"input_size={self.input_size}, hidden_size={self.hidden_size}, value_size={self.value_size}, "
            f"num_queries={self.num_queries}, beta={self.beta:.4g}"
        )
