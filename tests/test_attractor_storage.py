"""seqbook.attractor.storage: the trained bare model in a few hundred kilobytes."""

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


def _sparse_plus_low_rank(N=12, d=3, pairs=5, rank=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    left, right = torch.randn(N * d, rank, generator=g), torch.randn(N * d, rank, generator=g)
    left[N * d // 2 :] = 0.0  # tokens i < N/2 ...
    right[: N * d // 2] = 0.0  # ... coupled to tokens j >= N/2: no diagonal block
    J = (0.01 * left @ right.T).view(N, d, N, d).permute(0, 2, 1, 3).contiguous()
    for k in range(pairs):
        J[k, (k + 1) % N] += 3.0 * torch.randn(d, d, generator=g)
    J[torch.arange(N), torch.arange(N)] = 0.0
    return J


def test_strong_pairs_and_a_low_rank_rest_are_stored_to_float16_precision():
    J = _sparse_plus_low_rank()
    stored = compress_couplings(J, pairs=5, rank=2)
    assert stored["blocks"].dtype == torch.float16 and stored["left"].shape == (36, 2)
    assert (expand_couplings(stored) - J).abs().max() < 2e-3 * J.abs().max()  # float16
    too_small = expand_couplings(compress_couplings(J, pairs=2, rank=2))
    assert (too_small - J).abs().max() > 0.1  # the missing strong pairs are lost


def test_save_and_load_round_trip(tmp_path):
    model = BareSelfAttention(6, 2, gamma=2.0)
    with torch.no_grad():
        model.J.copy_(_sparse_plus_low_rank(6, 2, pairs=3, rank=1))
    path = save_bare(model, tmp_path / "m.pt", pairs=3, rank=1, epochs=7, table=torch.arange(3.0))
    loaded, info = load_bare(path)
    assert loaded.gamma == 2.0 and loaded.num_tokens == 6
    assert (loaded.J - model.J).abs().max() < 2e-3 * model.J.abs().max()
    assert info["epochs"] == 7 and torch.equal(info["table"], torch.arange(3.0))


def test_the_committed_checkpoint_is_small_and_loads():
    path = CHECKPOINTS / "bare.pt"
    assert path.stat().st_size < 500_000  # a few hundred kilobytes
    model, info = load_bare("bare")
    assert (model.num_tokens, model.dim, model.lam, model.gamma) == (196, 8, 1.0, 1.0)
    assert info["epochs"] == 20 and info["batch_size"] == 32 and len(info["seeds"]) == 3
    assert info["epochs_per_seed"] == [20, 1, 1]
    # after one epoch the compression is harmless; after 20 the dynamics is sensitive (float16
    # rounding of J alone moved the curves of seed 0 by about 2e-3), so the chapter reads
    # the tables measured before compression and uses the stored model for its couplings
    assert max(info["compression_gaps"][1:]) < 1e-3 and info["compression_gap"] < 1e-2
    reached = [
        k for k, step in enumerate(info["snapshot_steps"]) if step <= info["steps_per_epoch"]
    ]
    assert torch.isfinite(info["curves"][:, reached, :2]).all()  # attention and uniform, every seed
    assert torch.isfinite(info["curves"][0, :, :2]).all()  # seed 0 at every snapshot
    assert torch.isnan(info["curves"][1:, len(reached):]).all()  # the short seeds stop at epoch 1


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"J must be a tensor of shape \(N, N, d, d\)"):
        compress_couplings(torch.zeros(3, 3, 2))
    with pytest.raises(ValueError, match="pairs must be >= 1"):
        compress_couplings(torch.zeros(3, 3, 2, 2), pairs=0)
    with pytest.raises(ValueError, match="made by compress_couplings"):
        expand_couplings({"shape": torch.tensor([3, 2])})
    with pytest.raises(TypeError, match="BareSelfAttention"):
        save_bare(torch.nn.Linear(2, 2), tmp_path / "x.pt")
    with pytest.raises(FileNotFoundError, match="--bare"):
        load_bare(tmp_path / "missing.pt")
