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
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_bool, check_positive_int, check_probability, check_real

__all__ = ["layer_norm", "LayerNorm", "AddNorm"]


def layer_norm(
    x: Float[Tensor, "*batch d"],
    a: Float[Tensor, " d"],
    b: Float[Tensor, " d"] | None = None,
    eps: float = 1e-5,
) -> Float[Tensor, "*batch d"]:
    r"""Normalise each feature vector to zero mean and unit variance, then scale and shift.

    .. math::
        \operatorname{LayerNorm}(\mathbf{x}) = \mathbf{a} \odot
        \frac{\mathbf{x} - \bar{x}}{\sqrt{\sigma_x^2 + \epsilon}} + \mathbf{b},
        \qquad \bar{x} = \frac{1}{d}\sum_j x_j, \quad
        \sigma_x^2 = \frac{1}{d}\sum_j (x_j - \bar{x})^2

    The same as ``F.layer_norm(x, (d,), a, b, eps)``.

    Args:
        x: input, floating point; normalised over its last dimension.
        a: the gain, one per feature, of the dtype of ``x``.
        b: the bias, one per feature, or ``None`` for none.
        eps: added to the variance (>= 0).

    Shapes:
        x: ``(..., d)``.
        a, b: ``(d,)``.
        returns: ``(..., d)``.

    Example:
        >>> x = torch.tensor([[1.0, 2.0, 3.0]])
        >>> layer_norm(x, torch.ones(3), torch.zeros(3), eps=0.0)
        tensor([[-1.2247,  0.0000,  1.2247]])
    """
    check_real("eps", eps, min_value=0.0)
    x_bar = x.mean(dim=-1, keepdim=True)  # (..., 1)
    centred = x - x_bar  # (..., d)
    # sigma_x^2, the biased variance (divide by d), written out: torch.var
    # is several times slower on CPU for small rows
    sigma2 = (centred * centred).mean(dim=-1, keepdim=True)  # (..., 1)
    normalised = a * centred / torch.sqrt(sigma2 + eps)  # (eq-tf-layernorm)
    return normalised if b is None else normalised + b


class LayerNorm(nn.Module):
    r"""Layer normalisation with a learned gain and bias per feature.

    .. math::
        \operatorname{LayerNorm}(\mathbf{x}) = \mathbf{a} \odot
        \frac{\mathbf{x} - \bar{x}}{\sqrt{\sigma_x^2 + \epsilon}} + \mathbf{b}

    (:func:`layer_norm`.) Computes the same function as ``nn.LayerNorm(d_model,
    eps=eps, bias=bias)``; :meth:`from_torch` copies one's parameters.

    Args:
        d_model: number of features :math:`d` in the last dimension.
        eps: added to the variance (> 0; 1e-5 as in PyTorch).
        bias: learn the bias :math:`\mathbf{b}` (``False``: no bias, as torch's
            ``bias=False``).

    Shapes:
        x: ``(..., d_model)``.
        returns: ``(..., d_model)``.

    Example:
        >>> ln = LayerNorm(4)
        >>> y = ln(torch.tensor([[1.0, 2.0, 3.0, 6.0]]))
        >>> round(y.mean().item(), 6), round(y.var(unbiased=False).item(), 4)
        (0.0, 1.0)
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        check_positive_int("d_model", d_model), check_bool("bias", bias)
        check_real("eps", eps, min_value=0.0, strict_min=True)
        self.d_model = d_model
        self.eps = eps
        self.a = nn.Parameter(torch.ones(d_model))
        if bias:
            self.b = nn.Parameter(torch.zeros(d_model))
        else:
            self.register_parameter("b", None)

    @classmethod
    def from_torch(
        cls, module: nn.LayerNorm
    ) -> LayerNorm:
        """A copy of an ``nn.LayerNorm`` over one dimension, with its weight, bias and
        training mode.

        Example:
            >>> torch_ln = nn.LayerNorm(5)
            >>> x = torch.randn(2, 3, 5)
            >>> torch.allclose(LayerNorm.from_torch(torch_ln)(x), torch_ln(x), atol=1e-6)
            True
        """
        if len(module.normalized_shape) != 1 or not module.elementwise_affine:
            raise ValueError("module must normalise one dimension with elementwise_affine=True, "
                             f"got normalized_shape={module.normalized_shape}, "
                             f"elementwise_affine={module.elementwise_affine}")
        ours = cls(module.normalized_shape[0], eps=module.eps, bias=module.bias is not None)
        ours.to(device=module.weight.device, dtype=module.weight.dtype)
        with torch.no_grad():
            ours.a.copy_(module.weight)
            if module.bias is not None:
                ours.b.copy_(module.bias)
        return ours.train(module.training)

    def to_torch(self) -> nn.LayerNorm:
        """An ``nn.LayerNorm`` with these parameters.

        Example:
            >>> ours = LayerNorm(5, bias=False)
            >>> x = torch.randn(2, 5)
            >>> torch.allclose(ours.to_torch()(x), ours(x), atol=1e-6)
            True
        """
        theirs = nn.LayerNorm(
            self.d_model, eps=self.eps, bias=self.b is not None,
            device=self.a.device, dtype=self.a.dtype,
        )
        with torch.no_grad():
            theirs.weight.copy_(self.a)
            if self.b is not None:
                theirs.bias.copy_(self.b)
        return theirs

    def forward(
        self, x: Float[Tensor, "*batch {self.d_model}"]
    ) -> Float[Tensor, "*batch {self.d_model}"]:
        return layer_norm(x, self.a, self.b, self.eps)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}, bias={self.b is not None}"


def _residual(out: object, x: Tensor) -> Tensor:
    """A sublayer's output ``out``, which must have the shape of its input ``x`` (the
    residual connection adds them: a broadcast would be silent)."""
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"sublayer must return a tensor of its input's shape {tuple(x.shape)} "
                         f"(the residual connection adds them), got {got}")
    return out


class AddNorm(nn.Module):
    r"""The residual connection and layer norm around a sublayer, pre- or post-norm.

    .. math::
        \text{post-norm (Vaswani et al., 2017; default, as PyTorch):}\quad
        \operatorname{LayerNorm}(\mathbf{x} + \operatorname{Dropout}(
        \operatorname{Sublayer}(\mathbf{x})))

        \text{pre-norm (Aryaman's notes' eq. 5.5, norm_first=True):}\quad
        \mathbf{x} + \operatorname{Dropout}(\operatorname{Sublayer}(
        \operatorname{LayerNorm}(\mathbf{x})))

    Pre-norm keeps an un-normalised identity path from the input to the output of a
    whole stack, which keeps gradients of the same size in every layer of a deep
    stack; a pre-norm stack then needs one final ``LayerNorm`` after its last block.

    Args:
        d_model: width of the residual stream.
        dropout: dropout on the sublayer's output, before it is added.
        norm_first: True for pre-norm, False (PyTorch's default) for the paper's
            post-norm.
        eps: the layer norm's epsilon.
        bias: the layer norm learns a bias.

    Shapes:
        x: ``(B, T, d_model)`` (any ``(..., d_model)``).
        sublayer: a callable mapping ``(..., d_model)`` to ``(..., d_model)``.
        returns: ``(..., d_model)``.

    Example:
        >>> add_norm = AddNorm(4, norm_first=True)
        >>> x = torch.randn(2, 3, 4)
        >>> torch.equal(add_norm(x, lambda h: torch.zeros_like(h)), x)  # pre-norm
        True
    """

    def __init__(
        self,
        d_model: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
        bias: bool = True,
    ) -> None:
        super().__init__()
        check_probability("dropout", dropout), check_bool("norm_first", norm_first)
        self.norm_first = norm_first
        self.norm = LayerNorm(d_model, eps=eps, bias=bias)  # checks d_model, eps and bias
        self.d_model = d_model
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: Float[Tensor, "*batch {self.d_model}"],
        sublayer: Callable[[Tensor], Tensor],
    ) -> Float[Tensor, "*batch {self.d_model}"]:
        if self.norm_first:  # (eq-tf-prenorm)
            return x + self.dropout(_residual(sublayer(self.norm(x)), x))
        # (eq-tf-postnorm)
        return self.norm(x + self.dropout(_residual(sublayer(x), x)))

    def extra_repr(self) -> str:
        return f"norm_first={self.norm_first}"
