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

import torch
import torch.nn.functional as F

from seqbook._contracts import PositiveInt, Shaped, TensorOf

__all__ = [
    "elu_feature_map",
    "linear_attention",
    "linear_attention_recurrent",
    "linear_attention_chunked",
]


def elu_feature_map(x: TensorOf(floating=True)) -> torch.Tensor:
    r"""Katharopoulos et al.'s positive feature map :math:`\phi(x) = \mathrm{elu}(x) + 1`.

    .. math::
        \phi(x) = \begin{cases} x + 1 & x > 0 \\ e^{x} & x \le 0 \end{cases}

    Positive everywhere, so that the weights of linear attention are positive and
    their normaliser never vanishes.

    Example:
        >>> elu_feature_map(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0.3679, 1.0000, 3.0000])
    """
    return _phi(x)


def _phi(x: torch.Tensor) -> torch.Tensor:
    return F.elu(x) + 1  # (eq-linattn-phi)


# the queries and keys after the feature map, and the values
PhiQ = Shaped("B T d_k", floating=True)
PhiQSteps = Shaped("B T d_k", floating=True, min_size={"T": 1})  # a loop over T >= 1 steps
PhiK = Shaped("B T d_k", dtype_of="phi_Q")
Values = Shaped("B T d_v", dtype_of="phi_Q")


def linear_attention(phi_Q: PhiQ, phi_K: PhiK, V: Values) -> torch.Tensor:
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
    return _parallel(phi_Q, phi_K, V)


def _parallel(
    phi_Q: torch.Tensor, phi_K: torch.Tensor, V: torch.Tensor
) -> torch.Tensor:
    T = phi_Q.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool, device=phi_Q.device).tril()
    A = (phi_Q @ phi_K.transpose(1, 2)).masked_fill(~mask, 0.0)  # (B, T, T)
    return (A @ V) / A.sum(-1, keepdim=True)  # (eq-linattn-parallel)


def linear_attention_recurrent(phi_Q: PhiQSteps, phi_K: PhiK, V: Values) -> torch.Tensor:
    r"""Causal linear attention as a recurrent network with a matrix state.

    .. math::
        \mathbf{S}_t = \mathbf{S}_{t-1} + \mathbf{v}_t\, \phi(\mathbf{k}_t)^\top, \quad
        \mathbf{z}_t = \mathbf{z}_{t-1} + \phi(\mathbf{k}_t), \quad
        \mathbf{y}_t = \frac{\mathbf{S}_t\, \phi(\mathbf{q}_t)}
                            {\mathbf{z}_t^\top \phi(\mathbf{q}_t)}

    Each step costs :math:`O(d_v d_k)` whatever :math:`t`: :math:`O(T d^2)` in all,
    and generating a token needs only :math:`(\mathbf{S}_t, \mathbf{z}_t)`.

    Shapes:
        as :func:`linear_attention`.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> Q, K, V = elu_feature_map(torch.randn(3, 2, 5, 4, generator=g))
        >>> torch.allclose(linear_attention_recurrent(Q, K, V), linear_attention(Q, K, V))
        True
    """
    B, T, d_k = phi_K.shape
    S = phi_K.new_zeros(B, V.shape[2], d_k)  # (B, d_v, d_k)
    z = phi_K.new_zeros(B, d_k)  # (B, d_k)
    outputs = []
    for t in range(T):
        S, z, y = _step(S, z, phi_Q[:, t], phi_K[:, t], V[:, t])
        outputs.append(y)
    return torch.stack(outputs, dim=1)  # (B, T, d_v)


def _step(
    S: torch.Tensor,
    z: torch.Tensor,
    phi_q: torch.Tensor,
    phi_k: torch.Tensor,
    v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step of the recurrence: write (v, phi(k)) into the state, read with phi(q)."""
    S = S + v[:, :, None] * phi_k[:, None, :]  # (eq-linattn-state): v k^T
    z = z + phi_k  # (B, d_k)
    numerator = (S @ phi_q[:, :, None])[:, :, 0]  # (B, d_v)
    y = numerator / (z * phi_q).sum(-1, keepdim=True)  # (eq-linattn-read)
    return S, z, y


def linear_attention_chunked(
    phi_Q: PhiQSteps, phi_K: PhiK, V: Values, chunk_size: PositiveInt = 64
) -> torch.Tensor:
    r"""Causal linear attention by chunks: a masked matrix inside, the recurrence across.

    .. math::
        \mathbf{Y}_{[c]} = \operatorname{rownorm}\!\Big(
        \big[(\phi(\mathbf{Q}_{[c]}) \phi(\mathbf{K}_{[c]})^\top) \odot \mathbf{M}\big]
        \mathbf{V}_{[c]} + \phi(\mathbf{Q}_{[c]})\, \mathbf{S}_{[c-1]}^\top\Big)

    with :math:`\mathbf{S}_{[c]} = \mathbf{S}_{[c-1]} + \mathbf{V}_{[c]}^\top
    \phi(\mathbf{K}_{[c]})` and the normaliser handled alike. Cost
    :math:`O(T C d + T d^2)`: linear in :math:`T` for a fixed chunk length :math:`C`,
    with matrix products instead of :math:`T` small steps (the form used to train
    linear-attention models).

    Args:
        chunk_size: :math:`C \ge 1` (the last chunk may be shorter).

    Shapes:
        as :func:`linear_attention`.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> Q, K, V = elu_feature_map(torch.randn(3, 2, 10, 4, generator=g))
        >>> Y = linear_attention_chunked(Q, K, V, chunk_size=4)
        >>> torch.allclose(Y, linear_attention(Q, K, V))
        True
    """
    B, T, d_k = phi_K.shape
    S = phi_K.new_zeros(B, V.shape[2], d_k)  # (B, d_v, d_k)
    z = phi_K.new_zeros(B, d_k)  # (B, d_k)
    outputs = []
    for start in range(0, T, chunk_size):
        part = slice(start, start + chunk_size)
        S, z, Y = _chunk(S, z, phi_Q[:, part], phi_K[:, part], V[:, part])
        outputs.append(Y)
    return torch.cat(outputs, dim=1)  # (B, T, d_v)


def _chunk(
    S: torch.Tensor,
    z: torch.Tensor,
    phi_Q: torch.Tensor,
    phi_K: torch.Tensor,
    V: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One chunk: its own keys through a masked matrix, earlier ones through the state."""
    C = phi_Q.shape[1]
    mask = torch.ones(C, C, dtype=torch.bool, device=phi_Q.device).tril()
    A = (phi_Q @ phi_K.transpose(1, 2)).masked_fill(~mask, 0.0)  # (B, C, C)
    numerator = A @ V + phi_Q @ S.transpose(1, 2)  # (eq-linattn-chunk)
    denominator = A.sum(-1) + (phi_Q @ z[:, :, None])[:, :, 0]  # (B, C)
    S = S + V.transpose(1, 2) @ phi_K  # (B, d_v, d_k), (eq-linattn-chunk)
    z = z + phi_K.sum(1)  # (B, d_k)
    return S, z, numerator / denominator[:, :, None]
