"""RNN, LSTM and GRU against nn.RNN, nn.LSTM and nn.GRU for every configuration.

float64 throughout, so that 1e-12 catches any float32 step or a wrong weight. For
each configuration (layers, directions, bias, projection, layout, nonlinearity):
outputs, final states and the gradients of every parameter (in torch's layout), of
the input and of the initial state; the same with variable lengths against packed
sequences; PackedSequence input; to_torch / from_torch round trips; dropout.
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from seqbook.recurrent import GRU, LSTM, RNN

D, H, P, B, T = 4, 5, 3, 3, 7
ATOL = 1e-12

KINDS = {  # name: (our class, torch class, extra torch arguments)
    "RNN-tanh": (RNN, nn.RNN, {"nonlinearity": "tanh"}),
    "RNN-relu": (RNN, nn.RNN, {"nonlinearity": "relu"}),
    "LSTM": (LSTM, nn.LSTM, {}),
    "LSTM-proj": (LSTM, nn.LSTM, {"proj_size": P}),
    "GRU": (GRU, nn.GRU, {}),
}
CONFIGS = list(itertools.product(KINDS, [1, 2, 3], [False, True], [True, False], [True, False]))


def config_id(config):
    kind, layers, bidirectional, bias, batch_first = config
    return (f"{kind}-L{layers}-{'bi' if bidirectional else 'uni'}-"
            f"{'bias' if bias else 'nobias'}-{'BTD' if batch_first else 'TBD'}")


def make_pair(kind, layers, bidirectional, bias, batch_first, seed=0, dropout=0.0):
    ours_cls, torch_cls, extra = KINDS[kind]
    torch.manual_seed(seed)
    reference = torch_cls(D, H, num_layers=layers, bias=bias, batch_first=batch_first,
                          bidirectional=bidirectional, dropout=dropout, **extra).double()
    with torch.no_grad():  # biases of both kinds, so that folding them is tested
        for p in reference.parameters():
            p.uniform_(-0.6, 0.6)
    return ours_cls.from_torch(reference), reference


def initial_state(ours, kind, generator, batch):
    K = ours.num_layers * ours.num_directions
    h0 = torch.randn(K, batch, P if kind == "LSTM-proj" else H, generator=generator,
                     dtype=torch.float64, requires_grad=True)
    if kind.startswith("LSTM"):
        c0 = torch.randn(K, batch, H, generator=generator, dtype=torch.float64, requires_grad=True)
        return (h0, c0)
    return h0


def parts(state):
    return list(state) if isinstance(state, tuple) else [state]


_TORCH_NAME = re.compile(r"(weight_ih|weight_hh|weight_hr|bias_ih|bias_hh)_l(\d+)(_reverse)?")


def ours_in_torch_layout(ours, torch_name, values):
    """What torch's parameter ``torch_name`` corresponds to in ``ours``, built from
    ``values`` (a dict our-name -> tensor, e.g. the gradients)."""
    kind, layer, reverse = _TORCH_NAME.fullmatch(torch_name).groups()
    suffix = (f"_l{layer}" if int(layer) else "") + ("_reverse" if reverse else "")

    def get(name):
        return values[f"{name}{suffix}"]

    if isinstance(ours, RNN):
        return get({"weight_ih": "W_xh", "weight_hh": "W_hh"}.get(kind, "b_h"))
    if isinstance(ours, LSTM):
        if kind == "weight_hr":
            return get("W_proj")
        kind_prefix = {"weight_ih": "W_x", "weight_hh": "W_h"}.get(kind, "b_")
        return torch.cat([get(f"{kind_prefix}{gate}") for gate in "ifgo"])  # torch: i, f, g, o
    names = {"weight_ih": ["W_xr", "W_xz", "W_xh"], "weight_hh": ["W_hr", "W_hz", "W_hh"],
             "bias_ih": ["b_r", "b_z", "b_xh"], "bias_hh": ["b_r", "b_z", "b_hh"]}[kind]
    return torch.cat([get(name) for name in names])  # torch: r, z, n


def check_all_gradients(ours, reference):
    grads = {name: p.grad for name, p in ours.named_parameters()}
    assert all(g is not None for g in grads.values())
    worst = 0.0
    for name, p in reference.named_parameters():
        expected = ours_in_torch_layout(ours, name, grads)
        assert expected.shape == p.grad.shape, name
        worst = max(worst, (expected - p.grad).abs().max().item())
    assert worst < 1e-10, worst
    # every parameter of ours was compared: torch has only the folded second biases more
    n_ours = sum(p.numel() for p in ours.parameters())
    n_torch = sum(p.numel() for p in reference.parameters())
    folded = {RNN: 1, LSTM: 4, GRU: 2}[type(ours)] * H * ours.num_layers * ours.num_directions
    assert n_torch - n_ours == (folded if ours.bias else 0)


def run_both(ours, reference, kind, x, lengths=None, seed=1):
    generator = torch.Generator().manual_seed(seed)
    batch = x.shape[0] if ours.batch_first else x.shape[1]
    state = initial_state(ours, kind, generator, batch)
    x_ours = x.clone().requires_grad_(True)
    x_ref = x.clone().requires_grad_(True)
    if lengths is None:
        out, final = ours(x_ours, state)
        ref_out, ref_final = reference(x_ref, state)
    else:  # x batch-first here
        out, final = ours(x_ours, state, lengths=lengths)
        packed = pack_padded_sequence(x_ref, lengths, batch_first=True, enforce_sorted=False)
        ref_packed, ref_final = reference(packed, state)
        ref_out, _ = pad_packed_sequence(ref_packed, batch_first=True, total_length=x.shape[1])
    # a loss that reaches every output and every final state
    weights = torch.randn(out.shape, generator=generator, dtype=torch.float64)
    losses = []
    for o, f in ((out, final), (ref_out, ref_final)):
        losses.append((o * weights).sum() + sum((s**2).sum() * (i + 1)
                                                for i, s in enumerate(parts(f))))
    state_grads = []
    for loss, x_leaf in zip(losses, (x_ours, x_ref)):
        state_grads.append(torch.autograd.grad(loss, [x_leaf, *parts(state)],
                                               retain_graph=True))
        loss.backward()
    return (out, final, state_grads[0]), (ref_out, ref_final, state_grads[1])


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_equals_torch_with_all_gradients(config):
    kind, layers, bidirectional, bias, batch_first = config
    ours, reference = make_pair(*config)
    shape = (B, T, D) if batch_first else (T, B, D)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    (out, final, grads), (ref_out, ref_final, ref_grads) = run_both(ours, reference, kind, x)
    assert out.shape == ref_out.shape and out.dtype == torch.float64
    assert (out - ref_out).abs().max() < ATOL
    assert len(parts(final)) == len(parts(ref_final))
    for a, b in zip(parts(final), parts(ref_final)):
        assert a.shape == b.shape
        assert (a - b).abs().max() < ATOL
    for a, b in zip(grads, ref_grads):  # d/dx, d/dh_0 (and d/dc_0)
        assert (a - b).abs().max() < 1e-10
    check_all_gradients(ours, reference)


@pytest.mark.parametrize("config", [c for c in CONFIGS if c[4]], ids=config_id)
def test_variable_lengths_equal_packed_sequences(config):
    kind = config[0]
    ours, reference = make_pair(*config)
    x = torch.randn(4, 9, D, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    lengths = torch.tensor([4, 9, 1, 6])  # unsorted; one full length
    (out, final, grads), (ref_out, ref_final, ref_grads) = run_both(
        ours, reference, kind, x, lengths)
    assert (out - ref_out).abs().max() < ATOL
    for b, n in enumerate(lengths.tolist()):
        assert torch.all(out[b, n:] == 0)  # padding outputs are zero, as torch pads
    for a, b in zip(parts(final), parts(ref_final)):
        assert (a - b).abs().max() < ATOL
    for a, b in zip(grads, ref_grads):
        assert (a - b).abs().max() < 1e-10
    check_all_gradients(ours, reference)


@pytest.mark.parametrize("kind", list(KINDS))
def test_backward_direction_starts_at_each_sequences_last_real_step(kind):
    """A sequence padded with garbage gives the same states as the sequence alone."""
    ours, _ = make_pair(kind, 2, True, True, True)
    x = torch.randn(3, 8, D, dtype=torch.float64)
    lengths = torch.tensor([8, 3, 5])
    out, final = ours(x, lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        alone_out, alone_final = ours(x[b : b + 1, :n])
        assert torch.allclose(out[b, :n], alone_out[0], atol=ATOL)
        for a, alone in zip(parts(final), parts(alone_final)):
            assert torch.allclose(a[:, b], alone[:, 0], atol=ATOL)
    # and the padding's content does not matter
    garbage = x.clone()
    garbage[1, 3:] = 1e3
    assert torch.allclose(ours(garbage, lengths=lengths)[0], out, atol=ATOL)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packed_sequence_in_packed_sequence_out(kind, enforce_sorted):
    ours, reference = make_pair(kind, 2, True, True, True)
    x = torch.randn(4, 6, D, dtype=torch.float64)
    lengths = torch.tensor([6, 5, 3, 1]) if enforce_sorted else torch.tensor([3, 6, 1, 5])
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    out, final = ours(packed)
    ref_out, ref_final = reference(packed)
    assert isinstance(out, PackedSequence)
    assert torch.equal(out.batch_sizes, ref_out.batch_sizes)
    for field in ("sorted_indices", "unsorted_indices"):
        a, b = getattr(out, field), getattr(ref_out, field)
        assert (a is None and b is None) or torch.equal(a, b)
    assert (out.data - ref_out.data).abs().max() < ATOL
    for a, b in zip(parts(final), parts(ref_final)):
        assert (a - b).abs().max() < ATOL


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_to_torch_round_trip(config):
    kind = config[0]
    ours_cls, torch_cls, extra = KINDS[kind]
    _, layers, bidirectional, bias, batch_first = config
    torch.manual_seed(4)
    ours = ours_cls(D, H, num_layers=layers, bias=bias, batch_first=batch_first,
                    bidirectional=bidirectional, **extra).double()
    twin = ours.to_torch()
    assert type(twin) is torch_cls and twin.bias is bias and twin.num_layers == layers
    assert twin.bidirectional is bidirectional and twin.batch_first is batch_first
    assert twin.weight_ih_l0.dtype == torch.float64
    shape = (B, T, D) if batch_first else (T, B, D)
    x = torch.randn(*shape, dtype=torch.float64)
    assert (ours(x)[0] - twin(x)[0]).abs().max() < ATOL
    back = ours_cls.from_torch(twin)
    assert [n for n, _ in back.named_parameters()] == [n for n, _ in ours.named_parameters()]
    for (name, p), q in zip(ours.named_parameters(), back.parameters()):
        assert torch.allclose(p, q, atol=1e-15), name


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_bias_free_torch_layer_stays_bias_free(kind):
    ours, reference = make_pair(kind, 2, True, False, True)
    assert not ours.bias
    names = [name for name, _ in ours.named_parameters()]
    assert not any(name.startswith("b_") for name in names), names
    biases = [name for name in dir(ours) if re.fullmatch(r"b_\w+", name)]
    assert biases and all(getattr(ours, name) is None for name in biases)
    optimizer = torch.optim.SGD(ours.parameters(), lr=0.1)
    ours(torch.randn(2, 5, D, dtype=torch.float64))[0].sum().backward()
    optimizer.step()  # still no bias after training
    assert not any(name.startswith("b_") for name, _ in ours.named_parameters())
    twin = ours.to_torch()
    assert twin.bias is False
    assert not any(name.startswith("bias") for name, _ in twin.named_parameters())


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("layers", [2, 3])
def test_dropout_in_eval_mode_equals_torch(kind, layers):
    ours, reference = make_pair(kind, layers, True, True, True, dropout=0.5)
    ours.eval()
    reference.eval()
    assert ours.dropout == 0.5 and not ours.training
    x = torch.randn(B, T, D, dtype=torch.float64)
    assert (ours(x)[0] - reference(x)[0]).abs().max() < ATOL
    assert ours.to_torch().dropout == 0.5 and not ours.to_torch().training


@pytest.mark.parametrize("kind", list(KINDS))
def test_dropout_acts_between_layers_only_in_training(kind):
    """In training, a 2-layer module computes layer2(dropout(layer1(x))), no more."""
    p = 0.4
    ours, reference = make_pair(kind, 2, True, True, True, dropout=p)
    ours_cls, torch_cls, extra = KINDS[kind]
    layers = []  # the two layers as one-layer torch modules with the same weights
    for layer in range(2):
        size = D if layer == 0 else 2 * (P if kind == "LSTM-proj" else H)
        single = torch_cls(size, H, bidirectional=True, batch_first=True, **extra).double()
        with torch.no_grad():
            for name, q in single.named_parameters():
                q.copy_(getattr(reference, name.replace("_l0", f"_l{layer}")))
        layers.append(ours_cls.from_torch(single))
    x = torch.randn(64, 10, D, dtype=torch.float64)
    ours.train()
    torch.manual_seed(5)
    out, _ = ours(x)
    torch.manual_seed(5)
    below = layers[0](x)[0]
    dropped = F.dropout(below, p=p, training=True)
    expected = layers[1](dropped)[0]
    assert (out - expected).abs().max() < ATOL  # after layer 1, and only there
    # the mask: a fraction p of zeros (where relu has not zeroed already), the rest
    # scaled by 1 / (1 - p)
    live = below != 0
    zeros = (dropped[live] == 0).double().mean().item()
    n = int(live.sum())
    assert n > 1000 and abs(zeros - p) < 4 * (p * (1 - p) / n) ** 0.5
    kept = dropped != 0
    assert torch.allclose(dropped[kept], below[kept] / (1 - p), atol=ATOL)
    if kind != "RNN-relu":  # relu makes zeros of its own
        assert (out != 0).all()  # nothing dropped after the last layer
    ours.eval()
    assert not torch.allclose(ours(x)[0], out)  # and nothing in eval mode
    assert torch.allclose(ours(x)[0], layers[1](layers[0](x)[0])[0], atol=ATOL)


@pytest.mark.parametrize("kind", list(KINDS))
def test_dropout_with_one_layer_warns_like_torch_and_does_nothing(kind):
    ours_cls, _, extra = KINDS[kind]
    with pytest.warns(UserWarning, match="dropout"):
        ours = ours_cls(D, H, dropout=0.5, **extra).double()
    x = torch.randn(B, T, D, dtype=torch.float64)
    trained = ours(x)[0]
    ours.eval()
    assert torch.equal(trained, ours(x)[0])


@pytest.mark.parametrize("kind", list(KINDS))
def test_training_mode_is_copied(kind):
    ours, reference = make_pair(kind, 2, False, True, True, dropout=0.2)
    assert ours.training
    reference.eval()
    assert not type(ours).from_torch(reference).training
    assert not type(ours).from_torch(reference).to_torch().training


@pytest.mark.parametrize("kind", ["LSTM", "LSTM-proj", "GRU"])
@pytest.mark.parametrize("layers, bidirectional", [(1, False), (2, True)])
def test_trace_of_a_layer_holds_its_outputs(kind, layers, bidirectional):
    ours, _ = make_pair(kind, layers, bidirectional, True, True)
    x = torch.randn(2, 6, D, dtype=torch.float64)
    lengths = torch.tensor([6, 4])
    out, _ = ours(x, lengths=lengths)
    trace = ours.trace(x, lengths=lengths)  # the last layer by default
    states = trace.outputs if isinstance(ours, LSTM) else trace.hidden
    assert torch.allclose(states, out, atol=ATOL)
    first = ours.trace(x, lengths=lengths, layer=0)
    width = ours.num_directions * H
    for name, value in vars(first).items():
        if value is not None and not (name == "outputs" and kind == "LSTM-proj"):
            assert value.shape == (2, 6, width), name


@pytest.mark.parametrize("kind", list(KINDS))
def test_device_and_dtype_arguments_as_in_torch(kind):
    ours_cls, torch_cls, extra = KINDS[kind]
    ours = ours_cls(D, H, num_layers=2, bidirectional=True, device="cpu",
                    dtype=torch.float64, **extra)
    twin = torch_cls(D, H, num_layers=2, bidirectional=True, device="cpu",
                     dtype=torch.float64, **extra)
    assert all(p.dtype == torch.float64 for p in ours.parameters())
    assert sum(p.numel() for p in ours.parameters()) < sum(p.numel() for p in twin.parameters())
    x = torch.randn(B, T, D, dtype=torch.float64)
    assert ours(x)[0].dtype == torch.float64
