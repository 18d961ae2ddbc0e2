"""Bad input to every public callable of seqbook.recurrent fails at the call, with a
message naming the argument, what was expected and what was given (never an error
from deep inside torch)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from seqbook.recurrent import (
    GRU,
    LSTM,
    RNN,
    activation_bytes,
    jacobian_norms,
    rtrl,
    state_gradient_norms,
    state_jacobians,
    truncated_bptt,
    unroll_with_probes,
)

CLASSES = [RNN, LSTM, GRU]
IDS = ["RNN", "LSTM", "GRU"]


def state_of(cls, K, B, H=3, **kw):
    h = torch.zeros(K, B, H, **kw)
    return (h, torch.zeros(K, B, H, **kw)) if cls is LSTM else h


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(num_layers=0), ValueError, r"num_layers must be >= 1, got 0"),
        (dict(num_layers=2.0), TypeError, r"^num_layers must be int, got 2.0"),
        (dict(dropout=1.5), ValueError, r"dropout must be <= 1.0, got 1.5"),
        (dict(dropout=1.0), ValueError, r"dropout must be in \[0, 1\)"),
        (dict(dropout=-0.1), ValueError, r"dropout must be >= 0.0"),
        (dict(dropout="0.5"), TypeError, r"^dropout must be float, got '0.5'"),
        (dict(bias=1), TypeError, r"^bias must be bool, got 1"),
        (dict(bidirectional="yes"), TypeError, r"^bidirectional must be bool"),
        (dict(batch_first=None), TypeError, r"^batch_first must be bool"),
        (dict(input_size=0), ValueError, r"input_size must be >= 1"),
        (dict(hidden_size=2.5), TypeError, r"^hidden_size must be int"),
        (dict(hidden_size=0), ValueError, r"hidden_size must be >= 1, got 0"),
        (dict(dtype=torch.int64), TypeError, r"dtype must be a floating-point torch.dtype"),
        (dict(dtype="float64"), TypeError, r"^dtype must be torch.dtype \| None"),
    ],
)
def test_bad_constructor_arguments(cls, kwargs, error, message):
    arguments = dict(input_size=2, hidden_size=3)
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        cls(**arguments)


@pytest.mark.parametrize("cls", [RNN, GRU], ids=["RNN", "GRU"])
def test_proj_size_is_for_the_lstm_only(cls):
    with pytest.raises(ValueError, match=r"proj_size is only supported by LSTM .* got proj_size=2"):
        cls(2, 3, proj_size=2)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(proj_size=3), ValueError,
         r"proj_size must be < hidden_size = 3 \(the argument hidden_size\), got 3"),
        (dict(proj_size=5), ValueError, r"proj_size must be < hidden_size = 3"),
        (dict(proj_size=True), TypeError, r"proj_size must be an int"),
        (dict(proj_size=-1), ValueError, r"proj_size must be >= 0, got -1"),
        (dict(proj_size=1.0), TypeError, r"^proj_size must be int"),
        (dict(forget_gate="no"), TypeError, r"^forget_gate must be bool"),
        (dict(input_gate_bias=float("nan")), ValueError, r"input_gate_bias must not be NaN"),
        (dict(input_gate_bias=-2.0, bias=False), ValueError,
         r"input_gate_bias=-2.0 needs a bias: bias must be True"),
    ],
)
def test_bad_lstm_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        LSTM(2, 3, **kwargs)


def test_nonlinearity():
    with pytest.raises(ValueError, match=r"nonlinearity must be one of 'tanh', 'relu'; got 'gelu'"):
        RNN(2, 3, nonlinearity="gelu")


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_bad_inputs_to_forward(cls):
    module = cls(2, 3, num_layers=2, bidirectional=True)  # K = 4
    x = torch.randn(5, 7, 2)
    checks = [
        (lambda: module(torch.randn(7, 2)), TypeError,
         r"^x must be Float\[Tensor, '_ _ \{self.input_size\}'\] .*, got f32\[7,2\]"),
        (lambda: module(torch.randn(5, 7, 3)), TypeError,
         r"^x must be Float\[Tensor, '_ _ \{self.input_size\}'\] .*, got f32\[5,7,3\]"),
        (lambda: module(torch.randn(5, 0, 2)), ValueError, r"x must have shape \(B, T, "
                                                           r"input_size\) with T >= 1, got "
                                                           r"\(5, 0, 2\)"),
        (lambda: module(torch.ones(5, 7, 2, dtype=torch.long)), TypeError,
         r"^x must be Float\[Tensor, .*, got i64\[5,7,2\]"),
        (lambda: module(x.double()), TypeError,
         r"^x must have the dtype of the module's parameters \(torch.float32\), got "
         r"torch.float64"),
        (lambda: module(x.half()), TypeError, r"^x must have the dtype .* got torch.float16"),
        (lambda: module([[1.0]]), TypeError, r"^x must be Float\[Tensor"),
        (lambda: module(x, lengths=torch.tensor([8, 1, 1, 1, 1])), ValueError,
         r"lengths must hold values in \[0, T = 7 \(as in x\)\], got values from 1 to 8"),
        (lambda: module(x, lengths=torch.tensor([-1, 1, 1, 1, 1])), ValueError,
         r"lengths must hold values in \[0, inf\], got values from -1 to 1"),
        (lambda: module(x, lengths=torch.tensor([7, 1])), ValueError,
         r"lengths must have shape \(B\) with B = 5 \(as in x\), got \(2,\)"),
        (lambda: module(x, lengths=torch.ones(5)), TypeError,
         r"^lengths must be Int\[Tensor, 'B'\] \| None, got f32\[5\]"),
        (lambda: module(x, lengths=torch.ones(5, dtype=torch.bool)), TypeError,
         r"^lengths must be Int\[Tensor, 'B'\] \| None, got bool\[5\]"),
        (lambda: module(x, lengths=[7] * 5), TypeError, r"^lengths must be Int\[Tensor"),
        (lambda: module(x, lengths=torch.ones(5, 1, dtype=torch.long)), TypeError,
         r"^lengths must be Int\[Tensor, 'B'\] \| None, got i64\[5,1\]"),
    ]
    for call, error, message in checks:
        with pytest.raises(error, match=message):
            call()


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_bad_initial_states(cls):
    module = cls(2, 3, num_layers=2, bidirectional=True)  # K = 4
    x = torch.randn(5, 7, 2)
    name = "state" if cls is LSTM else "h0"
    K = r"\{self.num_layers\*self.num_directions\}"
    with pytest.raises(TypeError, match=rf"^{name} must be .*Float\[Tensor, '{K} B "
                                        r"\{self.hidden_size\}'\].* got .*f32\[2,5,3\]"):
        module(x, state_of(cls, 2, 5))
    with pytest.raises(TypeError, match=rf"^{name} must be .*, got .*f32\[5,3\]"):
        module(x, (torch.zeros(5, 3), torch.zeros(4, 5, 3)) if cls is LSTM else torch.zeros(5, 3))
    if cls is LSTM:  # the hook sees no dtype inside a tuple: the body checks it
        with pytest.raises(TypeError, match=r"^state\[0\] \(h_0\) has dtype torch.float64 but "
                                            r"the module's"):
            module(x, state_of(cls, 4, 5, dtype=torch.float64))
        with pytest.raises(TypeError, match=r"^state must be tuple\[.*, got f32\[4,5,3\]"):
            module(x, torch.zeros(4, 5, 3))
        with pytest.raises(TypeError, match=r"^state must be tuple\[.*, got \(f32\[4,5,3\]"
                                            r"\(torch\), f32\[4,5,2\]"):
            module(x, (torch.zeros(4, 5, 3), torch.zeros(4, 5, 2)))
        projected = LSTM(2, 3, proj_size=2)
        with pytest.raises(TypeError, match=r"^state must be tuple\[Float\[Tensor, "
                                            r"'.* B \{self._output_size\}'\]"):
            projected(x, (torch.zeros(1, 5, 3), torch.zeros(1, 5, 3)))
    else:
        with pytest.raises(TypeError, match=r"^h0 must have the dtype of the module's "
                                            r"parameters \(torch.float32\), got torch.float64"):
            module(x, state_of(cls, 4, 5, dtype=torch.float64))
        with pytest.raises(TypeError, match=r"^h0 must be Float\[Tensor, .*, got \(f32"):
            module(x, (torch.zeros(4, 5, 3),))


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_time_first_input_is_checked_in_its_layout(cls):
    module = cls(2, 3, batch_first=False)
    with pytest.raises(ValueError, match=r"x must have shape \(T, B, input_size\) with T >= 1, "
                       r"got \(0, 4, 2\)"):
        module(torch.randn(0, 4, 2))
    x = torch.randn(5, 4, 2)  # T = 5, B = 4
    with pytest.raises(ValueError, match=r"lengths must hold values in \[0, T = 5 \(as in x\)\], "
                       r"got values from 1 to 6"):
        module(x, lengths=torch.tensor([6, 1, 1, 1]))
    with pytest.raises(ValueError, match=r"lengths must have shape \(B\) with B = 4 \(as in x\)"):
        module(x, lengths=torch.tensor([5, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match=r"must have shape \(K, B, hidden_size\) with B = 4 "
                       r"\(as in x\), got \(1, 5, 3\)"):
        module(x, state_of(cls, 1, 5))


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_packed_input_with_lengths(cls):
    module = cls(2, 3)
    packed = pack_padded_sequence(torch.randn(2, 4, 2), torch.tensor([4, 2]), batch_first=True)
    with pytest.raises(ValueError, match="lengths must be None when x is a PackedSequence"):
        module(packed, lengths=torch.tensor([4, 2]))
    with pytest.raises(TypeError, match=r"x has dtype torch.float64 but the module's"):
        module(pack_padded_sequence(torch.randn(2, 4, 2, dtype=torch.float64),
                                    torch.tensor([4, 2]), batch_first=True))
    with pytest.raises(ValueError, match=r"x must have 3 dimensions \(B, T, input_size\), got "
                       r"shape \(2, 4\)"):  # packed from (B, T): checked once padded
        module(pack_padded_sequence(torch.randn(2, 4), torch.tensor([4, 2]), batch_first=True))


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_cell_is_for_one_layer_and_checks_its_input(cls):
    stacked = cls(2, 3, num_layers=2)
    state = (torch.zeros(1, 3), torch.zeros(1, 3)) if cls is LSTM else torch.zeros(1, 3)
    with pytest.raises(ValueError, match=r"cell is one step of a one-layer, one-direction module; "
                       r"this one has num_layers=2, bidirectional=False"):
        stacked.cell(torch.zeros(1, 2), state)
    with pytest.raises(ValueError, match="bidirectional=True"):
        cls(2, 3, bidirectional=True).cell(torch.zeros(1, 2), state)
    single = cls(2, 3)
    with pytest.raises(TypeError, match=r"^x_t must have the dtype of the module's parameters "
                                        r"\(torch.float32\), got torch.float64"):
        single.cell(torch.zeros(1, 2, dtype=torch.float64), state)
    with pytest.raises(TypeError, match=r"^x_t must be Float\[Tensor, 'B \{self.input_size\}'\], "
                                        r"got f32\[1,4\].*the dimension size 4 does not equal "
                                        r"the existing value of \{self.input_size\}=2"):
        single.cell(torch.zeros(1, 4), state)
    bad = (torch.zeros(1, 3), torch.zeros(2, 3)) if cls is LSTM else torch.zeros(2, 3)
    message = (r"^state must be tuple\[.*, got \(f32\[1,3\]\(torch\), f32\[2,3\]"
               if cls is LSTM else
               r"^h_prev must be Float\[Tensor, 'B \{self.hidden_size\}'\], got f32\[2,3\].* "
               r"the size of dimension B is 2 which does not equal the existing value of 1")
    with pytest.raises(TypeError, match=message):
        single.cell(torch.zeros(1, 2), bad)


@pytest.mark.parametrize("cls", [LSTM, GRU], ids=["LSTM", "GRU"])
def test_bad_trace_layer(cls):
    module = cls(2, 3, num_layers=2)
    x = torch.randn(1, 4, 2)
    with pytest.raises(ValueError, match=r"layer must be in \[-2, 2\) \(num_layers=2\), got 2"):
        module.trace(x, layer=2)
    with pytest.raises(TypeError, match=r"^layer must be int, got 1.0"):
        module.trace(x, layer=1.0)
    packed = pack_padded_sequence(x, torch.tensor([4]), batch_first=True)
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, .*, got PackedSequence"):
        module.trace(packed)
    first, also_first = module.trace(x, layer=0), module.trace(x, layer=-2)
    assert all(torch.equal(a, b) for a, b in zip(vars(first).values(), vars(also_first).values())
               if a is not None)


@pytest.mark.parametrize("cls, torch_cls, name", [(RNN, nn.RNN, "rnn"), (LSTM, nn.LSTM, "lstm"),
                                                  (GRU, nn.GRU, "gru")])
def test_from_torch_wants_its_twin(cls, torch_cls, name):
    other = nn.GRU(2, 3) if torch_cls is not nn.GRU else nn.LSTM(2, 3)
    twin = rf"^{name} must be torch.nn.modules.rnn.{torch_cls.__name__}, got"
    with pytest.raises(TypeError, match=twin):
        cls.from_torch(other)
    with pytest.raises(TypeError, match=twin):
        cls.from_torch(cls(2, 3))


def test_lstm_from_torch_flags():
    with pytest.raises(TypeError, match="^forget_gate must be bool"):
        LSTM.from_torch(nn.LSTM(2, 3), forget_gate=0)
    with pytest.raises(ValueError, match=r"layer and direction '_l1_reverse' is not"):
        pinned = LSTM(2, 3, num_layers=2, bidirectional=True, forget_gate=False).to_torch()
        with torch.no_grad():
            pinned.weight_hh_l1_reverse[3:6] = 0.1  # unpin one forget gate
        LSTM.from_torch(pinned, forget_gate=False)


def test_truncated_bptt_bad_input():
    rnn = RNN(1, 4)
    opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
    x = torch.randn(2, 6, 1)
    mse = lambda out, y: out.pow(2).mean()
    checks = [
        (lambda: truncated_bptt("rnn", x, x, mse, opt, 2), TypeError,
         r"^module must be torch.nn.modules.module.Module, got 'rnn'"),
        (lambda: truncated_bptt(rnn, x.double(), x.double(), mse, opt, 2), TypeError,
         r"^x has dtype torch.float64 but the module's parameters have dtype torch.float32"),
        (lambda: truncated_bptt(rnn, x.double(), x, mse, opt, 2), TypeError,
         r"^targets has dtype torch.float32 but x has dtype torch.float64"),
        (lambda: truncated_bptt(rnn, x[0], x, mse, opt, 2), TypeError,
         r"^x must be Float\[Tensor, 'B T D'\], got f32\[6,1\]"),
        (lambda: truncated_bptt(rnn, x, x[:, :3], mse, opt, 2), TypeError,
         r"^targets must be Shaped\[Tensor, 'B T ...'\], got f32\[2,3,1\].*the size of "
         r"dimension T is 3 which does not equal the existing value of 6"),
        (lambda: truncated_bptt(rnn, x[:, :0], x[:, :0], mse, opt, 2), ValueError,
         r"^x must have shape \(B, T, D\) with T >= 1, got \(2, 0, 1\)"),
        (lambda: truncated_bptt(rnn, x, x, None, opt, 2), TypeError, r"^loss_fn must be "
                                                                     r".*Callable"),
        (lambda: truncated_bptt(rnn, x, x, mse, "sgd", 2), TypeError,
         r"^optimizer must be torch.optim"),
        (lambda: truncated_bptt(rnn, x, x, mse, opt, 0), ValueError, r"k1 must be >= 1"),
        (lambda: truncated_bptt(rnn, x, x, mse, opt, 3, 2), ValueError, r"k2 must be >= k1"),
        (lambda: truncated_bptt(rnn, x, x, mse, opt, 2, clip=0.0), ValueError, r"clip must be > 0"),
        (lambda: truncated_bptt(rnn, x, x, mse, opt, 2, state=torch.zeros(2, 4)), ValueError,
         r"h0 must have 3 dimensions"),
        (lambda: truncated_bptt(rnn, x, x, lambda o, y: o, opt, 2), TypeError, r"scalar"),
    ]
    for call, error, message in checks:
        with pytest.raises(error, match=message):
            call()


def test_rtrl_bad_input():
    rnn = RNN(2, 3)
    loss = lambda t, h: h.sum()
    x = torch.randn(1, 4, 2)
    checks = [
        (lambda: rtrl(LSTM(2, 3), x, loss), TypeError,
         r"^rnn must be seqbook.recurrent.rnn.RNN, got LSTM"),
        (lambda: rtrl(RNN(2, 3, bidirectional=True), x, loss), ValueError,
         r"rnn must have num_layers=1 and bidirectional=False"),
        (lambda: rtrl(rnn, x.half(), loss), TypeError, r"x has dtype torch.float16"),
        (lambda: rtrl(rnn, x, loss, h0=torch.zeros(2, 1, 3)), TypeError,
         r"^h0 must be Float\[Tensor, '1 B \{rnn.hidden_size\}'\] \| None, got f32\[2,1,3\]"),
        (lambda: rtrl(rnn, x, loss, h0=torch.zeros(1, 1, 3, dtype=torch.float64)), TypeError,
         r"^h0 has dtype torch.float64 but x has dtype torch.float32"),
        (lambda: rtrl(rnn, x[:, :0], loss), ValueError,
         r"^x must have shape \(B, T, rnn.input_size\) with T >= 1"),
    ]
    for call, error, message in checks:
        with pytest.raises(error, match=message):
            call()


def test_diagnostics_bad_input():
    rnn = RNN(2, 3)
    x = torch.randn(2, 4, 2)
    checks = [
        (lambda: jacobian_norms(rnn, x, ord="max"), ValueError,
         r"ord must be one of 2, -2, 1, -1, inf, -inf, 'fro', 'nuc'; got 'max'"),
        (lambda: jacobian_norms(rnn, x, ord=None), TypeError, r"^ord must be int \| float \| str"),
        (lambda: state_jacobians(rnn, x, component=1), ValueError, r"component must be < 1"),
        (lambda: state_jacobians(rnn, x, component=-1), ValueError, r"component must be >= 0"),
        (lambda: state_jacobians(rnn, x, component=0.0), TypeError, r"^component must be int"),
        (lambda: state_gradient_norms(rnn, x, "loss"), TypeError, r"^loss_fn must be .*Callable"),
        (lambda: unroll_with_probes(RNN(2, 3, num_layers=2), x), ValueError,
         r"module must have num_layers=1 and bidirectional=False .* got num_layers=2"),
        (lambda: unroll_with_probes(GRU(2, 3, bidirectional=True), x), ValueError,
         r"bidirectional=True"),
        (lambda: unroll_with_probes(LSTM(2, 3, batch_first=False), x), ValueError, r"batch-first"),
        (lambda: unroll_with_probes(rnn, x.double()), TypeError, r"x has dtype torch.float64"),
        (lambda: unroll_with_probes(rnn, x, torch.zeros(1, 3, 3)), ValueError,
         r"state\[0\] must have shape \(1, B, H\) or \(B, H\) with B=2"),
        (lambda: activation_bytes("f"), TypeError, r"^fn must be .*Callable"),
        (lambda: activation_bytes(lambda: rnn(x)[0], exclude="rnn"), TypeError,
         r"^exclude must be torch.nn.modules.module.Module \| None"),
    ]
    for call, error, message in checks:
        with pytest.raises(error, match=message):
            call()
    for ord in (2, -2, 1, -1, float("inf"), float("-inf"), "fro", "nuc"):  # the valid ones work
        assert jacobian_norms(rnn, x, ord=ord).shape == (2, 4)


def test_to_torch_of_an_lstm_that_cannot_have_a_twin():
    with pytest.raises(ValueError, match="forget_gate=False and bias=False has no nn.LSTM twin"):
        LSTM(2, 3, forget_gate=False, bias=False).to_torch()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_device_mismatch_is_named(cls):
    module = cls(2, 3).cuda()
    with pytest.raises(ValueError, match=r"x is on cpu but the module's parameters are on cuda"):
        module(torch.randn(1, 4, 2))


@pytest.mark.parametrize(
    "make, kwargs, error, message",
    [
        (lambda: nn.LSTM(3, 4), {}, TypeError, r"^lstm must be seqbook.recurrent.lstm.LSTM, got "
                                               r"LSTM"),
        (lambda: LSTM(3, 4, forget_gate=False), {}, ValueError,
         r"lstm must have a forget gate \(forget_gate=True\)"),
        (lambda: LSTM(3, 4, bias=False), {}, ValueError, r"lstm must have biases \(bias=True\)"),
        (lambda: LSTM(3, 4), dict(t_max=1.5), ValueError, r"t_max must be >= 2.0, got 1.5"),
        (lambda: LSTM(3, 4), dict(t_max=float("inf")), ValueError, r"t_max must be finite"),
        (lambda: LSTM(3, 4), dict(t_max=float("nan")), ValueError, r"t_max must not be NaN"),
        (lambda: LSTM(3, 4), dict(t_max="100"), TypeError, r"^t_max must be float"),
        (lambda: LSTM(3, 4), dict(generator=0), TypeError,
         r"^generator must be torch._C.Generator \| None"),
    ],
)
def test_chrono_init_bad_input(make, kwargs, error, message):
    from seqbook.recurrent import chrono_init

    arguments = dict(t_max=100.0) | kwargs
    with pytest.raises(error, match=message):
        chrono_init(make(), **arguments)
