r"""Multi-head attention with explicit per-head projections (Vaswani et al., 2017).

Shape letters: ``B`` batch, ``T_q`` queries, ``T_k`` keys (= values), ``h`` heads,
``d_model`` the model width, ``d_k`` the per-head size of queries and keys, ``d_v``
the per-head size of values.

Mask convention (the book's, see :mod:`seqbook.attention.masking`): **True = attend**.
``torch.nn.MultiheadAttention`` uses True = ignore; pass ``~mask`` when moving a mask
from one to the other.
"""

from __future__ import annotations

import torch
from torch import nn

from seqbook._checks import check_positive_int, check_real, check_tensor
from seqbook.attention.dot_product import scaled_dot_product_attention
from seqbook.attention.masking import check_mask

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    r"""``h`` scaled dot-product attention heads side by side, then a linear map.

    .. math::
        \operatorname{head}_i = \operatorname{Attention}(\mathbf{Q}\mathbf{W}_i^Q,
        \mathbf{K}\mathbf{W}_i^K, \mathbf{V}\mathbf{W}_i^V), \qquad
        \operatorname{MultiHead}(\mathbf{Q}, \mathbf{K}, \mathbf{V}) =
        \operatorname{Concat}(\operatorname{head}_1, \dots, \operatorname{head}_h)
        \, \mathbf{W}^O

    with :math:`\mathbf{W}_i^Q, \mathbf{W}_i^K \in \mathbb{R}^{d_{model} \times d_k}`,
    :math:`\mathbf{W}_i^V \in \mathbb{R}^{d_{model} \times d_v}` and
    :math:`\mathbf{W}^O \in \mathbb{R}^{h d_v \times d_{model}}` (plus biases). The
    per-head matrices are stored as they are written: ``W_Q[i]`` is
    :math:`\mathbf{W}_i^Q`.

    Args:
        d_model: width of the inputs and of the output.
        num_heads: number of heads :math:`h`.
        d_k: per-head size of queries and keys; default ``d_model // num_heads``
            (which must then divide evenly).
        d_v: per-head size of values; default ``d_model // num_heads``.
        bias: add biases to the four projections (as ``nn.MultiheadAttention``).
        dropout: dropout on the attention weights, in training mode only.

    Shapes:
        query: ``(B, T_q, d_model)``.
        key: ``(B, T_k, d_model)``.
        value: ``(B, T_k, d_model)``.
        key_padding_mask: ``(B, T_k)``, True = real token (e.g. the mask of
            :func:`seqbook.data.pad_batch`).
        attn_mask: ``(T_q, T_k)``, ``(B, T_q, T_k)`` or ``(B, h, T_q, T_k)``,
            True = may attend (e.g. :func:`seqbook.attention.causal_mask`).
        returns: output ``(B, T_q, d_model)`` and per-head weights
            ``(B, h, T_q, T_k)``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(d_model=8, num_heads=2)
        >>> x = torch.randn(3, 5, 8)                                # (B, T, d_model)
        >>> padding = torch.tensor([[True] * 5, [True] * 3 + [False] * 2, [True] * 5])
        >>> output, weights = mha(x, x, x, key_padding_mask=padding)
        >>> tuple(output.shape), tuple(weights.shape)
        ((3, 5, 8), (3, 2, 5, 5))
        >>> weights[1, :, :, 3:].abs().max().item()   # padding gets no attention
        0.0
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_k: int | None = None,
        d_v: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.num_heads = check_positive_int("num_heads", num_heads)
        if (d_k is None or d_v is None) and d_model % num_heads:
            raise ValueError(
                f"num_heads must divide d_model when d_k or d_v is not given, got "
                f"d_model={d_model} and num_heads={num_heads}"
            )
        self.d_k = d_model // num_heads if d_k is None else check_positive_int("d_k", d_k)
        self.d_v = d_model // num_heads if d_v is None else check_positive_int("d_v", d_v)
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be a bool, got {bias!r}")
        self.dropout = check_real("dropout", dropout, min_value=0.0, max_value=1.0)
        if self.dropout == 1.0:
            raise ValueError("dropout must be < 1, got 1.0")
        h, d_k, d_v = self.num_heads, self.d_k, self.d_v
        self.W_Q = nn.Parameter(torch.empty(h, d_model, d_k))
        self.W_K = nn.Parameter(torch.empty(h, d_model, d_k))
        self.W_V = nn.Parameter(torch.empty(h, d_model, d_v))
        self.W_O = nn.Parameter(torch.empty(h * d_v, d_model))
        if bias:
            self.b_Q = nn.Parameter(torch.zeros(h, d_k))
            self.b_K = nn.Parameter(torch.zeros(h, d_k))
            self.b_V = nn.Parameter(torch.zeros(h, d_v))
            self.b_O = nn.Parameter(torch.zeros(d_model))
        else:
            for name in ("b_Q", "b_K", "b_V", "b_O"):
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform weights (over all heads together, as torch does), zero biases."""
        for W in (self.W_Q, self.W_K, self.W_V):
            # one (d_model, h * d) matrix, as if all heads were a single projection
            h, _, d = W.shape
            joint = torch.empty(self.d_model, h * d)  # (d_model, h*d)
            nn.init.xavier_uniform_(joint)
            with torch.no_grad():
                W.copy_(joint.view(self.d_model, h, d).transpose(0, 1))  # (h, d_model, d)
        nn.init.xavier_uniform_(self.W_O)
        for b in (self.b_Q, self.b_K, self.b_V, self.b_O):
            if b is not None:
                nn.init.zeros_(b)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A copy of an ``nn.MultiheadAttention``'s weights, computing the same function.

        ``nn.MultiheadAttention`` keeps all heads in one ``(3 d_model, d_model)``
        ``in_proj_weight``; head ``i`` uses rows ``i d_k`` to ``(i+1) d_k`` of each of
        its three blocks. Only the standard configuration is supported (``kdim`` and
        ``vdim`` equal to ``embed_dim``, no ``add_bias_kv``, no ``add_zero_attn``).
        Our module is batch-first; compare it with ``batch_first=True``.

        Example:
            >>> torch_mha = nn.MultiheadAttention(8, 2, batch_first=True)
            >>> ours = MultiHeadAttention.from_torch(torch_mha)
            >>> x = torch.randn(2, 4, 8)
            >>> torch.allclose(ours(x, x, x)[0], torch_mha(x, x, x)[0], atol=1e-6)
            True
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(
                f"module must be a torch.nn.MultiheadAttention, got {type(module).__name__}"
            )
        if not module._qkv_same_embed_dim:
            raise ValueError("module must have kdim == vdim == embed_dim")
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module must not use add_bias_kv or add_zero_attn")
        E, h = module.embed_dim, module.num_heads
        d = E // h
        bias = module.in_proj_bias is not None
        ours = cls(E, h, bias=bias, dropout=module.dropout)
        weight = module.in_proj_weight  # (3E, E): rows of W_q, W_k, W_v
        ours.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            for i, W in enumerate((ours.W_Q, ours.W_K, ours.W_V)):
                block = weight[i * E : (i + 1) * E]  # (E, E), y = x block^T
                W.copy_(block.view(h, d, E).transpose(1, 2))  # (h, E, d)
                if bias:
                    (ours.b_Q, ours.b_K, ours.b_V)[i].copy_(
                        module.in_proj_bias[i * E : (i + 1) * E].view(h, d)  # (h, d)
                    )
            ours.W_O.copy_(module.out_proj.weight.T)  # (h d_v, E)
            if bias:
                ours.b_O.copy_(module.out_proj.bias)
        return ours

    def _project(self, x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        projected = torch.einsum("btd,hdk->bhtk", x, W)  # (B, h, T, d_k)
        return projected if b is None else projected + b.unsqueeze(1)  # (B, h, T, d_k)

    def _combined_mask(
        self,
        B: int,
        T_q: int,
        T_k: int,
        key_padding_mask: torch.Tensor | None,
        attn_mask: torch.Tensor | None,
    ) -> torch.Tensor | None:
        scores_shape = torch.Size((B, self.num_heads, T_q, T_k))
        mask = None
        if key_padding_mask is not None:
            check_tensor("key_padding_mask", key_padding_mask, ndim=2)
            check_mask("key_padding_mask", key_padding_mask, torch.Size((B, T_k)))
            mask = key_padding_mask[:, None, None, :]  # (B, 1, 1, T_k)
        if attn_mask is not None:
            check_tensor("attn_mask", attn_mask, ndim=(2, 3, 4))
            if attn_mask.dim() == 3:  # (B, T_q, T_k): the same for every head
                check_mask("attn_mask", attn_mask, torch.Size((B, T_q, T_k)))
                attn_mask = attn_mask.unsqueeze(1)  # (B, 1, T_q, T_k)
            check_mask("attn_mask", attn_mask, scores_shape)
            mask = attn_mask if mask is None else mask & attn_mask  # (B, h, T_q, T_k)
        return mask

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(output, weights)``, weights per head (shapes in the class docstring)."""
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_tensor(name, x, ndim=3, floating=True)
            if x.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} must have d_model={self.d_model} features in its last "
                    f"dimension, got shape {tuple(x.shape)}"
                )
        B, T_q, _ = query.shape
        if key.shape[0] != B or value.shape[0] != B:
            raise ValueError(
                f"query, key and value must have the same batch size, got "
                f"{B}, {key.shape[0]} and {value.shape[0]}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same length T_k, got shapes "
                f"{tuple(key.shape)} and {tuple(value.shape)}"
            )
        T_k = key.shape[1]
        mask = self._combined_mask(B, T_q, T_k, key_padding_mask, attn_mask)

        Q = self._project(query, self.W_Q, self.b_Q)  # (B, h, T_q, d_k)  (eq-attn-head)
        K = self._project(key, self.W_K, self.b_K)  # (B, h, T_k, d_k)
        V = self._project(value, self.W_V, self.b_V)  # (B, h, T_k, d_v)
        dropout = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(Q, K, V, mask, dropout)  # (B, h, T_q, d_v)
        concat = heads.transpose(1, 2).reshape(B, T_q, -1)  # (B, T_q, h*d_v)
        output = concat @ self.W_O  # (B, T_q, d_model)  (eq-attn-multihead)
        if self.b_O is not None:
            output = output + self.b_O
        return output, weights

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k}, "
            f"d_v={self.d_v}, bias={self.b_O is not None}, dropout={self.dropout}"
        )
