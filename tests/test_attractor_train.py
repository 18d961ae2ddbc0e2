"""python -m seqbook.attractor.train --bare: the bare model's training script and its tables."""

import subprocess
import sys

import pytest
import torch

from seqbook.attractor import load_bare
from seqbook.attractor.train import BARE_VARIANTS, hebbian_split, parse_args


def test_bare_defaults_are_the_papers():
    args = parse_args(["--bare"])
    assert (args.epochs, args.batch_size, args.lr, args.seeds) == (20, 32, 5.0, [0, 1, 2])
    baselines = parse_args([])
    assert (baselines.epochs, baselines.batch_size) == (30, 64)


def test_hebbian_split_is_a_projection():
    g = torch.Generator().manual_seed(0)
    J, H = torch.randn(3, 3, 2, 2, generator=g), torch.randn(3, 3, 2, 2, generator=g)
    along, rest = hebbian_split(J, H)
    assert torch.allclose(along + rest, J)
    assert abs((rest * H).sum().item()) < 1e-5  # the rest is orthogonal to H


@pytest.mark.slow
def test_the_bare_script_runs_and_merges(tmp_path):
    for seed in (0, 1):
        result = subprocess.run(
            [sys.executable, "-m", "seqbook.attractor.train", "--bare", "--smoke",
             "--seeds", str(seed), "--out", str(tmp_path / str(seed))],
            capture_output=True, text=True, timeout=900,
        )
        assert result.returncode == 0, result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "seqbook.attractor.train", "--merge",
         str(tmp_path / "0" / "bare.pt"), str(tmp_path / "1" / "bare.pt"), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    model, info = load_bare(tmp_path / "bare.pt")
    assert info["seeds"] == [0, 1] and info["snapshot_labels"] == ["untrained", "epoch 1"]
    curves = info["curves"]  # (seeds, snapshots, variants, tasks, sets, steps + 1)
    assert curves.shape == (2, 2, len(BARE_VARIANTS), 2, 1, 4)
    assert torch.isfinite(curves[:, :, :2]).all()  # attention and uniform: always
    assert torch.isfinite(curves[:, -1]).all()  # every variant at the end
    assert torch.isnan(curves[:, 0, 2:]).all()  # the others only there
    first, _ = load_bare(tmp_path / "0" / "bare.pt")
    assert torch.equal(model.J, first.J)  # the first file's couplings
