"""Tests of the dense associative memory classifier (Krotov & Hopfield, 2016)."""

import math

import numpy as np
import pytest
import torch

from seqbook.hopfield.feature_prototype import (
    DEGREES,
    INIT_MEANS,
    TEMPERATURES,
    load_results,
    main,
    parse_grid,
)
from seqbook.hopfield.recognition import (
    class_means,
    dam_class_scores,
    digits_pm1,
    prototype_score,
    train_dam_classifier,
)


def _scores_by_state(memories, pixels, degree, temperature):
    """The paper's eq. 9 written out: the energy of the full state, class neuron on/off."""
    Nv = pixels.shape[1]
    Nc = memories.shape[1] - Nv
    out = torch.empty(len(pixels), Nc, dtype=memories.dtype)
    for b, v in enumerate(pixels):
        for alpha in range(Nc):
            on = torch.cat([v, -torch.ones(Nc, dtype=v.dtype)])
            on[Nv + alpha] = 1.0
            off = torch.cat([v, -torch.ones(Nc, dtype=v.dtype)])
            F_on = torch.relu(memories @ on) ** degree
            F_off = torch.relu(memories @ off) ** degree
            out[b, alpha] = torch.tanh((F_on - F_off).sum() / temperature**degree)
    return out


@pytest.mark.parametrize("degree", [1, 2, 3, 7])
def test_scores_match_the_full_state_formula(degree):
    g = torch.Generator().manual_seed(0)
    memories = torch.rand(6, 9 + 4, generator=g, dtype=torch.float64) * 2 - 1
    pixels = torch.rand(5, 9, generator=g, dtype=torch.float64) * 2 - 1
    fast = dam_class_scores(memories, pixels, degree, 3.0)
    slow = _scores_by_state(memories, pixels, degree, 3.0)
    assert torch.allclose(fast, slow, atol=1e-12)


def test_prototype_score_is_the_largest_pearson_correlation():
    g = torch.Generator().manual_seed(1)
    memories = torch.randn(4, 12, generator=g, dtype=torch.float64)
    means = torch.randn(3, 10, generator=g, dtype=torch.float64)
    expected = [max(np.corrcoef(m[:10].numpy(), c.numpy())[0, 1] for c in means)
                for m in memories]
    assert np.allclose(prototype_score(memories, means).numpy(), expected)
    # a memory equal to a class mean (up to scale and offset) scores 1
    assert prototype_score(3 * means[1:2] + 2, means).item() == pytest.approx(1.0)


def test_class_means_and_split():
    train_x, train_y, test_x, test_y = digits_pm1(400)
    assert train_x.shape == (4000, 784) and test_x.shape == (1000, 784)
    assert torch.bincount(train_y).tolist() == [400] * 10
    assert torch.bincount(test_y).tolist() == [100] * 10
    assert float(train_x.min()) == -1.0 and float(train_x.max()) == 1.0
    means = class_means(train_x, train_y)
    assert torch.allclose(means[3], train_x[train_y == 3].mean(0))


@pytest.mark.slow
def test_training_learns_a_separable_task_and_stays_clipped():
    g = torch.Generator().manual_seed(0)
    prototypes = torch.sign(torch.randn(3, 20, generator=g))
    labels = torch.arange(3).repeat(20)
    flips = torch.rand(60, 20, generator=g) < 0.1
    pixels = torch.where(flips, -prototypes[labels], prototypes[labels])
    xi, history = train_dam_classifier(
        pixels, labels, degree=3, temperature=10.0, num_memories=6, epochs=12,
        batch_size=20, test=(pixels, labels), class_means=prototypes,
        generator=torch.Generator().manual_seed(0))
    assert xi.shape == (6, 23) and xi.abs().max() <= 1.0
    assert history.train_error[-1] < history.train_error[0]
    assert history.test_error[-1] < 0.1
    assert len(history.prototype) == 12


def test_training_is_reproducible_from_its_generator():
    x = torch.tensor([[1.0, -1.0], [-1.0, 1.0]]).repeat(4, 1)
    y = torch.tensor([0, 1]).repeat(4)
    runs = [train_dam_classifier(x, y, degree=2, temperature=2.0, num_memories=3,
                                 epochs=3, batch_size=4,
                                 generator=torch.Generator().manual_seed(5))[0]
            for _ in range(2)]
    assert torch.equal(runs[0], runs[1])


def test_bad_input():
    xi = torch.zeros(3, 6)
    with pytest.raises(TypeError, match="^memories must be"):
        dam_class_scores("no", torch.zeros(1, 4), 2, 1.0)
    with pytest.raises(ValueError, match=r"pixels must hold values in \[-1, 1\], got values "
                                         r"from 2"):
        dam_class_scores(xi, torch.full((1, 4), 2.0), 2, 1.0)
    with pytest.raises(ValueError, match="more columns"):
        dam_class_scores(xi, torch.zeros(1, 6), 2, 1.0)
    with pytest.raises(ValueError, match="degree"):
        dam_class_scores(xi, torch.zeros(1, 4), 0, 1.0)
    with pytest.raises(ValueError, match="temperature"):
        dam_class_scores(xi, torch.zeros(1, 4), 2, 0.0)
    with pytest.raises(TypeError, match="^pixels has dtype torch.float64 but memories has dtype"):
        dam_class_scores(xi, torch.zeros(1, 4, dtype=torch.float64), 2, 1.0)
    with pytest.raises(ValueError, match=r"^class_means must have at most as many columns as "
                                         r"memories \(P <= M = 3\), got shape \(2, 5\)"):
        prototype_score(torch.zeros(2, 3), torch.zeros(2, 5))
    with pytest.raises(TypeError, match="^labels must be .* the size of dimension S is 2"):
        class_means(torch.zeros(3, 2), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="every class"):
        class_means(torch.zeros(2, 2), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="train_per_class"):
        digits_pm1(500)
    x, y = torch.zeros(4, 2), torch.tensor([0, 1, 0, 1])
    with pytest.raises(TypeError, match=r"^labels must be Int\[Tensor, 'B'\], got i64\[3\].* "
                                        r"existing value of 4"):
        train_dam_classifier(x, y[:3], degree=2, temperature=1.0)
    with pytest.raises(TypeError, match=r"^labels must be Int\[Tensor, 'B'\], got f32"):
        train_dam_classifier(x, y.float(), degree=2, temperature=1.0)
    with pytest.raises(ValueError, match="momentum"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, momentum=1.5)
    with pytest.raises(TypeError, match="^test must be tuple"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, test=x)


def test_bad_labels_are_named():
    x, y = torch.zeros(4, 2), torch.tensor([0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^labels must hold classes >= 0, got values "
                                         r"from -1 to 0"):
        train_dam_classifier(x, y - 1, degree=2, temperature=1.0)
    with pytest.raises(ValueError, match=r"^labels must hold classes >= 0"):
        class_means(torch.zeros(2, 2), torch.tensor([0, -1]))
    with pytest.raises(ValueError, match=r"^labels must hold at least one label, got shape \(0,\)"):
        class_means(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long))
    # refused before a torch error (labels.max() of no labels, test labels of another length)
    with pytest.raises(ValueError, match=r"^labels must hold at least one label"):
        train_dam_classifier(x[:0], y[:0], degree=2, temperature=1.0)
    with pytest.raises(ValueError, match=r"^test labels must have one label per test image "
                                         r"\(B = 4\), got shape \(3,\)"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, epochs=1, test=(x, y[:3]))
    with pytest.raises(ValueError, match=r"^test pixels must have shape \(B, 2\), got \(4, 3\)"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, test=(torch.zeros(4, 3), y))
    with pytest.raises(ValueError, match=r"^test pixels must hold values in \[-1, 1\]"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, test=(x + 2, y))
    with pytest.raises(ValueError, match=r"^test labels must hold classes >= 0"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, test=(x, y - 1))
    with pytest.raises(TypeError, match="test labels must have an integer dtype"):
        train_dam_classifier(x, y, degree=2, temperature=1.0, test=(x, y.float()))
    # NaN pixels: before, NaN scores and a memory of NaNs
    with pytest.raises(ValueError, match=r"pixels must be finite \(no NaN or inf\)"):
        train_dam_classifier(x * math.nan, y, degree=2, temperature=1.0)
    with pytest.raises(ValueError, match=r"pixels must be finite \(no NaN or inf\)"):
        dam_class_scores(torch.zeros(3, 4), torch.full((1, 2), math.nan), 2, 1.0)


def test_committed_results_are_consistent():
    config, runs, memories = load_results()
    settings = {(r["degree"], r["temperature"]) for r in runs}
    assert settings == {(n, T) for n, temperatures in TEMPERATURES.items() for T in temperatures}
    assert len(runs) == 3 * len(settings) and set(DEGREES.items()) <= settings
    assert all(len(r["prototype_per_epoch"]) == config["epochs"] for r in runs)
    assert all(r["init_mean"] == INIT_MEANS.get(r["degree"], config["init_mean"]) for r in runs)
    assert sorted(memories) == sorted(TEMPERATURES)
    for n, xi in memories.items():
        assert xi.shape[1] == 784 + 10 and xi.abs().max() <= 1.0


def test_script_smoke(tmp_path):
    table = main(["--smoke", "--degrees", "2", "30", "--seeds", "0", "--out", str(tmp_path)])
    _, runs, _ = load_results(table)
    assert [(r["degree"], r["temperature"]) for r in runs] == [
        (n, T) for n in (2, 30) for T in TEMPERATURES[n]]
    assert len(load_results(table)[2][2]) == 5


def test_script_grid_smoke(tmp_path):
    table = main(["--smoke", "--grid", "2:300,540", "20:540", "--seeds", "0",
                  "--init-mean", "0", "20:-0.3", "--out", str(tmp_path)])
    config, runs, memories = load_results(table)
    assert [(r["degree"], r["temperature"]) for r in runs] == [(2, 300), (2, 540), (20, 540)]
    assert config["init_mean"] == 0 and sorted(memories) == [2, 20]
    assert [r["init_mean"] for r in runs] == [0, 0, -0.3]
    assert all(0 <= r["train_error"] <= 1 and len(r["train_error_per_epoch"]) == 2
               for r in runs)
    with pytest.raises(ValueError, match="grid must hold"):
        parse_grid(["2:"])
