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
    grid_encoding,
    load_masked,
    masked_loss,
    paste_visible,
    save_masked,
    train_masked,
)

TINY = MaskedConfig(dim=4, num_heads=1, head_dim=2, num_memories=4, steps=1)
GOOD = torch.randn(2, 3, 4)

# the (B, N, D) token tensors: what is wrong, and what the message must say (after the
# name of the argument: g, x or x0)
BAD_TOKENS = [
    ([[1.0]], TypeError, r"must be Float\[Tensor, 'B N \{self.dim\}'\], got \[\[1.0\]\]"),
    (torch.randn(3, 4), TypeError, "must be .*has 2 dimensions, not the 3 expected"),
    (torch.randn(2, 3, 5), TypeError,
     r"must be .*size 5 does not equal the existing value of \{self.dim\}=4"),
    (torch.randn(2, 1, 4), ValueError, r"must hold N >= 2 tokens"),
    (torch.ones(2, 3, 4, dtype=torch.long), TypeError, r"must be Float\[.*got i64\[2,3,4\]"),
    (torch.randn(2, 3, 4, dtype=torch.float64), TypeError,
     r"must have the dtype of the module's parameters \(torch.float32\), got torch.float64"),
    (torch.full((2, 3, 4), float("nan")), ValueError, "must be finite"),
]


def _modules():
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    return {
        "attention.energy": EnergyAttention(4, 1, 2).energy,
        "attention.forward": EnergyAttention(4, 1, 2),
        "attention.weights": EnergyAttention(4, 1, 2).weights,
        "attention.scores": EnergyAttention(4, 1, 2).scores,
        "hopfield.energy": HopfieldNetwork(4, 4).energy,
        "hopfield.forward": HopfieldNetwork(4, 4),
        "block.energy": block.energy,
        "block.gradient": block.gradient,
        "block.forward": block,
        "block.run": lambda x: block.run(x, 2),
        "masked.decode": MaskedEnergyTransformer(TINY).decode,
    }


@pytest.mark.parametrize("name", list(_modules()))
@pytest.mark.parametrize("bad, error, message", BAD_TOKENS, ids=[str(i) for i in range(7)])
def test_token_tensors(name, bad, error, message):
    call = _modules()[name]
    with pytest.raises(error, match=r"^(g|x|x0) " + message):
        call(bad)


@pytest.mark.parametrize("name", list(_modules()))
def test_the_argument_is_named(name):
    call = _modules()[name]
    with pytest.raises(TypeError, match=r"^(g|x|x0) must be Float\[Tensor, 'B N \{self.dim\}'\]"):
        call(torch.randn(2, 3, 5))


def test_a_bad_call_after_a_good_one_of_the_same_shape_still_fails():
    # the hook does not check a call of a shape it has seen again; the values are
    # checked in the body, every time
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    block(GOOD)
    with pytest.raises(ValueError, match="^x must be finite"):
        block(torch.full_like(GOOD, float("nan")))
    with pytest.raises(ValueError, match="^alpha must be > 0"):
        block(GOOD, alpha=-1.0)


def test_layer_norm_input():
    norm = EnergyLayerNorm(4)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, '\*batch \{self.dim\}'\]"):
        norm(torch.randn(2, 5))
    with pytest.raises(TypeError, match="^x must be"):
        norm.lagrangian([1.0, 2.0])
    with pytest.raises(TypeError, match="^x must have the dtype.*float64"):
        norm(torch.randn(4, dtype=torch.float64))


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: EnergyLayerNorm(0), ValueError, "dim must be >= 1"),
        (lambda: EnergyLayerNorm(3, eps=0.0), ValueError, "eps must be > 0"),
        (lambda: EnergyLayerNorm(3.5), TypeError, "^dim must be int"),
        (lambda: EnergyAttention(4, num_heads=0), ValueError, "num_heads must be >= 1"),
        (lambda: EnergyAttention(4, head_dim=2.0), TypeError, "^head_dim must be int"),
        (lambda: EnergyAttention(4, beta=-1.0), ValueError, "beta must be > 0"),
        (lambda: EnergyAttention(4, init_std=-1.0), ValueError, "init_std must be >= 0"),
        (lambda: HopfieldNetwork(4, 0), ValueError, "num_memories must be >= 1"),
        (lambda: HopfieldNetwork(4, 3, kind="tanh"), ValueError, "kind must be one of"),
        (lambda: HopfieldNetwork(4, 3, beta=0.0), ValueError, "beta must be > 0"),
        (lambda: EnergyTransformer(4, hopfield="exp"), ValueError, "hopfield must be one of"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(patch_size=3)), ValueError,
         r"image_size must be a multiple of patch_size = 3, got 28"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(steps=0)), ValueError, "steps must be >= 1"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(alpha=0.0)), ValueError, "alpha must be > 0"),
        (lambda: MaskedEnergyTransformer(MaskedConfig(dim=0)), ValueError, "dim must be >= 1"),
        (lambda: MaskedConfig(hopfield="tanh"), ValueError, "hopfield must be one of"),
        (lambda: MaskedConfig(num_heads=1.5), TypeError, "^num_heads must be int"),
        (lambda: MaskedEnergyTransformer(TINY, generator=0), TypeError, "^generator must be"),
    ],
)
def test_constructor_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"method": "numeric"}, ValueError, "^method must be one of"),
        ({"alpha": 0.0}, ValueError, "^alpha must be > 0"),
        ({"alpha": "big"}, TypeError, "^alpha must be float"),
    ],
)
def test_step_arguments(kwargs, error, message):
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    with pytest.raises(error, match=message):
        block(GOOD, **kwargs)
    with pytest.raises(error, match=message):
        block.run(GOOD, 0, **kwargs)  # checked even when no step is taken


def test_run_and_gradient_arguments():
    block = EnergyTransformer(4, num_heads=1, head_dim=2, num_memories=4)
    with pytest.raises(ValueError, match="^steps must be >= 0"):
        block.run(GOOD, -1)
    with pytest.raises(TypeError, match="^steps must be int"):
        block.run(GOOD, 2.0)
    with pytest.raises(ValueError, match="^method must be one of"):
        block.gradient(GOOD, "finite differences")


def _patches(B=2):
    return torch.rand(B, 196, 4), torch.ones(B, 196, dtype=torch.bool)


@pytest.mark.parametrize(
    "patches, visible, error, message",
    [
        (torch.rand(2, 49, 16), torch.ones(2, 49, dtype=torch.bool), TypeError,
         r"^patches must be Float\[Tensor, 'B \{self.num_tokens\} \{self.a\}'\], "
         r"got f32\[2,49,16\].*\{self.num_tokens\}=196"),
        ([0.5], None, TypeError, "^patches must be"),
        (torch.rand(2, 196, 4, dtype=torch.float64), torch.ones(2, 196, dtype=torch.bool),
         TypeError, "^patches must have the dtype of the module's parameters"),
        (torch.rand(2, 196, 4), torch.ones(2, 196), TypeError,
         r"^visible must be Bool\[Tensor, 'B \{self.num_tokens\}'\], got f32"),
        (torch.rand(2, 196, 4), torch.ones(3, 196, dtype=torch.bool), TypeError,
         r"^visible must be .*the size of dimension B is 3 which does not equal the "
         r"existing value of 2"),
        (torch.rand(2, 196, 4), torch.ones(2, 196, 1, dtype=torch.bool), TypeError,
         "^visible must be .*3 dimensions, not the 2 expected"),
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
    with pytest.raises(ValueError, match="^steps must be >= 0"):
        model(patches, visible, steps=-2)
    with pytest.raises(ValueError, match="^steps must be >= 0"):
        model.run(patches, visible, -1)
    with pytest.raises(TypeError, match="^trajectory must be .*4 expected"):
        model.to_images(torch.randn(2, 196, 4))
    with pytest.raises(TypeError, match=r"^trajectory must be .*\{self.dim\}=4"):
        model.to_images(torch.randn(2, 1, 196, 5))


def test_paste_visible_arguments():
    images = torch.rand(2, 4, 4)
    visible = torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(TypeError, match=r"^images must be Float\[Tensor, 'B H W'\].*size of "
                                        r"dimension W is 4 which does not equal the existing "
                                        r"value of 5"):
        paste_visible(torch.rand(2, 4, 5), images, visible, 2)
    with pytest.raises(TypeError, match=r"^predictions must be .*fewer than 3"):
        paste_visible(torch.rand(4, 4), images, visible, 2)
    with pytest.raises(TypeError, match=r"^visible must be Bool\[Tensor, 'B N'\].*B is 3"):
        paste_visible(images, images, torch.ones(3, 4, dtype=torch.bool), 2)
    with pytest.raises(TypeError, match=r"^visible must be Bool\[Tensor, 'B N'\], got f32"):
        paste_visible(images, images, visible.float(), 2)
    with pytest.raises(ValueError, match=r"^visible must have shape \(B, N\) = \(2, 4\)"):
        paste_visible(images, images, torch.ones(2, 3, dtype=torch.bool), 2)
    with pytest.raises(ValueError, match="^patch_size must be >= 1"):
        paste_visible(images, images, visible, 0)
    with pytest.raises(TypeError, match="^images must be"):
        paste_visible(images, None, visible, 2)
    with pytest.raises(TypeError, match="^images has dtype torch.float64 but predictions"):
        paste_visible(images, images.double(), visible, 2)


def test_training_and_checkpoint_arguments(tmp_path):
    model = MaskedEnergyTransformer(TINY)
    images = torch.rand(4, 28, 28)
    with pytest.raises(TypeError, match="^model must be .*MaskedEnergyTransformer"):
        masked_loss(torch.nn.Linear(2, 2), images)
    with pytest.raises(TypeError, match="^model must be .*MaskedEnergyTransformer"):
        train_masked(EnergyTransformer(4), images)
    with pytest.raises(TypeError, match="^images must be .*2 dimensions, not the 3 expected"):
        train_masked(model, torch.rand(28, 28))
    with pytest.raises(ValueError, match=r"^images must hold at least one image \(B >= 1\)"):
        train_masked(model, torch.rand(0, 28, 28))
    with pytest.raises(ValueError, match="^lr must be > 0"):
        train_masked(model, images, lr=0.0)
    with pytest.raises(ValueError, match="^batch_size must be >= 1"):
        train_masked(model, images, batch_size=0)
    with pytest.raises(ValueError, match="^seed must be >= 0"):
        train_masked(model, images, seed=-1)
    with pytest.raises(ValueError, match="^steps_per_epoch must be >= 1"):
        train_masked(model, images, steps_per_epoch=0)
    with pytest.raises(ValueError, match="^epochs must be >= 1"):
        train_masked(model, images, epochs=0, progress=False)
    with pytest.raises(ValueError, match="^fraction must be < 1"):
        masked_loss(model, images, fraction=1.0)
    with pytest.raises(ValueError, match=r"^images must hold at least one image"):
        masked_loss(model, torch.rand(0, 28, 28))  # before: a NaN loss
    with pytest.raises(TypeError, match="^model must be .*MaskedEnergyTransformer"):
        save_masked(EnergyTransformer(4), tmp_path / "x.pt")
    with pytest.raises(TypeError, match="^name_or_path must be"):
        load_masked(3)


def test_grid_encoding_arguments():
    with pytest.raises(ValueError, match="^side must be >= 1"):
        grid_encoding(0, 8)
    with pytest.raises(ValueError, match="^dim must be >= 2"):
        grid_encoding(4, 1)
    with pytest.raises(TypeError, match="^dim must be int"):
        grid_encoding(4, 8.0)
