"""seqbook.experiments.capacity_compared: the Hopfield chapter's capacity table."""

import torch

from seqbook.experiments.capacity_compared import (
    DIM,
    MEMORY_SETTINGS,
    RESULTS,
    SEEDS,
    SIZES,
    capacity_grid,
    capacity_run,
    load_capacity_table,
    main,
)
from seqbook.provenance import read_provenance


def test_the_committed_table_has_every_memory_size_seed_and_cue():
    config, curves = load_capacity_table()
    assert config["sizes"] == list(SIZES) and config["seeds"] == len(SEEDS)
    assert list(curves) == list(MEMORY_SETTINGS)
    for name, curve in curves.items():
        assert curve.memory == MEMORY_SETTINGS[name]["memory"] and curve.dim == DIM
        assert curve.errors.shape == (len(SIZES), len(SEEDS), 8)
        assert ((curve.errors >= 0) & (curve.errors <= 1)).all()
    assert read_provenance(RESULTS)[-1]["command"] == (
        "python -m seqbook.experiments.capacity_compared --threads 1")


def test_a_live_run_repeats_the_first_sizes_of_its_seed():
    # integer overlaps and float64 energies: the same bit errors on any CPU kernels
    _, table = load_capacity_table()
    live = capacity_run(3, sizes=SIZES[:2])
    for name, curve in live.items():
        if name == "classical":  # drawn first: the same patterns and cues
            assert torch.equal(curve.errors, table[name].errors[:2, 3:4])
        assert curve.errors.shape == (2, 1, 8)


def test_the_grid_stacks_the_seeds_as_trials():
    grid = capacity_grid([0, 1], sizes=[8, 16])
    runs = [capacity_run(seed, sizes=[8, 16]) for seed in (0, 1)]
    for name, curve in grid.items():
        assert torch.equal(curve.errors, torch.cat([r[name].errors for r in runs], 1))


def test_a_smoke_run_writes_a_readable_table(tmp_path):
    out = main(["--smoke", "--out", str(tmp_path / "capacity.json")])
    config, curves = load_capacity_table(out)
    assert config["seeds"] == 2 and curves["exponential"].errors.shape == (2, 2, 8)
    assert read_provenance(out)[-1]["command"].endswith("--smoke --out " + str(out))
