"""The character-LM harness: corpus, windows, loss, perplexity, bigram, recurrent LM."""

import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.data import Vocab, python_source_corpus, tokenize
from seqbook.language_model import (
    BigramLM,
    RecurrentLM,
    bigram_perplexity,
    char_corpus,
    generate,
    lm_loss,
    loss_by_position,
    perplexity,
    random_windows,
    sequence_loss,
)
from seqbook.recurrent import GRU, LSTM


@pytest.fixture(scope="module")
def corpus():
    return char_corpus(num_chars=100_000)


def test_char_corpus_is_the_chapters_corpus(corpus):
    # the corpus the LSTM and GRU chapters built by hand before the harness existed
    code = python_source_corpus(num_chars=100_000)
    train_text = "\n".join(f.text for f in code.train)
    valid_text = "\n".join(f.text for f in code.valid)
    chars = Vocab([tokenize(train_text)], min_freq=5)
    assert corpus.train_text == train_text and corpus.valid_text == valid_text
    assert corpus.vocab.tokens == chars.tokens and corpus.vocab_size == len(chars)
    assert torch.equal(corpus.train_ids, torch.tensor(chars.encode(tokenize(train_text))))
    assert torch.equal(corpus.valid_ids, torch.tensor(chars.encode(tokenize(valid_text))))
    assert corpus.train_ids.dtype == torch.long


def test_encode_decode_round_trip_and_unknown_characters(corpus):
    text = "def f(x):\n    return x"
    assert corpus.decode(corpus.encode(text)) == text
    rare = "\u2603"  # a snowman: not in the standard library's code
    assert corpus.encode(rare).tolist() == [corpus.vocab.unk_id]
    with pytest.raises(TypeError, match="^text must be str"):
        corpus.encode(b"bytes")
    with pytest.raises(TypeError, match="^ids must be "):
        corpus.decode(torch.zeros(2, 2, dtype=torch.long))


def test_random_windows_are_the_next_characters_and_repeatable(corpus):
    ids = corpus.train_ids
    a = random_windows(ids, torch.Generator().manual_seed(3), batch_size=8, length=16)
    b = random_windows(ids, torch.Generator().manual_seed(3), batch_size=8, length=16)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    inputs, targets = a
    assert inputs.shape == targets.shape == (8, 16)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    # each window is a contiguous piece of the stream
    for row in range(8):
        text = "".join(corpus.vocab.decode(inputs[row].tolist(), skip_specials=False))
        assert text in "".join(corpus.vocab.decode(ids.tolist(), skip_specials=False))
    # the draw of the LSTM chapter's inline sampler, for the same generator
    g = torch.Generator().manual_seed(1)
    starts = torch.randint(0, len(ids) - 32 - 1, (32,), generator=g)
    windows = ids[starts[:, None] + torch.arange(33)]
    ours = random_windows(ids, torch.Generator().manual_seed(1))
    assert torch.equal(ours[0], windows[:, :-1]) and torch.equal(ours[1], windows[:, 1:])


def test_random_windows_bad_input():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="at least length \\+ 2 = 12"):
        random_windows(torch.arange(11), g, length=10)
    with pytest.raises(TypeError, match=r"^ids must be Int\[Tensor, 'N'\], got f32\[100\]"):
        random_windows(torch.rand(100), g)
    with pytest.raises(TypeError, match="^generator must be .*Generator, got 0"):
        random_windows(torch.arange(100), 0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        random_windows(torch.arange(100), g, batch_size=0)


class LogitsOnly(nn.Module):
    """A model that returns the logits alone (as the GRU chapter's used to)."""

    def __init__(self, V):
        super().__init__()
        self.table = nn.Embedding(V, V)

    def forward(self, ids):
        return self.table(ids)


def test_lm_loss_is_the_mean_cross_entropy_of_the_next_token():
    torch.manual_seed(0)
    model = RecurrentLM(12, hidden_size=8, embedding_dim=4)
    inputs, targets = torch.randint(0, 12, (3, 7)), torch.randint(0, 12, (3, 7))
    logits, _ = model(inputs)
    expected = -torch.log_softmax(logits, -1).gather(-1, targets[..., None]).mean()
    assert torch.allclose(lm_loss(model, (inputs, targets)), expected, atol=1e-6)
    plain = LogitsOnly(12)
    expected = F.cross_entropy(plain(inputs).reshape(-1, 12), targets.reshape(-1))
    assert torch.equal(lm_loss(plain, (inputs, targets)), expected)
    with pytest.raises(ValueError, match=r"targets must have the shape \(3, 7\)"):
        lm_loss(model, (inputs, targets[:, :5]))
    with pytest.raises(TypeError, match="^batch must be"):
        lm_loss(model, inputs)
    with pytest.raises(TypeError, match="^batch must be a pair"):
        lm_loss(model, [inputs, targets, targets])
    with pytest.raises(TypeError, match="^model must be .*Module"):
        lm_loss(lambda ids: ids, (inputs, targets))


def test_bigram_counts_and_perplexity(corpus):
    train, valid, V = corpus.train_ids, corpus.valid_ids, corpus.vocab_size
    bigram = BigramLM(train, V)
    pairs = Counter(zip(train[:-1].tolist(), train[1:].tolist()))
    row = train[0].item()
    total = sum(c for (a, _), c in pairs.items() if a == row)
    for nxt in range(V):
        expected = (pairs[(row, nxt)] + 1) / (total + V)
        assert math.isclose(bigram.log_p[row, nxt].exp().item(), expected, rel_tol=1e-5)
    assert torch.allclose(bigram.log_p.exp().sum(1), torch.ones(V), atol=1e-5)
    ppl = bigram_perplexity(train, valid, V)
    # the LSTM chapter's formula, and the bigram as a language model
    counts = torch.ones(V, V)
    counts.index_put_((train[:-1], train[1:]), torch.ones(len(train) - 1), accumulate=True)
    log_p = (counts / counts.sum(1, keepdim=True)).log()
    assert ppl == math.exp(-log_p[valid[:-1], valid[1:]].mean().item())
    assert math.isclose(perplexity(bigram, valid), ppl, rel_tol=1e-5)
    assert 1 < ppl < V


def test_bigram_bad_input():
    with pytest.raises(ValueError, match=r"train_ids must hold token ids in \[0, 3\)"):
        BigramLM(torch.tensor([0, 1, 3]), 3)
    with pytest.raises(ValueError, match="smoothing must be > 0"):
        BigramLM(torch.tensor([0, 1, 2]), 3, smoothing=0.0)
    with pytest.raises(ValueError, match=r"valid_ids must have shape \(N\) with N >= 2"):
        bigram_perplexity(torch.tensor([0, 1, 2]), torch.tensor([1]), 3)
    with pytest.raises(ValueError, match=r"train_ids must have shape \(N\) with N >= 2"):
        BigramLM(torch.tensor([1]), 3)


@pytest.mark.parametrize("window, stride", [(5, 2), (8, 8), (7, 1), (200, None)])
def test_windowed_loss_scores_every_token_exactly_once(window, stride):
    # a bigram model reads one character of context, so windows cannot change its
    # loss: any token scored twice or never would move the mean
    g = torch.Generator().manual_seed(0)
    train, valid = torch.randint(0, 6, (400,), generator=g), torch.randint(0, 6, (61,), generator=g)
    bigram = BigramLM(train, 6)
    whole = sequence_loss(bigram, valid)
    windowed = sequence_loss(bigram, valid, window=window, stride=stride, batch_size=3)
    assert torch.allclose(whole.double(), windowed.double(), atol=1e-6)


def test_windowed_loss_of_a_recurrent_model_loses_context():
    torch.manual_seed(0)
    model = RecurrentLM(6, hidden_size=8, embedding_dim=4)
    ids = torch.randint(0, 6, (40,))
    assert torch.allclose(sequence_loss(model, ids), sequence_loss(model, ids, window=39))
    assert not torch.allclose(sequence_loss(model, ids), sequence_loss(model, ids, window=4))


def test_sequence_loss_bad_input():
    model = BigramLM(torch.tensor([0, 1, 2, 0]), 3)
    with pytest.raises(ValueError, match=r"ids must have shape \(N\) with N >= 2, got \(1,\)"):
        sequence_loss(model, torch.tensor([1]))
    with pytest.raises(ValueError, match=r"^stride must be <= 4, got 5"):
        sequence_loss(model, torch.tensor([0, 1, 2, 0, 1]), window=4, stride=5)
    with pytest.raises(ValueError, match="window must be >= 1"):
        sequence_loss(model, torch.tensor([0, 1, 2]), window=0)


@pytest.mark.parametrize("cell, ours", [("lstm", LSTM), ("gru", GRU)])
def test_recurrent_lm_with_the_books_layer_is_the_same_model(cell, ours):
    torch.manual_seed(0)
    model = RecurrentLM(9, hidden_size=12, embedding_dim=5, cell=cell)
    assert isinstance(model.rnn, nn.LSTM if cell == "lstm" else nn.GRU)
    ids = torch.randint(0, 9, (2, 15))
    expected, _ = model(ids)
    model.rnn = ours.from_torch(model.rnn)
    got, _ = model(ids)
    assert torch.allclose(got, expected, atol=1e-5)
    # the state carries the stream on: ten then five tokens == fifteen at once
    first, state = model(ids[:, :10])
    rest, _ = model(ids[:, 10:], state)
    assert torch.allclose(torch.cat([first, rest], 1), got, atol=1e-5)


def test_recurrent_lm_generation_with_and_without_state_agree():
    torch.manual_seed(0)
    model = RecurrentLM(9, hidden_size=12, embedding_dim=5)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    for kwargs in ({"greedy": True}, {"temperature": 0.8}):
        runs = [generate(model, prompt, 20, use_cache=cache,
                         generator=torch.Generator().manual_seed(5), **kwargs)
                for cache in (True, False)]
        assert torch.equal(runs[0], runs[1])
        assert torch.equal(runs[0][:, :3], prompt)


def test_recurrent_lm_bad_input():
    with pytest.raises(ValueError, match="cell must be one of 'lstm', 'gru'"):
        RecurrentLM(5, cell="rnn")
    model = RecurrentLM(5, hidden_size=4, embedding_dim=2)
    with pytest.raises(ValueError, match=r"ids must hold token ids in \[0, 5\)"):
        model(torch.tensor([[0, 5]]))
    with pytest.raises(TypeError, match=r"^ids must be Int\[Tensor, 'B T'\], got i64\[2\]"):
        model(torch.tensor([0, 1]))


def test_loss_by_position_averages_each_position_over_the_windows():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 6, (103,), generator=g)
    bigram = BigramLM(ids, 6)
    curve = loss_by_position(bigram, ids, window=10)          # 10 windows of 10
    assert curve.shape == (10,)
    assert torch.allclose(curve.mean(), sequence_loss(bigram, ids[:101]), atol=1e-6)
    torch.manual_seed(0)
    model = RecurrentLM(6, hidden_size=8, embedding_dim=4)
    curve = loss_by_position(model, ids, window=10)
    per_window = []                                  # each window read on its own
    for start in range(0, 100, 10):
        piece = ids[start:start + 11]
        logits, _ = model(piece[None, :-1])
        per_window.append(F.cross_entropy(logits[0], piece[1:], reduction="none"))
    assert torch.allclose(curve, torch.stack(per_window).mean(0), atol=1e-6)
    with pytest.raises(ValueError, match="ids must be longer than window=200"):
        loss_by_position(bigram, ids, window=200)


def test_loss_by_position_with_every_offset_averages_the_same_characters_everywhere():
    """A bigram predicts from one token at every position, so once every position
    averages over every character (offsets = window), its curve is flat."""
    from seqbook.language_model import BigramLM, loss_by_position
    ids = torch.randint(0, 5, (2000,), generator=torch.Generator().manual_seed(0))
    model = BigramLM(ids, 5)
    one_cut = loss_by_position(model, ids, 8)
    every_cut = loss_by_position(model, ids, 8, offsets=8)
    assert every_cut.max() - every_cut.min() < 1e-3 < one_cut.max() - one_cut.min()
    with pytest.raises(ValueError, match=r"^offsets must be <= 8, got 9"):
        loss_by_position(model, ids, 8, offsets=9)
    with pytest.raises(ValueError, match="offsets must be >= 1"):
        loss_by_position(model, ids, 8, offsets=0)


@pytest.mark.parametrize("make", [
    lambda: RecurrentLM(9, hidden_size=8, embedding_dim=4, cell="lstm"),
    lambda: RecurrentLM(9, hidden_size=8, embedding_dim=4, cell="gru"),
    lambda: BigramLM(torch.arange(9), 9),
])
def test_a_forward_hook_on_every_submodule_fires(make):
    model = make()
    fired = set()
    for name, module in model.named_modules():
        module.register_forward_hook(lambda *_, name=name: fired.add(name))
    model(torch.randint(0, 9, (2, 5)))
    assert fired == {name for name, _ in model.named_modules()}
