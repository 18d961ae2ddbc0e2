r"""The Energy Transformer on masked digits: patches in, dynamics, patches out.

Shape letters: ``B`` images, ``N`` patches (tokens), ``a`` pixels per patch, ``D``
token features, ``S`` steps of the dynamics.

As in the masked-image experiments of Hoover et al. (2023): every patch is encoded by
a trained linear map, a masked patch is replaced by a trained mask token, a trained
positional embedding is added,

.. math::
    \mathbf x^{(0)}_A = \begin{cases} W_{\mathrm{enc}}\mathbf p_A + \mathbf b_{\mathrm{enc}}
        & \text{patch } A \text{ visible}\\ \mathbf m & \text{patch } A \text{ masked}
        \end{cases} \;+\; \mathbf e_A ,

the tokens evolve for :math:`T` steps of the Energy Transformer's dynamics, and a
trained linear map reads the pixels of every patch from the normalised tokens,
:math:`\hat{\mathbf p}_A = W_{\mathrm{dec}}\,\mathbf g(\mathbf x^{(T)}_A) +
\mathbf b_{\mathrm{dec}}`. Training minimises the squared error of the masked
patches (and of the visible ones) after the last step, by backpropagation through
the :math:`T` steps.

The task, the split and the masks are those of :mod:`seqbook.attractor`
(:func:`~seqbook.attractor.mnist_split`, :func:`~seqbook.attractor.mask_tokens`,
:func:`~seqbook.attractor.image_to_patches`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeAlias

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import (
    check_choice,
    check_int,
    check_positive_int,
    check_real,
    check_same_dtype,
    parameter_dtype,
)
from seqbook.attractor import image_to_patches, mask_tokens, patches_to_image
from seqbook.energy_transformer._validate import Tokens, check_tokens
from seqbook.energy_transformer.block import EnergyTransformer
from seqbook.energy_transformer.hopfield import KINDS
from seqbook.train import History, fit
from seqbook.transformer import positional_encoding
from seqbook.utils import CheckpointName, find_checkpoint, seeded_generator

__all__ = [
    "CHECKPOINTS",
    "MaskedConfig",
    "grid_encoding",
    "MaskedEnergyTransformer",
    "load_masked",
    "masked_loss",
    "paste_visible",
    "save_masked",
    "train_masked",
]

#: The folder of the committed, trained models (``seqbook/energy_transformer/checkpoints``),
#: written by ``python -m seqbook.energy_transformer.train`` and read by
#: :func:`~seqbook.energy_transformer.load_masked`.
CHECKPOINTS = Path(__file__).parent / "checkpoints"


@dataclass
class MaskedConfig:
    """The architecture and dynamics of a :class:`MaskedEnergyTransformer`."""

    patch_size: int = 2  # the bare attractor model's 2 x 2 patches: N = 196 tokens
    image_size: int = 28  # whole patches: a multiple of patch_size
    dim: int = 32  # token dimension D (the paper: 768)
    num_heads: int = 1  # H (the paper: 12)
    head_dim: int = 16  # Y, per head (the paper: 64)
    num_memories: int = 128  # M (the paper: 4 D = 3,072)
    hopfield: str = "relu"  # the paper's choice; or "softmax"
    steps: int = 12  # T, steps of the dynamics (the paper: 12)
    alpha: float = 0.1  # step size alpha = dt / tau (the paper: 0.1)
    init_std: float = 0.2  # initial W_Q (= W_K) and Xi

    def __post_init__(self) -> None:
        for name in ("patch_size", "image_size", "dim", "num_heads", "head_dim",
                     "num_memories", "steps"):
            check_positive_int(name, getattr(self, name))
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size must be a multiple of patch_size = "
                             f"{self.patch_size}, got {self.image_size}")
        check_choice("hopfield", self.hopfield, KINDS)
        check_real("alpha", self.alpha, min_value=0.0, strict_min=True)
        check_real("init_std", self.init_std, min_value=0.0)


#: ``(B, N, a)`` pixels of the patches, of the model's dtype
Patches: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.a}"]
#: ``(B, N)``, True = visible
Visible: TypeAlias = Bool[Tensor, "B {self.num_tokens}"]
#: ``(B, H, W)`` clean images of the model's size
ModelImages: TypeAlias = Float[Tensor, "B {model.image_size} {model.image_size}"]


def grid_encoding(side: int, dim: int) -> Float[Tensor, "{side}*{side} {dim}"]:
    """Sinusoidal encodings of the rows and columns of a ``side x side`` grid, side by side.

    The initial positional embedding: patch ``(r, c)``, token ``r * side + c``, gets the
    encoding of row ``r`` in its first ``dim // 2`` features and of column ``c`` in the
    others (:func:`~seqbook.transformer.positional_encoding`), so that neighbouring
    patches start with similar positions.

    Shapes:
        returns: ``(side * side, dim)``.

    Example:
        >>> grid_encoding(14, 32).shape
        torch.Size([196, 32])
    """
    check_positive_int("side", side), check_int("dim", dim, min_value=2)
    rows = positional_encoding(side, dim // 2)  # (side, dim // 2)
    cols = positional_encoding(side, dim - dim // 2)  # (side, dim - dim // 2)
    return torch.cat([rows.repeat_interleave(side, 0), cols.repeat(side, 1)], dim=-1)


class MaskedEnergyTransformer(nn.Module):
    r"""Masked-patch reconstruction with an :class:`EnergyTransformer` block.

    Args:
        config: a :class:`MaskedConfig`.
        generator: random generator of the initial weights.

    Shapes:
        patches: ``(B, N, a)`` pixels of the patches (masked ones are ignored).
        visible: ``(B, N)`` boolean, True = visible (as
        :func:`~seqbook.attractor.mask_tokens` returns it).
        returns: ``(B, N, a)`` (:meth:`forward`), ``(S + 1, B, N, D)`` (:meth:`run`).

    Example:
        >>> from seqbook.attractor import mask_tokens
        >>> model = MaskedEnergyTransformer(MaskedConfig(dim=8, num_memories=16))
        >>> patches = image_to_patches(torch.rand(2, 28, 28), 2)
        >>> _, visible = mask_tokens(patches, 0.3)
        >>> tuple(model(patches, visible).shape), tuple(model.run(patches, visible, 3).shape)
        ((2, 196, 4), (4, 2, 196, 8))
    """

    def __init__(self, config: MaskedConfig | None = None,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.config = config = config or MaskedConfig()
        self.patch_size, self.image_size = config.patch_size, config.image_size
        self.a = self.patch_size**2
        self.num_tokens = (self.image_size // self.patch_size) ** 2
        self.dim = D = config.dim
        self.encoder = nn.Linear(self.a, D)
        self.decoder = nn.Linear(D, self.a)
        self.mask_token = nn.Parameter(0.02 * torch.randn(D, generator=generator))
        self.position = nn.Parameter(grid_encoding(self.image_size // self.patch_size, D))
        self.block = EnergyTransformer(
            D, config.num_heads, config.head_dim, config.num_memories, config.hopfield,
            init_std=config.init_std, generator=generator,
        )

    def tokens(self, patches: Patches, visible: Visible) -> Tokens:
        """The initial tokens :math:`\\mathbf x^{(0)}`, eq. (eq-et-tokens)."""
        encoded = self.encoder(patches)  # (B, N, D)
        keep = visible.unsqueeze(-1).to(encoded.device)  # (B, N, 1)
        x = torch.where(keep, encoded, self.mask_token)
        return x + self.position  # (eq-et-tokens)  (B, N, D)

    def decode(self, x: Tokens) -> Float[Tensor, "B N {self.a}"]:
        """The pixels of every patch read from the tokens (unclipped), eq. (eq-et-decode)."""
        check_tokens("x", x)
        g = self.block.norm(x)  # (eq-et-layernorm)  (B, N, D)
        return self.decoder(g)  # (eq-et-decode)  p_hat = W_dec g + b_dec  (B, N, a)

    def forward(self, patches: Patches, visible: Visible, steps: int | None = None) -> Patches:
        """The predicted pixels of every patch after ``steps`` steps (default :math:`T`)."""
        steps = self.config.steps if steps is None else check_int("steps", steps, min_value=0)
        x = self.tokens(patches, visible)
        for _ in range(steps):
            x = self.block(x, self.config.alpha)  # (eq-et-step)
        return self.decode(x)  # (B, N, a)

    def run(
        self, patches: Patches, visible: Visible, steps: int
    ) -> Float[Tensor, "S B {self.num_tokens} {self.dim}"]:
        """The tokens after ``t = 0, 1, ..., steps`` steps (with the model's ``alpha``)."""
        check_int("steps", steps, min_value=0)
        x0 = self.tokens(patches, visible)
        return self.block.run(x0, steps, self.config.alpha)  # (S + 1, B, N, D)

    def to_images(
        self, trajectory: Float[Tensor, "S B {self.num_tokens} {self.dim}"]
    ) -> Float[Tensor, "S B {self.image_size} {self.image_size}"]:
        """The images decoded from every state of a trajectory, clipped to [0, 1].

        Shapes:
            trajectory: ``(S, B, N, D)``.
            returns: ``(S, B, H, W)``.
        """
        S, B = trajectory.shape[:2]
        pixels = self.decode(trajectory.flatten(0, 1)).clamp(0.0, 1.0)  # (S B, N, a)
        images = patches_to_image(pixels, self.patch_size, self.image_size, self.image_size)
        return images.view(S, B, self.image_size, self.image_size)


def paste_visible(
    predictions: Float[Tensor, "*lead B H W"],
    images: Float[Tensor, "B H W"],
    visible: Bool[Tensor, "B N"],
    patch_size: int,
) -> Float[Tensor, "*lead B H W"]:
    """Keep the predicted pixels of the masked patches only; visible patches from ``images``.

    Scores a model on what it was asked to fill in: with the visible patches pasted
    back, the error of the whole image is the error of the masked patches times
    their share of the pixels.

    Shapes:
        predictions: ``(..., B, H, W)``; images: ``(B, H, W)``; visible: ``(B, N)``.
        returns: ``(..., B, H, W)``.

    Example:
        >>> images, guess = torch.zeros(1, 4, 4), torch.ones(1, 4, 4)
        >>> visible = torch.tensor([[True, False, True, True]])
        >>> paste_visible(guess, images, visible, 2)[0]
        tensor([[0., 0., 1., 1.],
                [0., 0., 1., 1.],
                [0., 0., 0., 0.],
                [0., 0., 0., 0.]])
    """
    check_positive_int("patch_size", patch_size)
    B, H, W = images.shape
    N = (H // patch_size) * (W // patch_size)
    if visible.shape != (B, N):
        raise ValueError(f"visible must have shape (B, N) = {(B, N)}, one entry per "
                         f"{patch_size} x {patch_size} patch, got {tuple(visible.shape)}")
    lead = predictions.shape[:-3]
    flat = predictions.reshape(-1, H, W)  # (S B, H, W)
    pred = image_to_patches(flat, patch_size).view(*lead, B, N, -1)  # (..., B, N, a)
    clean = image_to_patches(images, patch_size)  # (B, N, a)
    mixed = torch.where(visible.unsqueeze(-1).to(pred.device), clean, pred)
    return patches_to_image(mixed.reshape(-1, N, patch_size**2), patch_size, H, W).view(
        *lead, B, H, W
    )


def _check_batch(model: MaskedEnergyTransformer, images: Tensor, fraction: float) -> None:
    """What the types of :func:`masked_loss` and :func:`train_masked` cannot say."""
    check_same_dtype("images", images, parameter_dtype(model) or images.dtype,
                     of="the model's parameters")
    if images.shape[0] == 0:
        raise ValueError("images must hold at least one image (B >= 1), got shape "
                         f"{tuple(images.shape)}")
    check_real("fraction", fraction, min_value=0.0, max_value=1.0, strict_max=True)


def masked_loss(
    model: MaskedEnergyTransformer, images: ModelImages, fraction: float = 0.3,
    generator: torch.Generator | None = None,
) -> Float[Tensor, ""]:
    r"""The training loss: squared errors of the masked and of the visible patches after
    :math:`T` steps.

    .. math::
        \mathcal L = \frac{1}{|\mathcal M|\,a}\sum_{A\in\mathcal M}
            \lVert\hat{\mathbf p}_A - \mathbf p_A\rVert^2
            + \frac{1}{|\mathcal V|\,a}\sum_{A\in\mathcal V}
            \lVert\hat{\mathbf p}_A - \mathbf p_A\rVert^2

    over the masked patches :math:`\mathcal M` of the batch, drawn afresh by
    :func:`~seqbook.attractor.mask_tokens`, and the visible ones :math:`\mathcal V`
    (the paper's loss has the first term only; the second keeps the whole image
    readable from the tokens, so that it can be compared with the attractor models').

    Shapes:
        images: ``(B, H, W)`` clean images.
        returns: ``()``.
    """
    _check_batch(model, images, fraction)
    p = image_to_patches(images, model.patch_size)  # (B, N, a) the patches p_A
    _, visible = mask_tokens(p, fraction, generator)  # True in V, False in M
    p_hat = model(p, visible)  # (eq-et-decode)
    error = (p_hat - p).pow(2)  # (B, N, a)
    return error[~visible].mean() + error[visible].mean()  # (eq-et-loss)


def train_masked(
    model: MaskedEnergyTransformer,
    images: ModelImages,
    epochs: int = 5,
    batch_size: int = 32,
    lr: float = 5e-3,
    fraction: float = 0.3,
    seed: int = 0,
    steps_per_epoch: int | None = None,
    progress: bool = True,
    generator: torch.Generator | None = None,
    eval_fn: Callable[[nn.Module], dict[str, Any]] | None = None,
) -> History:
    r"""Train by backpropagation through the dynamics, with Adam and :func:`seqbook.train.fit`.

    Every mini-batch gets fresh masks; the loss is :func:`masked_loss`; gradients are
    clipped to norm 1.

    Args:
        model: the model to train (in place).
        images: clean training images, pixels in [0, 1].
        epochs, batch_size, lr: Adam's schedule (a constant learning rate).
        fraction: the share of masked patches (0.3, as for the attractor models).
        seed: seed of the shuffles and masks.
        steps_per_epoch: stop each epoch after this many mini-batches (default: all);
            with the same seed, a short run retraces the first steps of a long one.
        progress: show a tqdm bar.
        generator: the shuffles' and masks' generator, in place of
            ``seeded_generator(seed)``; a fixed ``torch.Generator().manual_seed(s)``
            replays a committed run whatever ``SEQBOOK_SEED_SHIFT`` is.
        eval_fn: called after every epoch (``fit``'s ``eval_fn``): its numbers go
            into ``History.metrics``.

    Shapes:
        images: ``(P, H, W)``.

    Returns:
        The :class:`~seqbook.train.History` of :func:`~seqbook.train.fit`.
    """
    _check_batch(model, images, fraction)
    check_positive_int("batch_size", batch_size)
    check_real("lr", lr, min_value=0.0, strict_min=True)
    check_int("seed", seed, min_value=0)
    if steps_per_epoch is not None:
        check_positive_int("steps_per_epoch", steps_per_epoch)
    rng = generator or seeded_generator(seed)

    def batches() -> list[Tensor]:
        order = torch.randperm(len(images), generator=rng)
        return [images[k] for k in order.split(batch_size)][:steps_per_epoch]

    def loss_fn(m: MaskedEnergyTransformer, clean: Tensor) -> Tensor:
        return masked_loss(m, clean, fraction, rng)

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return fit(model, loss_fn, batches, optimizer, epochs, clip=1.0, progress=progress,
               desc="energy transformer", eval_fn=eval_fn)


def save_masked(model: MaskedEnergyTransformer, path: str | Path, **info: object) -> Path:
    """Save a model's configuration and weights (as float16) with ``info`` beside them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save({"config": asdict(model.config), "state_dict": state, "info": info}, path)
    return path


def load_masked(name_or_path: CheckpointName) -> tuple[MaskedEnergyTransformer, dict]:
    """Load a saved model (float32, eval mode) and the ``info`` saved with it.

    Args:
        name_or_path: a file, or the name of a committed checkpoint in
            :data:`~seqbook.energy_transformer.masked.CHECKPOINTS`, such as
            ``"et_seed0"``.

    Example:
        >>> model, info = load_masked("et_seed0")
        >>> model.config.patch_size, info["seed"]
        (2, 0)
    """
    path = find_checkpoint(name_or_path, CHECKPOINTS, "python -m seqbook.energy_transformer.train")
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model = MaskedEnergyTransformer(MaskedConfig(**checkpoint["config"]))
    state = {k: v.float() if v.is_floating_point() else v
             for k, v in checkpoint["state_dict"].items()}
    model.load_state_dict(state)
    return model.eval(), checkpoint["info"]
