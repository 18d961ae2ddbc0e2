"""seqbook.attractor.embedding: patches, pixel spins, the fixed random embedding."""

import math

import pytest
import torch

from seqbook.attractor import (
    PatchEmbedding,
    image_to_patches,
    patches_to_image,
    pixel_spins,
    spins_to_pixels,
)
from seqbook.data import mnist5k


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_patches_are_read_row_by_row_and_put_back_exactly():
    image = torch.arange(36.0).reshape(1, 6, 6)
    patches = image_to_patches(image, 3)
    assert patches.shape == (1, 4, 9)
    assert patches[0, 1].tolist() == [3, 4, 5, 9, 10, 11, 15, 16, 17]  # top-right patch
    assert patches[0, 2, 0].item() == 18  # bottom-left patch starts at row 3
    images = torch.rand(5, 12, 8, generator=_gen())
    for P in (1, 2, 4):
        assert torch.equal(patches_to_image(image_to_patches(images, P), P, 12, 8), images)


def test_pixel_spins_lie_on_the_quarter_circle_and_invert():
    p = torch.linspace(0, 1, 101, dtype=torch.float64)
    s = pixel_spins(p)
    assert torch.allclose(s.norm(dim=-1), torch.ones(101, dtype=torch.float64))
    assert (s >= 0).all()
    assert torch.allclose(spins_to_pixels(s), p, atol=1e-12)
    assert torch.allclose(spins_to_pixels(3.7 * s), p, atol=1e-12)  # direction only


def test_off_circle_vectors_decode_to_the_nearest_end():
    out = spins_to_pixels(
        torch.tensor([[1.0, -0.1], [-0.1, 1.0], [-1.0, -0.5], [-0.5, -1.0], [0.0, 0.0]])
    )
    assert out.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]  # nearer end of the arc


@pytest.mark.parametrize("patch_size, dim", [(2, None), (2, 12), (4, None), (7, 100)])
def test_round_trip_is_exact_on_clean_images(patch_size, dim):
    images, _ = mnist5k()
    images = images[:50]
    embedding = PatchEmbedding(patch_size, dim)
    x = embedding(images)
    a = patch_size**2
    assert x.shape == (50, (28 // patch_size) ** 2, dim or 2 * a)
    assert torch.allclose(x.norm(dim=-1), torch.ones(x.shape[:2]), atol=1e-5)  # unit spins
    assert (embedding.decode(x) - images).abs().max() < 1e-5
    F = embedding.F
    assert torch.allclose(F.T @ F, torch.eye(2 * a), atol=1e-5)  # orthonormal columns


def test_embedding_is_linear_in_the_patch_vectors_and_position_free():
    embedding = PatchEmbedding(2, seed=3)
    images = torch.rand(2, 28, 28, generator=_gen())
    s = embedding.spins(images)
    assert torch.allclose(embedding(images), s @ embedding.F.T / 2, atol=1e-6)  # 1/sqrt(a)
    same = torch.zeros(1, 28, 28)
    x = embedding(same)
    assert torch.allclose(x, x[:, :1].expand_as(x))  # no positional information
    assert not torch.equal(PatchEmbedding(2, seed=4).F, embedding.F)
    assert torch.equal(PatchEmbedding(2, seed=3).F, embedding.F)


def test_scores_do_not_depend_on_d_or_a():
    # x_i has norm 1 for every patch size and dimension (the paper's 1/sqrt(a))
    images = torch.rand(3, 28, 28, generator=_gen())
    for P, d in [(2, 8), (2, 32), (4, 32), (4, 64)]:
        x = PatchEmbedding(P, d)(images)
        assert math.isclose(x.norm(dim=-1).mean().item(), 1.0, rel_tol=1e-5)


def test_bad_input():
    with pytest.raises(ValueError, match=r"images must have shape \(B, H, W\) with H a "
                                         r"multiple of patch_size = 3 \(the argument"):
        image_to_patches(torch.rand(2, 28, 28), 3)
    with pytest.raises(ValueError, match=r"images must have shape \(B, H, W\) with W a "
                                         r"multiple of patch_size = 4"):
        image_to_patches(torch.rand(2, 28, 30), 4)
    with pytest.raises(ValueError, match="divisible by patch_size"):
        PatchEmbedding(patch_size=5, image_size=28)
    with pytest.raises(ValueError, match="dim must be >= 2a = 8"):
        PatchEmbedding(patch_size=2, dim=7)
    with pytest.raises(ValueError, match="dim must be >= 2a = 32"):
        PatchEmbedding(patch_size=4, dim=16)
    embedding = PatchEmbedding(2)
    with pytest.raises(TypeError, match=r"^images must be .*the dimension size 14 does not "
                                        r"equal the existing value of \{self.height\}=28"):
        embedding(torch.rand(2, 14, 14))
    with pytest.raises(TypeError, match=r"^images must be .*got f32\[28,28\]"):
        embedding(torch.rand(28, 28))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        embedding(torch.rand(1, 28, 28) * 2)
    with pytest.raises(TypeError, match=r"^images must be Float\[Tensor, .*got i64\[1,28,28\]"):
        embedding(torch.zeros(1, 28, 28, dtype=torch.long))
    with pytest.raises(TypeError, match=r"^x must be .*the dimension size 9 does not equal the "
                                        r"existing value of \{self.dim\}=8"):
        embedding.decode(torch.rand(1, 196, 9))
    with pytest.raises(TypeError, match=r"^spins must be Float\[Tensor, '\*shape 2'\]"):
        spins_to_pixels(torch.rand(4, 3))
    with pytest.raises(ValueError, match="patches must have shape"):
        patches_to_image(torch.rand(1, 5, 4), 2, 4, 4)
    with pytest.raises(TypeError, match="^image_size must be"):
        PatchEmbedding(2, image_size="28")
