"""Multi-query associative recall: the task, the run, and the committed table."""

import pytest
import torch

from seqbook.experiments.recall import (
    AssociativeRecallTask,
    load_recall_table,
    main,
    recall_run,
)


def test_each_query_asks_for_the_value_stored_with_its_key():
    task = AssociativeRecallTask(num_pairs=5, num_keys=8, num_values=6)
    ids, targets = task(50, torch.Generator().manual_seed(0))
    assert ids.shape == targets.shape == (50, 15)
    for row, target in zip(ids, targets):
        keys, values = row[0:10:2], row[1:10:2]
        assert len(set(keys.tolist())) == 5 and (keys < 8).all()
        assert ((values >= 8) & (values < 14)).all()
        assert sorted(row[10:].tolist()) == sorted(keys.tolist())  # every key asked once
        stored = dict(zip(keys.tolist(), values.tolist()))
        assert target[10:].tolist() == [stored[k] for k in row[10:].tolist()]
        assert (target[:10] == -100).all()


def test_the_task_repeats_with_its_generator_and_checks_its_arguments():
    task = AssociativeRecallTask(3)
    a = task(4, torch.Generator().manual_seed(1))
    b = task(4, torch.Generator().manual_seed(1))
    assert all((x == y).all() for x, y in zip(a, b))
    with pytest.raises(ValueError, match="num_keys must be >= num_pairs = 10"):
        AssociativeRecallTask(num_pairs=10, num_keys=4)
    with pytest.raises(ValueError, match="num_pairs"):
        AssociativeRecallTask(0)
    with pytest.raises(TypeError, match="generator"):
        task(4, 0)
    with pytest.raises(ValueError, match="mixer"):
        recall_run("rwkv", 2, steps=1)
    with pytest.raises(ValueError, match="steps"):
        recall_run("lstm", 2, steps=0)
    # named as recall_run's arguments, and found before training rather than after
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        recall_run("lstm", 2, steps=1, batch_size=0)
    with pytest.raises(ValueError, match="eval_sequences must be >= 1"):
        recall_run("lstm", 2, steps=1, eval_sequences=0)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        task(0, torch.Generator())


def test_attention_learns_a_small_instance_and_an_untrained_guess_is_chance():
    trained = recall_run("softmax", 2, d_model=32, steps=400, eval_sequences=256)
    assert trained.accuracy > 0.9, trained
    assert trained.state_floats == 2 * 6 * 32  # the KV cache after 3N = 6 tokens
    untrained = recall_run("lstm", 2, d_model=8, steps=1, eval_sequences=256)
    assert untrained.accuracy < 0.2  # chance is 1/64


def test_the_committed_table_has_every_model_at_three_seeds():
    rows = load_recall_table()
    mixers = {r["mixer"] for r in rows}
    assert mixers == {"softmax", "linear", "delta", "mamba", "mlstm", "lstm", "gru"}
    cells = {}
    for r in rows:
        cells.setdefault((r["mixer"], r["num_pairs"], r["d_model"], r["steps"]), []).append(
            r["seed"])
    assert all(len(seeds) >= 3 for seeds in cells.values())
    assert {p for (_, p, d, _) in cells if d == 64} >= {4, 8, 16, 32}
    assert all(0 <= r["accuracy"] <= 1 for r in rows)


def test_the_script_runs_and_merges(tmp_path):
    out = tmp_path / "recall.csv"
    main(["--smoke", "--out", str(out)])
    main(["--mixers", "gru", "--pairs", "2", "--widths", "--seeds", "0", "--steps", "5",
          "--out", str(out)])
    rows = load_recall_table(out)
    assert {r["mixer"] for r in rows} == {"softmax", "lstm", "gru"}
    with pytest.raises(FileNotFoundError, match="python -m seqbook.experiments.recall"):
        load_recall_table(tmp_path / "none.csv")
