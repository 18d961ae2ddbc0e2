"""Every public callable of seqbook.energy_transformer rejects bad input with a clear message."""

from __future__ import annotations

import pytest
import torch

from seqbook.energy_transformer import (
    EnergyAttention,
    EnergyLayerNorm,
    EnergyTransformer,
    HopfieldNetwork,
    MaskedConfig,
    MaskedEnergyTransformer,
    load_masked,
    masked_loss,
    paste_visible,
    save_masked,
    train_masked,
)

TINY = MaskedConfig(dim=4, num_heads=1, head_dim=2, num_memories=4, steps=1)
GOOD = torch.randn(2, 3, 4)

# the (B, N, D) token tensors: what is wrong, and what the message must say
BAD_TOKENS = [
    ([[1.0]], TypeError, "must be a torch.Tensor"),
    (torch.randn(3, 4), ValueError, "must have 3 dimensions"),
    (torch.randn(2, 3, 5), ValueError, r"dim = 4"),
    (torch.randn(2, 1, 4), ValueError, r"N >= 2"),
    (torch.ones(2, 3, 4, dtype=torch.long), TypeError, "floating-point"),
    (torch.randn(2, 3, 4, dtype=torch.float64), TypeError, "float64.*float32"),
    (torch.full((2, 3, 4), float("nan")), ValueError, "finite"),
]


def _modules():
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    return {
        "attention.energy": EnergyAttention(4, 1, 2).energy,
        "attention.update": EnergyAttention(4, 1, 2).update,
        "attention.weights": EnergyAttention(4, 1, 2).weights,
        "hopfield.energy": HopfieldNetwork(4, 4).energy,
        "hopfield.update": HopfieldNetwork(4, 4).update,
        "block.energy": block.energy,
        "block.gradient": block.gradient,
        "block.step": block.step,
        "block.run": lambda x: block.run(x, 2),
        "masked.decode": MaskedEnergyTransformer(TINY).decode,
    }


@pytest.mark.parametrize("name", list(_modules()))
@pytest.mark.parametrize("bad, error, message", BAD_TOKENS, ids=[str(i) for i in range(7)])
def test_token_tensors(name, bad, error, message):
    call = _modules()[name]
    with pytest.raises(error, match=message):
        call(bad)


@pytest.mark.parametrize("name", list(_modules()))
def test_the_argument_is_named(name):
    call = _modules()[name]
    with pytest.raises(ValueError, match=r"^(g|x|x0) must have shape"):
        call(torch.randn(2, 3, 5))


def test_layer_norm_input():
    norm = EnergyLayerNorm(4)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., dim\) with dim = 4"):
        norm(torch.randn(2, 5))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        norm.lagrangian([1.0, 2.0])
    with pytest.raises(TypeError, match="float64"):
        norm(torch.randn(4, dtype=torch.float64))


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: EnergyLayerNorm(0), ValueError, "dim must be >= 1"),
        (lambda: EnergyLayerNorm(3, eps=0.0), ValueError, "eps must be > 0"),
        (lambda: EnergyLayerNorm(3.5), TypeError, "dim must be an int"),
        (lambda: EnergyAttention(4, num_heads=0), ValueError, "num_heads must be >= 1"),
        (lambda: EnergyAttention(4, head_dim=2.0), TypeError, "head_dim must be an int"),
        (lambda: EnergyAttention(4, beta=-1.0), ValueError, "beta must be > 0"),
        (lambda: EnergyAttention(4, init_std=-1.0), ValueError, "init_std must be >= 0"),
        (lambda: HopfieldNetwork(4, 0), ValueError, "num_memories must be >= 1"),
        (lambda: HopfieldNetwork(4, 3, kind="tanh"), ValueError, "kind must be one of"),
        (lambda: HopfieldNetwork(4, 3, beta=0.0), ValueError, "beta must be > 0"),
        (lambda: EnergyTransformer(4, hopfield="exp"), ValueError, "hopfield must be one of"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(patch_size=3)), ValueError,
         r"image_size must be a multiple of patch_size = 3 \(the argument patch_size\)"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(steps=0)), ValueError, "steps must be >= 1"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(alpha=0.0)), ValueError, "alpha must be > 0"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(dim=0)), ValueError, "dim must be >= 1"),
    ],
)
def test_constructor_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"method": "numeric"}, ValueError, "method must be one of"),
        ({"alpha": 0.0}, ValueError, "alpha must be > 0"),
        ({"alpha": "big"}, TypeError, "alpha must be a real number"),
    ],
)
def test_step_arguments(kwargs, error, message):
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    with pytest.raises(error, match=message):
        block.step(GOOD, **kwargs)


def test_run_and_gradient_arguments():
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        block.run(GOOD, -1)
    with pytest.raises(TypeError, match="steps must be an int"):
        block.run(GOOD, 2.0)
    with pytest.raises(ValueError, match="method must be one of"):
        block.gradient(GOOD, "finite differences")


def _patches(B=2):
    return torch.rand(B, 196, 4), torch.ones(B, 196, dtype=torch.bool)


@pytest.mark.parametrize(
    "patches, visible, error, message",
    [
        (torch.rand(2, 49, 16), torch.ones(2, 49, dtype=torch.bool), ValueError,
         r"patches must have shape \(B, num_tokens, a\) with num_tokens = 196"),
        ([0.5], None, TypeError, "patches must be a torch.Tensor"),
        (torch.rand(2, 196, 4, dtype=torch.float64), torch.ones(2, 196, dtype=torch.bool),
         TypeError, "patches has dtype torch.float64"),
        (torch.rand(2, 196, 4), torch.ones(2, 196), TypeError,
         "visible must have dtype torch.bool"),
        (torch.rand(2, 196, 4), torch.ones(3, 196, dtype=torch.bool), ValueError,
         r"visible must have shape \(B, num_tokens\) with B = 2 \(as in patches\)"),
        (torch.rand(2, 196, 4), torch.ones(2, 196, 1, dtype=torch.bool), ValueError,
         "visible must have 2 dimensions"),
    ],
)
def test_masked_model_inputs(patches, visible, error, message):
    model = MaskedEnergyTransformer(TINY)
    for call in (model, model.tokens, lambda p, v: model.run(p, v, 1)):
        with pytest.raises(error, match=message):
            call(patches, visible)


def test_masked_model_other_arguments():
    model = MaskedEnergyTransformer(TINY)
    patches, visible = _patches()
    with pytest.raises(ValueError, match="steps must be >= 0"):
        model(patches, visible, steps=-2)
    with pytest.raises(ValueError, match="trajectory must have 4 dimensions"):
        model.to_images(torch.randn(2, 196, 4))


def test_paste_visible_arguments():
    images = torch.rand(2, 4, 4)
    visible = torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"images must have shape \(B, H, W\) with W = 5 "
                                         r"\(as in predictions\)"):
        paste_visible(torch.rand(2, 4, 5), images, visible, 2)
    with pytest.raises(ValueError, match=r"predictions must have at least 3 dimensions"):
        paste_visible(torch.rand(4, 4), images, visible, 2)
    with pytest.raises(ValueError, match=r"visible must have shape \(B, \*\) with B = 2"):
        paste_visible(images, images, torch.ones(3, 4, dtype=torch.bool), 2)
    with pytest.raises(ValueError, match="visible must be a boolean tensor of shape"):
        paste_visible(images, images, visible.float(), 2)
    with pytest.raises(ValueError, match="visible must be a boolean tensor of shape"):
        paste_visible(images, images, torch.ones(2, 3, dtype=torch.bool), 2)
    with pytest.raises(ValueError, match="patch_size must be >= 1"):
        paste_visible(images, images, visible, 0)
    with pytest.raises(TypeError, match="images must be a torch.Tensor"):
        paste_visible(images, None, visible, 2)


def test_training_and_checkpoint_arguments(tmp_path):
    model = MaskedEnergyTransformer(TINY)
    images = torch.rand(4, 28, 28)
    with pytest.raises(TypeError, match="model must be a MaskedEnergyTransformer"):
        masked_loss(torch.nn.Linear(2, 2), images)
    with pytest.raises(TypeError, match="model must be a MaskedEnergyTransformer"):
        train_masked(EnergyTransformer(4), images)
    with pytest.raises(ValueError, match="images must have 3 dimensions"):
        train_masked(model, torch.rand(28, 28))
    with pytest.raises(ValueError, match=r"images must have shape \(B, model.image_size, "
                                         r"model.image_size\) with B >= 1"):
        train_masked(model, torch.rand(0, 28, 28))
    with pytest.raises(ValueError, match="lr must be > 0"):
        train_masked(model, images, lr=0.0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        train_masked(model, images, batch_size=0)
    with pytest.raises(ValueError, match="fraction must be < 1"):
        masked_loss(model, images, fraction=1.0)
    with pytest.raises(ValueError, match=r"images must have shape .* with B >= 1"):
        masked_loss(model, torch.rand(0, 28, 28))  # before: a NaN loss
    with pytest.raises(TypeError, match="model must be a MaskedEnergyTransformer"):
        save_masked(EnergyTransformer(4), tmp_path / "x.pt")
    with pytest.raises(TypeError, match="name_or_path must be a str or Path"):
        load_masked(3)
