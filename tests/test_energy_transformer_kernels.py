"""The masked model's kernels (shown in the chapter) and the checks at its boundary."""

import pytest
import torch

from seqbook.energy_transformer import (
    MaskedConfig,
    MaskedEnergyTransformer,
    masked_loss,
    train_masked,
)

TINY = MaskedConfig(dim=8, num_memories=16, head_dim=4, steps=2)


def test_loss_kernel_equals_masked_loss_with_the_same_generator():
    model = MaskedEnergyTransformer(TINY, generator=torch.Generator().manual_seed(0))
    images = torch.rand(3, 28, 28, generator=torch.Generator().manual_seed(1))
    public = masked_loss(model, images, 0.3, torch.Generator().manual_seed(2))
    kernel = model._loss(images, 0.3, torch.Generator().manual_seed(2))
    assert torch.equal(public, kernel)


def test_decode_kernel_equals_decode():
    model = MaskedEnergyTransformer(TINY, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, 196, 8, generator=torch.Generator().manual_seed(3))
    assert torch.equal(model._decode(x), model.decode(x))


def test_masked_loss_and_train_masked_check_images_and_fraction_once_up_front():
    model = MaskedEnergyTransformer(TINY)
    size = (r"images must have shape \(B, model.image_size, model.image_size\)"
            r" with model.image_size = 28")
    with pytest.raises(ValueError, match=size):
        masked_loss(model, torch.rand(2, 20, 20))
    with pytest.raises(TypeError, match="images has dtype torch.float64"):
        masked_loss(model, torch.rand(2, 28, 28, dtype=torch.float64))
    with pytest.raises(ValueError, match=size):
        train_masked(model, torch.rand(2, 20, 20), progress=False)
    with pytest.raises(ValueError, match="fraction must be < 1"):
        train_masked(model, torch.rand(2, 28, 28), fraction=1.0, progress=False)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        train_masked(model, torch.rand(2, 28, 28), generator=3, progress=False)
