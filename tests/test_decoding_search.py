import itertools
import math

import pytest
import torch

from seqbook.decoding import beam_search, exhaustive_search, greedy_search, reorder_state

A, B, C, EOS, BOS = 0, 1, 2, 3, 4
V = 4  # A B C <eos>; <bos> is never predicted

# The DSCI 565 slides' two tables (rows A, B, C, <eos>; columns: time steps 1-4).
TABLE_GREEDY = torch.tensor(
    [[0.5, 0.1, 0.2, 0.0], [0.2, 0.4, 0.2, 0.2], [0.2, 0.3, 0.4, 0.2], [0.1, 0.2, 0.2, 0.6]]
)
TABLE_BETTER = torch.tensor(
    [[0.5, 0.1, 0.1, 0.1], [0.2, 0.4, 0.6, 0.2], [0.2, 0.3, 0.2, 0.1], [0.1, 0.2, 0.1, 0.6]]
)


def slide_step(prefixes, state):
    """P(next | prefix): the second table after the prefix A C, else the first."""
    N, K, t = prefixes.shape
    step = min(t - 1, 3)
    after_ac = (
        (prefixes[..., 1] == A) & (prefixes[..., 2] == C)
        if t >= 3
        else torch.zeros(N, K, dtype=torch.bool)
    )
    probs = torch.where(after_ac.unsqueeze(-1), TABLE_BETTER[:, step], TABLE_GREEDY[:, step])
    return probs.log(), None


def test_slide_example_greedy_and_beam():
    greedy = greedy_search(slide_step, BOS, EOS, max_len=4)
    assert greedy.tokens == [[A, B, C]]
    assert math.isclose(greedy.probability.item(), 0.5 * 0.4 * 0.4 * 0.6, rel_tol=1e-6)  # 0.048
    beam = beam_search(slide_step, BOS, EOS, beam_size=2, max_len=4)
    assert beam.tokens == [[A, C, B]]
    assert math.isclose(beam.probability.item(), 0.5 * 0.3 * 0.6 * 0.6, rel_tol=1e-6)  # 0.054
    assert bool(beam.finished.all())


def test_slide_example_exhaustive():
    # with D2L's length normalisation the optimum is A C B <eos>
    best = exhaustive_search(slide_step, BOS, EOS, max_len=4, length_penalty=0.75)
    assert best.tokens == [[A, C, B]]
    # ranked by probability alone, a one- or two-token output (p = 0.1) wins
    short = exhaustive_search(slide_step, BOS, EOS, max_len=4)
    assert math.isclose(short.probability.item(), 0.1, rel_tol=1e-6)
    assert len(short.tokens[0]) <= 1
    # exhaustive scores every prefix: 1 + 3 + 9 + 27 prefixes, 4 tokens each
    assert best.candidates == (1 + 3 + 9 + 27) * V


def random_markov(N, vocab, seed, eos=EOS):
    """A random model whose next-token distribution depends on the whole prefix."""
    g = torch.Generator().manual_seed(seed)
    weights = torch.randn(N, 7, vocab, generator=g)

    def step(prefixes, state):
        n, K, t = prefixes.shape
        h = (prefixes * torch.arange(1, t + 1)).sum(-1) % 7  # (N, K) a hash of the prefix
        logits = weights[torch.arange(n).unsqueeze(1), h] + 0.3 * t  # (N, K, V)
        return torch.log_softmax(logits, -1), None

    return step


@pytest.mark.parametrize("seed", range(4))
def test_greedy_equals_beam_of_size_one(seed):
    step = random_markov(5, 6, seed)
    greedy = greedy_search(step, bos=6, eos=EOS, max_len=7, batch_size=5)
    beam = beam_search(step, bos=6, eos=EOS, beam_size=1, max_len=7, batch_size=5)
    assert greedy.tokens == beam.tokens
    assert torch.allclose(greedy.log_prob, beam.log_prob)


@pytest.mark.parametrize("alpha", [0.0, 0.75])
def test_wide_beam_finds_the_exhaustive_optimum(alpha):
    step = random_markov(3, 4, 1)
    exact = exhaustive_search(step, bos=4, eos=EOS, max_len=4, length_penalty=alpha, batch_size=3)
    wide = beam_search(
        step, bos=4, eos=EOS, beam_size=3**4, max_len=4, length_penalty=alpha, batch_size=3
    )
    assert torch.allclose(exact.score, wide.score, atol=1e-6)
    # and the exhaustive optimum is the best of a brute-force enumeration
    for n in range(3):
        best = -math.inf
        for length in range(1, 5):
            for seq in itertools.product(range(4), repeat=length):
                if EOS in seq[:-1] or (seq[-1] != EOS and length < 4):
                    continue
                prefix, logp = torch.tensor([[[4]]]), 0.0
                for token in seq:
                    lp, _ = step(prefix.expand(3, 1, -1).contiguous(), None)
                    logp += lp[n, 0, token].item()
                    prefix = torch.cat([prefix, torch.tensor([[[token]]])], -1)
                best = max(best, logp / length**alpha)
        assert math.isclose(exact.score[n].item(), best, rel_tol=1e-5)


def test_batched_beam_equals_one_sentence_at_a_time():
    N = 6
    step = random_markov(N, 9, 2)
    batched = beam_search(
        step, bos=9, eos=EOS, beam_size=3, max_len=8, length_penalty=0.5, batch_size=N
    )
    for n in range(N):

        def one(prefixes, state, n=n):
            lp, _ = step(prefixes.expand(N, -1, -1).contiguous(), None)
            return lp[n : n + 1], None

        single = beam_search(one, bos=9, eos=EOS, beam_size=3, max_len=8, length_penalty=0.5)
        assert single.tokens[0] == batched.tokens[n]
        assert math.isclose(single.score.item(), batched.score[n].item(), rel_tol=1e-6)


def test_state_is_reordered_with_the_beams():
    """A stateful step function (it carries the prefix sum) equals a stateless one."""
    stateless = random_markov(2, 5, 3)

    def stateful(prefixes, state):
        N, K, t = prefixes.shape
        total = (
            torch.zeros(N, K, dtype=torch.long) if state is None else state + prefixes[..., -1] * t
        )
        expected = (prefixes * torch.arange(1, t + 1)).sum(-1) - prefixes[..., 0]
        assert torch.equal(total, expected), "the state does not follow its prefix"
        lp, _ = stateless(prefixes, None)
        return lp, total

    a = beam_search(stateful, bos=0, eos=EOS, beam_size=3, max_len=6, batch_size=2)
    b = beam_search(stateless, bos=0, eos=EOS, beam_size=3, max_len=6, batch_size=2)
    assert a.tokens == b.tokens
    c = exhaustive_search(stateful, bos=0, eos=EOS, max_len=4, batch_size=2)
    d = exhaustive_search(stateless, bos=0, eos=EOS, max_len=4, batch_size=2)
    assert c.tokens == d.tokens


def test_reorder_state_nested():
    state = {"h": torch.arange(8).view(2, 2, 2), "pair": (torch.arange(4).view(2, 2), None)}
    out = reorder_state(state, torch.tensor([[1, 1], [0, 1]]))
    assert out["h"].tolist() == [[[2, 3], [2, 3]], [[4, 5], [6, 7]]]
    assert out["pair"][0].tolist() == [[1, 1], [2, 3]] and out["pair"][1] is None


def test_length_penalty_favours_longer_outputs():
    # <eos> first has p = 0.4; a long sentence has higher per-token probability
    def step(prefixes, state):
        N, K, t = prefixes.shape
        probs = (
            torch.tensor([0.6, 0.0, 0.0, 0.4]) if t < 5 else torch.tensor([0.01, 0.0, 0.0, 0.99])
        )
        return probs.log().expand(N, K, 4), None

    plain = beam_search(step, BOS, EOS, beam_size=2, max_len=6)
    penalised = beam_search(step, BOS, EOS, beam_size=2, max_len=6, length_penalty=1.0)
    assert plain.tokens == [[]]
    assert penalised.tokens == [[A, A, A, A]]


def test_max_len_stops_unfinished_sequences():
    def never_stop(prefixes, state):
        N, K, _ = prefixes.shape
        return torch.tensor([0.9, 0.05, 0.04, 0.01]).log().expand(N, K, 4), None

    for search in (
        greedy_search(never_stop, BOS, EOS, max_len=3),
        beam_search(never_stop, BOS, EOS, beam_size=2, max_len=3),
    ):
        assert search.tokens == [[A, A, A]] and not bool(search.finished[0])


def test_beam_larger_than_vocabulary_and_trace():
    result = beam_search(slide_step, BOS, EOS, beam_size=6, max_len=4, trace=True)
    # a wide beam keeps "A <eos>" (p = 0.1), which beats A C B <eos> on probability
    assert math.isclose(result.probability.item(), 0.1, rel_tol=1e-6)
    normalised = beam_search(slide_step, BOS, EOS, beam_size=6, max_len=4, length_penalty=0.75)
    assert normalised.tokens == [[A, C, B]]
    prefixes, log_probs = result.trace[0]
    assert prefixes.shape == (1, 6, 2)
    assert torch.isinf(log_probs[0, 4:]).all()  # only 4 first tokens exist


def test_bad_input_gives_clear_errors():
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(slide_step, BOS, EOS, beam_size=0, max_len=4)
    with pytest.raises(TypeError, match="beam_size"):
        beam_search(slide_step, BOS, EOS, beam_size=2.0, max_len=4)
    with pytest.raises(ValueError, match="max_len"):
        greedy_search(slide_step, BOS, EOS, max_len=0)
    with pytest.raises(ValueError, match="eos must be different from bos"):
        greedy_search(slide_step, EOS, EOS, max_len=3)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(slide_step, BOS, EOS, beam_size=2, max_len=3, length_penalty=-1)
    with pytest.raises(TypeError, match="pair"):
        greedy_search(lambda p, s: slide_step(p, s)[0], BOS, EOS, max_len=3)
    with pytest.raises(ValueError, match=r"\(N, K, V\)"):
        beam_search(lambda p, s: (torch.zeros(4), None), BOS, EOS, beam_size=2, max_len=3)
    with pytest.raises(ValueError, match="max_prefixes"):
        exhaustive_search(random_markov(1, 30, 0), 30, EOS, max_len=6, max_prefixes=1000)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_beam_search_on_gpu():
    weights = torch.randn(4, 7, 8, device="cuda")

    def step(prefixes, state):
        n, K, t = prefixes.shape
        h = (prefixes * torch.arange(1, t + 1, device="cuda")).sum(-1) % 7
        return torch.log_softmax(weights[torch.arange(n, device="cuda").unsqueeze(1), h], -1), None

    gpu = beam_search(step, 8, EOS, beam_size=3, max_len=6, batch_size=4, device="cuda")
    assert gpu.log_prob.device.type == "cuda" and len(gpu.tokens) == 4


SEARCHES = {
    "greedy": lambda step, **kw: greedy_search(step, BOS, kw.pop("eos", EOS), max_len=3, **kw),
    "beam": lambda step, **kw: beam_search(
        step, BOS, kw.pop("eos", EOS), beam_size=2, max_len=3, **kw
    ),
    "exhaustive": lambda step, **kw: exhaustive_search(
        step, BOS, kw.pop("eos", EOS), max_len=3, **kw
    ),
}


@pytest.mark.parametrize("search", SEARCHES)
def test_eos_outside_the_vocabulary_is_refused(search):
    # V = 4 (A B C <eos>): eos = 5 and 7 are not columns of the step function's output
    for eos in (5, 7):
        with pytest.raises(
            ValueError,
            match=rf"eos must be one of the step function's token ids \[0, 4\).*eos={eos}",
        ):
            SEARCHES[search](slide_step, eos=eos)


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda lp: torch.full_like(lp, float("nan")), "NaN log-probabilities at step 1"),
        (lambda lp: lp.exp(), r"log-probabilities \(<= 0\).*probabilities or logits"),
        (lambda lp: lp + 3.0, r"log-probabilities \(<= 0\), got values up to"),
        (
            lambda lp: torch.where(lp > -1, torch.inf, lp),
            r"log-probabilities \(<= 0\), got values up to inf",
        ),
    ],
    ids=["nan", "probabilities", "logits", "plus-inf"],
)
def test_step_functions_that_do_not_return_log_probabilities_are_refused(search, bad, match):
    def step(prefixes, state):
        log_probs, state = slide_step(prefixes, state)
        return bad(log_probs), state

    with pytest.raises(ValueError, match=match):
        SEARCHES[search](step)


def test_nan_at_a_later_step_is_caught_with_its_step():
    def step(prefixes, state):
        log_probs, state = slide_step(prefixes, state)
        return (log_probs * float("nan") if prefixes.shape[-1] == 3 else log_probs), state

    with pytest.raises(ValueError, match="NaN log-probabilities at step 3"):
        beam_search(step, BOS, EOS, beam_size=2, max_len=4)


@pytest.mark.parametrize("search", SEARCHES)
def test_bad_step_functions_and_devices(search):
    with pytest.raises(TypeError, match=r"^step_fn must be .*Callable.*, got 'not a function'"):
        SEARCHES[search]("not a function")
    with pytest.raises(TypeError, match=r"step_fn must be callable as step_fn\(prefixes, state\)"):
        SEARCHES[search](lambda prefixes: None)
    with pytest.raises(ValueError, match="device must name a device"):
        SEARCHES[search](slide_step, device="gpu0")
    with pytest.raises(TypeError, match=r"^device must be torch.device \| str \| None, got 0.5"):
        SEARCHES[search](slide_step, device=0.5)


def test_reorder_state_checks_its_parent():
    state = torch.arange(12).view(2, 3, 2)  # (N, K, H)
    with pytest.raises(ValueError, match=r"parent must hold row indices in \[0, 3\).* to 3"):
        reorder_state(state, torch.tensor([[0, 3], [1, 1]]))
    with pytest.raises(ValueError,
                       match=r"parent must hold row indices in \[0, 3\).* from -1"):
        reorder_state({"h": state}, torch.tensor([[0, -1], [1, 1]]))
    with pytest.raises(ValueError, match=r"\(N, K, \.\.\.\) with N = 1"):
        reorder_state(state, torch.tensor([[0, 1]]))
    with pytest.raises(TypeError, match=r"^parent must be Int\[Tensor, 'N K_new'\], got f32"):
        reorder_state(state, torch.tensor([[0.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(TypeError, match=r"^parent must be .*1 dimensions, not the 2"):
        reorder_state(state, torch.tensor([0, 1]))


@pytest.mark.parametrize("alpha", [0.0, 0.75])
def test_float64_step_functions_give_float64_accurate_scores(alpha):
    step32 = random_markov(3, 5, 7)

    def step64(prefixes, state):
        log_probs, _ = step32(prefixes, None)
        return log_probs.double() - 1e-9, None  # a shift that float32 cannot represent

    def exact_log_prob(n, tokens):  # the sum of float64 log-probabilities, token by token
        prefix, total = torch.tensor([[[5]]]).expand(3, 1, 1), 0.0
        for token in tokens:
            log_probs, _ = step64(prefix.contiguous(), None)
            total += log_probs[n, 0, token].item()
            prefix = torch.cat([prefix, torch.full((3, 1, 1), token)], -1)
        return total

    for search in (
        lambda s: greedy_search(s, bos=5, eos=EOS, max_len=4, batch_size=3),
        lambda s: beam_search(s, bos=5, eos=EOS, beam_size=3, max_len=4, length_penalty=alpha,
                              batch_size=3),
        lambda s: exhaustive_search(s, bos=5, eos=EOS, max_len=4, length_penalty=alpha,
                                    batch_size=3),
    ):
        out = search(step64)
        assert out.log_prob.dtype == out.score.dtype == torch.float64
        for n, tokens in enumerate(out.tokens):
            generated = tokens + [EOS] * bool(out.finished[n])
            expected = exact_log_prob(n, generated)
            assert out.log_prob[n].item() == pytest.approx(expected, rel=1e-14, abs=1e-15)
