r"""Sinusoidal positional encoding (Vaswani et al., 2017), and why it encodes offsets.

Shape letters: ``B`` batch, ``T`` time (positions), ``d_model`` the model width
(Aryaman's notes' :math:`d_{emb}`), ``L`` the longest sequence the encoding covers
(``max_len``).

Column ``2i`` of the encoding is a sine and column ``2i + 1`` a cosine of the same
angular frequency :math:`\omega_i = 10000^{-2i/d_{model}}`. Each (sine, cosine) pair
is a point on a circle that turns by the angle :math:`\omega_i k` when the position
moves by :math:`k`, so :math:`PE_{pos+k} = M_k \, PE_{pos}` with one fixed
block-diagonal rotation :math:`M_k` for every position
(:func:`~seqbook.transformer.relative_position_map`).
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_float_dtype, check_positive_int, check_probability, check_real

__all__ = ["positional_encoding", "relative_position_map", "PositionalEncoding"]


def _frequencies(d_model: int, base: float, device=None) -> torch.Tensor:
    """The angular frequencies omega_i = base^(-2i / d_model), one per column pair."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (ceil(D/2),)
    return torch.exp(-math.log(base) * two_i / d_model)  # (ceil(D/2),)



def _check_table(
    max_len: int, d_model: int, base: float, dtype: torch.dtype | None, pairs: bool = False
) -> None:
    """What the types of a table's arguments cannot say (``pairs``: an even d_model)."""
    check_positive_int("max_len", max_len), check_positive_int("d_model", d_model)
    if pairs and d_model % 2:
        raise ValueError(f"d_model must be a multiple of 2 (sines and cosines in pairs), "
                         f"got {d_model}")
    check_real("base", base, min_value=1.0, strict_min=True)  # the frequencies' base
    if dtype is not None:
        check_float_dtype("dtype", dtype)


def positional_encoding(
    max_len: int,
    d_model: int,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> Float[Tensor, "{max_len} {d_model}"]:
    r"""The sinusoidal positional encodings of positions ``0, ..., max_len - 1``.

    .. math::
        PE_{pos, 2i} = \sin\!\left(pos / 10000^{2i/d_{model}}\right), \qquad
        PE_{pos, 2i+1} = \cos\!\left(pos / 10000^{2i/d_{model}}\right)

    Here :math:`i` counts column *pairs*, :math:`0 \le i < d_{model}/2`. For an odd
    ``d_model`` the last column is a sine without its cosine partner. The table is
    computed in float64 and returned in ``dtype``.

    Args:
        max_len: number of positions (>= 1).
        d_model: number of columns (>= 1), the width of the embeddings it is added to.
        base: the 10000 of the formula (> 1); larger bases give slower waves.
        device: where to create the table.
        dtype: its floating-point dtype (default: torch's default, float32).

    Shapes:
        returns: ``(max_len, d_model)``.

    Example:
        >>> pe = positional_encoding(50, 8)
        >>> tuple(pe.shape)
        (50, 8)
        >>> pe[0]                                   # sin(0) = 0, cos(0) = 1
        tensor([0., 1., 0., 1., 0., 1., 0., 1.])
    """
    _check_table(max_len, d_model, base, dtype)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    L = max_len
    omega = _frequencies(d_model, base, device)  # omega_i, (ceil(D/2),)
    pos = torch.arange(L, dtype=torch.float64, device=device)  # (L,)
    angle = pos[:, None] * omega[None, :]  # pos * omega_i, (L, ceil(D/2))
    pe = torch.empty(L, d_model, dtype=torch.float64, device=device)  # (L, D)
    pe[:, 0::2] = torch.sin(angle)  # (eq-tf-pe-sin)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # (eq-tf-pe-cos)
    return pe.to(dtype)


def relative_position_map(
    offset: int,
    d_model: int,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> Float[Tensor, "{d_model} {d_model}"]:
    r"""The matrix :math:`M_k` with :math:`PE_{pos+k} = M_k PE_{pos}` for every ``pos``.

    For the column pair :math:`(2i, 2i+1)` with frequency :math:`\omega_i`, the
    angle-addition formulas give

    .. math::
        \begin{pmatrix} PE_{pos+k, 2i} \\ PE_{pos+k, 2i+1} \end{pmatrix} =
        \begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\
                        -\sin \omega_i k & \cos \omega_i k \end{pmatrix}
        \begin{pmatrix} PE_{pos, 2i} \\ PE_{pos, 2i+1} \end{pmatrix},

    a rotation that depends on the offset :math:`k` only. :math:`M_k` stacks these
    :math:`2 \times 2` blocks on its diagonal (and, for an odd ``d_model``, cannot be
    built: the lone last sine has no partner to rotate with).

    Args:
        offset: the shift :math:`k` (any int; negative shifts rotate backwards).
        d_model: an even number of columns.
        base: as in :func:`positional_encoding`.
        device: where to create the matrix.
        dtype: its floating-point dtype (default: torch's default, float32).

    Shapes:
        returns: ``(d_model, d_model)``; for row vectors, ``PE[pos + k] = PE[pos] @ M.T``.

    Example:
        >>> pe = positional_encoding(20, 6)
        >>> M = relative_position_map(3, 6)
        >>> torch.allclose(pe[:17] @ M.T, pe[3:], atol=1e-6)
        True
    """
    _check_table(1, d_model, base, dtype, pairs=True)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    k = offset
    angle = _frequencies(d_model, base, device) * k  # omega_i k, (D/2,)
    cos, sin = torch.cos(angle), torch.sin(angle)  # (D/2,)
    # 2 x (D/2, 2)
    rows = [torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)]
    blocks = torch.stack(rows, -2)  # the 2 x 2 rotations, (D/2, 2, 2)
    # M_k, (D, D)  (eq-tf-pe-rotation)
    return torch.block_diag(*blocks).to(dtype)


class PositionalEncoding(nn.Module):
    r"""Add the sinusoidal encoding to a batch of embeddings, then apply dropout.

    .. math::
        \mathbf{x}'_t = \operatorname{Dropout}(\mathbf{x}_t + PE_t)

    The table is precomputed in float64 for ``max_len`` positions (a non-trainable
    buffer, moved with the module between devices) and added in the input's dtype, so
    float64 input gets float64-accurate positions; a longer input raises a
    ``ValueError`` instead of being silently truncated.

    Args:
        d_model: width of the embeddings.
        max_len: longest sequence supported.
        dropout: dropout probability on the sum (the paper uses 0.1).
        base: as in :func:`positional_encoding`.

    Shapes:
        x: ``(B, T, d_model)`` with ``T <= max_len``.
        returns: ``(B, T, d_model)``.

    Example:
        >>> add_pe = PositionalEncoding(d_model=4, max_len=10)
        >>> add_pe(torch.zeros(1, 2, 4))
        tensor([[[0.0000, 1.0000, 0.0000, 1.0000],
                 [0.8415, 0.5403, 0.0100, 0.9999]]])
    """

    pe: torch.Tensor

    def __init__(
        self,
        d_model: int,
        max_len: int = 512,
        dropout: float = 0.0,
        base: float = 10000.0,
    ) -> None:
        super().__init__()
        check_probability("dropout", dropout)
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        table = positional_encoding(max_len, d_model, base, dtype=torch.float64)  # (L, D)
        self.register_buffer("pe", table, persistent=False)

    def forward(
        self, x: Float[Tensor, "B T {self.d_model}"]
    ) -> Float[Tensor, "B T {self.d_model}"]:
        if x.shape[1] > self.max_len:
            raise ValueError(f"x must be at most max_len = {self.max_len} positions long, "
                             f"got {x.shape[1]}")
        return self.dropout(x + self.pe[: x.shape[1]].to(x.dtype))  # (B, T, d_model)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"
