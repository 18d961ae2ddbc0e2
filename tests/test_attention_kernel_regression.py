import pytest
import torch

from seqbook.attention import KERNELS, kernel_function, nadaraya_watson


def test_kernels_match_their_definitions():
    u = torch.linspace(0, 2, 21)
    assert torch.allclose(kernel_function(u, "gaussian"), torch.exp(-u**2 / 2))
    assert torch.equal(kernel_function(u, "boxcar"), (u <= 1).float())
    assert torch.allclose(kernel_function(u, "epanechnikov"), (1 - u**2).clamp(min=0))
    assert torch.allclose(kernel_function(u, "triangular"), (1 - u).clamp(min=0))


@pytest.mark.parametrize("kernel", KERNELS)
def test_weights_are_convex_and_predictions_are_weighted_means(kernel):
    torch.manual_seed(0)
    keys = torch.sort(torch.rand(40) * 5).values
    values = torch.sin(keys)
    queries = torch.linspace(0.5, 4.5, 30)
    predictions, weights = nadaraya_watson(queries, keys, values, kernel, bandwidth=0.6)
    assert weights.shape == (30, 40) and predictions.shape == (30,)
    assert (weights >= 0).all()
    assert torch.allclose(weights.sum(1), torch.ones(30), atol=1e-6)
    assert torch.allclose(predictions, weights @ values, atol=1e-6)
    # the estimate never leaves the range of the values it averages
    assert predictions.min() >= values.min() - 1e-6 and predictions.max() <= values.max() + 1e-6


@pytest.mark.parametrize("kernel", KERNELS)
def test_matches_the_formula_with_explicit_kernels(kernel):
    torch.manual_seed(1)
    keys, values, queries = torch.randn(10, 2), torch.randn(10, 3), torch.randn(4, 2)
    h = 3.0  # wide enough that every query has neighbours under every kernel
    distance = (queries[:, None] - keys[None]).norm(dim=-1) / h  # (N, M)
    alpha = kernel_function(distance, kernel)
    expected_weights = alpha / alpha.sum(1, keepdim=True)
    predictions, weights = nadaraya_watson(queries, keys, values, kernel, bandwidth=h)
    assert torch.allclose(weights, expected_weights, atol=1e-6)
    assert torch.allclose(predictions, expected_weights @ values, atol=1e-6)
    assert predictions.shape == (4, 3)


def test_bandwidth_limits_are_lookup_and_average():
    keys = torch.tensor([0.0, 1.0, 2.0, 3.0])
    values = torch.tensor([5.0, -1.0, 2.0, 7.0])
    near, _ = nadaraya_watson(torch.tensor([1.1]), keys, values, bandwidth=0.01)
    assert torch.allclose(near, torch.tensor([-1.0]))
    wide, _ = nadaraya_watson(torch.tensor([1.1]), keys, values, bandwidth=1e4)
    assert torch.allclose(wide, values.mean().reshape(1), atol=1e-4)


def test_gaussian_does_not_underflow_far_from_the_data():
    keys = torch.tensor([0.0, 1.0])
    values = torch.tensor([1.0, 3.0])
    predictions, weights = nadaraya_watson(torch.tensor([100.0]), keys, values, bandwidth=0.1)
    assert torch.isfinite(predictions).all() and predictions.item() == pytest.approx(3.0)


def test_compact_kernel_without_neighbours_gives_zero_weights():
    keys = torch.tensor([0.0, 1.0])
    values = torch.tensor([1.0, 3.0])
    predictions, weights = nadaraya_watson(torch.tensor([10.0]), keys, values, "boxcar", 1.0)
    assert torch.equal(weights, torch.zeros(1, 2)) and predictions.item() == 0.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(kernel="cosine"), ValueError, "kernel"),
        (dict(bandwidth=0.0), ValueError, "bandwidth"),
        (dict(bandwidth=-1.0), ValueError, "bandwidth"),
        (dict(bandwidth="1"), TypeError, "bandwidth"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    x = torch.linspace(0, 1, 5)
    with pytest.raises(error, match=match):
        nadaraya_watson(x, x, x, **kwargs)


def test_bad_shapes():
    x = torch.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="same size D"):
        nadaraya_watson(torch.randn(3, 2), torch.randn(5, 3), x)
    with pytest.raises(TypeError, match=r"^values must be .*the size of dimension M is 4"):
        nadaraya_watson(x, x, torch.randn(4))
    with pytest.raises(ValueError, match="queries"):
        nadaraya_watson(torch.randn(2, 2, 2), x, x)
    with pytest.raises(ValueError, match=r"with M >= 1"):
        nadaraya_watson(x, torch.empty(0), torch.empty(0))
    with pytest.raises(TypeError, match="^keys must be "):
        nadaraya_watson(x, torch.arange(5), x)
    with pytest.raises(ValueError, match=r"\(M,\) or \(M, V\)"):
        nadaraya_watson(x, x, torch.randn(5, 2, 2))
    with pytest.raises(ValueError, match=r"keys .* must be \(N,\) or \(N, D\), \(M,\) or \(M, D\)"):
        nadaraya_watson(x, torch.randn(5, 1, 1), x)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_float64_matches_the_formula_to_float64_accuracy(kernel):
    g = torch.Generator().manual_seed(4)
    queries = torch.rand(7, 2, dtype=torch.float64, generator=g) * 4
    keys = torch.rand(30, 2, dtype=torch.float64, generator=g) * 4
    values = torch.randn(30, 3, dtype=torch.float64, generator=g)
    predictions, weights = nadaraya_watson(queries, keys, values, kernel, bandwidth=0.9)
    u = torch.cdist(queries, keys, compute_mode="donot_use_mm_for_euclid_dist") / 0.9
    alpha = torch.exp(-0.5 * u**2) if kernel == "gaussian" else (1 - u**2).clamp(min=0)
    expected = alpha / alpha.sum(1, keepdim=True)
    assert predictions.dtype == torch.float64
    assert torch.allclose(weights, expected, atol=1e-15, rtol=1e-12)
    assert torch.allclose(predictions, expected @ values, atol=1e-14, rtol=1e-12)
    with pytest.raises(
        TypeError, match="keys has dtype torch.float32 but queries has dtype torch.float64"
    ):
        nadaraya_watson(queries, keys.float(), values)
