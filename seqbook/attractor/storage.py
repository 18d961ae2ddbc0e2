r"""Saving the trained bare self-attention in a few hundred kilobytes.

Shape letters: ``N`` tokens, ``d`` the spin dimension, ``K`` stored pairs, ``r`` the
rank of the rest.

The couplings of a bare self-attention on :math:`2 \times 2` patches of MNIST digits
are :math:`N^2 d^2 \approx 2.5` million numbers (about 5 MB in float16). Trained for
long, they concentrate on a few pairs of tokens (see the chapter). A checkpoint
therefore stores

- the ``pairs`` blocks :math:`J_{ij}` of largest norm, exactly (float16), and
- the rest, as one :math:`Nd \times Nd` matrix, by its best rank-``rank``
  approximation (a truncated SVD, float16 factors),

and records, with the model, how much the approximation changes its reconstruction
curves (measured by the training script before saving).
"""

from __future__ import annotations

from pathlib import Path

import torch

from seqbook._checks import check_positive_int, checkpoint_path
from seqbook.attractor.bare import BareSelfAttention
from seqbook.attractor.baselines import CHECKPOINTS

__all__ = ["compress_couplings", "expand_couplings", "load_bare", "save_bare"]


@torch.no_grad()
def compress_couplings(
    J: torch.Tensor, pairs: int = 256, rank: int = 32
) -> dict[str, torch.Tensor]:
    """The largest ``pairs`` blocks of ``J`` and a rank-``rank`` approximation of the rest.

    Shapes:
        J: ``(N, N, d, d)``.
        returns: a dict of tensors: ``i``, ``j`` ``(K,)``, ``blocks`` ``(K, d, d)``,
        ``left``, ``right`` ``(N d, r)`` (float16), ``shape``.

    Example:
        >>> J = torch.zeros(3, 3, 2, 2)
        >>> J[0, 1] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> torch.equal(expand_couplings(compress_couplings(J, pairs=1, rank=1)), J)
        True
    """
    if (
        not isinstance(J, torch.Tensor)
        or J.dim() != 4
        or J.shape[0] != J.shape[1]
        or J.shape[2] != J.shape[3]
    ):
        raise ValueError(
            f"J must be a tensor of shape (N, N, d, d), got {getattr(J, 'shape', J)!r}"
        )
    N, _, d, _ = J.shape
    pairs = min(check_positive_int("pairs", pairs), N * N)
    rank = min(check_positive_int("rank", rank), N * d)
    J = J.detach().to("cpu", torch.float64)
    strongest = J.flatten(2).norm(dim=-1).flatten().topk(pairs).indices  # (K,)
    i, j = strongest // N, strongest % N
    blocks = J[i, j].half()  # (K, d, d)
    rest = J.clone()
    rest[i, j] -= blocks.double()  # what float16 left out is part of the rest
    M = rest.permute(0, 2, 1, 3).reshape(N * d, N * d)  # (N d, N d)
    U, S, Vh = torch.linalg.svd(M)
    root = S[:rank].sqrt()
    return {
        "shape": torch.tensor([N, d]),
        "i": i.short(),
        "j": j.short(),
        "blocks": blocks,
        "left": (U[:, :rank] * root).half(),  # (N d, r)
        "right": (Vh[:rank].T * root).half(),  # (N d, r)
    }


def expand_couplings(stored: dict[str, torch.Tensor]) -> torch.Tensor:
    """The couplings ``(N, N, d, d)`` (float32) from :func:`compress_couplings`' dict."""
    try:
        N, d = (int(v) for v in stored["shape"])
        left, right = stored["left"].double(), stored["right"].double()
        i, j, blocks = stored["i"].long(), stored["j"].long(), stored["blocks"].double()
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"stored must be a dict made by compress_couplings ({error})") from None
    J = (left @ right.T).view(N, d, N, d).permute(0, 2, 1, 3).contiguous()  # (N, N, d, d)
    J[i, j] += blocks
    J[torch.arange(N), torch.arange(N)] = 0.0
    return J.float()


def save_bare(
    model: BareSelfAttention, path: str | Path, pairs: int = 256, rank: int = 32, **info: object
) -> Path:
    """Save a bare self-attention compressed (:func:`compress_couplings`), with ``info``.

    ``info`` holds what the chapter needs besides the couplings (the training recipe,
    the loss, tables of curves measured during training, ...): tensors, numbers,
    strings, lists and dicts of them.
    """
    if not isinstance(model, BareSelfAttention):
        raise TypeError(f"model must be a BareSelfAttention, got {type(model).__name__}")
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
            "couplings": compress_couplings(model.J, pairs, rank),
            "info": info,
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
    path = checkpoint_path(name_or_path, CHECKPOINTS, "python -m seqbook.attractor.train --bare")
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model = BareSelfAttention(**checkpoint["config"])
    with torch.no_grad():
        model.J.copy_(expand_couplings(checkpoint["couplings"]))
    return model, checkpoint["info"]
