r"""Multi-head attention with explicit per-head projections (Vaswani et al., 2017).

Shape letters: ``B`` batch, ``T_q`` queries, ``T_k`` keys (= values), ``h`` heads,
``d_model`` the model width (of queries and of the output), ``kdim`` and ``vdim`` the
widths of keys and values (``d_model`` by default), ``d_k`` the per-head size of
queries and keys, ``d_v`` the per-head size of values.

The forward pass takes ``torch.nn.MultiheadAttention``'s arguments with their meanings
and defaults: its boolean masks are **ignore masks**, True where attention is
*forbidden* (see :mod:`seqbook.attention.masking`).
"""

from __future__ import annotations

from typing import TypeAlias

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import check_bool, check_positive_int, check_probability
from seqbook.attention.dot_product import scaled_dot_product_attention
from seqbook.attention.masking import causal_mask, merge_masks

__all__ = ["MultiHeadAttention", "project_heads"]

# torch's key_padding_mask: True (or -inf, added) at the keys to ignore
KeyPaddingMask: TypeAlias = Bool[Tensor, "B T_k"] | Float[Tensor, "B T_k"]
# torch's attn_mask: (T_q, T_k), one per head (B * num_heads, T_q, T_k), or broadcastable
# to the scores (B, num_heads, T_q, T_k); True (or -inf, added) where attention is forbidden
# the weights returned: averaged over the heads (B, T_q, T_k) or per head (B, h, T_q, T_k)
Weights: TypeAlias = Float[Tensor, "B T_q T_k"] | Float[Tensor, "B {self.num_heads} T_q T_k"]
AttentionMask: TypeAlias = (
    Bool[Tensor, "#T_q #T_k"] | Float[Tensor, "#T_q #T_k"]
    | Bool[Tensor, "B*{self.num_heads} T_q T_k"] | Float[Tensor, "B*{self.num_heads} T_q T_k"]
    | Bool[Tensor, "#B #{self.num_heads} #T_q #T_k"]
    | Float[Tensor, "#B #{self.num_heads} #T_q #T_k"]
)


def _as_keep(
    mask: Tensor | None, dtype: torch.dtype, padding: bool = False
) -> Tensor | None:
    """A PyTorch-style mask (True = ignore, or additive) in the convention of
    :func:`scaled_dot_product_attention` (True = attend, or additive); a key padding
    mask ``(B, T_k)`` comes back as ``(B, 1, 1, T_k)``, one per head and query."""
    if mask is None:
        return None
    if padding:
        mask = mask[:, None, None, :]  # (B, 1, 1, T_k)
    return mask.to(dtype) if mask.is_floating_point() else ~mask


def project_heads(
    x: Float[Tensor, "B T d"],
    W: Float[Tensor, "h d d_k"],
    b: Float[Tensor, "h d_k"] | None,
) -> Float[Tensor, "B h T d_k"]:
    r"""Every head's projection of a batch of sequences, :math:`\mathbf{X}\mathbf{W}_i
    + \mathbf{b}_i` for :math:`i = 1, \dots, h` at once.

    Example:
        >>> x, W = torch.randn(2, 5, 8), torch.randn(3, 8, 4)   # 3 heads of size 4
        >>> tuple(project_heads(x, W, None).shape)
        (2, 3, 5, 4)
    """
    projected = torch.einsum("btd,hdk->bhtk", x, W)  # (B, h, T, d_k)
    return projected if b is None else projected + b.unsqueeze(1)


class MultiHeadAttention(nn.Module):
    r"""``h`` scaled dot-product attention heads side by side, then a linear map.

    .. math::
        \operatorname{head}_i = \operatorname{Attention}(\mathbf{Q}\mathbf{W}_i^Q,
        \mathbf{K}\mathbf{W}_i^K, \mathbf{V}\mathbf{W}_i^V), \qquad
        \operatorname{MultiHead}(\mathbf{Q}, \mathbf{K}, \mathbf{V}) =
        \operatorname{Concat}(\operatorname{head}_1, \dots, \operatorname{head}_h)
        \, \mathbf{W}^O

    with :math:`\mathbf{W}_i^Q \in \mathbb{R}^{d_{model} \times d_k}`,
    :math:`\mathbf{W}_i^K \in \mathbb{R}^{kdim \times d_k}`,
    :math:`\mathbf{W}_i^V \in \mathbb{R}^{vdim \times d_v}` and
    :math:`\mathbf{W}^O \in \mathbb{R}^{h d_v \times d_{model}}` (plus biases). The
    per-head matrices are stored as they are written: ``W_Q[i]`` is
    :math:`\mathbf{W}_i^Q`.

    The constructor's first four arguments and the forward pass's arguments are those
    of ``torch.nn.MultiheadAttention`` (always ``batch_first=True``), with the same
    meanings and defaults: boolean masks are True where attention is **forbidden**,
    float masks are added to the scores, and the weights returned are averaged over
    the heads unless ``average_attn_weights=False``. :meth:`from_torch` and
    :meth:`to_torch` copy the weights between the two. Departures: a query whose keys
    are all masked gets the zero vector (torch: NaN), and the weights returned are
    those before dropout.

    Args:
        d_model: width of the queries and of the output (torch's ``embed_dim``).
        num_heads: number of heads :math:`h`.
        dropout: dropout on the attention weights, in training mode only.
        bias: add biases to the four projections.
        kdim: width of the keys; default ``d_model``.
        vdim: width of the values; default ``d_model``.
        d_k: per-head size of queries and keys; default ``d_model // num_heads``
            (which must then divide evenly). Not in torch, where it is always
            ``d_model // num_heads``.
        d_v: per-head size of values; default ``d_model // num_heads``.

    Shapes:
        query: ``(B, T_q, d_model)``.
        key: ``(B, T_k, kdim)``.
        value: ``(B, T_k, vdim)``.
        key_padding_mask: ``(B, T_k)``, **True = padding (ignore)**, or float (added).
            From a keep mask such as :func:`seqbook.data.pad_batch`'s: ``~mask``.
        attn_mask: ``(T_q, T_k)`` or ``(B * h, T_q, T_k)`` as in torch, or
            broadcastable to ``(B, h, T_q, T_k)``; **True = may not attend**, or float
            (added). From :func:`seqbook.attention.causal_mask`: ``~causal_mask(T)``.
        returns: output ``(B, T_q, d_model)`` and weights ``(B, T_q, T_k)``
            (averaged over heads), ``(B, h, T_q, T_k)`` (per head, with
            ``average_attn_weights=False``) or ``None`` (``need_weights=False``).

    Example:
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(d_model=8, num_heads=2)
        >>> x = torch.randn(3, 5, 8)                                # (B, T, d_model)
        >>> padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 5])
        >>> output, weights = mha(x, x, x, key_padding_mask=padding,
        ...                       average_attn_weights=False)
        >>> tuple(output.shape), tuple(weights.shape)
        ((3, 5, 8), (3, 2, 5, 5))
        >>> weights[1, :, :, 3:].abs().max().item()   # padding gets no attention
        0.0
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        *,
        kdim: int | None = None,
        vdim: int | None = None,
        d_k: int | None = None,
        d_v: int | None = None,
    ) -> None:
        super().__init__()
        for name, size in dict(d_model=d_model, num_heads=num_heads, kdim=kdim, vdim=vdim,
                               d_k=d_k, d_v=d_v).items():
            if size is not None:
                check_positive_int(name, size)
        check_probability("dropout", dropout), check_bool("bias", bias)
        self.d_model = d_model
        self.num_heads = num_heads
        self.dropout = dropout
        self.kdim = d_model if kdim is None else kdim
        self.vdim = d_model if vdim is None else vdim
        if (d_k is None or d_v is None) and d_model % num_heads:
            raise ValueError(f"num_heads must divide d_model when d_k or d_v is not given, got "
                             f"d_model={d_model} and num_heads={num_heads}")
        self.d_k = d_model // num_heads if d_k is None else d_k
        self.d_v = d_model // num_heads if d_v is None else d_v
        h, d_k, d_v = self.num_heads, self.d_k, self.d_v
        self.W_Q = nn.Parameter(torch.empty(h, d_model, d_k))
        self.W_K = nn.Parameter(torch.empty(h, self.kdim, d_k))
        self.W_V = nn.Parameter(torch.empty(h, self.vdim, d_v))
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
        """Xavier-uniform weights, zero biases.

        Each projection is initialised as one ``(width, h * d)`` matrix over all heads
        together. (``nn.MultiheadAttention`` initialises its packed
        ``(3 d_model, d_model)`` in-projection as a single matrix, whose bound is
        smaller by :math:`\\sqrt 2`; the two are copies of each other only through
        :meth:`from_torch`.)
        """
        for W in (self.W_Q, self.W_K, self.W_V):
            h, width, d = W.shape
            joint = torch.empty(width, h * d, device=W.device, dtype=W.dtype)  # (width, h*d)
            nn.init.xavier_uniform_(joint)
            with torch.no_grad():
                W.copy_(joint.view(width, h, d).transpose(0, 1))  # (h, width, d)
        nn.init.xavier_uniform_(self.W_O)
        for b in (self.b_Q, self.b_K, self.b_V, self.b_O):
            if b is not None:
                nn.init.zeros_(b)

    @classmethod
    def from_torch(
        cls, module: nn.MultiheadAttention
    ) -> MultiHeadAttention:
        """A copy of an ``nn.MultiheadAttention``'s weights, computing the same function.

        ``nn.MultiheadAttention`` keeps all heads in one ``(3 d_model, d_model)``
        ``in_proj_weight`` (or, with ``kdim``/``vdim``, in ``q_proj_weight``,
        ``k_proj_weight`` and ``v_proj_weight``); head ``i`` uses rows ``i d_k`` to
        ``(i+1) d_k`` of each. ``bias``, ``kdim``, ``vdim``, ``dropout`` and the training
        mode are copied; ``add_bias_kv`` and ``add_zero_attn`` are not supported. Ours
        is batch-first whatever the module's ``batch_first`` (the weights do not depend
        on it).

        Example:
            >>> torch_mha = nn.MultiheadAttention(8, 2, batch_first=True)
            >>> ours = MultiHeadAttention.from_torch(torch_mha)
            >>> x = torch.randn(2, 4, 8)
            >>> torch.allclose(ours(x, x, x)[0], torch_mha(x, x, x)[0], atol=1e-6)
            True
        """
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module must not use add_bias_kv or add_zero_attn (unsupported)")
        E, h = module.embed_dim, module.num_heads
        d = E // h
        bias = module.in_proj_bias is not None
        ours = cls(E, h, module.dropout, bias, kdim=module.kdim, vdim=module.vdim)
        if module._qkv_same_embed_dim:
            blocks = module.in_proj_weight.split(E)  # 3 x (E, E): y = x block^T
        else:
            blocks = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
        ours.to(device=blocks[0].device, dtype=blocks[0].dtype)
        with torch.no_grad():
            for W, block in zip((ours.W_Q, ours.W_K, ours.W_V), blocks):
                W.copy_(block.view(h, d, -1).transpose(1, 2))  # (h, width, d)
            ours.W_O.copy_(module.out_proj.weight.T)  # (h d_v, E)
            if bias:
                for b, block in zip((ours.b_Q, ours.b_K, ours.b_V), module.in_proj_bias.split(E)):
                    b.copy_(block.view(h, d))  # (h, d)
                ours.b_O.copy_(module.out_proj.bias)
        return ours.train(module.training)

    def to_torch(self) -> nn.MultiheadAttention:
        """An ``nn.MultiheadAttention`` (``batch_first=True``) computing the same function.

        Needs torch's head sizes, ``d_k = d_v = d_model / num_heads``.

        Example:
            >>> ours = MultiHeadAttention(8, 2, kdim=4, vdim=4)
            >>> theirs = ours.to_torch()
            >>> q, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 4)
            >>> torch.allclose(ours(q, kv, kv)[0], theirs(q, kv, kv)[0], atol=1e-6)
            True
        """
        E, h = self.d_model, self.num_heads
        if self.d_k * h != E or self.d_v * h != E:
            raise ValueError("to_torch needs d_k = d_v = d_model / num_heads (torch's only head "
                             f"sizes), got d_k={self.d_k}, d_v={self.d_v} with d_model={E}, "
                             f"num_heads={h}")
        bias = self.b_O is not None
        theirs = nn.MultiheadAttention(
            E, h, self.dropout, bias, kdim=self.kdim, vdim=self.vdim, batch_first=True,
            device=self.W_O.device, dtype=self.W_O.dtype,
        )
        blocks = [W.transpose(1, 2).reshape(E, -1) for W in (self.W_Q, self.W_K, self.W_V)]
        with torch.no_grad():
            if theirs._qkv_same_embed_dim:
                theirs.in_proj_weight.copy_(torch.cat(blocks))  # (3E, E)
            else:
                theirs.q_proj_weight.copy_(blocks[0])
                theirs.k_proj_weight.copy_(blocks[1])
                theirs.v_proj_weight.copy_(blocks[2])
            theirs.out_proj.weight.copy_(self.W_O.T)
            if bias:
                biases = (self.b_Q, self.b_K, self.b_V)
                theirs.in_proj_bias.copy_(torch.cat([b.flatten() for b in biases]))  # (3E,)
                theirs.out_proj.bias.copy_(self.b_O)
        return theirs

    def _merge_masks(
        self, query: Tensor, key: Tensor, key_padding_mask: Tensor | None,
        attn_mask: Tensor | None, is_causal: bool,
    ) -> Tensor | None:
        """torch's masks (True = ignore, or additive) as one keep mask (True = attend),
        or one additive mask, broadcastable to the scores ``(B, h, T_q, T_k)``."""
        (B, T_q, _), T_k = query.shape, key.shape[1]
        if attn_mask is not None and attn_mask.dim() == 3:  # torch's (B * h, T_q, T_k)
            attn_mask = attn_mask.view(B, self.num_heads, T_q, T_k)  # (B, h, T_q, T_k)
        return merge_masks(
            _as_keep(key_padding_mask, query.dtype, padding=True),
            _as_keep(attn_mask, query.dtype),
            causal_mask(T_q, T_k, device=query.device) if is_causal else None)

    def forward(
        self,
        query: Float[Tensor, "B T_q {self.d_model}"],
        key: Float[Tensor, "B T_k {self.kdim}"],
        value: Float[Tensor, "B T_k {self.vdim}"],
        key_padding_mask: KeyPaddingMask | None = None,
        need_weights: bool = True,
        attn_mask: AttentionMask | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Float[Tensor, "B T_q {self.d_model}"], Weights | None]:
        """Return ``(output, weights)`` (shapes in the class docstring).

        Args:
            query, key, value: as in the class docstring.
            key_padding_mask: True (or :math:`-\\infty`) at the keys to ignore.
            need_weights: return the weights (else ``None``).
            attn_mask: True (or :math:`-\\infty`) where query :math:`i` may not attend
                to key :math:`j`; a float mask is added to the scores.
            average_attn_weights: average the returned weights over the heads.
            is_causal: also apply the causal mask (query :math:`i` sees keys
                :math:`j \\le i`); unlike torch, needs no ``attn_mask``.
        """
        B, T_q, _ = query.shape
        # (B, h, T_q, d_k), (B, h, T_k, d_k), (B, h, T_k, d_v)  (eq-attn-head)
        Q = project_heads(query, self.W_Q, self.b_Q)
        K = project_heads(key, self.W_K, self.b_K)
        V = project_heads(value, self.W_V, self.b_V)
        mask = self._merge_masks(query, key, key_padding_mask, attn_mask, is_causal)
        dropout_p = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(Q, K, V, mask, dropout_p)
        concat = heads.transpose(1, 2).reshape(B, T_q, -1)  # (B, T_q, h*d_v)
        output = concat @ self.W_O  # (B, T_q, d_model)  (eq-attn-multihead)
        if self.b_O is not None:
            output = output + self.b_O
        if not need_weights:
            return output, None
        return output, weights.mean(dim=1) if average_attn_weights else weights

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, dropout={self.dropout}, "
            f"bias={self.b_O is not None}, kdim={self.kdim}, vdim={self.vdim}, "
            f"d_k={self.d_k}, d_v={self.d_v}"
        )
