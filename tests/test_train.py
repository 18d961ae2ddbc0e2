import math
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from seqbook.train import History, fit
from seqbook.utils import seed_everything


def regression_problem():
    seed_everything(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    batches = [(x[i : i + 16], y[i : i + 16]) for i in range(0, 64, 16)]
    model = nn.Linear(3, 1)
    return model, batches


def mse(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def test_fit_learns_a_linear_map_and_records_history():
    model, batches = regression_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    calls = []
    history = fit(model, mse, batches, opt, epochs=30, progress=False,
                  eval_fn=lambda m: calls.append(m.training) or {"bias": m.bias.item()})
    assert isinstance(history, History)
    assert len(history.step_loss) == len(history.grad_norm) == 30 * 4
    assert len(history.epoch_loss) == 30 and len(history.metrics["bias"]) == 30
    assert history.final_loss < 1e-3 < history.epoch_loss[0]
    assert abs(history.metrics["bias"][-1] - 0.3) < 0.05
    assert calls and not any(calls)  # eval_fn sees the model in eval mode
    assert history.seconds > 0


def test_clip_bounds_the_update_but_grad_norm_is_recorded_before_clipping():
    model, batches = regression_problem()
    with torch.no_grad():
        model.weight.fill_(50.0)  # a huge first gradient
    before = nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    history = fit(model, mse, batches[:1], opt, epochs=1, clip=0.5, progress=False)
    after = nn.utils.parameters_to_vector(model.parameters()).detach()
    assert history.grad_norm[0] > 10  # measured before clipping
    assert (after - before).norm() == pytest.approx(0.5, rel=1e-4)  # SGD step = clipped gradient


def test_batches_may_be_a_function_called_each_epoch():
    model, batches = regression_problem()
    epochs_seen = []

    def make_batches():
        epochs_seen.append(1)
        return iter(batches)

    fit(
        model, mse, make_batches, torch.optim.SGD(model.parameters(), lr=0.01), epochs=3,
        progress=False,
    )
    assert len(epochs_seen) == 3


def test_fit_raises_on_a_diverging_loss():
    model, batches = regression_problem()
    opt = torch.optim.SGD(model.parameters(), lr=1e6)
    with pytest.raises(FloatingPointError, match="epoch"):
        fit(model, mse, batches, opt, epochs=50, progress=False)


def test_fit_bad_input():
    model, batches = regression_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="^model must be"):
        fit("model", mse, batches, opt, epochs=1)
    with pytest.raises(TypeError, match="^loss_fn must be"):
        fit(model, 3, batches, opt, epochs=1)
    with pytest.raises(TypeError, match=r"^loss_fn must be callable as loss_fn\(model, batch\)"):
        fit(model, lambda m: m, batches, opt, epochs=1)
    with pytest.raises(TypeError, match="^optimizer must be"):
        fit(model, mse, batches, "sgd", epochs=1)
    with pytest.raises(ValueError, match="^epochs must be >= 1"):
        fit(model, mse, batches, opt, epochs=0)
    with pytest.raises(TypeError, match="^epochs must be int"):
        fit(model, mse, batches, opt, epochs=1.5)
    with pytest.raises(ValueError, match="^clip must be > 0"):
        fit(model, mse, batches, opt, epochs=1, clip=0)
    with pytest.raises(TypeError, match="^batches must be re-iterable"):
        fit(model, mse, (b for b in batches), opt, epochs=2)
    with pytest.raises(TypeError, match="^batches must be iterable"):
        fit(model, mse, "batches", opt, epochs=2)
    with pytest.raises(TypeError, match=r"^eval_fn must be callable as eval_fn\(model\)"):
        fit(model, mse, batches, opt, epochs=1, eval_fn=lambda: {})
    with pytest.raises(ValueError, match="^device must name a device"):
        fit(model, mse, batches, opt, epochs=1, device="gpu")
    with pytest.raises(TypeError, match="^progress must be bool"):
        fit(model, mse, batches, opt, epochs=1, progress=1)
    with pytest.raises(ValueError, match="no batch"):
        fit(model, mse, [], opt, epochs=1, progress=False)
    with pytest.raises(TypeError, match="scalar"):
        fit(model, lambda m, b: m(b[0]), batches, opt, epochs=1, progress=False)
    assert math.isfinite(fit(model, mse, batches, opt, epochs=1, progress=False).final_loss)



PROGRESS_SCRIPT = """
import torch
from torch import nn
from seqbook.train import fit
model = nn.Linear(1, 1)
batches = [(torch.ones(2, 1), torch.zeros(2, 1))]
loss = lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()
fit(model, loss, batches, torch.optim.SGD(model.parameters(), lr=0.1), epochs=2,
    desc="the-bar")
"""


@pytest.mark.parametrize("disable, shown", [("1", False), (None, True)])
def test_progress_bar_obeys_tqdm_disable(disable, shown):
    # The book build sets TQDM_DISABLE=1 so that no progress widgets land in the
    # pages; fit(progress=True) must not override it. tqdm reads TQDM_* variables when
    # it is imported, hence a fresh interpreter.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    if disable is not None:
        env["TQDM_DISABLE"] = disable
    result = subprocess.run([sys.executable, "-c", PROGRESS_SCRIPT], env=env,
                            capture_output=True, text=True, check=True)
    assert ("the-bar" in result.stderr) == shown
