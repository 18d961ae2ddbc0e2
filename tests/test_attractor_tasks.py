"""seqbook.attractor.tasks: data split, masking, noise, errors, patch variances."""

import pytest
import torch

from seqbook.attractor import add_noise, mask_tokens, mnist_split, mse_curve, patch_variance


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_split_is_disjoint_balanced_and_nested():
    train, test = mnist_split()
    assert train.shape == (4000, 28, 28) and test.shape == (1000, 28, 28)
    flat_train = {tuple(x.flatten().tolist()[::7]) for x in train[:500]}
    assert not any(tuple(x.flatten().tolist()[::7]) in flat_train for x in test)
    small, small_test = mnist_split(300, 20)
    assert torch.equal(small, train[:300]) and torch.equal(small_test, test[:20])


def test_masking_hides_exactly_the_fraction_and_nothing_else():
    tokens = torch.rand(5, 196, 8, generator=_gen()) + 0.1
    masked, visible = mask_tokens(tokens, 0.3, _gen(1))
    assert visible.dtype == torch.bool and visible.shape == (5, 196)
    assert ((~visible).sum(-1) == round(0.3 * 196)).all()
    assert (masked[~visible] == 0).all()
    assert torch.equal(masked[visible], tokens[visible])
    assert not torch.equal(visible[0], visible[1])  # different tokens per image


def test_noise_keeps_the_variance_then_clips():
    images, _ = mnist_split(50, 1)
    noisy = add_noise(images, 0.7, _gen())
    assert noisy.shape == images.shape and noisy.min() >= 0 and noisy.max() <= 1
    unclipped = add_noise(images * 0.01 + 0.5, 0.7, _gen())  # far from the clip
    assert torch.allclose(unclipped.std((1, 2)), (images * 0.01).std((1, 2)), rtol=1e-4)
    assert ((noisy - images) ** 2).mean() > 0.05  # a hard task
    assert torch.allclose(add_noise(images, 0.0, _gen()), images, atol=1e-6)


def test_mse_curve_and_patch_variance():
    clean = torch.zeros(2, 4, 4)
    steps = torch.stack([clean + 0.2, clean])
    assert torch.allclose(mse_curve(steps, clean), torch.tensor([0.04, 0.0]))
    image = torch.zeros(1, 4, 4)
    image[0, :2, :2] = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    v = patch_variance(image, 2)
    assert torch.allclose(v, torch.tensor([0.25, 0.0, 0.0, 0.0]))
    assert torch.allclose(patch_variance(image, 2, torch.tensor([[True, False, False, True]])),
                          torch.tensor([0.25, 0.0]))


def test_bad_input():
    with pytest.raises(ValueError, match="train_size must be <= 4000"):
        mnist_split(5000, 10)
    with pytest.raises(ValueError, match="fraction must be < 1"):
        mask_tokens(torch.rand(1, 4, 2), 1.0)
    with pytest.raises(ValueError, match="3 dimensions"):
        mask_tokens(torch.rand(4, 2), 0.3)
    with pytest.raises(ValueError, match="variance must be >= 0"):
        add_noise(torch.rand(1, 4, 4), -0.1)
    with pytest.raises(ValueError, match="reconstructions must have shape"):
        mse_curve(torch.rand(3, 2, 4, 4), torch.rand(2, 5, 5))
    with pytest.raises(ValueError, match="divisible by patch_size"):
        patch_variance(torch.rand(1, 5, 5), 2)
    with pytest.raises(ValueError, match="tokens must be a boolean tensor"):
        patch_variance(torch.rand(1, 4, 4), 2, torch.ones(1, 4))
