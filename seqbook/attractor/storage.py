r"""Saving the trained bare self-attention in a few megabytes, its curves intact.

Shape letters: ``N`` tokens, ``d`` the spin dimension.

The couplings of a bare self-attention on :math:`2 \times 2` patches of MNIST digits
are :math:`N^2 d^2 \approx 2.5` million numbers (about 10 MB in float32). Trained for
long, they concentrate on a few pairs of tokens, and most other blocks :math:`J_{ij}`
shrink, some by many orders of magnitude (see the chapter). A floating-point format of
few bits then loses the small blocks: float16 puts nearly half of the couplings of the
20-epoch model into its subnormal range, which moved its masking curve by about 2e-3. A
checkpoint therefore stores every block with its own scale,

.. math::
    J_{ij} \approx s_{ij}\, q_{ij} / 127, \qquad s_{ij} = \max_{ab} |(J_{ij})_{ab}|,
    \quad q_{ij} \in \{-127, \dots, 127\}^{d \times d} \text{ (int8)},

one byte per coupling and a float32 scale per pair (about 2.6 MB), a relative error
of at most :math:`1/254` of each block's largest entry. The training script records,
with the model, how much this changes its reconstruction curves.
"""

from __future__ import annotations

from pathlib import Path

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook.attractor.bare import BareSelfAttention
from seqbook.attractor.baselines import CHECKPOINTS
from seqbook.utils import find_checkpoint

__all__ = ["compress_couplings", "expand_couplings", "load_bare", "save_bare"]


def compress_couplings(J: Float[Tensor, "N N d d"]) -> dict[str, Tensor]:
    """Every block of ``J`` as int8 codes times its own float32 scale.

    Shapes:
        J: ``(N, N, d, d)``.
        returns: a dict of tensors: ``codes`` ``(N, N, d, d)`` (int8), ``scales``
        ``(N, N)`` (float32), ``shape``.

    Example:
        >>> J = torch.zeros(3, 3, 2, 2)
        >>> J[0, 1] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> J[1, 2] = 1e-6 * torch.tensor([[1.0, -1.0], [0.5, 0.0]])
        >>> back = expand_couplings(compress_couplings(J))
        >>> bound = J.abs().amax((2, 3), keepdim=True) / 254 * (1 + 1e-5)
        >>> bool(((back - J).abs() <= bound).all())
        True
    """
    N, _, d, _ = J.shape
    J = J.detach().to("cpu", torch.float64)
    scales = J.abs().amax((2, 3))  # (N, N)
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))[..., None, None]
    codes = torch.round(J / safe * 127).to(torch.int8)  # (N, N, d, d)
    return {"shape": torch.tensor([N, d]), "codes": codes, "scales": scales.float()}


def expand_couplings(stored: dict[str, Tensor]) -> Float[Tensor, "N N d d"]:
    """The couplings ``(N, N, d, d)`` (float32) from :func:`compress_couplings`' dict."""
    try:
        N, d = (int(v) for v in stored["shape"])
        codes, scales = stored["codes"].double(), stored["scales"].double()
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"stored must be a dict made by compress_couplings ({error})") from None
    J = codes * (scales / 127)[..., None, None]  # (N, N, d, d)
    J[torch.arange(N), torch.arange(N)] = 0.0
    return J.float()


def save_bare(
    model: BareSelfAttention, path: str | Path, info: dict[str, object] | None = None
) -> Path:
    """Save a bare self-attention compressed (:func:`compress_couplings`), with ``info``.

    ``info`` holds what the chapter needs besides the couplings (the training recipe,
    the loss, tables of curves measured during training, ...): tensors (of any dtypes:
    float16 images beside float32 curves), numbers, strings, lists and dicts of them.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "config": {
                "num_tokens": model.num_tokens,
                "dim": model.dim,
                "lam": model.lam,
                "gamma": model.gamma,
            },
            "couplings": compress_couplings(model.J),
            "info": {} if info is None else info,
        },
        path,
    )
    return path


def load_bare(name_or_path: str | Path = "bare") -> tuple[BareSelfAttention, dict]:
    """Load a saved bare self-attention (float32) and the ``info`` saved with it.

    Args:
        name_or_path: a file, or the name of a committed checkpoint in
            :data:`~seqbook.attractor.baselines.CHECKPOINTS` (``"bare"``: trained by
            ``python -m seqbook.attractor.train --bare``).

    Example:
        >>> model, info = load_bare("bare")
        >>> model.num_tokens, model.dim, info["epochs"]
        (196, 8, 20)
    """
    path = find_checkpoint(name_or_path, CHECKPOINTS, "python -m seqbook.attractor.train --bare")
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model = BareSelfAttention(**checkpoint["config"])
    with torch.no_grad():
        model.J.copy_(expand_couplings(checkpoint["couplings"]))
    return model, checkpoint["info"]
