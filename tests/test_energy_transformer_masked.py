"""The Energy Transformer on masked digits: tokens, decoding, loss, training, checkpoints."""

from __future__ import annotations

import pytest
import torch

from seqbook.attractor import image_to_patches, mask_tokens, mnist_split, patches_to_image
from seqbook.energy_transformer import (
    CHECKPOINTS,
    MaskedConfig,
    MaskedEnergyTransformer,
    load_masked,
    masked_loss,
    paste_visible,
    save_masked,
    train_masked,
)
from seqbook.energy_transformer.train import (
    comparison_masks,
    load_bare_comparison,
    main,
)
from seqbook.provenance import read_provenance

TINY = MaskedConfig(dim=8, num_heads=1, head_dim=4, num_memories=16, steps=3)


def _model(config=TINY, seed=0):
    return MaskedEnergyTransformer(config, generator=torch.Generator().manual_seed(seed))


def _batch(B=4, seed=0):
    images = torch.rand(B, 28, 28, generator=torch.Generator().manual_seed(seed))
    patches = image_to_patches(images, 2)
    _, visible = mask_tokens(patches, 0.3, torch.Generator().manual_seed(seed))
    return images, patches, visible


def test_masked_tokens_are_the_mask_token_plus_their_position():
    model = _model()
    _, patches, visible = _batch()
    x0 = model.tokens(patches, visible)
    expected_masked = (model.mask_token + model.position).expand_as(x0)[~visible]
    torch.testing.assert_close(x0[~visible], expected_masked)
    expected_visible = (model.encoder(patches) + model.position)[visible]
    torch.testing.assert_close(x0[visible], expected_visible)
    # what a masked patch held is never seen
    torch.testing.assert_close(model.tokens(patches * visible[..., None], visible), x0)


def test_forward_is_the_decoded_last_state_of_run():
    model = _model()
    _, patches, visible = _batch()
    with torch.no_grad():
        trajectory = model.run(patches, visible, TINY.steps)
        torch.testing.assert_close(model(patches, visible), model.decode(trajectory[-1]))
        images = model.to_images(trajectory)
    assert trajectory.shape == (TINY.steps + 1, 4, 196, 8)
    assert images.shape == (TINY.steps + 1, 4, 28, 28)
    assert images.min() >= 0 and images.max() <= 1


def test_paste_visible_keeps_the_visible_patches_of_the_clean_image():
    images, patches, visible = _batch()
    guess = torch.rand(2, 4, 28, 28)
    mixed = paste_visible(guess, images, visible, 2)
    mixed_patches = image_to_patches(mixed.flatten(0, 1), 2).view(2, 4, 196, 4)
    guess_patches = image_to_patches(guess.flatten(0, 1), 2).view(2, 4, 196, 4)
    for s in range(2):
        torch.testing.assert_close(mixed_patches[s][visible], patches[visible])
        torch.testing.assert_close(mixed_patches[s][~visible], guess_patches[s][~visible])
    # error of the pasted image = error of the masked patches * their share of pixels
    error = ((mixed[0] - images) ** 2).mean()
    masked_error = ((guess_patches[0] - patches)[~visible] ** 2).mean()
    share = (~visible).float().mean()
    torch.testing.assert_close(error, masked_error * share)


def test_masked_loss_is_the_masked_plus_the_visible_patches_error():
    model = _model()
    images, _, _ = _batch()
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    loss = masked_loss(model, images, 0.3, g1)
    patches = image_to_patches(images, 2)
    _, visible = mask_tokens(patches, 0.3, g2)
    with torch.no_grad():
        predicted = model(patches, visible)
    error = (predicted - patches) ** 2
    expected = error[~visible].mean() + error[visible].mean()
    torch.testing.assert_close(loss.detach(), expected)
    assert error[~visible].mean() != error[visible].mean()


@pytest.mark.slow
def test_training_lowers_the_loss_on_digits():
    train, _ = mnist_split(128, 1)
    model = _model()
    history = train_masked(model, train, epochs=4, batch_size=32, lr=1e-2, progress=False)
    assert history.epoch_loss[-1] < 0.8 * history.epoch_loss[0]


def test_save_and_load_round_trip(tmp_path):
    model = _model()
    path = save_masked(model, tmp_path / "m.pt", seed=3)
    loaded, info = load_masked(path)
    assert info == {"seed": 3} and loaded.config == TINY and not loaded.training
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor, atol=1e-3, rtol=1e-3)


def test_load_names_a_missing_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="seqbook.energy_transformer.train"):
        load_masked(tmp_path / "nothing.pt")


@pytest.mark.slow
def test_committed_checkpoints_load_and_fill_in_digits():
    names = sorted(p.stem for p in CHECKPOINTS.glob("et_seed*.pt"))
    assert len(names) >= 3, names
    _, test = mnist_split(1, 64)
    patches = image_to_patches(test, 2)
    _, visible = mask_tokens(patches, 0.3, torch.Generator().manual_seed(0))
    for name in names:
        model, info = load_masked(name)
        assert CHECKPOINTS.joinpath(f"{name}.pt").stat().st_size < 200_000
        with torch.no_grad():
            predicted = model(patches, visible)
        error = ((predicted.clamp(0, 1) - patches)[~visible] ** 2).mean()
        blank = (patches[~visible] ** 2).mean()  # predicting paper everywhere
        assert error < 0.6 * blank, (name, error, blank)
        assert info["final_loss"] < info["epoch_loss"][0]


@pytest.mark.slow
def test_training_script_smoke(tmp_path):
    paths = main(["--smoke", "--seeds", "0", "--out", str(tmp_path)])
    model, info = load_masked(paths[0])
    assert info["seed"] == 0 and model.config.dim == 4
    assert info["cpu_seconds"] >= 0 and len(info["step_loss"]) == 2


def test_patches_to_image_round_trip_of_the_decoder_shape():
    model = _model()
    _, patches, visible = _batch()
    with torch.no_grad():
        pixels = model(patches, visible)
    assert patches_to_image(pixels, 2, 28, 28).shape == (4, 28, 28)


def test_a_given_generator_replays_a_run_whatever_the_seed_shift(monkeypatch):
    train, _ = mnist_split(64, 1)

    def run(shift: str) -> list[float]:
        monkeypatch.setenv("SEQBOOK_SEED_SHIFT", shift)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = MaskedEnergyTransformer(TINY, generator=torch.Generator().manual_seed(0))
            history = train_masked(model, train, epochs=1, batch_size=16, progress=False,
                                   generator=torch.Generator().manual_seed(0))
        return history.step_loss

    assert run("0") == run("2")
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "2")
    with pytest.raises(TypeError, match="^generator must be"):
        train_masked(_model(), train, generator=0)


@pytest.mark.slow
def test_bare_comparison_script_smoke(tmp_path):
    (path,) = main(["--bare", "--smoke", "--seeds", "0", "1", "--out", str(tmp_path)])
    rows = load_bare_comparison(path)
    assert [row.seed for row in rows] == [0, 1]
    row = rows[0]
    assert row.curve.shape == row.pasted.shape == row.energy.shape == (4,)
    assert row.movement.shape == (3,) and len(row.step_loss) == 2
    assert row.largest_rise < 0 and row.rises == 0  # the energy falls
    assert read_provenance(path)[-1]["command"].endswith(f"--out {tmp_path}")


def test_committed_bare_comparison_has_five_seeds_of_the_chapter_run():
    rows = load_bare_comparison()
    assert [row.seed for row in rows] == [0, 1, 2, 3, 4]
    for row in rows:  # 20 iterations; one epoch of 1,000 digits in batches of 32
        assert row.curve.shape == row.pasted.shape == row.energy.shape == (21,)
        assert row.movement.shape == (20,) and len(row.step_loss) == 32
        assert int(row.curve.argmin()) == 1  # the bare model's best is at t = 1
    with pytest.raises(FileNotFoundError, match="--bare"):
        load_bare_comparison(CHECKPOINTS / "missing.json")


def test_comparison_masks_are_the_same_whatever_the_seed_shift(monkeypatch):
    spins = torch.nn.functional.normalize(torch.randn(3, 196, 8), dim=-1)
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "0")
    _, visible0 = comparison_masks(spins)
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "3")
    masked, visible3 = comparison_masks(spins)
    assert torch.equal(visible0, visible3)
    assert visible3.sum(-1).tolist() == [137] * 3  # round(0.7 * 196) visible
    assert masked[~visible3].abs().sum() == 0


def test_train_masked_records_an_eval_fn_after_every_epoch():
    train, _ = mnist_split(64, 1)
    calls = []

    def score(model):
        calls.append(model.training)
        return {"norm": float(model.decoder.weight.norm())}

    history = train_masked(_model(), train, epochs=2, batch_size=32, progress=False,
                           eval_fn=score)
    assert calls == [False, False] and len(history.metrics["norm"]) == 2


@pytest.mark.slow
def test_resume_script_smoke_continues_a_checkpoint(tmp_path):
    (path,) = main(["--resume", "et_seed0", "--smoke", "--out", str(tmp_path)])
    assert path.name == "et_seed0_continued.pt"
    model, info = load_masked(path)
    first = load_masked("et_seed0")[1]
    assert info["resumed_from"] == "et_seed0" and info["seed"] == 0
    assert info["first_step_loss"] == first["step_loss"] and len(info["step_loss"]) == 2
    assert set(info["scores"]) == {"best", "best_t", "fill_best", "mean_fill"}
    assert all(len(v) == 1 for v in info["scores"].values())
    start = info["start_scores"]
    assert start["best"] < 1.1 * start["mean_fill"]  # the committed seed 0
    assert "--resume" in read_provenance(path)[-1]["command"]


def test_committed_continued_checkpoint_records_its_run():
    model, info = load_masked("et_seed0_continued")
    first = load_masked("et_seed0")[1]
    assert info["resumed_from"] == "et_seed0" and info["first_epochs"] == first["epochs"]
    per_epoch = len(first["step_loss"]) // first["epochs"]
    assert len(info["step_loss"]) == info["epochs"] * per_epoch
    assert all(len(v) == info["epochs"] for v in info["scores"].values())
    assert model.config == load_masked("et_seed0")[0].config
    record = read_provenance(CHECKPOINTS / "et_seed0_continued.pt")[-1]
    assert "--resume et_seed0" in record["command"]
