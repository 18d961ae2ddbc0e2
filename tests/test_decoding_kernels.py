"""The one-step functions of the searches, which the decoding chapter shows, agree with the
searches that call them."""

import pytest
import torch

from seqbook.decoding import beam_search, greedy_search, length_normalized, reorder_state
from seqbook.decoding.beam import beam_step
from seqbook.decoding.exhaustive import exhaustive_step
from seqbook.decoding.greedy import greedy_step


def test_length_normalized_divides_by_the_length_to_the_alpha():
    log_prob, length = torch.tensor([-2.0, -3.0]), torch.tensor([4, 0])
    assert torch.equal(length_normalized(log_prob, length, 0.0), log_prob)
    expected = log_prob / torch.tensor([4.0, 1.0]) ** 0.75  # lengths below 1 count as 1
    assert torch.equal(length_normalized(log_prob, length, 0.75), expected)


def test_beam_step_keeps_the_k_best_extensions():
    log_prob = torch.tensor([[0.0, -1.0]])  # (N, K)
    log_probs = torch.tensor([[[-0.1, -3.0, -2.0], [-0.2, -0.3, -4.0]]])  # (N, K, V)
    finished = torch.zeros(1, 2, dtype=torch.bool)
    parent, token, new, length = beam_step(log_prob, torch.zeros(1, 2, dtype=torch.long),
                                           finished, log_probs, 1, 0.0)
    assert parent.tolist() == [[0, 1]] and token.tolist() == [[0, 0]]
    assert torch.allclose(new, torch.tensor([[-0.1, -1.2]]))
    assert length.tolist() == [[1, 1]]


def test_greedy_step_repeats_eos_after_the_end_at_no_cost():
    log_probs = torch.tensor([[-0.1, -3.0, -2.5], [-2.0, -0.3, -1.5]])  # (N, V)
    best, log_prob, length, finished = greedy_step(
        log_probs, torch.tensor([-1.0, -2.0]), torch.tensor([3, 3]),
        torch.tensor([False, True]), eos=2)
    assert best.tolist() == [0, 2] and finished.tolist() == [False, True]
    assert torch.allclose(log_prob, torch.tensor([-1.1, -2.0])) and length.tolist() == [4, 3]


def test_exhaustive_step_drops_eos_and_impossible_tokens():
    log_prob = torch.zeros(1, 1)
    log_probs = torch.tensor([[[-0.5, float("-inf"), -1.0]]]).log_softmax(-1)
    total, parent, token = exhaustive_step(log_prob, log_probs, eos=2)
    assert parent.tolist() == [0] and token.tolist() == [0]
    assert torch.equal(total, log_probs)


def test_the_step_functions_check_their_arguments():
    log_probs = torch.zeros(2, 3).log_softmax(-1)
    with pytest.raises(ValueError, match=r"eos must be <= 2"):
        greedy_step(log_probs, torch.zeros(2), torch.zeros(2, dtype=torch.long),
                    torch.zeros(2, dtype=torch.bool), eos=3)
    with pytest.raises(TypeError, match=r"^log_prob must be"):  # N = 2, not 3
        greedy_step(log_probs, torch.zeros(3), torch.zeros(2, dtype=torch.long),
                    torch.zeros(2, dtype=torch.bool), eos=2)
    with pytest.raises(TypeError, match=r"^log_probs has dtype torch.float32 but log_prob has"):
        exhaustive_step(torch.zeros(1, 1, dtype=torch.float64), log_probs[None, :1], eos=2)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        beam_step(torch.zeros(1, 2), torch.zeros(1, 2, dtype=torch.long),
                  torch.zeros(1, 2, dtype=torch.bool), log_probs[None], 1, -0.5)
    with pytest.raises(ValueError, match="t must be >= 1"):
        beam_step(torch.zeros(1, 2), torch.zeros(1, 2, dtype=torch.long),
                  torch.zeros(1, 2, dtype=torch.bool), log_probs[None], 0, 0.5)


def test_reorder_state_follows_parent_in_nested_states():
    state = {"h": torch.arange(6).view(1, 3, 2)}
    assert reorder_state(state, torch.tensor([[2, 0]]))["h"].tolist() == [[[4, 5], [0, 1]]]


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
