r"""Hopfield layers: the continuous Hopfield update as a layer of a neural network.

Shapes: ``B`` batch, ``h`` heads, ``S`` state patterns (queries), ``N`` stored patterns
(keys), ``d_r`` / ``d_y`` / ``d_p`` the raw sizes of state patterns, stored patterns
and pattern projections (the values' input), ``d_k`` the associative space of one
head, ``d_v`` the values of one head.

With raw state patterns :math:`\mathbf R`, raw stored patterns :math:`\mathbf Y` and
pattern projections :math:`\mathbf P` (by default :math:`\mathbf Y`), one per row, each
head projects

.. math::

    \mathbf Q = \mathbf R\mathbf W_Q, \quad \mathbf K = \mathbf Y\mathbf W_K, \quad
    \mathbf V = \mathbf P\mathbf W_K\mathbf W_V, \qquad
    \mathbf Z = \operatorname{softmax}(\beta\,\mathbf Q\mathbf K^\top)\,\mathbf V

and with :math:`\beta = 1/\sqrt{d_k}` this is scaled dot-product attention. Before the
retrieval, the state patterns can be updated by the continuous modern Hopfield network
in the space of keys, :math:`\mathbf Q \leftarrow \operatorname{softmax}(\beta\mathbf
Q\mathbf K^\top)\mathbf K`, a given number of times or until they converge.

:class:`HopfieldLayer` is what the library of Ramsauer et al. (``hflayers``) calls
``Hopfield``; its options (:class:`HopfieldConfig`) carry ``hflayers``' names where they
mean the same. ``hflayers``' own ``HopfieldLayer`` is a different module: a lookup
whose stored patterns are learned parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import (
    check_beta,
    check_int,
    check_positive_int,
    check_probability,
    check_real,
)

__all__ = ["HopfieldConfig", "HopfieldLayer", "HopfieldPooling", "hopfield_association"]


@dataclass
class HopfieldConfig:
    """Options of a :class:`HopfieldLayer`, named as in ``hflayers``' ``Hopfield``.

    The defaults give the layer of the book's equations (one head, no normalization,
    values tied to the keys, no output projection); ``hflayers``' defaults differ
    where the comment says so.
    """

    num_heads: int = 1  # heads, each with its own W_Q, W_K, W_V; outputs concatenated
    beta: float | None = None  # inverse temperature; None: 1 / sqrt(d_k) (hflayers: scaling)
    # state updates before the retrieval; None: to convergence
    update_steps_max: int | None = 0
    update_steps_eps: float = 1e-4  # a head has converged when ||A_new - A||_F <= this
    normalize_stored_pattern: bool = False  # LayerNorm on Y (hflayers: True)
    normalize_stored_pattern_affine: bool = True  # ... with learned gain and bias
    normalize_state_pattern: bool = False  # LayerNorm on R (hflayers: True)
    normalize_state_pattern_affine: bool = True  # ... with learned gain and bias
    normalize_pattern_projection: bool = False  # LayerNorm on P (hflayers: True)
    normalize_pattern_projection_affine: bool = True  # ... with learned gain and bias
    normalize_hopfield_space: bool = False  # LayerNorm on Q and K, in the d_k space
    normalize_hopfield_space_affine: bool = False  # ... with learned gain and bias
    pattern_projection_as_connected: bool = True  # V = P W_K W_V; False: P W_V (hflayers: False)
    state_pattern_as_static: bool = False  # Q = R, no W_Q (R then has d_k features)
    input_bias: bool = False  # biases in W_Q, W_K, W_V and W_O (hflayers: True)
    dropout: float = 0.0  # on the association matrix A, in training mode only
    output_size: int | None = None  # output projection W_O to this size; None: no W_O

    def __post_init__(self) -> None:
        check_positive_int("num_heads", self.num_heads)
        if self.beta is not None:
            check_beta("beta", self.beta)
        if self.update_steps_max is not None:
            check_int("update_steps_max", self.update_steps_max, min_value=0)
        check_real("update_steps_eps", self.update_steps_eps, min_value=0.0, strict_min=True)
        check_probability("dropout", self.dropout)
        if self.output_size is not None:
            check_positive_int("output_size", self.output_size)


# A mask of the association (True = may attend), broadcastable to (B, h, S, N)
AssociationMask: TypeAlias = (
    Bool[Tensor, "#N"] | Bool[Tensor, "#S #N"] | Bool[Tensor, "#h #S #N"]
    | Bool[Tensor, "#B #h #S #N"]
)
# A layer's inputs: state patterns R, stored patterns Y and pattern projections P, and its
# mask (True = may attend): per stored pattern, or per state and stored pattern
StatePatterns: TypeAlias = Float[Tensor, "B S {self.state_size}"]
StoredPatterns: TypeAlias = Float[Tensor, "B N {self.stored_size}"]
Projections: TypeAlias = Float[Tensor, "B N {self.pattern_projection_size}"]
StoredMask: TypeAlias = Bool[Tensor, "B N"] | Bool[Tensor, "B S N"]
# the queries (one head for static state patterns, else h), keys and values of the heads
QueriesKeysValues: TypeAlias = tuple[
    Float[Tensor, " B #h S d_k"], Float[Tensor, "B h N d_k"], Float[Tensor, "B h N d_v"]
]
# What the layers return: Z (B, S, output_size), the pooled vectors (B, S * output_size),
# and the association matrix A (B, h, S, N)
LayerOutput: TypeAlias = Float[Tensor, "B S {self.output_size}"]
PooledOutput: TypeAlias = Float[Tensor, "B {self.num_queries}*{self.hopfield.output_size}"]
Weights: TypeAlias = Float[Tensor, "B {self.config.num_heads} S N"]
PoolingWeights: TypeAlias = Float[Tensor, "B {self.hopfield.config.num_heads} S N"]


def _masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


def hopfield_association(
    Q: Float[Tensor, " B #h S d_k"],
    K: Float[Tensor, " B #h N d_k"],
    beta: float,
    update_steps_max: int | None = 0, update_steps_eps: float = 1e-4,
    mask: AssociationMask | None = None,
) -> Float[Tensor, "B h S N"]:
    r"""The association matrix
    :math:`\mathbf A = \operatorname{softmax}(\beta\mathbf Q\mathbf K^\top)`, after updating Q.

    Before the final association, every state pattern (a row of ``Q``) is updated by
    the continuous modern Hopfield network whose stored patterns are the rows of
    ``K``, :math:`\mathbf Q \leftarrow \mathbf A\mathbf K`, at most
    ``update_steps_max`` times (``None``: until it converges, at most 1,000 times). A
    head of a batch element stops once one update changes its association matrix by
    at most ``update_steps_eps`` in Frobenius norm. ``update_steps_max=0`` is one
    softmax: scaled dot-product attention for :math:`\beta = 1/\sqrt{d_k}`.

    Args:
        Q: state patterns in the associative space.
        K: stored patterns in the associative space.
        beta: inverse temperature :math:`\beta > 0`.
        update_steps_max: number of updates of Q before the association (>= 0), or
            ``None``.
        update_steps_eps: convergence threshold (> 0).
        mask: True where a stored pattern may be attended to (the book's polarity;
            ``hflayers`` and ``nn.MultiheadAttention`` use True = ignore).

    Shapes:
        Q: ``(B, h, S, d_k)``.
        K: ``(B, h, N, d_k)`` (Q or K may have one head, shared by the other's ``h``).
        mask: broadcastable to ``(B, h, S, N)``.
        returns: ``(B, h, S, N)``.

    Example:
        >>> K = torch.eye(3).expand(1, 1, 3, 3) * 4            # three stored patterns
        >>> Q = torch.tensor([[[[2.0, 1.0, 0.0]]]])
        >>> hopfield_association(Q, K, beta=1.0).round(decimals=3)
        tensor([[[[0.9820, 0.0180, 0.0000]]]])
    """
    steps = 1000 if update_steps_max is None else update_steps_max
    check_beta("beta", beta), check_int("update_steps_max", steps, min_value=0)
    check_real("update_steps_eps", update_steps_eps, min_value=0.0,
               strict_min=True)
    A = _masked_softmax(beta * Q @ K.transpose(-1, -2), mask)  # (B, h, S, N)
    active = A.new_ones(A.shape[:-2], dtype=torch.bool)  # (B, h)
    for _ in range(steps):
        Q = A @ K  # (eq-hopfield-mhn-update)  (B, h, S, d_k)
        A_new = _masked_softmax(beta * Q @ K.transpose(-1, -2), mask)
        change = (A_new - A).square().sum((-2, -1)).sqrt()  # (B, h)
        A = torch.where(active[..., None, None], A_new, A)  # done heads keep A
        active = active & (change > update_steps_eps)
        if not active.any():
            break
    return A


def _projection(heads: int, rows: int, cols: int) -> nn.Parameter:
    """Per-head weights ``(heads, rows, cols)``, Xavier-uniform over all heads together."""
    joint = torch.empty(rows, heads * cols)  # (rows, h * cols)
    nn.init.xavier_uniform_(joint)
    # (h, rows, cols)
    return nn.Parameter(joint.view(rows, heads, cols).transpose(0, 1).contiguous())


def _bias(heads: int, cols: int, wanted: bool) -> nn.Parameter | None:
    return nn.Parameter(torch.zeros(heads, cols)) if wanted else None


def _layer_norm(size: int, wanted: bool, affine: bool) -> nn.Module:
    return nn.LayerNorm(size, elementwise_affine=affine) if wanted else nn.Identity()


def _project(x: Tensor, W: Tensor, b: Tensor | None) -> Tensor:
    """``x @ W + b`` for every head: x ``(B, 1 or h, T, d)``, W ``(h, d, k)`` ->
    ``(B, h, T, k)``."""
    out = x @ W  # (B, h, T, k)
    return out if b is None else out + b[:, None, :]  # (B, h, T, k)


class HopfieldLayer(nn.Module):
    r"""Associate state patterns :math:`\mathbf R` with stored patterns :math:`\mathbf Y`.

    .. math::

        \mathbf Z = \operatorname{softmax}\big(\beta\,\mathbf R\mathbf W_Q
                    (\mathbf Y\mathbf W_K)^\top\big)\,\mathbf P\mathbf W_K\mathbf W_V,
        \qquad \mathbf P = \mathbf Y \text{ by default}

    for every head, the heads' outputs concatenated (and projected by
    :math:`\mathbf W_O` if ``config.output_size`` is set). ``hflayers`` calls this
    module ``Hopfield``. See :class:`HopfieldConfig` for the options (heads, layer
    norms, updates to convergence, dropout, biases, output projection, untied values).

    Args:
        state_size: :math:`d_r`, the features of a state pattern (a row of R).
        stored_size: :math:`d_y`, the features of a stored pattern (a row of Y).
        hidden_size: :math:`d_k`, the associative space of one head.
        value_size: :math:`d_v`, the values of one head (default ``hidden_size``).
        config: the options (default :class:`HopfieldConfig`\ ``()``).
        pattern_projection_size: :math:`d_p`, the features of P when the values are
            not tied to the keys (default ``stored_size``).

    Shapes:
        R: ``(B, S, d_r)``.
        Y: ``(B, N, d_y)``.
        P: ``(B, N, d_p)`` (``d_y`` with tied values).
        mask: ``(B, N)`` or ``(B, S, N)``, True where a stored pattern may be attended.
        returns: Z ``(B, S, h d_v)`` or ``(B, S, output_size)``, and with
        ``return_weights`` the association matrix ``(B, h, S, N)``.

    Example:
        >>> layer = HopfieldLayer(state_size=6, stored_size=5, hidden_size=4)
        >>> Z, A = layer(torch.randn(2, 3, 6), torch.randn(2, 7, 5), return_weights=True)
        >>> tuple(Z.shape), tuple(A.shape)
        ((2, 3, 4), (2, 1, 3, 7))
        >>> two_heads = HopfieldLayer(6, 5, 4, config=HopfieldConfig(num_heads=2, output_size=6))
        >>> tuple(two_heads(torch.randn(2, 3, 6), torch.randn(2, 7, 5)).shape)
        (2, 3, 6)
    """

    def __init__(
        self,
        state_size: int,
        stored_size: int,
        hidden_size: int,
        value_size: int | None = None,
        config: HopfieldConfig | None = None,
        pattern_projection_size: int | None = None,
    ) -> None:
        super().__init__()
        for name, size in dict(state_size=state_size, stored_size=stored_size,
                               hidden_size=hidden_size, value_size=value_size,
                               pattern_projection_size=pattern_projection_size).items():
            if size is not None:
                check_positive_int(name, size)
        self.config = c = HopfieldConfig() if config is None else config
        self.state_size = state_size
        self.stored_size = stored_size
        self.hidden_size = d_k = hidden_size
        self.value_size = d_v = d_k if value_size is None else value_size
        d_p = stored_size if pattern_projection_size is None else pattern_projection_size
        if c.pattern_projection_as_connected and d_p != stored_size:
            raise ValueError(f"pattern_projection_size must equal stored_size = {stored_size} "
                             f"with pattern_projection_as_connected=True, got {d_p}")
        if c.state_pattern_as_static and state_size != d_k:
            raise ValueError(f"state_size must equal hidden_size = {d_k} for static state patterns "
                             f"(state_pattern_as_static=True: Q = R), got {state_size}")
        self.pattern_projection_size = d_p
        self.beta = 1.0 / math.sqrt(d_k) if c.beta is None else c.beta
        h = c.num_heads
        self.W_Q = (  # (h, d_r, d_k)
            None if c.state_pattern_as_static else _projection(h, state_size, d_k)
        )
        self.W_K = _projection(h, stored_size, d_k)  # (h, d_y, d_k)
        self.W_V = _projection(  # (h, ., d_v)
            h, d_k if c.pattern_projection_as_connected else d_p, d_v
        )
        self.b_Q = _bias(h, d_k, c.input_bias and not c.state_pattern_as_static)
        self.b_K = _bias(h, d_k, c.input_bias)
        self.b_V = _bias(h, d_v, c.input_bias)
        self.W_O = self.b_O = None
        if c.output_size is not None:
            W_O = torch.empty(h * d_v, c.output_size)
            nn.init.xavier_uniform_(W_O)
            self.W_O = nn.Parameter(W_O)  # (h d_v, output_size)
            self.b_O = nn.Parameter(torch.zeros(c.output_size)) if c.input_bias else None
        self.norm_state = _layer_norm(
            state_size, c.normalize_state_pattern, c.normalize_state_pattern_affine)
        self.norm_stored = _layer_norm(
            stored_size, c.normalize_stored_pattern, c.normalize_stored_pattern_affine)
        self.norm_projection = _layer_norm(
            d_p, c.normalize_pattern_projection, c.normalize_pattern_projection_affine)
        self.norm_hopfield = _layer_norm(
            d_k, c.normalize_hopfield_space, c.normalize_hopfield_space_affine)

    @property
    def output_size(self) -> int:
        """The number of output features, ``config.output_size`` or else
        ``num_heads * value_size``."""
        c = self.config
        return c.num_heads * self.value_size if c.output_size is None else c.output_size

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> HopfieldLayer:
        """A Hopfield layer computing what an ``nn.MultiheadAttention`` computes.

        Multi-head attention is the Hopfield layer with one update
        (``update_steps_max=0``), :math:`\\beta = 1/\\sqrt{d_k}`, untied values, biases
        and an output projection. Only ``kdim == vdim == embed_dim``, without
        ``add_bias_kv`` or ``add_zero_attn``, is supported. The layer takes the module's
        training mode. Compare with
        ``batch_first=True`` (or transpose) and remember the masks' polarity.

        Example:
            >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
            >>> layer = HopfieldLayer.from_torch(mha)
            >>> x = torch.randn(2, 5, 8)
            >>> torch.allclose(layer(x, x, x), mha(x, x, x)[0], atol=1e-6)
            True
        """
        if not module._qkv_same_embed_dim:
            raise ValueError("module must have kdim == vdim == embed_dim")
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module must not use add_bias_kv or add_zero_attn")
        E, h = module.embed_dim, module.num_heads
        d = E // h
        bias = module.in_proj_bias is not None
        config = HopfieldConfig(num_heads=h, pattern_projection_as_connected=False, input_bias=bias,
                                dropout=module.dropout, output_size=E)
        layer = cls(E, E, d, d, config)
        weight = module.in_proj_weight  # (3E, E): the rows of W_q, W_k, W_v
        layer.to(device=weight.device, dtype=weight.dtype)
        assert layer.W_Q is not None and layer.W_O is not None  # not static, output_size set
        with torch.no_grad():
            pairs = ((layer.W_Q, layer.b_Q), (layer.W_K, layer.b_K), (layer.W_V, layer.b_V))
            for i, (W, b) in enumerate(pairs):
                W.copy_(weight[i * E : (i + 1) * E].view(h, d, E).transpose(1, 2))  # (h, E, d)
                if b is not None:
                    b.copy_(module.in_proj_bias[i * E : (i + 1) * E].view(h, d))  # (h, d)
            layer.W_O.copy_(module.out_proj.weight.T)  # (h d, E)
            if layer.b_O is not None:
                layer.b_O.copy_(module.out_proj.bias)
        return layer.train(module.training)

    def check_forward_args(
        self, Y: StoredPatterns, P: Projections | None = None, mask: StoredMask | None = None
    ) -> None:
        """What the types of :meth:`forward`'s arguments cannot say: ``P`` is given where
        the values are not projected from ``Y``, there is a stored pattern, and the mask
        leaves every state pattern one to attend to."""
        if P is None and self.pattern_projection_size != self.stored_size:
            raise ValueError(f"P must be given: pattern_projection_size = "
                             f"{self.pattern_projection_size} differs from stored_size")
        if Y.shape[1] == 0:
            raise ValueError(f"Y must hold at least one stored pattern (N >= 1), got shape "
                             f"{tuple(Y.shape)}")
        if mask is not None and not mask.any(-1).all():
            raise ValueError("mask leaves some state pattern with no stored pattern to attend to")

    def forward(
        self, R: StatePatterns, Y: StoredPatterns, P: Projections | None = None,
        mask: StoredMask | None = None, return_weights: bool = False,
    ) -> LayerOutput | tuple[LayerOutput, Weights]:
        """Return Z (and the association matrix A); shapes in the class docstring."""
        self.check_forward_args(Y, P, mask)
        c, (B, S), N = self.config, R.shape[:2], Y.shape[1]
        Q, K, V = self.queries_keys_values(R, Y, Y if P is None else P)
        if mask is not None:
            mask = mask.reshape(B, 1, -1, N)  # (B, 1, 1 or S, N)
        A = hopfield_association(  # (B, h, S, N)
            Q, K, self.beta, c.update_steps_max, c.update_steps_eps, mask)
        Z = F.dropout(A, c.dropout, self.training) @ V  # (eq-hopfield-layer)
        Z = Z.transpose(1, 2).reshape(B, S, -1)  # (B, S, h d_v)
        if self.W_O is not None:
            Z = Z @ self.W_O if self.b_O is None else Z @ self.W_O + self.b_O
        return (Z, A) if return_weights else Z

    def queries_keys_values(
        self, R: StatePatterns, Y: StoredPatterns, P: Projections
    ) -> QueriesKeysValues:
        """The queries ``(B, h or 1, S, d_k)``, keys ``(B, h, N, d_k)`` and values
        ``(B, h, N, d_v)`` of every head (a static state pattern is one query for all)."""
        R, Y, P = self.norm_state(R), self.norm_stored(Y), self.norm_projection(P)
        R, Y, P = R[:, None], Y[:, None], P[:, None]  # shared by the heads
        # (eq-hopfield-q)
        Q = R if self.W_Q is None else _project(R, self.W_Q, self.b_Q)
        K = _project(Y, self.W_K, self.b_K)  # (eq-hopfield-k)  (B, h, N, d_k)
        if self.config.pattern_projection_as_connected:
            P = _project(P, self.W_K, self.b_K)  # (B, h, N, d_k)
        V = _project(P, self.W_V, self.b_V)  # (eq-hopfield-v)  (B, h, N, d_v)
        return self.norm_hopfield(Q), self.norm_hopfield(K), V

    def extra_repr(self) -> str:
        return (
            f"state_size={self.state_size}, stored_size={self.stored_size}, "
            f"hidden_size={self.hidden_size}, "
            f"value_size={self.value_size}, beta={self.beta:.4g}, {self.config}"
        )


class HopfieldPooling(nn.Module):
    r"""Pool a set of instances with learned prototype queries (static state patterns).

    .. math::

        \mathbf v_{\text{pool}} = \operatorname{softmax}\big(\beta\,\mathbf q\,
        (\mathbf Y\mathbf W_K)^\top\big) \,\mathbf Y\mathbf W_K\mathbf W_V

    The query :math:`\mathbf q` is a parameter in the associative space, the same for
    every input: the layer learns *what to look for* and returns a weighted average of
    the instances that match it. With :math:`\mathbf q = \mathbf 0` all weights are
    :math:`1/N` and the layer is mean pooling. The output does not depend on the order
    of the instances. It is a :class:`HopfieldLayer` (``self.hopfield``) with static
    state patterns, like ``hflayers``' ``HopfieldPooling`` with
    ``state_pattern_as_static=True``.

    Args:
        input_size: :math:`d_y`, the features of one instance.
        hidden_size: :math:`d_k`, the dimension of the associative space.
        value_size: :math:`d_v` (default ``hidden_size``).
        num_queries: number of prototypes; their outputs are concatenated
            (``hflayers``: ``quantity``).
        config: options of the layer (:class:`HopfieldConfig`); its
            ``state_pattern_as_static`` is always True here.

    Shapes:
        Y: ``(B, N, d_y)``.
        mask: ``(B, N)``, True at real instances.
        returns: ``(B, num_queries * output)`` (and the weights
        ``(B, h, num_queries, N)``), with ``output`` the layer's output size.

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
        config: HopfieldConfig | None = None,
    ) -> None:
        super().__init__()
        for name, size in dict(input_size=input_size, hidden_size=hidden_size,
                               value_size=value_size, num_queries=num_queries).items():
            if size is not None:
                check_positive_int(name, size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_queries = num_queries
        self.query = nn.Parameter(0.1 * torch.randn(self.num_queries, self.hidden_size))  # (S, d_k)
        config = replace(
            HopfieldConfig() if config is None else config, state_pattern_as_static=True
        )
        self.hopfield = HopfieldLayer(hidden_size, input_size, hidden_size, value_size, config)

    @property
    def beta(self) -> float:
        """The inverse temperature of the pooling's softmax."""
        return self.hopfield.beta

    def forward(
        self,
        Y: Float[Tensor, "B N {self.input_size}"],
        mask: Bool[Tensor, "B N"] | None = None,
        return_weights: bool = False,
    ) -> PooledOutput | tuple[PooledOutput, PoolingWeights]:
        """Return the pooled vectors (and the weights); shapes in the class docstring."""
        B = Y.shape[0]
        R = self.query.expand(B, -1, -1)  # (B, S, d_k) the same prototypes for every bag
        Z, A = self.hopfield(R, Y, mask=mask, return_weights=True)  # (B, S, d_out)
        Z = Z.reshape(B, -1)  # (B, S d_out)
        return (Z, A) if return_weights else Z

    def extra_repr(self) -> str:
        return (
            f"input_size={self.input_size}, hidden_size={self.hidden_size}, "
            f"num_queries={self.num_queries}"
        )
