r"""Nadaraya-Watson kernel regression: attention pooling with a fixed similarity.

Shape letters: ``N`` queries, ``M`` keys (training inputs) and values (training
targets), ``D`` the size of a query and a key, ``V`` the size of a value.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_choice, check_real

__all__ = ["KERNELS", "kernel_function", "nadaraya_watson"]

# The similarity kernels as functions of u = ||q - k|| / bandwidth >= 0. Normalising
# constants are left out: Nadaraya-Watson divides them away.
KERNELS = ("gaussian", "boxcar", "epanechnikov", "triangular")


def kernel_function(
    u: Float[Tensor, "*shape"], kernel: str = "gaussian"
) -> Float[Tensor, "*shape"]:
    r"""A similarity kernel of the scaled distance :math:`u = \lVert q - k \rVert / h`.

    .. math::
        \text{gaussian: } e^{-u^2/2} \qquad
        \text{boxcar: } [\,u \le 1\,] \qquad
        \text{epanechnikov: } \max(0, 1 - u^2) \qquad
        \text{triangular: } \max(0, 1 - u)

    (up to constant factors). The DSCI 565 slides call the triangular kernel
    "Epanechikov"; the Epanechnikov kernel is quadratic in :math:`u`.

    Args:
        u: non-negative scaled distances, any shape.
        kernel: one of ``KERNELS``.

    Returns:
        The kernel values, the shape of ``u``.

    Example:
        >>> u = torch.tensor([0.0, 0.5, 1.0, 2.0])
        >>> kernel_function(u, "epanechnikov")
        tensor([1.0000, 0.7500, 0.0000, 0.0000])
        >>> kernel_function(u, "triangular")
        tensor([1.0000, 0.5000, 0.0000, 0.0000])
    """
    check_choice("kernel", kernel, KERNELS)
    if kernel == "gaussian":
        return torch.exp(-0.5 * u**2)  # (eq-attn-kernels)
    if kernel == "boxcar":
        return (u <= 1).to(u.dtype)  # (eq-attn-kernels)
    if kernel == "epanechnikov":
        return torch.clamp(1 - u**2, min=0)  # (eq-attn-kernels)
    return torch.clamp(1 - u, min=0)  # triangular, the slides' "Epanechikov"


def _check_arguments(
    queries: Tensor, keys: Tensor, values: Tensor, kernel: str, bandwidth: float
) -> None:
    """What the annotations of :func:`nadaraya_watson` cannot say."""
    check_choice("kernel", kernel, KERNELS)
    check_real("bandwidth", bandwidth, min_value=0.0, strict_min=True)
    if keys.shape[0] == 0 or max(queries.dim(), keys.dim(), values.dim()) > 2:
        raise ValueError(f"queries, keys and values must be (N,) or (N, D), (M,) or (M, D) "
                         f"and (M,) or (M, V) with M >= 1, got {tuple(queries.shape)}, "
                         f"{tuple(keys.shape)} and {tuple(values.shape)}")
    if (queries.shape[1:] or (1,)) != (keys.shape[1:] or (1,)):
        raise ValueError(f"queries and keys must have the same size D, got queries "
                         f"{tuple(queries.shape)} and keys {tuple(keys.shape)}")


def nadaraya_watson(
    queries: Float[Tensor, " N *D_q"],
    keys: Float[Tensor, " M *D_k"],
    values: Float[Tensor, " M *V"],
    kernel: str = "gaussian",
    bandwidth: float = 1.0,
) -> tuple[Float[Tensor, " N *V"], Float[Tensor, "N M"]]:
    r"""Predict at each query the kernel-weighted average of the training values.

    .. math::
        f(\mathbf{q}) = \sum_{i=1}^{M} \frac{\alpha(\mathbf{q}, \mathbf{k}_i)}
        {\sum_{j=1}^{M} \alpha(\mathbf{q}, \mathbf{k}_j)} \, \mathbf{v}_i,
        \qquad \alpha(\mathbf{q}, \mathbf{k}) =
        K\!\left(\lVert \mathbf{q} - \mathbf{k} \rVert / h\right)

    This is attention pooling whose weights come from a fixed kernel :math:`K` of
    bandwidth :math:`h` instead of learned parameters. The Gaussian kernel's weights
    are a softmax of :math:`-\lVert \mathbf{q} - \mathbf{k} \rVert^2 / (2h^2)` and are
    computed that way, which never underflows. A compact kernel (boxcar,
    Epanechnikov, triangular) gives a query with no key closer than :math:`h` all-zero
    weights and the prediction 0, like a fully masked row in attention.

    Args:
        queries: where to predict; 1-D data may be given as a vector.
        keys: the training inputs.
        values: the training targets, one per key.
        kernel: ``"gaussian"``, ``"boxcar"``, ``"epanechnikov"`` or
            ``"triangular"`` (see :func:`kernel_function`).
        bandwidth: :math:`h > 0`; small = close to nearest-neighbour lookup, large =
            close to the average of all values.

    Shapes:
        queries: ``(N,)`` or ``(N, D)``.
        keys: ``(M,)`` or ``(M, D)``.
        values: ``(M,)`` or ``(M, V)``.
        returns: predictions ``(N,)`` or ``(N, V)`` (like ``values``) and weights
            ``(N, M)``.

    Returns:
        ``(predictions, weights)``; each row of ``weights`` is non-negative and sums
        to 1 (or is all zero, see above).

    Example:
        >>> keys = torch.tensor([0.0, 1.0, 2.0])
        >>> values = torch.tensor([0.0, 10.0, 20.0])
        >>> predictions, weights = nadaraya_watson(
        ...     torch.tensor([0.9]), keys, values, kernel="boxcar")
        >>> weights
        tensor([[0.5000, 0.5000, 0.0000]])
        >>> predictions
        tensor([5.])
    """
    _check_arguments(queries, keys, values, kernel, bandwidth)
    q = queries.unsqueeze(-1) if queries.dim() == 1 else queries  # (N, D)
    k = keys.unsqueeze(-1) if keys.dim() == 1 else keys  # (M, D)
    # exact distances: the default matmul shortcut of cdist loses precision
    exact = "donot_use_mm_for_euclid_dist"
    u = torch.cdist(q, k, compute_mode=exact) / bandwidth  # (N, M)
    if kernel == "gaussian":  # a softmax, which never underflows to 0/0
        weights = torch.softmax(-0.5 * u**2, dim=1)  # (N, M)  (eq-attn-nw)
    else:
        alpha = kernel_function(u, kernel)  # (N, M)
        total = alpha.sum(dim=1, keepdim=True)  # (N, 1)
        tiny = torch.finfo(alpha.dtype).tiny
        weights = alpha / total.clamp(min=tiny)  # (N, M)  (eq-attn-nw)
    return weights @ values, weights  # (N,) or (N, V), (N, M)
