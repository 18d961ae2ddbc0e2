r"""Images as vector spins: patches, pixel spins and a fixed random embedding.

Shape letters: ``B`` images, ``H`` x ``W`` pixels, ``P`` the patch side, ``a = P^2``
pixels per patch, ``N = (H / P)(W / P)`` tokens (patches), ``d`` the spin dimension.

Following D'Amico & Negri (2024, appendix A), an image becomes ``N`` unit vectors:

1. cut it into non-overlapping ``P x P`` patches, read row by row (as a vision
   transformer does);
2. map every pixel :math:`p \in [0, 1]` to the unit vector
   :math:`\mathbf p = (p, 1 - p) / \sqrt{p^2 + (1 - p)^2}`, a point on the quarter
   circle between "paper" :math:`(0, 1)` and "ink" :math:`(1, 0)`;
3. concatenate the ``a`` pixel vectors of a patch into :math:`\mathbf s_i \in
   \mathbb R^{2a}` (norm :math:`\sqrt a`) and map it with a fixed random matrix
   :math:`F \in \mathbb R^{d \times 2a}` with orthonormal columns, scaled by
   :math:`1/\sqrt a`: :math:`\mathbf x_i = F\mathbf s_i / \sqrt a`, a unit vector.

Every step is invertible on clean images, so the de-embedding
(:math:`\mathbf s_i = \sqrt a\,F^\top \mathbf x_i`, then each pixel's angle) gives back
the pixels exactly.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int
from seqbook.attractor._values import check_grid, check_pixels

__all__ = [
    "PatchEmbedding",
    "image_to_patches",
    "patches_to_image",
    "pixel_spins",
    "spins_to_pixels",
]

# Images of the embedding's size, and the unit spins it makes of them.
SizedImages: TypeAlias = Float[Tensor, "B {self.height} {self.width}"]
Tokens: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.dim}"]


def _check_image_size(name: str, value: int | tuple[int, int]) -> tuple[int, int]:
    """``(H, W)``: one positive int for square images, or a pair of them."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if not (isinstance(value, tuple) and len(value) == 2):
        raise TypeError(f"{name} must be an int or a pair (H, W), got {value!r}")
    return check_positive_int("height", value[0]), check_positive_int("width", value[1])


def image_to_patches(
    images: Float[Tensor, "B H W"], patch_size: int
) -> Float[Tensor, "B N {patch_size**2}"]:
    r"""Cut images into non-overlapping square patches, read row by row.

    Args:
        images: grey-level images.
        patch_size: the side :math:`P` of a patch; it must divide height and width.

    Shapes:
        images: ``(B, H, W)``.
        returns: ``(B, N, a)`` with ``N = (H / P)(W / P)`` and ``a = P * P``; the
        pixels of a patch are in row-major order.

    Example:
        >>> image = torch.arange(16.0).reshape(1, 4, 4)
        >>> image_to_patches(image, 2)[0, :2]
        tensor([[0., 1., 4., 5.],
                [2., 3., 6., 7.]])
    """
    P = check_positive_int("patch_size", patch_size)
    B, H, W = check_grid("images", images, P).shape
    grid = images.reshape(B, H // P, P, W // P, P)  # (B, H/P, P, W/P, P)
    grid = grid.permute(0, 1, 3, 2, 4)  # (B, H/P, W/P, P, P)
    return grid.reshape(B, (H // P) * (W // P), P * P)  # (B, N, a)


def patches_to_image(
    patches: Float[Tensor, "B N {patch_size**2}"],
    patch_size: int,
    height: int,
    width: int,
) -> Float[Tensor, "B {height} {width}"]:
    """Put patches back together: the inverse of :func:`image_to_patches`.

    Shapes:
        patches: ``(B, N, a)`` with ``N = (height / P)(width / P)``, ``a = P * P``.
        returns: ``(B, height, width)``.

    Example:
        >>> image = torch.rand(2, 6, 4)
        >>> torch.equal(patches_to_image(image_to_patches(image, 2), 2, 6, 4), image)
        True
    """
    P = check_positive_int("patch_size", patch_size)
    for name, size in (("height", height), ("width", width)):
        if check_positive_int(name, size) % P:
            raise ValueError(f"{name} must be a multiple of patch_size = {P} (the "
                             f"argument patch_size), got {size}")
    B, N = patches.shape[:2]
    if N != (height // P) * (width // P):
        raise ValueError(f"patches must have shape (B, {(height // P) * (width // P)}, "
                         f"{P * P}) for {height} x {width} images, got {tuple(patches.shape)}")
    grid = patches.reshape(B, height // P, width // P, P, P)  # (B, H/P, W/P, P, P)
    return grid.permute(0, 1, 3, 2, 4).reshape(B, height, width)  # (B, H, W)


def pixel_spins(pixels: Float[Tensor, "*shape"]) -> Float[Tensor, "*shape 2"]:
    r"""Each pixel :math:`p \in [0, 1]` as the unit vector :math:`(p, 1-p)/\lVert(p, 1-p)\rVert`.

    Shapes:
        pixels: ``(...)``.
        returns: ``(..., 2)``.

    Example:
        >>> pixel_spins(torch.tensor([0.0, 0.5, 1.0]))
        tensor([[0.0000, 1.0000],
                [0.7071, 0.7071],
                [1.0000, 0.0000]])
    """
    p = check_pixels("pixels", pixels)  # in [0, 1]
    pair = torch.stack([p, 1 - p], dim=-1)  # (..., 2): (p, 1 - p)
    return pair / pair.norm(dim=-1, keepdim=True)  # (eq-attr-pixel-spin)


def spins_to_pixels(spins: Float[Tensor, "*shape 2"]) -> Float[Tensor, "*shape"]:
    r"""The pixel of each 2-vector :math:`(u, v)`: the inverse of :func:`pixel_spins`.

    The angle :math:`\varphi = \operatorname{atan2}(u, v)` is clamped to the quarter
    circle :math:`[0, \pi/2]` and :math:`p = \sin\varphi / (\sin\varphi + \cos\varphi)`,
    which is :math:`u / (u + v)` for :math:`u, v \ge 0`. Vectors outside the quarter
    circle go to the nearer end of the arc (0 or 1), and the zero vector to 0.
    The result depends on the direction of :math:`(u, v)` only.

    Shapes:
        spins: ``(..., 2)``.
        returns: ``(...)``.

    Example:
        >>> spins_to_pixels(torch.tensor([[0.6, 0.8], [2.0, 2.0], [-1.0, 3.0]]))
        tensor([0.4286, 0.5000, 0.0000])
    """
    phi = torch.atan2(spins[..., 0], spins[..., 1])  # (...) in (-pi, pi]
    # angles below -3 pi / 4 are nearer to the arc's end pi / 2, going around
    phi = torch.where(phi < -0.75 * math.pi, phi + 2 * math.pi, phi).clamp(0.0, math.pi / 2)
    pixels = torch.sin(phi) / (torch.sin(phi) + torch.cos(phi))
    return pixels.clamp(0.0, 1.0)  # cos(pi / 2) is -4e-8 in float32


class PatchEmbedding(nn.Module):
    r"""The fixed (untrained) embedding of images as :math:`N` unit vector spins.

    .. math::
        \mathbf x_i = \frac{1}{\sqrt a}\, F \mathbf s_i, \qquad
        \mathbf s_i = (\mathbf p_k)_{k \in \text{patch } i} \in \mathbb R^{2a},
        \qquad F^\top F = I_{2a}

    :math:`F` is drawn once from ``torch.Generator().manual_seed(seed)`` (a QR
    decomposition of a Gaussian matrix) and kept as a buffer, not a parameter. It is part
    of the model's definition, like its shape: the committed checkpoints' couplings live
    in the basis it defines, so it does not move with ``SEQBOOK_SEED_SHIFT``.

    Args:
        patch_size: the side :math:`P` of the square patches (2 by default; 4 is the
            other size of the paper).
        dim: the spin dimension :math:`d \ge 2a = 2P^2`; defaults to :math:`2a`.
        image_size: ``(H, W)`` or one int for square images (28 for MNIST).
        seed: seed of the random orthonormal columns of :math:`F`.

    Shapes:
        images: ``(B, H, W)`` with pixels in [0, 1].
        spins (:math:`\mathbf s`): ``(B, N, 2a)``; embedded tokens ``(B, N, d)``.

    Example:
        >>> embedding = PatchEmbedding(patch_size=2, image_size=28)
        >>> images = torch.rand(3, 28, 28)
        >>> x = embedding(images)
        >>> tuple(x.shape), torch.allclose(x.norm(dim=-1), torch.ones(3, 196))
        ((3, 196, 8), True)
        >>> torch.allclose(embedding.decode(x), images, atol=1e-5)
        True
    """

    def __init__(
        self,
        patch_size: int = 2,
        dim: int | None = None,
        image_size: int | tuple[int, int] = 28,
        seed: int = 0,
    ) -> None:
        super().__init__()
        check_positive_int("patch_size", patch_size), check_int("seed", seed, min_value=0)
        self.height, self.width = _check_image_size("image_size", image_size)  # (H, W)
        if self.height % patch_size or self.width % patch_size:
            raise ValueError(f"image_size must be divisible by patch_size = {patch_size}, "
                             f"got {self.height} x {self.width}")
        self.patch_size = patch_size
        self.a = self.patch_size**2  # pixels per patch
        self.num_tokens = (self.height // self.patch_size) * (self.width // self.patch_size)
        self.dim = 2 * self.a if dim is None else check_positive_int("dim", dim)
        if self.dim < 2 * self.a:  # two numbers per pixel of a patch
            raise ValueError(f"dim must be >= 2a = {2 * self.a}, got {self.dim}")
        # Not seeded_generator: the committed checkpoints were trained in this basis, so
        # a run with shifted seeds must still embed digits exactly as they were.
        generator = torch.Generator().manual_seed(seed)
        gaussian = torch.randn(self.dim, 2 * self.a, generator=generator, dtype=torch.float64)
        F, _ = torch.linalg.qr(gaussian)  # (d, 2a), orthonormal columns
        self.register_buffer("F", F.float())
        self.F: Tensor

    def spins(self, images: SizedImages) -> Float[Tensor, "B {self.num_tokens} {2*self.a}"]:
        r"""The patch vectors :math:`\mathbf s_i` (pixel spins, concatenated).

        Shapes:
            images: ``(B, H, W)``, pixels in [0, 1].
            returns: ``(B, N, 2a)``.
        """
        check_pixels("images", images)
        patches = image_to_patches(images.to(self.F.dtype), self.patch_size)  # (B, N, a)
        return pixel_spins(patches).flatten(-2)  # (B, N, 2a)

    def forward(self, images: SizedImages) -> Tokens:
        r"""Embed images as unit spins :math:`\mathbf x_i = F\mathbf s_i/\sqrt a`.

        Shapes:
            images: ``(B, H, W)``.
            returns: ``(B, N, d)``.
        """
        s = self.spins(images)  # (B, N, 2a)
        return s @ self.F.T / math.sqrt(self.a)  # (eq-attr-embed)  (B, N, d)

    def decode(self, x: Tokens) -> SizedImages:
        r"""De-embed spins into images: :math:`\mathbf s_i = \sqrt a\, F^\top\mathbf x_i`, then
        pixels.

        Works for any vectors, not only clean embeddings: each pixel pair is read by
        its angle (:func:`spins_to_pixels`), so a spin off the image manifold still
        gives pixels in [0, 1].

        Shapes:
            x: ``(B, N, d)``.
            returns: ``(B, H, W)``.
        """
        s = math.sqrt(self.a) * x @ self.F  # (B, N, 2a)
        pixels = spins_to_pixels(s.unflatten(-1, (self.a, 2)))  # (B, N, a)
        return patches_to_image(pixels, self.patch_size, self.height, self.width)

    def extra_repr(self) -> str:
        return (
            f"patch_size={self.patch_size}, dim={self.dim}, "
            f"image_size=({self.height}, {self.width}), num_tokens={self.num_tokens}"
        )
