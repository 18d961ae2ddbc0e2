"""The hand-written BPTT of benchmarks/fused_lstm.py against autograd through seqbook's LSTM."""

import pytest
import torch

from benchmarks.fused_lstm import fused_lstm
from seqbook.recurrent import LSTM


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("forget_gate", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
def test_fused_lstm_equals_the_gate_by_gate_layer_with_gradients(forget_gate, batch_first, bias):
    torch.manual_seed(0)
    lstm = LSTM(3, 5, bias=bias, forget_gate=forget_gate, batch_first=batch_first,
                input_gate_bias=-1.0 if bias else 0.0).double()
    shape = (4, 7, 3) if batch_first else (7, 4, 3)  # B = 4, T = 7
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(1, 4, 5, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(1, 4, 5, dtype=torch.float64, requires_grad=True)
    results = []
    for run in (lstm.forward, lambda x, state: fused_lstm(lstm, x, state)):
        outputs, (h_n, c_n) = run(x, (h0, c0))
        # a loss that reaches every output, the last state and the last cell
        loss = outputs.sin().sum() + 3 * h_n.sum() + (c_n**2).sum()
        inputs = (x, h0, c0, *lstm.parameters())
        grads = torch.autograd.grad(loss, inputs)
        results.append((outputs, h_n, c_n, *grads))
    for ours, reference in zip(*results):
        assert ours.shape == reference.shape
        assert torch.allclose(ours, reference, atol=1e-12)


def test_fused_lstm_passes_gradcheck_and_rejects_bad_input():
    torch.manual_seed(1)
    lstm = LSTM(2, 3).double()
    x = torch.randn(2, 4, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: fused_lstm(lstm, x)[0], (x,))
    with pytest.raises(ValueError, match="input_size"):
        fused_lstm(lstm, torch.randn(2, 4, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"state\[0\] \(h_0\) must have shape"):
        fused_lstm(lstm, x, (torch.zeros(1, 2, 4), torch.zeros(1, 2, 3)))
    with pytest.raises(ValueError, match="one-layer, one-direction"):
        fused_lstm(LSTM(2, 3, num_layers=2), x.float())
    with pytest.raises(TypeError, match="seqbook.recurrent.LSTM"):
        fused_lstm(torch.nn.LSTM(2, 3), x)
