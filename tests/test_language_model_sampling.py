"""Top-k and nucleus sampling, the preallocated key-value cache and weight tying."""

import math

import pytest
import torch

from seqbook.language_model import (
    TransformerLM,
    generate,
    next_token,
    truncate_scores,
)


def kept(scores, **kwargs):
    return truncate_scores(scores, **kwargs).isfinite()


def nucleus_by_hand(probs, p):
    """The fewest most likely tokens whose probabilities add up to at least p."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    chosen, mass = set(), 0.0
    for i in order:
        chosen.add(i)
        mass += probs[i]
        if mass >= p:
            break
    return chosen


def test_top_k_keeps_the_k_highest_scores_and_their_ties():
    scores = torch.tensor([[0.1, 2.0, -1.0, 1.5, 0.3], [1.0, 1.0, 1.0, 0.0, -2.0]])
    assert kept(scores, top_k=2).tolist() == [[False, True, False, True, False],
                                             [True, True, True, False, False]]
    assert kept(scores, top_k=5).all() and kept(scores, top_k=50).all()
    assert kept(scores, top_k=1)[0].tolist() == [False, True, False, False, False]


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.8, 0.9, 0.99])
def test_nucleus_is_the_smallest_most_likely_set_with_mass_p(p):
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(20, 12, generator=g) * 2
    probs = torch.softmax(scores.double(), -1)
    mask = kept(scores, top_p=p)
    for row in range(20):
        expected = nucleus_by_hand(probs[row].tolist(), p)
        assert set(mask[row].nonzero()[:, 0].tolist()) == expected


def test_the_most_likely_token_is_always_kept_and_top_p_one_keeps_all():
    scores = torch.tensor([[5.0, 0.0, -1.0]])
    assert kept(scores, top_p=1e-6).tolist() == [[True, False, False]]
    assert kept(scores, top_p=1.0).all()


def test_top_k_is_applied_before_the_nucleus():
    probs = torch.tensor([[0.4, 0.3, 0.2, 0.1]])
    scores = probs.log()
    # after top-2 the renormalised masses are 4/7 and 3/7: a nucleus of 0.5 keeps one
    assert kept(scores, top_k=2, top_p=0.5).tolist() == [[True, False, False, False]]
    assert kept(scores, top_k=3, top_p=0.8).tolist() == [[True, True, True, False]]


def test_samples_come_from_the_truncated_renormalised_distribution():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    g = torch.Generator().manual_seed(0)
    draws = torch.cat([next_token(logits, generator=g, top_k=2) for _ in range(4000)])
    assert set(draws.tolist()) == {0, 1}
    assert abs((draws == 0).double().mean().item() - 0.5 / 0.8) < 0.03
    draws = torch.cat([next_token(logits, generator=g, top_p=0.9) for _ in range(4000)])
    assert set(draws.tolist()) == {0, 1, 2}
    assert abs((draws == 2).double().mean().item() - 0.15 / 0.95) < 0.03
    # the temperature acts first: at a low temperature the nucleus shrinks to one token
    cold = torch.cat([next_token(logits, 0.05, generator=g, top_p=0.9) for _ in range(50)])
    assert cold.eq(0).all()


def test_top_k_of_one_is_greedy_in_generation():
    torch.manual_seed(0)
    model = TransformerLM(11, d_model=16, num_heads=2, num_layers=1, d_ff=16, max_len=40)
    prompt = torch.tensor([[1, 2, 3]])
    sampled = generate(model, prompt, 20, temperature=3.0, top_k=1,
                       generator=torch.Generator().manual_seed(0))
    assert torch.equal(sampled, generate(model, prompt, 20, greedy=True))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"top_k": 0}, ValueError, "top_k must be >= 1, got 0"),
        ({"top_k": 2.5}, TypeError, r"^top_k must be int \| None, got 2\.5"),
        ({"top_p": 0.0}, ValueError, "top_p must be > 0.0, got 0.0"),
        ({"top_p": 1.5}, ValueError, "top_p must be <= 1.0, got 1.5"),
        ({"top_p": "most"}, TypeError, r"^top_p must be float \| None, got 'most'"),
    ],
)
def test_truncation_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        truncate_scores(torch.randn(2, 5), **kwargs)
    with pytest.raises(error, match=message):
        next_token(torch.randn(2, 5), **kwargs)
    with pytest.raises(error, match=message):
        generate(TransformerLM(5, d_model=8, num_heads=2), torch.tensor([[1]]), 2, **kwargs)


def test_truncate_scores_rejects_bad_scores():
    with pytest.raises(TypeError, match=r"^scores must be Float\[Tensor, 'B V'\], got f32\[5\]"):
        truncate_scores(torch.randn(5), top_k=2)
    with pytest.raises(TypeError, match=r"^scores must be Float\[Tensor, 'B V'\], got i64\[2,5\]"):
        truncate_scores(torch.ones(2, 5, dtype=torch.long), top_k=2)


@pytest.mark.parametrize("greedy", [False, True])
def test_next_token_refuses_logits_with_nan_or_no_usable_score(greedy):
    masked = torch.tensor([[0.0, -math.inf, 1.0], [-math.inf, 2.0, -math.inf]])
    assert next_token(masked, greedy=greedy).tolist() in ([0, 1], [2, 1])  # -inf: masked out
    message = "logits must hold no NaN or \\+inf and at least one score above -inf"
    for bad in (float("nan"), -math.inf, math.inf):
        logits = masked.clone()
        logits[1] = bad if bad != math.inf else torch.tensor([0.0, math.inf, 1.0])
        with pytest.raises(ValueError, match=message):
            next_token(logits, greedy=greedy)
    with pytest.raises(ValueError, match=message):  # one NaN among usable scores
        next_token(torch.tensor([[0.0, float("nan"), 1.0]]), greedy=greedy)


def test_a_recurrent_model_refuses_a_state_it_did_not_return():
    from seqbook.language_model import RecurrentLM

    ids = torch.tensor([[1, 2]])
    for cell, what in (("lstm", "an \\(h, c\\) pair of tensors"), ("gru", "a tensor")):
        model = RecurrentLM(10, hidden_size=8, embedding_dim=4, cell=cell)
        _, state = model(ids)
        model(ids, state)  # what it returned is fine
        for bad in ("x", (1, 2), (state,) if cell == "gru" else state[0]):
            with pytest.raises(TypeError, match=f"state must be None or {what}"):
                model(ids, bad)


def small():
    torch.manual_seed(0)
    return TransformerLM(11, d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=24).eval()


def test_the_cache_writes_into_buffers_allocated_once():
    model = small()
    cache = model.init_state(2)
    assert cache.capacity == 24 and cache.allocated_bytes == 2 * 2 * 2 * 24 * 16 * 4
    pointers = [k.data_ptr() for k in cache.key_buffers + cache.value_buffers]
    with torch.no_grad():
        model(torch.randint(0, 11, (2, 5)), cache)
        for _ in range(10):
            model(torch.randint(0, 11, (2, 1)), cache)
    assert cache.length == 15 and cache.lengths == [15, 15]
    assert [k.data_ptr() for k in cache.key_buffers + cache.value_buffers] == pointers
    assert cache.nbytes == 2 * 2 * 2 * 15 * 16 * 4      # the positions held
    assert cache.allocated_bytes == 2 * 2 * 2 * 24 * 16 * 4


def test_a_cache_serves_generation_only():
    model = small()
    cache = model.init_state(1)
    logits, _ = model(torch.tensor([[1, 2, 3]]), cache)     # the model reads it without gradients
    assert not logits.requires_grad
    from seqbook.language_model import cached_self_attention
    with pytest.raises(RuntimeError, match="cached attention is for generation: call it under "
                                           "torch.no_grad"):
        cached_self_attention(model.blocks[0].self_attention, torch.randn(1, 1, 16),
                              model.init_state(1), 0)
    cache.lengths[0] += 1                                     # as after a failed call
    with pytest.raises(ValueError, match=r"cache layers hold different numbers of positions "
                                         r"\[4, 3\]"):
        model(torch.tensor([[1]]), cache)


def test_a_full_cache_refuses_more_positions_and_a_copy_is_independent():
    model = small()
    cache = model.init_state(1)
    with torch.no_grad():
        model(torch.randint(0, 11, (1, 20)), cache)
        copy = cache.copy()
        before = copy.keys[0].clone()
        model(torch.randint(0, 11, (1, 4)), cache)
        with pytest.raises(ValueError, match="more than the model's max_len=24"):
            model(torch.randint(0, 11, (1, 1)), cache)
    assert cache.length == 24 and copy.length == 20
    assert torch.equal(copy.keys[0], before)
    from seqbook.language_model import cached_self_attention
    with pytest.raises(ValueError, match="more than the cache's capacity of 24"), \
            torch.no_grad():
        cached_self_attention(model.blocks[0].self_attention, torch.randn(1, 5, 16), copy, 0)


def test_weight_tying_shares_one_matrix_and_saves_v_times_d_parameters():
    torch.manual_seed(0)
    untied = TransformerLM(11, d_model=16, num_heads=2)
    torch.manual_seed(0)
    tied = TransformerLM(11, d_model=16, num_heads=2, tie_weights=True)
    count = lambda m: sum(p.numel() for p in m.parameters())        # noqa: E731
    assert count(untied) - count(tied) == 11 * 16
    assert tied.readout.weight is tied.embedding.weight
    logits, _ = tied(torch.tensor([[1, 2, 3]]))
    logits.sum().backward()                   # both uses reach the one matrix
    assert tied.embedding.weight.grad is not None
    assert tied.embedding.weight.grad[1:4].abs().sum() > 0 and math.isfinite(
        tied.embedding.weight.grad.sum().item())
    with pytest.raises(TypeError, match="tie_weights must be a bool, got 1"):
        TransformerLM(11, tie_weights=1)
