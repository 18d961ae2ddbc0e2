"""seqbook.experiments.coincidence_study: the LSTM chapter's ten-seed coincidence table."""

import math

import pytest
import torch

from seqbook.experiments import CoincidenceTask
from seqbook.experiments.coincidence_study import (
    RESULTS,
    TOY_SEEDS,
    CoincidenceRecord,
    blocks_alone,
    coincidence_run,
    coincidence_test_set,
    load_coincidence_table,
    main,
    one_block_probe,
    twin_sequences,
)
from seqbook.experiments.results import load_table
from seqbook.provenance import made_here, read_provenance


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """As the table was computed: one thread, denormals flushed."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    yield
    torch.set_num_threads(threads)
    torch.set_flush_denormal(False)


def test_the_committed_table_has_every_seed_of_one_and_two_blocks():
    table = load_coincidence_table()
    assert sorted((row.blocks, row.seed) for row in table) == sorted(
        (blocks, seed) for blocks in (1, 2) for seed in TOY_SEEDS)
    for row in table:
        assert row.max_steps == 400 and 0 <= row.accuracy <= 1
        assert row.solved or row.steps == 400
        one = [row.input_gate, row.jump_ratio, row.accuracy_cut]
        two = [row.block_1_alone, row.block_2_alone]
        assert not any(map(math.isnan, one if row.blocks == 1 else two))
        assert all(map(math.isnan, two if row.blocks == 1 else one))
    assert read_provenance(RESULTS)[-1]["command"] == (
        "python -m seqbook.experiments.coincidence_study --threads 1")


def test_a_live_run_repeats_its_row_on_the_machine_that_made_the_table():
    if not made_here(RESULTS, threads=1):
        pytest.skip("another machine rounds differently")
    row = min((r for r in load_coincidence_table() if r.blocks == 2 and r.solved),
              key=lambda r: r.steps)  # the quickest run
    model, result = coincidence_run(2, row.seed)
    assert (result.steps, result.solved) == (row.steps, row.solved)
    assert result.accuracy == pytest.approx(row.accuracy, rel=1e-5)
    alone = blocks_alone(model, *coincidence_test_set())
    assert alone == pytest.approx([row.block_1_alone, row.block_2_alone], rel=1e-5)


def test_the_probes_measure_the_twin_sequences():
    task = CoincidenceTask(20)
    twin = twin_sequences(task, step=5)
    assert twin.shape == (2, 20, 3) and torch.equal(twin[0, :5], twin[1, :5])
    model, _ = coincidence_run(1, seed=0, task=task, max_steps=25)
    x_test, y_test = coincidence_test_set(task)
    probe = one_block_probe(model, twin, x_test, y_test, step=5)
    assert 0 < probe["input_gate"] < 1 and 0 <= probe["cell_input"] < 1
    assert probe["jump_ratio"] > 0 and 0 <= probe["accuracy_cut"] <= 1
    two, _ = coincidence_run(2, seed=0, task=task, max_steps=25)
    assert all(0 <= a <= 1 for a in blocks_alone(two, x_test, y_test))


def test_a_smoke_run_writes_a_readable_table(tmp_path):
    out = tmp_path / "coincidence.csv"
    records = main(["--smoke", "--seeds", "3", "--out", str(out)])
    assert [(r.blocks, r.seed, r.max_steps) for r in records] == [(1, 3, 25), (2, 3, 25)]
    read = load_table(out, CoincidenceRecord)
    assert [(r.blocks, r.steps) for r in read] == [(1, 25), (2, 25)]
    assert read_provenance(out)[-1]["command"].startswith(
        "python -m seqbook.experiments.coincidence_study --smoke")
