"""The masked model's functions shown in the chapter, and the checks at its boundary."""

import pytest
import torch

from seqbook.energy_transformer import (
    EnergyTransformer,
    MaskedConfig,
    MaskedEnergyTransformer,
    masked_loss,
    train_masked,
)

TINY = MaskedConfig(dim=8, num_memories=16, head_dim=4, steps=2)


def test_masked_loss_is_replayed_by_the_same_generator():
    model = MaskedEnergyTransformer(TINY, generator=torch.Generator().manual_seed(0))
    images = torch.rand(3, 28, 28, generator=torch.Generator().manual_seed(1))
    first = masked_loss(model, images, 0.3, torch.Generator().manual_seed(2))
    again = masked_loss(model, images, 0.3, torch.Generator().manual_seed(2))
    other = masked_loss(model, images, 0.3, torch.Generator().manual_seed(3))
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_decode_is_the_decoder_of_the_normalised_tokens():
    model = MaskedEnergyTransformer(TINY, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, 196, 8, generator=torch.Generator().manual_seed(3))
    assert torch.equal(model.decode(x), model.decoder(model.block.norm(x)))


def _hooked(model: torch.nn.Module) -> set[str]:
    """Register a forward hook on every submodule; the names of those that fired."""
    fired: set[str] = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda m, args, out, name=name: fired.add(name))
    return fired


def test_a_forward_hook_on_every_submodule_fires_on_a_call_of_the_model():
    model = MaskedEnergyTransformer(TINY)
    patches, visible = torch.rand(2, 196, 4), torch.rand(2, 196) > 0.3
    fired = _hooked(model)
    model(patches, visible)
    assert fired == {name for name, _ in model.named_modules()}
    assert {"", "encoder", "decoder", "block", "block.norm", "block.attention",
            "block.hopfield"} <= fired
    for call in (lambda: model.run(patches, visible, 2),
                 lambda: masked_loss(model, torch.rand(2, 28, 28))):
        fired.clear()
        call()
        assert fired >= {name for name, _ in model.block.named_modules(prefix="block")}


@pytest.mark.parametrize("method", ["closed", "autograd"])
def test_a_forward_hook_on_every_submodule_of_the_block_fires_on_a_step(method):
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    fired = _hooked(block)
    block(torch.randn(2, 3, 4), 0.1, method)
    # the autograd gradient differentiates the energies: the modules' forward (their
    # closed-form update) is not called
    expected = {"", "norm", "attention", "hopfield"} if method == "closed" else {"", "norm"}
    assert fired == expected
    fired.clear()
    block.run(torch.randn(2, 3, 4), 3)
    assert fired == {"", "norm", "attention", "hopfield"}


def test_masked_loss_and_train_masked_check_images_and_fraction_once_up_front():
    model = MaskedEnergyTransformer(TINY)
    size = (r"^images must be Float\[Tensor, 'B \{model.image_size\} \{model.image_size\}'\]"
            r".*\{model.image_size\}=28")
    with pytest.raises(TypeError, match=size):
        masked_loss(model, torch.rand(2, 20, 20))
    with pytest.raises(TypeError, match="^images has dtype torch.float64"):
        masked_loss(model, torch.rand(2, 28, 28, dtype=torch.float64))
    with pytest.raises(TypeError, match=size):
        train_masked(model, torch.rand(2, 20, 20), progress=False)
    with pytest.raises(ValueError, match="^fraction must be < 1"):
        train_masked(model, torch.rand(2, 28, 28), fraction=1.0, progress=False)
    with pytest.raises(TypeError, match="^generator must be"):
        train_masked(model, torch.rand(2, 28, 28), generator=3, progress=False)
