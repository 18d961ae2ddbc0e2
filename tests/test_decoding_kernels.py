"""The private kernels of the searches agree with the public functions that call them."""

import torch

from seqbook.decoding import beam_search, greedy_search, length_normalized
from seqbook.decoding.beam import _beam_step
from seqbook.decoding.common import _length_normalized, _reorder_state
from seqbook.decoding.exhaustive import _extend


def test_length_normalized_is_its_kernel():
    log_prob, length = torch.tensor([-2.0, -3.0]), torch.tensor([4, 0])
    for alpha in (0.0, 0.75):
        assert torch.equal(length_normalized(log_prob, length, alpha),
                           _length_normalized(log_prob, length, alpha))


def test_beam_step_keeps_the_k_best_extensions():
    log_prob = torch.tensor([[0.0, -1.0]])  # (N, K)
    log_probs = torch.tensor([[[-0.1, -3.0, -2.0], [-0.2, -0.3, -4.0]]])  # (N, K, V)
    finished = torch.zeros(1, 2, dtype=torch.bool)
    parent, token, new, length = _beam_step(log_prob, torch.zeros(1, 2, dtype=torch.long),
                                            finished, log_probs, 1, 0.0)
    assert parent.tolist() == [[0, 1]] and token.tolist() == [[0, 0]]
    assert torch.allclose(new, torch.tensor([[-0.1, -1.2]]))
    assert length.tolist() == [[1, 1]]


def test_extend_drops_eos_and_impossible_tokens():
    log_prob = torch.zeros(1, 1)
    log_probs = torch.tensor([[[-0.5, float("-inf"), -1.0]]]).log_softmax(-1)
    total, parent, token = _extend(log_prob, log_probs, eos=2)
    assert parent.tolist() == [0] and token.tolist() == [0]
    assert torch.equal(total, log_probs)


def test_reorder_state_kernel_trusts_parent():
    state = {"h": torch.arange(6).view(1, 3, 2)}
    assert _reorder_state(state, torch.tensor([[2, 0]]))["h"].tolist() == [[[4, 5], [0, 1]]]


def test_searches_agree_on_a_random_table():
    g = torch.Generator().manual_seed(0)
    table = torch.randn(3, 6, 5, generator=g).log_softmax(-1)  # (N, t, V)

    def step(prefixes, state):
        t = prefixes.shape[-1] - 1
        return table[:, t].unsqueeze(1).expand(-1, prefixes.shape[1], -1), None

    greedy = greedy_search(step, bos=5, eos=4, max_len=6, batch_size=3)
    beam = beam_search(step, bos=5, eos=4, beam_size=1, max_len=6, batch_size=3)
    assert greedy.tokens == beam.tokens
    assert torch.equal(greedy.log_prob, beam.log_prob)
