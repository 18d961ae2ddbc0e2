"""The LSTM's backward pass written by hand (lstm_backward) against autograd."""

import pytest
import torch

from seqbook.recurrent import LSTM, lstm_backward


def _autograd(lstm, x, dl_dh):
    lstm.zero_grad()
    (lstm(x)[0] * dl_dh).sum().backward()
    return {name: p.grad for name, p in lstm.named_parameters()}


@pytest.mark.parametrize("forget_gate", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("B, T, D, H", [(2, 7, 3, 5), (3, 20, 4, 8)])
def test_lstm_backward_equals_autograd(forget_gate, bias, B, T, D, H):
    torch.manual_seed(0)
    lstm = LSTM(D, H, bias=bias, forget_gate=forget_gate,
                input_gate_bias=-1.0 if bias else 0.0).double()
    x = torch.randn(B, T, D, dtype=torch.float64)
    dl_dh = torch.randn(B, T, H, dtype=torch.float64)
    by_hand = lstm_backward(lstm, x, dl_dh)
    reference = _autograd(lstm, x, dl_dh)
    assert sorted(by_hand) == sorted(reference)
    for name, grad in reference.items():
        assert by_hand[name].shape == grad.shape
        # float64 rounding: sums of B * T terms of the gradients' size
        scale = torch.finfo(torch.float64).eps * B * T * max(1.0, grad.abs().max().item())
        assert (by_hand[name] - grad).abs().max().item() < 100 * scale, name


def test_lstm_backward_only_on_a_loss_at_the_last_step():
    # a classifier's loss: dl_dh is zero except at t = T, and the carousel carries it
    torch.manual_seed(1)
    lstm = LSTM(2, 4).double()
    x = torch.randn(3, 12, 2, dtype=torch.float64)
    dl_dh = torch.zeros(3, 12, 4, dtype=torch.float64)
    dl_dh[:, -1] = torch.randn(3, 4, dtype=torch.float64)
    by_hand = lstm_backward(lstm, x, dl_dh)
    for name, grad in _autograd(lstm, x, dl_dh).items():
        torch.testing.assert_close(by_hand[name], grad, rtol=1e-10, atol=1e-12)


def test_lstm_backward_leaves_the_parameters_without_gradients():
    lstm = LSTM(2, 3)
    lstm_backward(lstm, torch.randn(1, 4, 2), torch.randn(1, 4, 3))
    assert all(p.grad is None for p in lstm.parameters())


def test_lstm_backward_refuses_bad_input():
    lstm = LSTM(2, 3)
    x, dl_dh = torch.randn(1, 4, 2), torch.randn(1, 4, 3)
    with pytest.raises(TypeError, match="lstm"):
        lstm_backward(torch.nn.LSTM(2, 3), x, dl_dh)
    for module in (LSTM(2, 3, num_layers=2), LSTM(2, 3, bidirectional=True),
                   LSTM(2, 3, proj_size=2), LSTM(2, 3, batch_first=False)):
        with pytest.raises(ValueError, match="lstm must have one layer"):
            lstm_backward(module, x, dl_dh[..., : module.proj_size or 3])
    # the annotations' checks, or the function's own: either names the argument
    with pytest.raises(TypeError, match="x must be"):
        lstm_backward(lstm, x.tolist(), dl_dh)
    with pytest.raises((TypeError, ValueError), match="x must be"):
        lstm_backward(lstm, x[0], dl_dh)
    with pytest.raises((TypeError, ValueError), match="dl_dh must"):
        lstm_backward(lstm, x, dl_dh[:, :3])
    with pytest.raises(ValueError, match="dl_dh must have the outputs' shape"):
        lstm_backward(lstm, x, dl_dh[..., :2])
    with pytest.raises(TypeError, match="dl_dh.*dtype"):
        lstm_backward(lstm, x, dl_dh.double())


def test_one_step_backward_refuses_bad_input():
    from seqbook.recurrent import lstm_step_backward

    trace = LSTM(2, 3).trace(torch.randn(4, 5, 2))
    dh, dc = torch.zeros(4, 3), torch.zeros(4, 3)
    with pytest.raises(TypeError, match="trace"):
        lstm_step_backward("trace", 0, dh, dc)
    with pytest.raises((TypeError, ValueError), match="t must be"):
        lstm_step_backward(trace, 5, dh, dc)
    with pytest.raises((TypeError, ValueError), match="dc_carried"):
        lstm_step_backward(trace, 0, dh, torch.zeros(4, 2))
    with pytest.raises(ValueError, match="dh must have the shape of one step"):
        lstm_step_backward(trace, 0, torch.zeros(4, 2), torch.zeros(4, 2))
