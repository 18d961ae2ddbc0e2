"""seqbook.attractor.storage: the trained bare model in a few megabytes, its curves intact."""

import pytest
import torch

from seqbook.attractor import (
    BareSelfAttention,
    compress_couplings,
    expand_couplings,
    load_bare,
    save_bare,
)
from seqbook.attractor.baselines import CHECKPOINTS


def _couplings(N=12, d=3, seed=0):
    """Blocks of very different sizes, as long training leaves them."""
    g = torch.Generator().manual_seed(seed)
    sizes = 10.0 ** torch.linspace(-12, 1, N * N, dtype=torch.float64).view(N, N, 1, 1)
    J = (torch.randn(N, N, d, d, generator=g, dtype=torch.float64) * sizes).float()
    J[torch.arange(N), torch.arange(N)] = 0.0
    return J


def test_every_block_is_stored_to_its_own_precision():
    J = _couplings()
    stored = compress_couplings(J)
    assert stored["codes"].dtype == torch.int8 and stored["scales"].shape == (12, 12)
    back = expand_couplings(stored)
    bound = J.abs().amax((2, 3), keepdim=True) / 254 * (1 + 1e-5)
    assert ((back - J).abs() <= bound).all()  # the tiny blocks too
    assert (back[J.abs() > 0].sign() == J[J.abs() > 0].sign()).float().mean() > 0.9
    # float16 flushes the tiny blocks: a single format would lose them
    assert ((J.half().float() - J).abs() > bound).any()


def test_save_and_load_round_trip(tmp_path):
    model = BareSelfAttention(6, 2, gamma=2.0)
    with torch.no_grad():
        model.J.copy_(_couplings(6, 2))
    path = save_bare(model, tmp_path / "m.pt", dict(epochs=7, table=torch.arange(3.0)))
    loaded, info = load_bare(path)
    assert loaded.gamma == 2.0 and loaded.num_tokens == 6
    assert (loaded.J - model.J).abs().max() <= model.J.abs().max() / 254 * (1 + 1e-5)
    assert info["epochs"] == 7 and torch.equal(info["table"], torch.arange(3.0))


def test_the_committed_checkpoint_is_small_and_reproduces_its_tables():
    path = CHECKPOINTS / "bare.pt"
    assert path.stat().st_size < 3_000_000  # a few megabytes
    model, info = load_bare("bare")
    assert (model.num_tokens, model.dim, model.lam, model.gamma) == (196, 8, 1.0, 1.0)
    assert info["epochs"] == 20 and info["batch_size"] == 32 and len(info["seeds"]) == 3
    assert info["epochs_per_seed"] == [20, 3, 3]
    # the stored couplings rerun within 1e-4 of the tables (all sets, both tasks)
    assert info["compression_gap"] < 1e-4
    reached = [
        k for k, step in enumerate(info["snapshot_steps"])
        if step <= 3 * info["steps_per_epoch"]
    ]
    assert torch.isfinite(info["curves"][:, reached, :2]).all()  # attention and uniform, every seed
    assert torch.isfinite(info["curves"][0, :, :2]).all()  # seed 0 at every snapshot
    assert torch.isnan(info["curves"][1:, len(reached):]).all()  # the others stop at epoch 3


def test_bad_input(tmp_path):
    with pytest.raises(TypeError, match=r"^J must be Float\[Tensor, 'N N d d'\], got f32\[3,3,2\]"):
        compress_couplings(torch.zeros(3, 3, 2))
    with pytest.raises(ValueError, match="made by compress_couplings"):
        expand_couplings({"shape": torch.tensor([3, 2])})
    with pytest.raises(TypeError, match="BareSelfAttention"):
        save_bare(torch.nn.Linear(2, 2), tmp_path / "x.pt")
    with pytest.raises(FileNotFoundError, match="--bare"):
        load_bare(tmp_path / "missing.pt")
