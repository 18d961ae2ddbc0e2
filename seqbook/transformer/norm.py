r"""Layer normalisation and the residual "add & norm" wrapper around a sublayer.

Shape letters: ``B`` batch, ``T`` time, ``d_model`` the model width; ``...`` any
leading dimensions.

Two departures from Aryaman's notes' eq. 5.6, :math:`a (x - \bar{x}) / (s_x +
\epsilon) + b`, both to match ``torch.nn.LayerNorm`` (and Ba et al., 2016):

* the gain :math:`a` and bias :math:`b` are **vectors** of size ``d_model``
  (one gain and one bias per feature), not scalars;
* the denominator is :math:`\sqrt{\sigma^2 + \epsilon}` with the **biased**
  (population) variance :math:`\sigma^2 = \frac{1}{d}\sum_j (x_j - \bar{x})^2`, not
  the sample standard deviation (divisor :math:`d - 1`) plus :math:`\epsilon`.
  The :math:`d/(d-1)` factor is not negligible for small widths (about 1.6 % for
  :math:`d = 32`), and :math:`\epsilon` under the root keeps the denominator at
  least :math:`\sqrt{\epsilon}` for a constant input.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from seqbook._checks import check_positive_int, check_real, check_tensor

__all__ = ["layer_norm", "LayerNorm", "AddNorm"]


def layer_norm(
    x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    r"""Normalise each feature vector to zero mean and unit variance, then scale and shift.

    .. math::
        \operatorname{LayerNorm}(\mathbf{x}) = \mathbf{a} \odot
        \frac{\mathbf{x} - \bar{x}}{\sqrt{\sigma_x^2 + \epsilon}} + \mathbf{b},
        \qquad \bar{x} = \frac{1}{d}\sum_j x_j, \quad
        \sigma_x^2 = \frac{1}{d}\sum_j (x_j - \bar{x})^2

    Args:
        x: input, floating point; normalised over its last dimension.
        a: the gain, one per feature.
        b: the bias, one per feature.
        eps: added to the variance (> 0).

    Shapes:
        x: ``(..., d)``.
        a, b: ``(d,)``.
        returns: ``(..., d)``.

    Example:
        >>> x = torch.tensor([[1.0, 2.0, 3.0]])
        >>> layer_norm(x, torch.ones(3), torch.zeros(3), eps=0.0)
        tensor([[-1.2247,  0.0000,  1.2247]])
    """
    check_tensor("x", x, floating=True)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension, got a scalar")
    d = x.shape[-1]
    for name, p in (("a", a), ("b", b)):
        check_tensor(name, p, ndim=1, floating=True)
        if p.shape[0] != d:
            raise ValueError(
                f"{name} must have one entry per feature, shape ({d},), got {tuple(p.shape)}"
            )
    check_real("eps", eps, min_value=0.0)
    centred = x - x.mean(dim=-1, keepdim=True)  # (..., d)
    # the biased variance (divide by d), written out: torch.var is several times
    # slower on CPU for small rows
    var = (centred * centred).mean(dim=-1, keepdim=True)  # (..., 1)
    return a * centred / torch.sqrt(var + eps) + b  # (eq-tf-layernorm)


class LayerNorm(nn.Module):
    r"""Layer normalisation with a learned gain and bias per feature.

    .. math::
        \operatorname{LayerNorm}(\mathbf{x}) = \mathbf{a} \odot
        \frac{\mathbf{x} - \bar{x}}{\sqrt{\sigma_x^2 + \epsilon}} + \mathbf{b}

    (:func:`layer_norm`.) Computes the same function as ``nn.LayerNorm(d_model,
    eps=eps)``; :meth:`from_torch` copies one's parameters.

    Args:
        d_model: number of features :math:`d` in the last dimension.
        eps: added to the variance (> 0; 1e-5 as in PyTorch).

    Shapes:
        x: ``(..., d_model)``.
        returns: ``(..., d_model)``.

    Example:
        >>> ln = LayerNorm(4)
        >>> y = ln(torch.tensor([[1.0, 2.0, 3.0, 6.0]]))
        >>> round(y.mean().item(), 6), round(y.var(unbiased=False).item(), 4)
        (0.0, 1.0)
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = check_real("eps", eps, min_value=0.0, strict_min=True)
        self.a = nn.Parameter(torch.ones(d_model))
        self.b = nn.Parameter(torch.zeros(d_model))

    @classmethod
    def from_torch(cls, module: nn.LayerNorm) -> "LayerNorm":
        """A copy of an ``nn.LayerNorm`` over one dimension, with its weight and bias.

        Example:
            >>> torch_ln = nn.LayerNorm(5)
            >>> x = torch.randn(2, 3, 5)
            >>> torch.allclose(LayerNorm.from_torch(torch_ln)(x), torch_ln(x), atol=1e-6)
            True
        """
        if not isinstance(module, nn.LayerNorm):
            raise TypeError(f"module must be a torch.nn.LayerNorm, got {type(module).__name__}")
        if len(module.normalized_shape) != 1 or not module.elementwise_affine:
            raise ValueError(
                "module must normalise one dimension with elementwise_affine=True, got "
                f"normalized_shape={module.normalized_shape}, "
                f"elementwise_affine={module.elementwise_affine}"
            )
        ours = cls(module.normalized_shape[0], eps=module.eps)
        ours.to(device=module.weight.device, dtype=module.weight.dtype)
        with torch.no_grad():
            ours.a.copy_(module.weight)
            if module.bias is not None:
                ours.b.copy_(module.bias)
        return ours

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, floating=True)
        if x.dim() == 0 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have d_model={self.d_model} features in its last dimension, "
                f"got shape {tuple(x.shape)}"
            )
        return layer_norm(x, self.a, self.b, self.eps)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class AddNorm(nn.Module):
    r"""The residual connection and layer norm around a sublayer, pre- or post-norm.

    .. math::
        \text{pre-norm (seed eq. 5.5, default):}\quad
        \mathbf{x} + \operatorname{Dropout}(\operatorname{Sublayer}(
        \operatorname{LayerNorm}(\mathbf{x})))

        \text{post-norm (Vaswani et al., 2017):}\quad
        \operatorname{LayerNorm}(\mathbf{x} + \operatorname{Dropout}(
        \operatorname{Sublayer}(\mathbf{x})))

    Pre-norm keeps an un-normalised identity path from the input to the output of a
    whole stack, which keeps gradients of the same size in every layer of a deep
    stack; a pre-norm stack then needs one final ``LayerNorm`` after its last block.

    Args:
        d_model: width of the residual stream.
        dropout: dropout on the sublayer's output, before it is added.
        norm_first: True for pre-norm, False for the paper's post-norm.
        eps: the layer norm's epsilon.

    Shapes:
        x: ``(B, T, d_model)`` (any ``(..., d_model)``).
        sublayer: a callable mapping ``(..., d_model)`` to ``(..., d_model)``.
        returns: ``(..., d_model)``.

    Example:
        >>> add_norm = AddNorm(4)
        >>> x = torch.randn(2, 3, 4)
        >>> torch.equal(add_norm(x, lambda h: torch.zeros_like(h)), x)  # pre-norm
        True
    """

    def __init__(
        self, d_model: int, dropout: float = 0.0, norm_first: bool = True, eps: float = 1e-5
    ) -> None:
        super().__init__()
        if not isinstance(norm_first, bool):
            raise TypeError(f"norm_first must be a bool, got {norm_first!r}")
        dropout = check_real("dropout", dropout, min_value=0.0, max_value=1.0)
        if dropout == 1.0:
            raise ValueError("dropout must be < 1, got 1.0")
        self.norm_first = norm_first
        self.norm = LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]
    ) -> torch.Tensor:
        if not callable(sublayer):
            raise TypeError(f"sublayer must be callable, got {type(sublayer).__name__}")
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))  # (eq-tf-prenorm)
        return self.norm(x + self.dropout(sublayer(x)))  # (eq-tf-postnorm)

    def extra_repr(self) -> str:
        return f"norm_first={self.norm_first}"
