import pytest
import torch
from torch import nn

from seqbook.recurrent import RNN
from seqbook.utils import seed_everything

# the type of forward's x, as a TypeError names it
X_TYPE = r"^x must be Float\[Tensor, '_ _ \{self.input_size\}'\]"


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bias", [True, False])
def test_equals_torch_rnn(nonlinearity, bias):
    seed_everything(0)
    reference = nn.RNN(5, 16, nonlinearity=nonlinearity, bias=bias, batch_first=True)
    ours = RNN.from_torch(reference)
    x, h0 = torch.randn(4, 30, 5), torch.randn(1, 4, 16)
    out, h_n = ours(x, h0)
    ref_out, ref_h = reference(x, h0)
    assert h_n.shape == ref_h.shape == (1, 4, 16)
    assert torch.allclose(out, ref_out, atol=1e-6)
    assert torch.allclose(h_n, ref_h, atol=1e-6)


def test_gradients_equal_torch_rnn():
    seed_everything(1)
    reference = nn.RNN(3, 8, batch_first=True).double()
    ours = RNN.from_torch(reference)
    assert ours.W_hh.dtype == torch.float64
    x = torch.randn(2, 12, 3, dtype=torch.float64)
    ours(x)[0].pow(2).sum().backward()
    reference(x)[0].pow(2).sum().backward()
    assert torch.allclose(ours.W_hh.grad, reference.weight_hh_l0.grad, atol=1e-10)
    assert torch.allclose(ours.W_xh.grad, reference.weight_ih_l0.grad, atol=1e-10)
    assert torch.allclose(ours.b_h.grad, reference.bias_hh_l0.grad, atol=1e-10)


def test_parameter_count_does_not_depend_on_T():
    rnn = RNN(7, 11)
    assert sum(p.numel() for p in rnn.parameters()) == 11 * 7 + 11 * 11 + 11
    assert rnn(torch.randn(1, 3, 7))[0].shape[1] == 3
    assert rnn(torch.randn(1, 50, 7))[0].shape[1] == 50


def test_follows_the_input_device_and_dtype():
    rnn = RNN(2, 3).double()
    out, h = rnn(torch.randn(1, 2, 2, dtype=torch.float64))
    assert out.dtype == h.dtype == torch.float64


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(input_size=0, hidden_size=3), ValueError),
        (dict(input_size=2, hidden_size=-1), ValueError),
        (dict(input_size=2.0, hidden_size=3), TypeError),
        (dict(input_size=2, hidden_size=3, nonlinearity="sigmoid"), ValueError),
        (dict(input_size=2, hidden_size=3, batch_first="yes"), TypeError),
    ],
)
def test_bad_constructor_arguments(kwargs, error):
    with pytest.raises(error):
        RNN(**kwargs)


def test_bad_forward_input():
    rnn = RNN(2, 3)
    with pytest.raises(TypeError, match=X_TYPE + r".*, got f32\[5,2\]"):
        rnn(torch.randn(5, 2))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, input_size\) with T >= 1"):
        rnn(torch.randn(4, 0, 2))
    with pytest.raises(TypeError, match=X_TYPE + r".*, got f32\[4,5,3\]"):
        rnn(torch.randn(4, 5, 3))
    with pytest.raises(TypeError, match=X_TYPE + r".*, got i64\[4,5,2\]"):
        rnn(torch.ones(4, 5, 2, dtype=torch.long))
    with pytest.raises(TypeError, match=X_TYPE):
        rnn([[1.0, 2.0]])
    with pytest.raises(TypeError, match=r"^h0 must be Float\[Tensor, '.* B \{self.hidden_size\}'\] "
                                        r"\| None, got f32\[1,4,4\]"):
        rnn(torch.randn(4, 5, 2), torch.zeros(1, 4, 4))
    with pytest.raises(TypeError, match=r"^h0 must be Float\[Tensor, .*, got f32\[4,3\]"):
        rnn(torch.randn(4, 5, 2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"lengths must hold values in \[0, T = 5 \(as in "
                                         r"x\)\], got values from 1 to 6"):
        rnn(torch.randn(2, 5, 2), lengths=torch.tensor([6, 1]))
    with pytest.raises(ValueError, match=r"lengths must have shape \(B\) with B = 2 \(as in "
                                         r"x\), got \(1,\)"):
        rnn(torch.randn(2, 5, 2), lengths=torch.tensor([5]))
    with pytest.raises(TypeError, match=r"^lengths must be Int\[Tensor, 'B'\] \| None, got "
                                        r"f32\[2\]"):
        rnn(torch.randn(2, 5, 2), lengths=torch.tensor([5.0, 1.0]))


def test_bad_cell_input():
    rnn = RNN(2, 3)
    with pytest.raises(TypeError, match=r"^x_t must be Float\[Tensor, 'B \{self.input_size\}'\], "
                                        r"got f32\[2\]"):
        rnn.cell(torch.randn(2), torch.zeros(1, 3))
    with pytest.raises(TypeError, match=r"^x_t must be .*the dimension size 4 does not equal "
                                        r"the existing value of \{self.input_size\}=2"):
        rnn.cell(torch.randn(1, 4), torch.zeros(1, 3))
    with pytest.raises(TypeError, match=r"^h_prev must be Float\[Tensor, 'B \{self.hidden_size\}'"
                                        r"\].* the size of dimension B is 1 which does not equal"):
        rnn.cell(torch.randn(2, 2), torch.zeros(1, 3))


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(TypeError, match="^rnn must be torch.nn.modules.rnn.RNN"):
        RNN.from_torch(nn.LSTM(2, 3))


def test_parameter_names_and_count_of_a_stack():
    rnn = RNN(3, 4, num_layers=2, bidirectional=True)
    names = [name for name, _ in rnn.named_parameters()]
    assert names == ["W_xh", "W_hh", "b_h", "W_xh_reverse", "W_hh_reverse", "b_h_reverse",
                     "W_xh_l1", "W_hh_l1", "b_h_l1", "W_xh_l1_reverse", "W_hh_l1_reverse",
                     "b_h_l1_reverse"]
    assert rnn.W_xh_l1.shape == (4, 8)  # the second layer reads both directions
    torch_count = sum(
        p.numel() for p in nn.RNN(3, 4, num_layers=2, bidirectional=True).parameters()
    )
    assert torch_count - sum(p.numel() for p in rnn.parameters()) == 4 * 4  # 4 second biases


def test_reset_parameters_uses_the_torch_bound():
    rnn = RNN(3, 25)
    bound = 1 / 25**0.5
    assert all(p.abs().max() <= bound for p in rnn.parameters())
    assert all(p.std() > bound / 4 for p in rnn.parameters())

