import pytest
import torch
from torch import nn

from seqbook.recurrent import RNN
from seqbook.utils import seed_everything


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bias", [True, False])
def test_equals_torch_rnn(nonlinearity, bias):
    seed_everything(0)
    reference = nn.RNN(5, 16, nonlinearity=nonlinearity, bias=bias, batch_first=True)
    ours = RNN.from_torch(reference)
    x, h0 = torch.randn(4, 30, 5), torch.randn(4, 16)
    out, h_T = ours(x, h0)
    ref_out, ref_h = reference(x, h0.unsqueeze(0))
    assert torch.allclose(out, ref_out, atol=1e-6)
    assert torch.allclose(h_T, ref_h[0], atol=1e-6)


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


def test_time_major_layout_like_torch():
    seed_everything(2)
    reference = nn.RNN(3, 4, batch_first=False)
    ours = RNN.from_torch(reference)
    assert not ours.batch_first
    x = torch.randn(7, 2, 3)  # (T, B, D)
    out, h_T = ours(x)
    assert out.shape == (7, 2, 4)
    assert torch.allclose(out, reference(x)[0], atol=1e-6)


def test_cell_is_one_step_of_forward():
    seed_everything(3)
    rnn = RNN(3, 5)
    x = torch.randn(2, 4, 3)
    out, _ = rnn(x)
    h = torch.zeros(2, 5)
    for t in range(4):
        h = rnn.cell(x[:, t], h)
        assert torch.allclose(out[:, t], h, atol=1e-7)


def test_lengths_give_each_sequence_its_own_final_state():
    seed_everything(4)
    reference = nn.RNN(3, 6, batch_first=True)
    rnn = RNN.from_torch(reference)
    x = torch.randn(4, 9, 3)
    lengths = torch.tensor([9, 3, 1, 6])
    out, h_T = rnn(x, lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        alone_out, alone_h = rnn(x[b : b + 1, :n])
        assert torch.allclose(h_T[b], alone_h[0], atol=1e-6)
        assert torch.allclose(out[b, :n], alone_out[0], atol=1e-6)
        assert torch.all(out[b, n:] == 0)
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    ref_out, ref_h = reference(packed)
    ref_out, _ = nn.utils.rnn.pad_packed_sequence(ref_out, batch_first=True, total_length=9)
    assert torch.allclose(out, ref_out, atol=1e-6)
    assert torch.allclose(h_T, ref_h[0], atol=1e-6)


def test_zero_length_keeps_the_initial_state():
    rnn = RNN(2, 3)
    h0 = torch.randn(2, 3)
    _, h_T = rnn(torch.randn(2, 4, 2), h0, lengths=torch.tensor([0, 4]))
    assert torch.equal(h_T[0], h0[0])


def test_running_in_pieces_equals_running_whole():
    rnn = RNN(2, 4)
    x = torch.randn(3, 10, 2)
    out, h = rnn(x)
    out1, h1 = rnn(x[:, :4])
    out2, h2 = rnn(x[:, 4:], h1)
    assert torch.allclose(torch.cat([out1, out2], 1), out, atol=1e-7)
    assert torch.allclose(h2, h, atol=1e-7)


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
    with pytest.raises(ValueError, match="x must have 3 dimensions"):
        rnn(torch.randn(5, 2))
    with pytest.raises(ValueError, match="at least one time step"):
        rnn(torch.randn(4, 0, 2))
    with pytest.raises(ValueError, match="input_size"):
        rnn(torch.randn(4, 5, 3))
    with pytest.raises(TypeError, match="floating-point"):
        rnn(torch.ones(4, 5, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        rnn([[1.0, 2.0]])
    with pytest.raises(ValueError, match="h0 must have shape"):
        rnn(torch.randn(4, 5, 2), torch.zeros(4, 4))
    with pytest.raises(ValueError, match="h0 must have 2 dimensions"):
        rnn(torch.randn(4, 5, 2), torch.zeros(1, 4, 3))
    with pytest.raises(ValueError, match="lengths must lie"):
        rnn(torch.randn(2, 5, 2), lengths=torch.tensor([6, 1]))
    with pytest.raises(ValueError, match="one entry per sequence"):
        rnn(torch.randn(2, 5, 2), lengths=torch.tensor([5]))
    with pytest.raises(TypeError, match="integer"):
        rnn(torch.randn(2, 5, 2), lengths=torch.tensor([5.0, 1.0]))


def test_bad_cell_input():
    rnn = RNN(2, 3)
    with pytest.raises(ValueError, match="x_t must have 2 dimensions"):
        rnn.cell(torch.randn(2), torch.zeros(1, 3))
    with pytest.raises(ValueError, match="x_t must have 2 features"):
        rnn.cell(torch.randn(1, 4), torch.zeros(1, 3))
    with pytest.raises(ValueError, match="h_prev must have shape"):
        rnn.cell(torch.randn(2, 2), torch.zeros(1, 3))


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(TypeError, match="torch.nn.RNN"):
        RNN.from_torch(nn.LSTM(2, 3))
    with pytest.raises(ValueError, match="num_layers=1"):
        RNN.from_torch(nn.RNN(2, 3, num_layers=2))
    with pytest.raises(ValueError, match="bidirectional"):
        RNN.from_torch(nn.RNN(2, 3, bidirectional=True))


def test_reset_parameters_uses_the_torch_bound():
    rnn = RNN(3, 25)
    bound = 1 / 25**0.5
    assert all(p.abs().max() <= bound for p in rnn.parameters())
    assert all(p.std() > bound / 4 for p in rnn.parameters())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda_like_torch():
    seed_everything(5)
    reference = nn.RNN(3, 8, batch_first=True).cuda()
    rnn = RNN.from_torch(reference)
    assert rnn.W_hh.is_cuda
    x = torch.randn(2, 6, 3, device="cuda")
    lengths = torch.tensor([6, 2])  # on the CPU, as pack_padded_sequence wants
    out, h = rnn(x, lengths=lengths)
    assert out.is_cuda and h.is_cuda
    assert torch.allclose(rnn(x)[0], reference(x)[0], atol=1e-5)
