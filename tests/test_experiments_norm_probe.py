"""seqbook.experiments.norm_probe: the Transformer chapter's pre-/post-norm probe table."""

import numpy as np
import pytest
import torch

from seqbook.experiments.norm_probe import (
    DEPTHS,
    FORMS,
    RESULTS,
    SEEDS,
    load_norm_probe,
    main,
    probe_grid,
    stack_probe,
)
from seqbook.provenance import made_here, read_provenance


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """As the table was computed: one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_committed_table_has_every_seed_depth_and_form():
    config, grid = load_norm_probe()
    assert config["depths"] == list(DEPTHS) and config["seeds"] == len(SEEDS)
    assert sorted(grid) == sorted(FORMS)
    for form in grid.values():
        for key in ("change", "top_grad", "stream"):
            assert form[key].shape == (len(SEEDS), len(DEPTHS)) and (form[key] > 0).all()
        for key in ("grads", "w2_grads"):
            assert form[key].shape == (len(SEEDS), max(DEPTHS)) and (form[key] > 0).all()
        # the last block's gradient of the deepest stack is its per-block gradient's last
        assert np.allclose(form["top_grad"][:, -1], form["grads"][:, -1], rtol=1e-6)
    assert read_provenance(RESULTS)[-1]["command"] == (
        "python -m seqbook.experiments.norm_probe --threads 1")


def test_a_live_probe_repeats_its_row_of_the_table():
    # the same float32 operations: to the table's 7 digits on the machine that made
    # it, and (measured on the portable kernels) to 1e-6 on others
    _, grid = load_norm_probe()
    rtol = 1e-6 if made_here(RESULTS, threads=1) else 1e-4
    for depth_index, depth in enumerate(DEPTHS[:3]):
        for name, norm_first in FORMS.items():
            change, grads, stream, w2 = stack_probe(norm_first, depth, seed=5)
            row = {key: grid[name][key][5] for key in grid[name]}
            assert change == pytest.approx(row["change"][depth_index], rel=rtol)
            assert stream == pytest.approx(row["stream"][depth_index], rel=rtol)
            assert grads[-1].item() == pytest.approx(row["top_grad"][depth_index], rel=rtol)


def test_the_probe_moves_the_output_and_measures_every_block():
    change, grads, stream, w2 = stack_probe(False, 3, d=8, seed=1)
    assert 0 < change < 1 and stream > 0
    assert grads.shape == w2.shape == (3,) and (w2 <= grads).all()
    grid = probe_grid([1], depths=[3])
    assert grid["post-norm"]["change"][0, 0] == pytest.approx(stack_probe(False, 3, seed=1)[0])


def test_a_smoke_run_writes_a_readable_table(tmp_path):
    out = main(["--smoke", "--out", str(tmp_path / "probe.json")])
    config, grid = load_norm_probe(out)
    assert config["seeds"] == 2 and grid["pre-norm"]["grads"].shape == (2, 2)
    assert read_provenance(out)[-1]["command"].endswith("--smoke --out " + str(out))
