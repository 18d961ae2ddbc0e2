r"""The backpropagation-trained baselines: a recurrent transformer block and a small ViT.

Shape letters: ``B`` images, ``N`` patches, ``a`` pixels per patch, ``d_model`` the
model width, ``S`` iterations.

Both read the patch vectors :math:`\mathbf s_i \in \mathbb R^{2a}` of
:class:`~seqbook.attractor.PatchEmbedding` (a masked patch is the zero vector, which
no image produces), embed them with a **trained** linear map, add the sinusoidal
positional encoding and apply pre-norm encoder blocks
(:class:`seqbook.transformer.EncoderBlock`: eqs. 8-9 of D'Amico & Negri 2024,
:math:`\mathbf u = \mathbf x + \operatorname{SA}(\operatorname{LN}(\mathbf x))`,
:math:`\mathbf x' = \mathbf u + \operatorname{MLP}(\operatorname{LN}(\mathbf u))`).
The positional encoding is subtracted again before a trained linear de-embedding
gives the ``a`` pixels of every patch.

- :class:`RecurrentTransformer` applies **one** block again and again; trained with a
  random number of iterations :math:`\tau \sim \operatorname{Unif}\{3, \dots, 7\}`
  per mini-batch (AlphaFold's "recycling");
- :class:`VisionTransformer` applies ``num_layers`` different blocks once.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import check_choice, check_int, check_positive_int, check_real
from seqbook.attractor._values import check_pixels
from seqbook.attractor.embedding import (
    PatchEmbedding,
    image_to_patches,
    patches_to_image,
)
from seqbook.attractor.tasks import TASKS, add_noise, mask_tokens
from seqbook.train import History, fit
from seqbook.transformer import EncoderBlock, positional_encoding
from seqbook.utils import find_checkpoint, seeded_generator, shifted_seed

__all__ = [
    "BaselineConfig",
    "RecurrentTransformer",
    "VisionTransformer",
    "build_baseline",
    "corrupt",
    "train_baseline",
    "save_baseline",
    "load_baseline",
    "CHECKPOINTS",
    "PatchTransformer",
]

#: The folder of the committed, trained baselines (``seqbook/attractor/checkpoints``),
#: written by ``python -m seqbook.attractor.train`` and read by
#: :func:`~seqbook.attractor.load_baseline`.
#: The paper's corruptions, with which the baselines are trained: the share of masked
#: tokens and the noise variance per pixel (:func:`corrupt`'s defaults).
FRACTION, VARIANCE = 0.3, 0.7
CHECKPOINTS = Path(__file__).parent / "checkpoints"
# The input of both baselines: the patch vectors s_i of a PatchEmbedding of their
# patches; what the blocks work on, tokens of width d_model; the pixels of every patch.
PatchVectors: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.patch_dim}"]
Hidden: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.d_model}"]
PatchPixels: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.a}"]


@dataclass
class BaselineConfig:
    """The architecture of a baseline (stored in its checkpoint)."""

    kind: str = "block"  # "block": one block, iterated; "vit": once
    patch_size: int = 4  # the paper's transformers work best with 4 x 4 patches
    image_size: int = 28  # whole patches
    d_model: int = 64
    num_heads: int = 4
    d_ff: int = 128  # hidden width of the MLP
    num_layers: int = 5  # ViT depth (the paper's ViT has 5 layers); 1 for "block"

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, ("block", "vit"))
        for name in ("patch_size", "image_size", "d_model", "num_heads", "d_ff", "num_layers"):
            check_positive_int(name, getattr(self, name))
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size must be a multiple of patch_size = "
                             f"{self.patch_size}, got {self.image_size}")


class PatchTransformer(nn.Module):
    r"""Trained embedding, positional encoding and de-embedding shared by both baselines.

    A patch vector :math:`\mathbf s_i` (``2a`` numbers, as
    :meth:`PatchEmbedding.spins <seqbook.attractor.PatchEmbedding.spins>` gives it) is
    embedded by a trained linear map plus the sinusoidal positional encoding of its
    position; after the transformer blocks the encoding is subtracted and a trained
    linear map gives the ``a`` pixels of the patch.

    Args:
        config: the architecture (:class:`BaselineConfig`).
    """

    def __init__(self, config: BaselineConfig) -> None:
        super().__init__()
        self.config = config
        self.patch_size, self.image_size = config.patch_size, config.image_size
        self.a = self.patch_size**2
        self.patch_dim = 2 * self.a  # numbers of a patch vector s_i
        self.num_tokens = (self.image_size // self.patch_size) ** 2
        self.d_model = d_model = config.d_model
        self.embed = nn.Linear(self.patch_dim, d_model)  # F, trained
        self.unembed = nn.Linear(d_model, self.a)  # F_out, trained
        self.register_buffer("pe", positional_encoding(self.num_tokens, d_model))  # (N, d_model)
        self.pe: Tensor

    def encode(self, s: PatchVectors) -> Hidden:
        """Patch vectors ``(B, N, 2a)`` to tokens ``(B, N, d_model)``, with positions."""
        return self.embed(s) + self.pe  # (B, N, d_model)

    def decode(self, h: Hidden) -> PatchPixels:
        """Pixels of every patch, unclipped (the training target is the clean image)."""
        return self.unembed(h - self.pe)  # (B, N, a)

    def to_image(
        self, pixels: Float[Tensor, "*batch {self.num_tokens} {self.a}"]
    ) -> Float[Tensor, "*batch {self.image_size} {self.image_size}"]:
        """Patches of pixels as images, clipped to [0, 1].

        Shapes:
            pixels: ``(..., N, a)``.
            returns: ``(..., H, W)``.
        """
        lead = pixels.shape[:-2]
        flat = pixels.reshape(-1, self.num_tokens, self.a).clamp(0.0, 1.0)  # (B', N, a)
        image = patches_to_image(flat, self.patch_size, self.image_size, self.image_size)
        return image.reshape(*lead, self.image_size, self.image_size)


class RecurrentTransformer(PatchTransformer):
    r"""One pre-norm transformer block, iterated: :math:`\mathbf x^{t+1} = B(\mathbf x^t)`.

    Args:
        config: the architecture (``kind="block"``).

    Shapes:
        s: ``(B, N, 2a)`` patch vectors (masked patches zero).
        returns (``forward``): ``(B, N, a)`` pixels after ``steps`` iterations;
        (``run``): ``(S, B, H, W)`` images after 1, ..., ``steps`` iterations.

    Example:
        >>> model = RecurrentTransformer(BaselineConfig(d_model=16, num_heads=2, d_ff=32))
        >>> s = PatchEmbedding(4).spins(torch.rand(2, 28, 28))
        >>> tuple(model(s, steps=3).shape), tuple(model.run(s, steps=5).shape)
        ((2, 49, 16), (5, 2, 28, 28))
    """

    def __init__(self, config: BaselineConfig | None = None) -> None:
        config = config or BaselineConfig()
        super().__init__(config)
        self.block = EncoderBlock(
            config.d_model, config.num_heads, config.d_ff, 0.0, norm_first=True
        )

    def forward(self, s: PatchVectors, steps: int = 5) -> PatchPixels:
        check_positive_int("steps", steps)
        h = self.encode(s)
        for _ in range(steps):
            h = self.block(h)  # (eq-attr-block)  (B, N, d_model)
        return self.decode(h)

    def run(
        self, s: PatchVectors, steps: int
    ) -> Float[Tensor, "{steps} B {self.image_size} {self.image_size}"]:
        """The reconstructed images after every iteration ``t = 1, ..., steps`` (no
        gradients are recorded)."""
        check_positive_int("steps", steps)
        with torch.no_grad():
            h = self.encode(s)
            images = []
            for _ in range(steps):
                h = self.block(h)  # (B, N, d_model)
                images.append(self.to_image(self.decode(h)))
            return torch.stack(images)  # (S, B, H, W)


class VisionTransformer(PatchTransformer):
    r"""A standard vision transformer: ``num_layers`` different pre-norm blocks, applied once.

    Args:
        config: the architecture (``kind="vit"``).

    Shapes:
        s: ``(B, N, 2a)``.
        returns: ``(B, N, a)`` pixels; ``reconstruct`` gives ``(B, H, W)`` images.

    Example:
        >>> config = BaselineConfig("vit", d_model=16, num_heads=2, d_ff=32, num_layers=2)
        >>> s = PatchEmbedding(4).spins(torch.rand(2, 28, 28))
        >>> tuple(VisionTransformer(config).reconstruct(s).shape)
        (2, 28, 28)
    """

    def __init__(self, config: BaselineConfig | None = None) -> None:
        config = config or BaselineConfig(kind="vit")
        super().__init__(config)
        self.blocks = nn.ModuleList(
            EncoderBlock(config.d_model, config.num_heads, config.d_ff, 0.0, norm_first=True)
            for _ in range(config.num_layers)
        )

    def forward(self, s: PatchVectors) -> PatchPixels:
        h = self.encode(s)
        for block in self.blocks:
            h = block(h)  # (B, N, d_model)
        return self.decode(h)

    def reconstruct(
        self, s: PatchVectors
    ) -> Float[Tensor, "B {self.image_size} {self.image_size}"]:
        """The reconstructed images, clipped to [0, 1] (no gradients are recorded)."""
        with torch.no_grad():
            return self.to_image(self(s))  # (B, H, W)


def build_baseline(config: BaselineConfig) -> RecurrentTransformer | VisionTransformer:
    """The baseline that ``config.kind`` names ("block" or "vit").

    Example:
        >>> type(build_baseline(BaselineConfig("vit", num_layers=1))).__name__
        'VisionTransformer'
    """
    return RecurrentTransformer(config) if config.kind == "block" else VisionTransformer(config)


def corrupt(
    images: Float[Tensor, "B {embedding.height} {embedding.width}"],
    task: str,
    embedding: PatchEmbedding,
    fraction: float = FRACTION,
    variance: float = VARIANCE,
    generator: torch.Generator | None = None,
) -> tuple[Float[Tensor, "B {embedding.num_tokens} {2*embedding.a}"],
           Bool[Tensor, "B {embedding.num_tokens}"] | None]:
    """The corrupted patch vectors of a task, and the visible-token mask ("mask" only).

    ``task="mask"``: a ``fraction`` of the patch vectors set to zero;
    ``task="denoise"``: the patch vectors of :func:`~seqbook.attractor.add_noise`'s
    images.

    Shapes:
        images: ``(B, H, W)``.
        returns: ``(B, N, 2a)`` and ``(B, N)`` (or ``None``).

    Example:
        >>> s, visible = corrupt(torch.rand(2, 28, 28), "mask", PatchEmbedding(4))
        >>> tuple(s.shape), visible.sum().item()
        ((2, 49, 32), 68)
    """
    check_pixels("images", images), check_choice("task", task, TASKS)
    images = images.to(embedding.F.dtype)
    if task == "mask":
        return mask_tokens(embedding.spins(images), fraction, generator)
    return embedding.spins(add_noise(images, variance, generator)), None


def train_baseline(
    model: RecurrentTransformer | VisionTransformer,
    images: Float[Tensor, "P {model.image_size} {model.image_size}"],
    task: str,
    epochs: int = 20,
    batch_size: int = 64,
    lr: float = 1e-3,
    min_steps: int = 3,
    max_steps: int = 7,
    seed: int = 0,
    progress: bool = True,
) -> History:
    r"""Train a baseline by backpropagation on one task, with :func:`seqbook.train.fit`.

    Every mini-batch is corrupted afresh; the loss is the mean squared error of the
    predicted pixels against the clean image. A :class:`RecurrentTransformer` is
    iterated :math:`\tau` times, :math:`\tau` drawn uniformly from
    ``min_steps..max_steps`` for every mini-batch.

    Args:
        model: the baseline to train (in place).
        images: clean training images.
        task: "mask" or "denoise".
        epochs, batch_size, lr: Adam's training schedule.
        min_steps, max_steps: the range of :math:`\tau` (3 and 7 in the paper).
        seed: seed of the shuffles, corruptions and :math:`\tau`.
        progress: show a tqdm bar.

    Shapes:
        images: ``(P, H, W)``.

    Returns:
        The :class:`~seqbook.train.History` of :func:`~seqbook.train.fit`.
    """
    check_pixels("images", images), check_choice("task", task, TASKS)
    check_positive_int("batch_size", batch_size), check_positive_int("min_steps", min_steps)
    if check_int("max_steps", max_steps) < min_steps:
        raise ValueError(f"max_steps must be >= min_steps = {min_steps}, got {max_steps}")
    check_real("lr", lr, min_value=0.0, strict_min=True)
    embedding = PatchEmbedding(model.patch_size, image_size=model.image_size).to(images.device)
    images = images.to(embedding.F.dtype)
    generator = seeded_generator(seed)
    draw = random.Random(shifted_seed(seed))

    def batches() -> list[Tensor]:
        return [
            images[k] for k in torch.randperm(len(images), generator=generator).split(batch_size)
        ]

    def loss_fn(m: nn.Module, clean: Tensor) -> Tensor:
        s, _ = corrupt(clean, task, embedding, FRACTION, VARIANCE, generator)
        if isinstance(m, RecurrentTransformer):
            pixels = m(s, steps=draw.randint(min_steps, max_steps))  # tau ~ Unif{3..7}
        else:
            pixels = m(s)
        target = image_to_patches(clean, model.patch_size)  # (B, N, a)
        return F.mse_loss(pixels, target)

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return fit(model, loss_fn, batches, optimizer, epochs, clip=1.0, progress=progress,
               desc=f"{model.config.kind} ({task})")


def save_baseline(
    model: RecurrentTransformer | VisionTransformer, path: str | Path, **info: object,
) -> Path:
    """Save a baseline's configuration and weights (as float16, to keep files small).

    ``info`` (e.g. the task, the epochs, the final loss) is stored alongside.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()
             if k != "pe"}
    torch.save({"config": asdict(model.config), "state_dict": state, "info": info}, path)
    return path


def load_baseline(
    name_or_path: str | Path,
) -> tuple[RecurrentTransformer | VisionTransformer, dict]:
    """Load a saved baseline in eval mode, with the ``info`` saved with it.

    Args:
        name_or_path: a file, or the name of a committed checkpoint in
            :data:`~seqbook.attractor.baselines.CHECKPOINTS`, such as
            ``"block_mask"`` or ``"vit_denoise"``.

    Example:
        >>> model, info = load_baseline("block_mask")
        >>> type(model).__name__, info["task"]
        ('RecurrentTransformer', 'mask')
    """
    path = find_checkpoint(name_or_path, CHECKPOINTS, "python -m seqbook.attractor.train")
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model = build_baseline(BaselineConfig(**checkpoint["config"]))
    state = {
        k: v.float() if v.is_floating_point() else v for k, v in checkpoint["state_dict"].items()
    }
    model.load_state_dict(state, strict=False)
    missing = set(model.state_dict()) - set(state) - {"pe"}
    if missing:
        raise ValueError(f"checkpoint {path} lacks {sorted(missing)}")
    return model.eval(), checkpoint["info"]
