r"""Causal linear attention in its three equal forms: masked matrix, recurrence, chunks.

Replacing softmax attention's similarity :math:`\exp(\mathbf{q}^\top\mathbf{k})` by a
kernel :math:`\phi(\mathbf{q})^\top \phi(\mathbf{k})` with a positive feature map
:math:`\phi` (Katharopoulos et al., 2020) lets the sum over keys be computed once and
reused: causal attention becomes a recurrent network whose state is the
matrix :math:`\mathbf{S}_t = \sum_{j \le t} \mathbf{v}_j \phi(\mathbf{k}_j)^\top`.

Shape letters: ``B`` batch, ``T`` time, ``d_k`` key features (after the feature map),
``d_v`` value features, ``C`` chunk length.
"""

from __future__ import annotations

from typing import TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_positive_int, check_steps

__all__ = [
    "elu_feature_map",
    "linear_attention",
    "linear_attention_recurrent",
    "linear_attention_chunked",
    "linear_attention_step",
    "linear_attention_chunk",
]


# a sequence's feature-mapped queries or keys, and its values (in one chunk of
# linear_attention_chunk, T is the chunk's length C)
Features: TypeAlias = Float[Tensor, "B T d_k"]
Values: TypeAlias = Float[Tensor, "B T d_v"]
# the state: the memory S (values x keys) and the normaliser n; one step's key, value
Memory: TypeAlias = Float[Tensor, "B d_v d_k"]
Key: TypeAlias = Float[Tensor, "B d_k"]
Value: TypeAlias = Float[Tensor, "B d_v"]


def elu_feature_map(x: Float[Tensor, "*shape"]) -> Float[Tensor, "*shape"]:
    r"""Katharopoulos et al.'s positive feature map :math:`\phi(x) = \mathrm{elu}(x) + 1`.

    .. math::
        \phi(x) = \begin{cases} x + 1 & x > 0 \\ e^{x} & x \le 0 \end{cases}

    Positive everywhere, so that the weights of linear attention are positive and
    their normaliser never vanishes.

    Example:
        >>> elu_feature_map(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0.3679, 1.0000, 3.0000])
    """
    return F.elu(x) + 1  # (eq-linattn-phi)


def linear_attention(phi_Q: Features, phi_K: Features, V: Values) -> Values:
    r"""Causal linear attention in its parallel form: a masked matrix of kernel weights.

    .. math::
        \mathbf{Y} = \operatorname{rownorm}\!\big(
        (\phi(\mathbf{Q})\, \phi(\mathbf{K})^\top) \odot \mathbf{M}\big)\, \mathbf{V},
        \qquad M_{ij} = [j \le i]

    Cost :math:`O(T^2 d)`: the :math:`T \times T` matrix is formed, as in softmax
    attention.

    The features must be positive (e.g. :func:`elu_feature_map`), so that every
    weight is positive and no normaliser vanishes; they are not checked, since that
    would read every entry at every call.

    Args:
        phi_Q: the feature-mapped queries :math:`\phi(\mathbf{q}_t) > 0`.
        phi_K: the feature-mapped keys.
        V: the values.

    Shapes:
        phi_Q, phi_K: ``(B, T, d_k)``; V: ``(B, T, d_v)``; returns ``(B, T, d_v)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> Q, K, V = torch.randn(3, 1, 4, 2, generator=g)
        >>> Y = linear_attention(elu_feature_map(Q), elu_feature_map(K), V)
        >>> torch.allclose(Y[:, 0], V[:, 0])   # the first query sees only itself
        True
    """
    T = phi_Q.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool, device=phi_Q.device).tril()
    A = (phi_Q @ phi_K.transpose(1, 2)).masked_fill(~mask, 0.0)  # (B, T, T)
    return (A @ V) / A.sum(-1, keepdim=True)  # (eq-linattn-parallel)


def linear_attention_recurrent(phi_Q: Features, phi_K: Features, V: Values) -> Values:
    r"""Causal linear attention as a recurrent network with a matrix state.

    .. math::
        \mathbf{S}_t = \mathbf{S}_{t-1} + \mathbf{v}_t\, \phi(\mathbf{k}_t)^\top, \quad
        \mathbf{n}_t = \mathbf{n}_{t-1} + \phi(\mathbf{k}_t), \quad
        \mathbf{y}_t = \frac{\mathbf{S}_t\, \phi(\mathbf{q}_t)}
                            {\mathbf{n}_t^\top \phi(\mathbf{q}_t)}

    Each step (:func:`linear_attention_step`) costs :math:`O(d_v d_k)` whatever
    :math:`t`: :math:`O(T d^2)` in all, and generating a token needs only
    :math:`(\mathbf{S}_t, \mathbf{n}_t)`.

    Shapes:
        as :func:`linear_attention`, with ``T >= 1``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> Q, K, V = elu_feature_map(torch.randn(3, 2, 5, 4, generator=g))
        >>> torch.allclose(linear_attention_recurrent(Q, K, V), linear_attention(Q, K, V))
        True
    """
    check_steps("phi_Q", phi_Q, "B T d_k")
    B, T, d_k = phi_K.shape
    S = phi_K.new_zeros(B, V.shape[2], d_k)  # (B, d_v, d_k)
    n = phi_K.new_zeros(B, d_k)  # (B, d_k)
    outputs = []
    for t in range(T):
        S, n, y = linear_attention_step(S, n, phi_Q[:, t], phi_K[:, t], V[:, t])
        outputs.append(y)
    return torch.stack(outputs, dim=1)  # (B, T, d_v)


def linear_attention_step(
    S: Memory, n: Key, phi_q: Key, phi_k: Key, v: Value
) -> tuple[Memory, Key, Value]:
    r"""One step of the recurrence: write :math:`(\mathbf{v}_t, \phi(\mathbf{k}_t))` into
    the state :math:`(\mathbf{S}, \mathbf{n})`, then read it with :math:`\phi(\mathbf{q}_t)`.

    Returns the new state and the output :math:`\mathbf{y}_t`.

    Shapes:
        S: ``(B, d_v, d_k)``.
        n, phi_q, phi_k: ``(B, d_k)``.
        v: ``(B, d_v)``.
        returns: ``(B, d_v, d_k)``, ``(B, d_k)``, ``(B, d_v)``.

    Example:
        >>> S, n = torch.zeros(1, 1, 2), torch.zeros(1, 2)
        >>> phi_k, v = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0]])
        >>> S, n, y = linear_attention_step(S, n, phi_k, phi_k, v)
        >>> S, y                          # v phi(k)^T; one pair: its value
        (tensor([[[3., 6.]]]), tensor([[3.]]))
    """
    S = S + v[:, :, None] * phi_k[:, None, :]  # (eq-linattn-state): v k^T
    n = n + phi_k  # (B, d_k)
    numerator = (S @ phi_q[:, :, None])[:, :, 0]  # (B, d_v)
    y = numerator / (n * phi_q).sum(-1, keepdim=True)  # (eq-linattn-read)
    return S, n, y


def linear_attention_chunked(
    phi_Q: Features, phi_K: Features, V: Values, chunk_size: int = 64
) -> Values:
    r"""Causal linear attention by chunks: a masked matrix inside, the recurrence across.

    .. math::
        \mathbf{Y}_{[c]} = \operatorname{rownorm}\!\Big(
        \big[(\phi(\mathbf{Q}_{[c]}) \phi(\mathbf{K}_{[c]})^\top) \odot \mathbf{M}\big]
        \mathbf{V}_{[c]} + \phi(\mathbf{Q}_{[c]})\, \mathbf{S}_{[c-1]}^\top\Big)

    with :math:`\mathbf{S}_{[c]} = \mathbf{S}_{[c-1]} + \mathbf{V}_{[c]}^\top
    \phi(\mathbf{K}_{[c]})` and the normaliser handled alike (one chunk:
    :func:`linear_attention_chunk`). Cost :math:`O(T C d + T d^2)`: linear in :math:`T`
    for a fixed chunk length :math:`C`, with matrix products instead of :math:`T` small
    steps (the form used to train linear-attention models).

    Args:
        chunk_size: :math:`C \ge 1` (the last chunk may be shorter).

    Shapes:
        as :func:`linear_attention`, with ``T >= 1``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> Q, K, V = elu_feature_map(torch.randn(3, 2, 10, 4, generator=g))
        >>> Y = linear_attention_chunked(Q, K, V, chunk_size=4)
        >>> torch.allclose(Y, linear_attention(Q, K, V))
        True
    """
    check_positive_int("chunk_size", chunk_size)
    check_steps("phi_Q", phi_Q, "B T d_k")
    B, T, d_k = phi_K.shape
    S = phi_K.new_zeros(B, V.shape[2], d_k)  # (B, d_v, d_k)
    n = phi_K.new_zeros(B, d_k)  # (B, d_k)
    outputs = []
    for start in range(0, T, chunk_size):
        part = slice(start, start + chunk_size)
        S, n, Y = linear_attention_chunk(S, n, phi_Q[:, part], phi_K[:, part], V[:, part])
        outputs.append(Y)
    return torch.cat(outputs, dim=1)  # (B, T, d_v)


def linear_attention_chunk(
    S: Memory, n: Key, phi_Q: Features, phi_K: Features, V: Values
) -> tuple[Memory, Key, Values]:
    r"""One chunk of :func:`linear_attention_chunked`: its own keys through a masked
    matrix, the earlier ones through the state :math:`(\mathbf{S}, \mathbf{n})`, which
    it then advances by the whole chunk.

    Returns the new state and the chunk's outputs.

    Shapes:
        S: ``(B, d_v, d_k)``; n: ``(B, d_k)``; phi_Q, phi_K: ``(B, C, d_k)``;
        V: ``(B, C, d_v)``; returns ``(B, d_v, d_k)``, ``(B, d_k)``, ``(B, C, d_v)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> Q, K, V = elu_feature_map(torch.randn(3, 1, 4, 2, generator=g))
        >>> _, _, Y = linear_attention_chunk(torch.zeros(1, 2, 2), torch.zeros(1, 2), Q, K, V)
        >>> torch.allclose(Y, linear_attention(Q, K, V))    # a chunk from an empty state
        True
    """
    C = phi_Q.shape[1]
    mask = torch.ones(C, C, dtype=torch.bool, device=phi_Q.device).tril()
    A = (phi_Q @ phi_K.transpose(1, 2)).masked_fill(~mask, 0.0)  # (B, C, C)
    numerator = A @ V + phi_Q @ S.transpose(1, 2)  # (eq-linattn-chunk)
    denominator = A.sum(-1) + (phi_Q @ n[:, :, None])[:, :, 0]  # (B, C)
    S = S + V.transpose(1, 2) @ phi_K  # (B, d_v, d_k), (eq-linattn-chunk)
    n = n + phi_K.sum(1)  # (B, d_k)
    return S, n, numerator / denominator[:, :, None]
