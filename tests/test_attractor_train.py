"""python -m seqbook.attractor.train --bare: the bare model's training script and its tables."""

from pathlib import Path

import pytest
import torch

from seqbook.attractor import load_bare, save_bare
from seqbook.attractor.train import (
    BARE_VARIANTS,
    hebbian_split,
    load_bare4,
    load_per_block,
    main,
    parse_args,
)
from seqbook.provenance import read_provenance


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
    # in this process (the command line's entry point is tested once, on the baselines);
    # one seed's run, and a second seed's file made from it (a second smoke run would
    # repeat the same work: its tables only need the first run's layout)
    main(["--bare", "--smoke", "--seeds", "0", "--out", str(tmp_path / "0")])
    other, info = load_bare(tmp_path / "0" / "bare.pt")
    with torch.no_grad():
        other.J.add_(1.0)  # other couplings, which the merge drops
    save_bare(other, tmp_path / "1" / "bare.pt", {**info, "seeds": [1], "cpu_seconds": [2.0]})
    main(["--merge", str(tmp_path / "0" / "bare.pt"), str(tmp_path / "1" / "bare.pt"),
          "--out", str(tmp_path)])
    model, info = load_bare(tmp_path / "bare.pt")
    assert info["seeds"] == [0, 1] and info["snapshot_labels"] == ["untrained", "epoch 1"]
    curves = info["curves"]  # (seeds, snapshots, variants, tasks, sets, steps + 1)
    assert curves.shape == (2, 2, len(BARE_VARIANTS), 2, 1, 4)
    assert torch.isfinite(curves[:, :, :2]).all()  # attention and uniform: always
    assert torch.isfinite(curves[:, -1]).all()  # every variant at the end
    assert torch.isnan(curves[:, 0, 2:]).all()  # the others only there
    first, _ = load_bare(tmp_path / "0" / "bare.pt")
    assert torch.equal(model.J, first.J)  # the first file's couplings
    assert info["cpu_seconds"][1] == 2.0 and torch.allclose(curves[0], curves[1], equal_nan=True)


def _single_run(path, seed, snapshot_steps, steps):
    """A bare.pt as one seed of train_bare writes it, with tables that say where they come from."""
    from seqbook.attractor import BareSelfAttention, save_bare

    K = len(snapshot_steps)
    model = BareSelfAttention(3, 2, generator=torch.Generator().manual_seed(seed))
    curves = torch.tensor(snapshot_steps, dtype=torch.float32).view(1, K, 1, 1).expand(1, K, 2, 3)
    return save_bare(model, path, dict(
        epochs=len(snapshot_steps), batch_size=32, lr=5.0, train_size=64,
        steps_per_epoch=2, seeds=[seed], cpu_seconds=[1.0 + seed], compression_gap=0.1 * seed,
        variants=["attention"], tasks=["mask", "denoise"], snapshot_steps=snapshot_steps,
        epochs_per_seed=[len(snapshot_steps)], snapshot_labels=[str(s) for s in snapshot_steps],
        curves=curves.clone(),
        mode_image=torch.full((1, K, 2, 2), float(seed)).half(),
        step_loss=torch.arange(steps, dtype=torch.float32)[None],
    ))


def test_merge_pads_a_shorter_run_with_nan(tmp_path):
    from seqbook.attractor.train import merge_bare

    long = _single_run(tmp_path / "0.pt", 0, [0, 2, 6], 6)
    short = _single_run(tmp_path / "1.pt", 1, [0, 2], 2)
    model, info = load_bare(merge_bare([long, short], tmp_path / "merged"))
    assert info["seeds"] == [0, 1] and info["epochs_per_seed"] == [3, 2]
    assert info["cpu_seconds"] == [1.0, 2.0] and info["snapshot_steps"] == [0, 2, 6]
    assert info["compression_gaps"] == [0.0, 0.1]
    curves = info["curves"]  # (seeds, snapshots, tasks, 3)
    assert curves.shape == (2, 3, 2, 3)
    assert torch.equal(curves[0, :, 0, 0], torch.tensor([0.0, 2.0, 6.0]))
    assert torch.equal(curves[1, :2, 0, 0], torch.tensor([0.0, 2.0]))
    assert torch.isnan(curves[1, 2]).all()
    assert torch.isnan(info["mode_image"][1, 2]).all() and (info["mode_image"][1, :2] == 1).all()
    assert torch.equal(info["step_loss"][1, :2], torch.tensor([0.0, 1.0]))
    assert torch.isnan(info["step_loss"][1, 2:]).all()
    first, _ = load_bare(long)
    assert torch.equal(model.J, first.J)


def test_merge_refuses_runs_that_do_not_fit(tmp_path):
    from seqbook.attractor.train import merge_bare

    long = _single_run(tmp_path / "0.pt", 0, [0, 2], 2)
    other = _single_run(tmp_path / "1.pt", 1, [0, 3], 3)
    with pytest.raises(ValueError, match="snapshots"):
        merge_bare([long, other], tmp_path / "merged")


def test_merge_and_extend_refuse_runs_of_another_recipe(tmp_path):
    from seqbook.attractor.train import extend_bare, merge_bare

    first = _single_run(tmp_path / "0.pt", 0, [0, 2], 2)
    other = _single_run(tmp_path / "1.pt", 1, [0, 2], 2)
    checkpoint = torch.load(other, weights_only=True)
    checkpoint["info"]["lr"] = 1.0
    torch.save(checkpoint, other)
    with pytest.raises(ValueError, match=r"1\.pt differs from .*0\.pt in lr"):
        merge_bare([first, other], tmp_path / "merged")
    with pytest.raises(ValueError, match=r"1\.pt differs from .*0\.pt in lr"):
        extend_bare(first, other, tmp_path / "extended")
    later = _single_run(tmp_path / "2.pt", 0, [0, 4], 4)
    with pytest.raises(ValueError,
                       match=r"2\.pt has snapshots \[0, 4\], not among .*0\.pt's \[0, 2\]"):
        extend_bare(first, later, tmp_path / "extended")


def test_extend_fills_in_a_seed_trained_further(tmp_path):
    from seqbook.attractor.train import extend_bare, merge_bare

    long = _single_run(tmp_path / "0.pt", 0, [0, 2, 6], 6)
    short = _single_run(tmp_path / "1.pt", 1, [0, 2], 2)
    base = merge_bare([long, short], tmp_path / "merged")
    further = _single_run(tmp_path / "1b.pt", 1, [6], 6)  # seed 1, measured at step 6 only
    _, before = load_bare(base)
    model, info = load_bare(extend_bare(base, further, tmp_path / "extended"))
    curves = info["curves"]  # each entry: the step of its snapshot
    assert torch.equal(curves[0], before["curves"][0])  # seed 0 untouched
    assert curves[1, 0].eq(0).all() and curves[1, 1].eq(2).all()  # seed 1 kept
    assert curves[1, 2].eq(6).all()  # and filled in
    assert torch.equal(info["step_loss"][1], torch.arange(6.0))
    assert info["cpu_seconds"] == [1.0, 2.0] and info["epochs_per_seed"] == [3, 1]


def test_the_bare4_script_writes_its_table(tmp_path):
    (path,) = main(["--bare4", "--smoke", "--seeds", "3", "--out", str(tmp_path)])
    (row,) = load_bare4(path)
    assert row["seed"] == 3 and len(row["step_loss"]) == 2  # 64 digits, batches of 32
    assert len(row["variance"]) == len(row["cosine"]) == 1  # one evaluation set
    assert 0 < row["variance"][0] < 1 and 0.9 < row["cosine"][0] <= 1
    assert read_provenance(path)[-1]["command"].startswith(
        "python -m seqbook.attractor.train --bare4")


def test_the_committed_bare4_table_has_five_seeds_on_three_sets():
    rows = load_bare4()
    assert [row["seed"] for row in rows] == [4, 5, 6, 7, 8]
    for row in rows:  # one epoch of 1,000 digits in batches of 32
        assert len(row["step_loss"]) == 32
        assert len(row["variance"]) == len(row["cosine"]) == 3
    with pytest.raises(FileNotFoundError, match="--bare4"):
        load_bare4(Path("missing.json"))


@pytest.mark.slow
def test_the_per_block_control_runs_and_is_summarised(tmp_path):
    (path,) = main(["--bare", "--per-block", "--smoke", "--seeds", "0", "--out", str(tmp_path)])
    _, info = load_bare(path)
    assert info["per_block"] is True
    assert torch.isnan(info["curves"][0, -1, 2:]).all()  # attention and uniform only
    (summary,) = main(["--summarise", str(path), "--out", str(tmp_path)])
    table = load_per_block(summary)
    assert table["per_block"] is True and table["tasks"] == ["mask", "denoise"]
    assert [row["label"] for row in table["rows"]] == ["untrained", "epoch 1"]
    row = table["rows"][-1]
    assert len(row["mean_curve"]) == 2 and len(row["mean_curve"][0]) == 4  # 3 steps
    assert len(row["best_t_attention"][0]) == 1  # one evaluation set
    assert 0 < row["share_top_n"] <= 1 and len(row["mu"]) == 2
    assert read_provenance(summary)[-1]["command"].startswith(
        "python -m seqbook.attractor.train --summarise")


def test_the_committed_per_block_control():
    table = load_per_block()
    assert table["per_block"] is True and table["lr"] == 5.0 and table["batch_size"] == 32
    labels = {(row["seed"], row["label"]) for row in table["rows"]}
    assert {(0, "32 steps"), (0, "epoch 3")} <= labels
    with pytest.raises(FileNotFoundError, match="--per-block"):
        load_per_block(Path("missing.json"))
