"""What RNN, LSTM and GRU share: torch's layouts, cells, padding, pieces, devices.

Each test runs for the three layers against their torch twin. The LSTM's state is a
pair (h, c); the helpers below let one test speak about both kinds of state. Final
states have torch's shape (num_layers * num_directions, B, H); one step of a cell
works on (B, H), as torch's nn.RNNCell does.
"""

import pytest
import torch
from torch import nn

from seqbook.recurrent import GRU, LSTM, RNN
from seqbook.utils import seed_everything

LAYERS = [(RNN, nn.RNN), (LSTM, nn.LSTM), (GRU, nn.GRU)]
IDS = ["RNN", "LSTM", "GRU"]


def parts(state):
    """A state as a list of tensors: [h], or [h, c] for the LSTM."""
    return list(state) if isinstance(state, tuple) else [state]


def torch_parts(state):
    """The same for torch's final state (the same shapes as ours)."""
    return parts(state)


def zero_state(ours, B):
    """The (B, H) state of one step of a cell."""
    zeros = torch.zeros(B, ours.hidden_size)
    return (zeros, zeros.clone()) if isinstance(ours, LSTM) else zeros


def random_state(ours, B):
    """An initial state of forward, (1, B, H) for a one-layer module."""
    if isinstance(ours, LSTM):
        return torch.randn(1, B, ours.hidden_size), torch.randn(1, B, ours.hidden_size)
    return torch.randn(1, B, ours.hidden_size)


@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
def test_time_major_layout_like_torch(ours_cls, torch_cls):
    seed_everything(2)
    reference = torch_cls(3, 4, batch_first=False)
    ours = ours_cls.from_torch(reference)
    assert not ours.batch_first
    x = torch.randn(7, 2, 3)  # (T, B, D)
    out, final = ours(x)
    ref_out, ref_final = reference(x)
    assert out.shape == (7, 2, 4)
    assert torch.allclose(out, ref_out, atol=1e-6)
    for a, b in zip(parts(final), torch_parts(ref_final)):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
def test_cell_is_one_step_of_forward(ours_cls, torch_cls):
    seed_everything(3)
    ours = ours_cls(3, 5)
    x = torch.randn(2, 4, 3)
    out, final = ours(x)
    state = zero_state(ours, 2)
    for t in range(4):
        state = ours.cell(x[:, t], state)
        assert torch.allclose(out[:, t], parts(state)[0], atol=1e-7)
    for a, b in zip(parts(state), parts(final)):
        assert torch.allclose(a, b[0], atol=1e-7)


@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
def test_lengths_give_each_sequence_its_own_final_state(ours_cls, torch_cls):
    seed_everything(4)
    reference = torch_cls(3, 6, batch_first=True)
    ours = ours_cls.from_torch(reference)
    x = torch.randn(4, 9, 3)
    lengths = torch.tensor([9, 3, 1, 6])
    out, final = ours(x, lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        alone_out, alone_final = ours(x[b : b + 1, :n])
        for a, alone in zip(parts(final), parts(alone_final)):
            assert torch.allclose(a[:, b], alone[:, 0], atol=1e-6)
        assert torch.allclose(out[b, :n], alone_out[0], atol=1e-6)
        assert torch.all(out[b, n:] == 0)
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    ref_out, ref_final = reference(packed)
    ref_out, _ = nn.utils.rnn.pad_packed_sequence(ref_out, batch_first=True, total_length=9)
    assert torch.allclose(out, ref_out, atol=1e-6)
    for a, b in zip(parts(final), torch_parts(ref_final)):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
def test_zero_length_keeps_the_initial_state(ours_cls, torch_cls):
    ours = ours_cls(2, 3)
    state = random_state(ours, 2)
    _, final = ours(torch.randn(2, 4, 2), state, lengths=torch.tensor([0, 4]))
    for a, initial in zip(parts(final), parts(state)):
        assert torch.equal(a[:, 0], initial[:, 0])


@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
def test_running_in_pieces_equals_running_whole(ours_cls, torch_cls):
    ours = ours_cls(2, 4)
    x = torch.randn(3, 10, 2)
    out, final = ours(x)
    out1, middle = ours(x[:, :4])
    out2, final2 = ours(x[:, 4:], middle)
    assert torch.allclose(torch.cat([out1, out2], 1), out, atol=1e-7)
    for a, b in zip(parts(final2), parts(final)):
        assert torch.allclose(a, b, atol=1e-7)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
def test_runs_on_cuda_like_torch(ours_cls, torch_cls):
    seed_everything(5)
    reference = torch_cls(3, 8, batch_first=True).cuda()
    ours = ours_cls.from_torch(reference)
    assert all(p.is_cuda for p in ours.parameters())
    x = torch.randn(2, 6, 3, device="cuda")
    lengths = torch.tensor([6, 2])  # on the CPU, as pack_padded_sequence wants
    out, final = ours(x, lengths=lengths)
    assert out.is_cuda and all(s.is_cuda for s in parts(final))
    assert torch.allclose(ours(x)[0], reference(x)[0], atol=1e-5)


@pytest.mark.parametrize("ours_cls, torch_cls", LAYERS, ids=IDS)
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_a_forward_hook_on_every_submodule_fires(ours_cls, torch_cls, packed):
    # the modules are called as modules (module(x)), never through private methods, so
    # that hooks fire; a stack runs its layers itself and has no submodule but itself
    module = ours_cls(3, 4, num_layers=2, bidirectional=True)
    fired = []
    for name, submodule in module.named_modules():
        submodule.register_forward_hook(
            lambda m, args, out, name=name: fired.append(name))
    x = torch.randn(2, 5, 3)
    if packed:
        x = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 3]), batch_first=True)
    module(x)
    assert sorted(fired) == sorted(name for name, _ in module.named_modules())
    # and the recurrent modules of the package are hooked inside other modules too
    outer = nn.Sequential(module)
    outer.register_forward_hook(lambda m, args, out: fired.append("outer"))
    outer(x)
    assert fired.count("outer") == 1 and fired.count("") == 2
