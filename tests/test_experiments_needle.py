"""seqbook.experiments.needle: the Hopfield chapter's bags with needles, over 20 seeds."""

import math

import pytest
import torch

from seqbook.experiments.needle import (
    NEEDLE_COUNTS,
    POOLINGS,
    RESULTS,
    SEEDS,
    BagClassifier,
    D,
    NeedleRecord,
    T,
    load_needle_table,
    main,
    make_bags,
    needle_run,
    order_change,
    pooling_weights,
)
from seqbook.experiments.results import load_table
from seqbook.provenance import read_provenance
from seqbook.utils import seeded_generator


def test_the_committed_table_has_every_seed_needle_count_and_pooling():
    table = load_needle_table()
    assert sorted((r.seed, r.needles, r.pooling) for r in table) == sorted(
        (s, k, p) for s in SEEDS for k in NEEDLE_COUNTS for p in POOLINGS)
    for row in table:
        assert 0 <= row.accuracy <= 1 and row.order_change >= 0 and row.logit_size > 0
        hopfield = row.pooling == "Hopfield pooling"
        assert math.isnan(row.weight_on_needles) != hopfield
        assert math.isnan(row.top_on_needle) != hopfield
    assert read_provenance(RESULTS)[-1]["command"] == (
        "python -m seqbook.experiments.needle --threads 1")


def test_bags_hide_their_needles_in_positive_bags_only():
    motif = torch.zeros(D)
    motif[0] = 1.0
    bags, y, needles = make_bags(50, 3, motif, seeded_generator(1))
    assert bags.shape == (50, T, D) and set(y.tolist()) <= {0.0, 1.0}
    assert torch.equal(needles.sum(1), 3 * y.long())
    noise, _, _ = make_bags(50, 3, torch.zeros(D), seeded_generator(1))
    assert torch.allclose(bags - noise, 4.0 * needles[..., None] * motif)


def test_the_classifiers_score_bags_and_pooling_ignores_their_order():
    bags = torch.randn(5, T, D, generator=seeded_generator(2))
    order = torch.randperm(T, generator=seeded_generator(3))
    for pooling in POOLINGS:
        model = BagClassifier(pooling).eval()
        assert model(bags).shape == (5,)
        if pooling != "LSTM":
            assert order_change(model, bags, order) < 1e-5
    with pytest.raises(ValueError, match="pooling must be one of"):
        BagClassifier("max pooling")


@pytest.mark.parametrize("pooling", POOLINGS)
def test_a_forward_hook_on_every_submodule_fires_on_a_call_of_the_classifier(pooling):
    model = BagClassifier(pooling)
    fired = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda m, args, out, name=name: fired.add(name))
    model(torch.randn(3, T, D))
    assert fired == {name for name, _ in model.named_modules()}


def test_bad_bags_are_refused():
    with pytest.raises(TypeError, match="^bags must be"):
        BagClassifier("mean pooling")(torch.randn(3, T, D + 1))
    with pytest.raises(ValueError, match="motif must have shape"):
        make_bags(4, 1, torch.ones(D + 1), seeded_generator(0))
    with pytest.raises(ValueError, match="k must be <= 64"):
        make_bags(4, T + 1, torch.ones(D), seeded_generator(0))


def test_the_pooling_weights_of_positive_bags_sum_to_one():
    bags, y, needles = make_bags(20, 1, torch.ones(D) / D**0.5, seeded_generator(4))
    p, where = pooling_weights(BagClassifier("Hopfield pooling").eval(), bags, y, needles)
    assert p.shape == where.shape == (int(y.sum()), T)
    assert torch.allclose(p.sum(1), torch.ones(len(p)))


def test_a_smoke_run_writes_a_readable_table(tmp_path):
    out = tmp_path / "needle.csv"
    records = main(["--smoke", "--seeds", "3", "--out", str(out)])
    assert [(r.seed, r.needles, r.pooling) for r in records] == [
        (3, k, p) for k in NEEDLE_COUNTS for p in POOLINGS]
    read = load_table(out, NeedleRecord)  # floats to 6 digits, NaN where none
    assert [(r.seed, r.needles, r.pooling) for r in read] == [
        (r.seed, r.needles, r.pooling) for r in records]
    assert [r.accuracy for r in read] == pytest.approx([r.accuracy for r in records])
    assert read_provenance(out)[-1]["command"].endswith("--smoke --seeds 3 --out " + str(out))


def test_a_run_returns_its_models_and_test_sets():
    rows, models, tests = needle_run(0, needle_counts=[1], epochs=1, num_train=50,
                                     num_test=20)
    assert sorted(models) == sorted((1, p) for p in POOLINGS)
    assert [row.accuracy for row in rows] == [
        ((models[1, p](tests[1][0]) > 0).float() == tests[1][1]).float().mean().item()
        for p in POOLINGS]


def test_a_skipped_classifier_leaves_the_others_runs_unchanged():
    options = dict(needle_counts=[1, 16], epochs=1, num_train=50, num_test=20)
    rows, _, _ = needle_run(0, **options)
    kept, models, _ = needle_run(0, skip=[(1, "LSTM")], **options)
    assert (1, "LSTM") not in models and len(kept) == len(rows) - 1
    assert [(r.needles, r.pooling, r.accuracy) for r in kept] == [
        (r.needles, r.pooling, r.accuracy) for r in rows
        if (r.needles, r.pooling) != (1, "LSTM")]
