"""NgramLM: counts, add-k smoothing, the chain rule and perplexity, checked by hand,
by brute force over every sequence, and against the bigram table of BigramLM."""

import itertools
import math

import pytest
import torch

from seqbook.language_model import BigramLM, NgramLM


def test_trigram_probabilities_by_hand():
    # bos = 0; sequences 1 2 3 and 1 2 2: trigrams (0,0,1) x2, (0,1,2) x2,
    # (1,2,3), (1,2,2); context (1, 2) seen twice, followed by 3 once and 2 once
    lm = NgramLM([[1, 2, 3], [1, 2, 2]], order=3, vocab_size=4, smoothing=0.5)
    assert lm.prob([1, 2], 3) == pytest.approx((1 + 0.5) / (2 + 0.5 * 4))
    assert lm.prob([1, 2], 1) == pytest.approx(0.5 / (2 + 2))
    assert lm.prob([], 1) == pytest.approx((2 + 0.5) / (2 + 2))  # context (0, 0)
    assert lm.prob([1], 2) == pytest.approx((2 + 0.5) / (2 + 2))  # context (0, 1)
    # only the last n - 1 ids of a longer context count
    assert lm.prob([3, 3, 1, 2], 3) == lm.prob([1, 2], 3)
    # a context never seen: uniform
    assert lm.prob([3, 3], 2) == pytest.approx(1 / 4)


def test_unigram_is_smoothed_frequency():
    lm = NgramLM([[1, 1, 2], [3]], order=1, vocab_size=5, smoothing=1.0)
    expected = torch.tensor([0, 2, 1, 1, 0], dtype=torch.float64) + 1
    assert torch.allclose(lm.distribution([7 % 5]), expected / expected.sum())


@pytest.mark.parametrize("order", [1, 2, 3])
def test_distributions_sum_to_one_for_seen_and_unseen_contexts(order):
    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(0, 6, (n,), generator=g) for n in (5, 9, 1, 12)]
    lm = NgramLM(seqs, order=order, vocab_size=6, smoothing=0.1)
    for context in itertools.product(range(6), repeat=order - 1):
        dist = lm.distribution(list(context))
        assert dist.sum().item() == pytest.approx(1.0, abs=1e-12)
        assert torch.allclose(
            dist, torch.tensor([lm.prob(list(context), w) for w in range(6)], dtype=dist.dtype)
        )


@pytest.mark.parametrize("order", [1, 2, 3])
def test_chain_rule_probabilities_of_all_sequences_sum_to_one(order):
    # brute force: P(x_1..x_L) = prod_t P(x_t | x_<t) over all V^L sequences sums to 1
    lm = NgramLM([[1, 2, 0, 2], [2, 2, 1]], order=order, vocab_size=3, smoothing=0.3)
    total = sum(
        math.exp(lm.log_probs(list(seq)).sum().item())
        for seq in itertools.product(range(3), repeat=4)
    )
    assert total == pytest.approx(1.0, abs=1e-12)


def test_perplexity_is_exp_of_mean_negative_log_probability():
    lm = NgramLM([[1, 2, 1, 2, 3]], order=2, vocab_size=4, smoothing=1.0)
    held_out = [[1, 2, 3], [2, 1]]
    # by hand: bos = 0; P(1|0) = 2/5, P(2|1) = 3/6, P(3|2) = 2/6, P(2|0) = 1/5, P(1|2) = 2/6
    probs = [2 / 5, 3 / 6, 2 / 6, 1 / 5, 2 / 6]
    expected = math.exp(-sum(math.log(p) for p in probs) / len(probs))
    assert lm.perplexity(held_out) == pytest.approx(expected, rel=1e-12)
    assert lm.cross_entropy(held_out) == pytest.approx(math.log(expected), rel=1e-12)


def test_no_counts_gives_perplexity_v():
    # a context never seen predicts uniformly: perplexity V on unseen contexts
    lm = NgramLM([[1]], order=3, vocab_size=7)
    assert lm.perplexity([[5, 6, 5, 6]]) == pytest.approx(
        math.exp(-(math.log(lm.prob([], 5)) + 3 * math.log(1 / 7)) / 4)
    )


def test_bigram_matches_bigram_lm():
    # on one stream, the bigram's table equals BigramLM's wherever the context is not bos
    g = torch.Generator().manual_seed(1)
    stream = torch.randint(1, 5, (200,), generator=g)
    ours = NgramLM([stream], order=2, vocab_size=5, smoothing=0.7, bos_id=0)
    twin = BigramLM(stream, vocab_size=5, smoothing=0.7).log_p.exp()
    for v in range(1, 5):
        assert torch.allclose(ours.distribution([v]), twin[v].double(), atol=1e-6)


def test_accepts_tensors_and_lists_alike():
    a = NgramLM([[1, 2, 3]], order=2, vocab_size=4)
    b = NgramLM([torch.tensor([1, 2, 3])], order=2, vocab_size=4)
    assert a.ngram_counts == b.ngram_counts
    assert a.perplexity([torch.tensor([3, 2])]) == b.perplexity([[3, 2]])


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"order": 0}, ValueError, "order"),
        ({"order": 2.0}, TypeError, "order"),
        ({"vocab_size": 0}, ValueError, "vocab_size"),
        ({"smoothing": 0.0}, ValueError, "smoothing"),
        ({"smoothing": float("inf")}, ValueError, "smoothing"),
        ({"smoothing": "1"}, TypeError, "smoothing"),
        ({"bos_id": 4}, ValueError, "bos_id"),
        ({"bos_id": -1}, ValueError, "bos_id"),
        ({"sequences": [[1, 4]]}, ValueError, "sequences[0]"),
        ({"sequences": [[1], [1.5]]}, TypeError, "sequences[1]"),
        ({"sequences": ["abc"]}, TypeError, "sequences[0]"),
        ({"sequences": torch.tensor([1, 2])}, TypeError, "sequences"),
        ({"sequences": [[], []]}, ValueError, "sequences"),
        ({"sequences": [torch.tensor([[1, 2]])]}, TypeError, "sequences[0]"),
    ],
)
def test_bad_constructor_input_names_the_argument(kwargs, error, words):
    args = {"sequences": [[1, 2]], "order": 2, "vocab_size": 4} | kwargs
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        NgramLM(**args)


def test_bad_query_input_names_the_argument():
    lm = NgramLM([[1, 2]], order=2, vocab_size=4)
    with pytest.raises(ValueError, match="token"):
        lm.prob([1], 4)
    with pytest.raises(ValueError, match="context"):
        lm.prob([9], 1)
    with pytest.raises(ValueError, match="ids"):
        lm.log_probs([1, -1])
    with pytest.raises(TypeError, match="sequences"):
        lm.perplexity("12")
    with pytest.raises(ValueError, match="sequences"):
        lm.perplexity([[]])
