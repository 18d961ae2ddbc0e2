import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.losses import (
    cross_entropy,
    entropy,
    kl_divergence,
    label_smoothing_loss,
    smoothed_targets,
)


def random_distributions(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g) * 2, dim=-1)


def test_cross_entropy_is_entropy_plus_kl():
    p, q = random_distributions(5, 7, seed=0), random_distributions(5, 7, seed=1)
    assert torch.allclose(cross_entropy(p, q), entropy(p) + kl_divergence(p, q), atol=1e-6)
    assert (kl_divergence(p, q) > 0).all()
    assert torch.allclose(kl_divergence(p, p), torch.zeros(5), atol=1e-6)
    assert torch.allclose(cross_entropy(p, p), entropy(p))


def test_cross_entropy_of_one_hot_is_negative_log_likelihood():
    q = random_distributions(4, 6)
    target = torch.tensor([0, 5, 2, 2])
    p = F.one_hot(target, 6).float()
    assert torch.allclose(cross_entropy(p, q), -q.log().gather(1, target[:, None])[:, 0])
    assert torch.allclose(entropy(p), torch.zeros(4))


def test_zero_probabilities():
    p = torch.tensor([0.5, 0.5, 0.0])
    q = torch.tensor([0.5, 0.5, 0.0])
    assert cross_entropy(p, q).item() == pytest.approx(math.log(2))
    assert math.isinf(cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])).item())


def test_smoothed_targets():
    p = smoothed_targets(torch.tensor([[1, 3]]), 4, 0.1)
    assert p.shape == (1, 2, 4)
    assert torch.allclose(p.sum(-1), torch.ones(1, 2))
    assert p[0, 0, 1].item() == pytest.approx(0.9 + 0.1 / 4)
    assert p[0, 0, 0].item() == pytest.approx(0.1 / 4)
    assert torch.equal(smoothed_targets(torch.tensor([2]), 3, 0.0), torch.tensor([[0.0, 0.0, 1.0]]))


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("ignore_index", [-100, 0])
def test_label_smoothing_equals_torch(epsilon, ignore_index):
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 9) * 4
    target = torch.randint(1, 9, (3, 5))
    target[1, 3:] = ignore_index
    ours = label_smoothing_loss(logits, target, epsilon, ignore_index)
    expected = F.cross_entropy(
        logits.reshape(-1, 9), target.reshape(-1), label_smoothing=epsilon,
        ignore_index=ignore_index,
    )
    assert torch.allclose(ours, expected, atol=1e-6)


def test_label_smoothing_is_cross_entropy_with_smoothed_targets_and_has_gradients():
    torch.manual_seed(1)
    logits = torch.randn(6, 5, requires_grad=True)
    target = torch.randint(0, 5, (6,))
    loss = label_smoothing_loss(logits, target, 0.2)
    manual = cross_entropy(smoothed_targets(target, 5, 0.2), torch.softmax(logits, -1)).mean()
    assert torch.allclose(loss, manual, atol=1e-6)
    loss.backward()
    # d loss / d z = (softmax(z) - p') / N
    expected = (torch.softmax(logits, -1) - smoothed_targets(target, 5, 0.2)) / 6
    assert torch.allclose(logits.grad, expected.detach(), atol=1e-6)


def test_optimal_logit_gap_is_finite_with_smoothing():
    # the minimiser of H(p', softmax(z)) is softmax(z) = p': a finite gap
    C, epsilon = 5, 0.1
    p = smoothed_targets(torch.tensor([0]), C, epsilon)
    z = p.log().requires_grad_()
    label_smoothing_loss(z, torch.tensor([0]), epsilon).backward()
    assert torch.allclose(z.grad, torch.zeros_like(z), atol=1e-6)
    gap = (z[0, 0] - z[0, 1]).item()
    assert gap == pytest.approx(math.log((1 - epsilon + epsilon / C) / (epsilon / C)))


def test_bad_input():
    # shapes and dtypes are types: a TypeError whose first words name the argument
    with pytest.raises(TypeError, match=r"^p must be Float\[Tensor, '\*batch C'\]"):
        entropy(torch.tensor(1.0))
    with pytest.raises(TypeError, match=r"^q must be .*the size of dimension C is 3"):
        kl_divergence(torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.25, 0.25]))
    with pytest.raises(TypeError, match=r"^q must be "):
        cross_entropy(torch.ones(2, 3) / 3, torch.ones(3, 3) / 3)
    with pytest.raises(TypeError, match=r"^p must be .*dtype int64"):
        entropy(torch.tensor([1, 0]))
    with pytest.raises(TypeError, match=r"^q has dtype torch.float64 but p has"):
        cross_entropy(torch.ones(3) / 3, torch.ones(3, dtype=torch.float64) / 3)
    with pytest.raises(ValueError, match="epsilon"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0, 1]), 1.5)
    with pytest.raises(TypeError, match=r"^target must be "):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0, 1, 2]), 0.1)
    with pytest.raises(ValueError, match="ignore_index"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([-100, -100]), 0.1)
    with pytest.raises(ValueError, match="class indices"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0, 3]), 0.1)
    with pytest.raises(TypeError, match=r"^target must be .*dtype float32"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0.0, 1.0]), 0.1)
    with pytest.raises(ValueError, match=r"logits must score at least 2 classes"):
        label_smoothing_loss(torch.randn(2, 1), torch.tensor([0, 0]), 0.1)
    with pytest.raises(ValueError, match="reduction"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0, 1]), 0.1, reduction="avg")
    with pytest.raises(ValueError, match="num_classes"):
        smoothed_targets(torch.tensor([0]), 1, 0.1)
    with pytest.raises(ValueError, match="class indices"):
        smoothed_targets(torch.tensor([4]), 3, 0.1)
    with pytest.raises(TypeError, match="missing a required argument: 'epsilon'"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0, 1]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.7])
def test_float64_equals_torch_to_float64_accuracy(reduction, epsilon):
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(4, 6, 11, dtype=torch.float64, generator=g) * 3
    target = torch.randint(0, 11, (4, 6), generator=g)
    target[2, 4:] = -100
    ours = label_smoothing_loss(logits, target, epsilon, reduction=reduction)
    expected = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1),
                               label_smoothing=epsilon, reduction=reduction)
    assert ours.dtype == torch.float64
    assert torch.allclose(ours, expected.reshape(ours.shape), rtol=1e-13, atol=1e-14)
    if reduction == "none":
        assert (ours[2, 4:] == 0).all()


def test_smoothed_targets_in_float64_are_exact():
    p = smoothed_targets(torch.tensor([1, 0]), 3, 0.1, dtype=torch.float64)
    assert p.dtype == torch.float64
    assert p[0, 1].item() == 1 - 0.1 + 0.1 / 3 and p[0, 0].item() == 0.1 / 3


def test_float64_divergences_equal_torch():
    p = random_distributions(5, 7, seed=3).double()
    q = random_distributions(5, 7, seed=4).double()
    kl = kl_divergence(p, q)
    expected = F.kl_div(q.log(), p, reduction="none").sum(-1)
    assert kl.dtype == torch.float64
    assert torch.allclose(kl, expected, rtol=1e-13, atol=1e-15)
    expected_h = -(p * q.log()).sum(-1)
    assert torch.allclose(cross_entropy(p, q), expected_h, rtol=1e-13, atol=1e-15)
    assert torch.allclose(entropy(p), -(p * p.log()).sum(-1), rtol=1e-13, atol=1e-15)


def test_mixed_dtypes_and_reductions_are_checked():
    p = random_distributions(2, 3)
    with pytest.raises(TypeError, match="q has dtype torch.float64 but p has dtype torch.float32"):
        kl_divergence(p, p.double())
    with pytest.raises(ValueError, match="reduction must be one of"):
        label_smoothing_loss(torch.randn(2, 3), torch.tensor([0, 1]), 0.1, reduction="batchmean")
    with pytest.raises(TypeError, match="dtype must be a floating-point"):
        smoothed_targets(torch.tensor([0]), 3, 0.1, dtype=torch.long)
    all_ignored = torch.tensor([-100, -100])
    assert label_smoothing_loss(torch.randn(2, 3), all_ignored, 0.1, reduction="sum") == 0


def test_distributions_are_the_callers_contract():
    # the values of p and q are not checked on every call (no per-call allclose): the
    # formulas apply as written, so a distribution must be normalised by its maker
    p = random_distributions(3, 4)
    assert torch.allclose(p.sum(-1), torch.ones(3))
    unnormalised = torch.tensor([0.5, 0.6])
    assert cross_entropy(unnormalised, torch.tensor([0.5, 0.5])).item() == pytest.approx(
        1.1 * math.log(2))
