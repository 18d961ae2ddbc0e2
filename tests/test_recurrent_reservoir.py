"""Echo state networks: the reservoir's spectral radius and the ridge readout, each
against a trusted twin (torch's eigenvalues, scikit-learn's Ridge, least squares)."""

import numpy as np
import pytest
import torch

from seqbook.recurrent import RNN, echo_state_network, ridge_readout


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 1.2])
def test_reservoir_has_the_spectral_radius(rho):
    rnn = echo_state_network(2, 12, rho, input_scale=0.3, seed=3)
    assert isinstance(rnn, RNN) and rnn.b_h is None
    radius = torch.linalg.eigvals(rnn.W_hh.double()).abs().max().item()
    assert radius == pytest.approx(rho, abs=1e-5)
    assert rnn.W_xh.abs().max().item() <= 0.3
    assert not any(p.requires_grad for p in rnn.parameters())


def test_reservoir_is_seeded_and_leaves_the_global_generator_alone():
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    a = echo_state_network(1, 8, 0.9, seed=1)
    assert torch.equal(torch.random.get_rng_state(), before)
    b = echo_state_network(1, 8, 0.9, seed=1)
    c = echo_state_network(1, 8, 0.9, seed=2)
    assert torch.equal(a.W_hh, b.W_hh) and torch.equal(a.W_xh, b.W_xh)
    assert not torch.equal(a.W_hh, c.W_hh)


def test_echo_state_property_below_radius_one():
    # two runs from different initial states, the same input: the states converge
    rnn = echo_state_network(1, 30, 0.8, input_scale=0.5, seed=0)
    x = torch.randn(1, 200, 1)
    h0 = torch.randn(1, 1, 30)
    gap = (rnn(x, h0)[0] - rnn(x)[0]).norm(dim=-1)[0]
    assert gap[-1] < 1e-6 * gap[0]


def test_ridge_readout_matches_sklearn():
    sklearn_linear = pytest.importorskip("sklearn.linear_model")
    g = torch.Generator().manual_seed(0)
    states = torch.randn(200, 6, generator=g)
    targets = torch.randn(200, 3, generator=g) + states[:, :3]
    readout = ridge_readout(states, targets, ridge=2.5)
    twin = sklearn_linear.Ridge(alpha=2.5).fit(states.numpy(), targets.numpy())
    np.testing.assert_allclose(readout.weight.numpy(), twin.coef_, atol=1e-5)
    np.testing.assert_allclose(readout.bias.numpy(), twin.intercept_, atol=1e-5)
    assert readout.weight.dtype == torch.float32
    assert not readout.weight.requires_grad


def test_ridge_zero_is_least_squares():
    g = torch.Generator().manual_seed(1)
    states = torch.randn(50, 4, generator=g, dtype=torch.float64)
    targets = torch.randn(50, 2, generator=g, dtype=torch.float64)
    readout = ridge_readout(states, targets, ridge=0.0)
    ones = torch.ones(50, 1, dtype=torch.float64)
    solution = torch.linalg.lstsq(torch.cat([states, ones], 1), targets).solution
    torch.testing.assert_close(readout.weight, solution[:4].T)
    torch.testing.assert_close(readout.bias, solution[4])
    assert readout.weight.dtype == torch.float64


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(input_size=0), ValueError, "input_size"),
    (dict(hidden_size=2.5), TypeError, "hidden_size"),
    (dict(spectral_radius=-0.1), ValueError, "spectral_radius"),
    (dict(spectral_radius=float("inf")), ValueError, "spectral_radius"),
    (dict(spectral_radius="0.9"), TypeError, "spectral_radius"),
    (dict(input_scale=0.0), ValueError, "input_scale"),
    (dict(seed=-1), ValueError, "seed"),
])
def test_reservoir_bad_input(kwargs, error, match):
    args = dict(input_size=1, hidden_size=4, spectral_radius=0.9) | kwargs
    with pytest.raises(error, match=match):
        echo_state_network(**args)


def test_ridge_readout_bad_input():
    states, targets = torch.randn(10, 3), torch.randn(10, 2)
    with pytest.raises(ValueError, match="ridge"):
        ridge_readout(states, targets, ridge=-1.0)
    with pytest.raises(TypeError, match="ridge"):
        ridge_readout(states, targets, ridge=None)
    with pytest.raises((TypeError, ValueError), match="targets|rows"):
        ridge_readout(states, torch.randn(9, 2))
    with pytest.raises(TypeError, match="states"):
        ridge_readout(states[0], targets)
    with pytest.raises(TypeError, match="states"):
        ridge_readout(states.long(), targets)
