"""seqbook.attractor.baselines and the training script seqbook.attractor.train."""

import subprocess
import sys

import pytest
import torch

from seqbook.attractor import (
    CHECKPOINTS,
    BaselineConfig,
    PatchEmbedding,
    RecurrentTransformer,
    VisionTransformer,
    build_baseline,
    corrupt,
    load_baseline,
    mnist_split,
    save_baseline,
    train_baseline,
)
from seqbook.attractor.train import main, parse_args

TINY = dict(d_model=8, num_heads=2, d_ff=16)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_recurrent_block_reuses_one_block_and_runs_every_iteration():
    torch.manual_seed(0)
    model = RecurrentTransformer(BaselineConfig(**TINY)).eval()
    s = PatchEmbedding(4).spins(torch.rand(3, 28, 28, generator=_gen()))
    images = model.run(s, 4)
    assert images.shape == (4, 3, 28, 28) and images.min() >= 0 and images.max() <= 1
    with torch.no_grad():
        for t in (1, 3):
            assert torch.allclose(images[t - 1], model.to_image(model(s, steps=t)), atol=1e-6)
    assert len(list(model.children())) == 3  # embed, unembed, one block


def test_vit_has_num_layers_blocks_and_positional_information():
    torch.manual_seed(0)
    model = VisionTransformer(BaselineConfig("vit", num_layers=3, **TINY)).eval()
    assert len(model.blocks) == 3
    s = torch.zeros(2, 49, 32)  # identical tokens: only the positions differ
    out = model(s)
    assert out.shape == (2, 49, 16)
    assert not torch.allclose(out[0, 0], out[0, 1])


def test_corrupt_matches_the_tasks():
    images = torch.rand(2, 28, 28, generator=_gen())
    embedding = PatchEmbedding(4)
    s, visible = corrupt(images, "mask", embedding, generator=_gen(1))
    assert visible.sum().item() == 2 * (49 - round(0.3 * 49))
    assert (s[~visible] == 0).all()
    s, visible = corrupt(images, "denoise", embedding, generator=_gen(1))
    assert visible is None and s.shape == (2, 49, 32)


def test_training_lowers_the_error_and_checkpoints_round_trip(tmp_path):
    train, _ = mnist_split(64, 1)
    torch.manual_seed(0)
    model = build_baseline(BaselineConfig(**TINY))
    history = train_baseline(model, train, "denoise", epochs=3, batch_size=32, lr=3e-3,
                             progress=False)
    assert history.epoch_loss[-1] < history.epoch_loss[0]
    path = save_baseline(model.eval(), tmp_path / "m.pt", task="denoise", epochs=3)
    loaded, info = load_baseline(path)
    assert info == {"task": "denoise", "epochs": 3}
    s = PatchEmbedding(4).spins(train[:4])
    with torch.no_grad():  # saved as float16: equal to rounding
        assert torch.allclose(loaded(s, 3), model(s, 3), atol=2e-2)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", ["block_mask", "block_denoise", "vit_mask", "vit_denoise"])
def test_committed_checkpoints_load_and_are_small(name, seed):
    name = name + (f"_seed{seed}" if seed else "")  # the file names train --seed writes
    path = CHECKPOINTS / f"{name}.pt"
    assert path.stat().st_size < 500_000
    model, info = load_baseline(name)
    kind, task = name.split("_")[:2]
    assert model.config.kind == kind and info["task"] == task and info["seed"] == seed
    assert not model.training


def test_seed_names_the_checkpoint(tmp_path):
    main(["--smoke", "--model", "block", "--task", "denoise", "--seed", "2",
          "--out", str(tmp_path)])
    assert load_baseline(tmp_path / "block_denoise_seed2.pt")[1]["seed"] == 2


def test_the_training_script_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "seqbook.attractor.train", "--smoke", "--model", "vit",
         "--task", "mask", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    model, info = load_baseline(tmp_path / "vit_mask.pt")
    assert info["train_size"] == 64 and len(model.blocks) == 2
    assert parse_args(["--all"]).all and parse_args([]).epochs == 30


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of 'block', 'vit'"):
        build_baseline(BaselineConfig(kind="rnn"))
    with pytest.raises(ValueError, match="image_size must be a multiple of patch_size = 5"):
        RecurrentTransformer(BaselineConfig(patch_size=5, **TINY))
    model = RecurrentTransformer(BaselineConfig(**TINY))
    with pytest.raises(TypeError, match=r"^s must be .*the dimension size 196 does not equal "
                                        r"the existing value of \{self.num_tokens\}=49"):
        model(torch.rand(2, 196, 8))
    with pytest.raises(ValueError, match="steps must be >= 1"):
        model(torch.rand(2, 49, 32), steps=0)
    with pytest.raises(ValueError, match="task"):
        corrupt(torch.rand(1, 28, 28), "inpaint", PatchEmbedding(4))
    with pytest.raises(FileNotFoundError, match="python -m seqbook.attractor.train"):
        load_baseline(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match="max_steps must be >= min_steps = 3"):
        train_baseline(model, torch.rand(4, 28, 28), "mask", min_steps=3, max_steps=2)


@pytest.mark.parametrize("make", [
    lambda: RecurrentTransformer(BaselineConfig(**TINY)),
    lambda: VisionTransformer(BaselineConfig("vit", num_layers=2, **TINY)),
    lambda: PatchEmbedding(4),
], ids=["block", "vit", "embedding"])
def test_a_forward_hook_on_every_submodule_fires(make):
    # every submodule is called as a module (module(x)), never through a private method
    model = make().eval()
    fired = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda m, args, out, name=name: fired.add(name))
    images = torch.rand(2, 28, 28, generator=_gen())
    model(images if isinstance(model, PatchEmbedding) else PatchEmbedding(4).spins(images))
    assert fired == {name for name, module in model.named_modules()
                     if not isinstance(module, torch.nn.ModuleList)}  # a list is not called
