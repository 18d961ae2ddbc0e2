r"""The three layer types of Vaswani et al.'s cost table, at one width ``d``.

Shape letters: ``B`` batch, ``n`` sequence length (the paper's letter; ``T`` elsewhere
in the book), ``d`` the width of every layer's input and output, ``k`` a convolution's
kernel size, ``L`` layers in a stack.

Every layer maps ``(B, n, d)`` to ``(B, n, d)``: self-attention
(:class:`~seqbook.attention.MultiHeadAttention` with queries, keys and values from the
same sequence), a recurrent layer (:class:`~seqbook.recurrent.RNN` or ``nn.RNN``) and a
causal convolution (:class:`CausalConvolution`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_bool, check_int, check_positive_int
from seqbook.attention import MultiHeadAttention, causal_mask

__all__ = ["CausalConvolution", "SelfAttentionLayer", "convolution_stack", "attention_stack"]


class CausalConvolution(nn.Module):
    r"""A 1-D convolution over time that sees only the present and the past.

    .. math::
        \mathbf{y}_t = \mathbf{b} + \sum_{j=0}^{k-1} \mathbf{W}_j \,
        \mathbf{x}_{t - j \delta}, \qquad \mathbf{x}_s = \mathbf{0} \text{ for } s < 1,

    with kernel size :math:`k` and dilation :math:`\delta`: output :math:`t` reads the
    inputs :math:`t, t - \delta, \dots, t - (k-1)\delta`. The sequence is padded with
    :math:`(k-1)\delta` zeros on the left, so the output has the input's length. Each
    output costs :math:`k` products of a :math:`d \times d` matrix with a vector.

    Args:
        d: input and output width.
        kernel_size: :math:`k`.
        dilation: :math:`\delta`.

    Shapes:
        x: ``(B, n, d)``.
        returns: ``(B, n, d)``.

    Example:
        >>> conv = CausalConvolution(d=4, kernel_size=3)
        >>> x = torch.randn(2, 10, 4)
        >>> y = conv(x)
        >>> changed = x.clone(); changed[:, 6] += 1       # a change at t = 6 ...
        >>> bool((conv(changed) - y)[:, :6].abs().max() == 0)   # ... not seen before
        True
    """

    def __init__(self, d: int, kernel_size: int = 3, dilation: int = 1) -> None:
        super().__init__()
        for name, size in dict(d=d, kernel_size=kernel_size, dilation=dilation).items():
            check_positive_int(name, size)
        self.d = d
        self.kernel_size = kernel_size
        self.dilation = dilation
        bound = (d * kernel_size) ** -0.5  # nn.Conv1d's default initialisation range
        self.W = nn.Parameter(torch.empty(kernel_size, d, d).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(d).uniform_(-bound, bound))

    def forward(self, x: Float[Tensor, "B n {self.d}"]
                ) -> Float[Tensor, "B n {self.d}"]:
        n, k, delta = x.shape[1], self.kernel_size, self.dilation
        padded = F.pad(x, (0, 0, (k - 1) * delta, 0))  # (B, (k-1) delta + n, d)
        y: Tensor = self.b
        for j in range(k):  # tap j reads x_{t - j delta}  (eq-cost-conv)
            shift = (k - 1 - j) * delta
            y = y + padded[:, shift : shift + n] @ self.W[j].T  # (B, n, d)
        return y

    @classmethod
    def from_torch(cls, module: nn.Conv1d) -> CausalConvolution:
        """A copy of an ``nn.Conv1d`` with ``in_channels == out_channels`` and a bias, in
        the module's training mode.

        ``nn.Conv1d`` computes a cross-correlation, ``y_t = sum_i w[:, :, i] x_{t + i}``
        over its padded input: its tap ``i`` is our tap ``j = k - 1 - i``. With
        ``padding=(k - 1) * dilation`` and the last ``n`` outputs dropped it is causal.

        Example:
            >>> torch_conv = nn.Conv1d(4, 4, 3, dilation=2, padding=4)
            >>> ours = CausalConvolution.from_torch(torch_conv)
            >>> x = torch.randn(2, 9, 4)                                  # (B, n, d)
            >>> theirs = torch_conv(x.transpose(1, 2))[:, :, :9].transpose(1, 2)
            >>> torch.allclose(ours(x), theirs, atol=1e-6)
            True
        """
        if module.in_channels != module.out_channels or module.bias is None:
            raise ValueError("module must map d channels to d channels and have a bias")
        if module.groups != 1 or module.stride != (1,):
            raise ValueError("module must have groups=1 and stride=1")
        k = module.kernel_size[0]
        ours = cls(module.in_channels, k, module.dilation[0])
        ours.to(device=module.weight.device, dtype=module.weight.dtype)
        with torch.no_grad():
            ours.W.copy_(module.weight.permute(2, 0, 1).flip(0))  # (k, d_out, d_in)
            ours.b.copy_(module.bias)
        return ours.train(module.training)


class SelfAttentionLayer(nn.Module):
    r"""Multi-head self-attention: queries, keys and values all from ``x``.

    .. math::
        \mathbf{Y} = \operatorname{MultiHead}(\mathbf{X}, \mathbf{X}, \mathbf{X})

    Every output position reads every input position, through one softmax.

    Args:
        d: width (``num_heads`` must divide it).
        num_heads: attention heads.
        causal: mask the future (a decoder's self-attention).

    Shapes:
        x: ``(B, n, d)``.
        returns: ``(B, n, d)``.

    Example:
        >>> layer = SelfAttentionLayer(d=8, num_heads=2)
        >>> tuple(layer(torch.randn(3, 5, 8)).shape)
        (3, 5, 8)
    """

    def __init__(self, d: int, num_heads: int = 4, causal: bool = False) -> None:
        super().__init__()
        check_positive_int("d", d), check_positive_int("num_heads", num_heads)
        check_bool("causal", causal)
        if d % num_heads:
            raise ValueError(f"d must be a multiple of num_heads = {num_heads}, got {d}")
        self.d = d
        self.attention = MultiHeadAttention(d, num_heads)
        self.causal = causal

    def forward(self, x: Float[Tensor, "B n {self.d}"]) -> Float[Tensor, "B n {self.d}"]:
        # torch's attn_mask of a multi-head attention is True where attention is forbidden
        future = ~causal_mask(x.shape[1], device=x.device) if self.causal else None  # (n, n)
        return self.attention(x, x, x, attn_mask=future, need_weights=False)[0]  # (B, n, d)


def attention_stack(d: int, num_layers: int, num_heads: int = 4) -> nn.Sequential:
    """``num_layers`` self-attention layers, one after the other.

    Example:
        >>> tuple(attention_stack(8, 3, num_heads=2)(torch.randn(1, 4, 8)).shape)
        (1, 4, 8)
    """
    check_positive_int("num_layers", num_layers)
    return nn.Sequential(*(SelfAttentionLayer(d, num_heads) for _ in range(num_layers)))


def convolution_stack(d: int, num_layers: int, kernel_size: int = 3,
                      dilated: bool = False) -> nn.Sequential:
    r"""``num_layers`` causal convolutions; dilated: layer :math:`l` has :math:`\delta = k^l`.

    With contiguous kernels (:math:`\delta = 1`) a stack of :math:`L` layers sees
    :math:`L(k-1) + 1` positions; with dilations :math:`1, k, k^2, \dots` it sees
    :math:`k^L` (WaveNet's and ByteNet's stacks).

    Example:
        >>> stack = convolution_stack(4, 3, kernel_size=2, dilated=True)
        >>> [layer.dilation for layer in stack]
        [1, 2, 4]
    """
    check_positive_int("num_layers", num_layers)
    check_int("kernel_size", kernel_size, min_value=2), check_bool("dilated", dilated)
    return nn.Sequential(*(
        CausalConvolution(d, kernel_size, kernel_size**layer if dilated else 1)
        for layer in range(num_layers)
    ))
