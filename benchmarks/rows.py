"""The rows of the benchmark table: each function returns one Comparison.

Sizes are chosen so that each measurement takes a few milliseconds; each row builds
its inputs once, seeded, and times only the operation being compared.
"""

from __future__ import annotations

import random

import sacrebleu
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from benchmarks.fused_lstm import fused_lstm
from benchmarks.harness import Comparison, compare
from seqbook.attention import MultiHeadAttention, scaled_dot_product_attention
from seqbook.data import mnist5k, pad_batch
from seqbook.decoding import beam_search
from seqbook.hopfield import ModernHopfield
from seqbook.language_model import TransformerLM, generate
from seqbook.metrics import corpus_bleu
from seqbook.recurrent import GRU, LSTM, RNN
from seqbook.utils import seed_everything


def padding() -> Comparison:
    """pad_batch (padded ids + lengths + mask) against torch's bare pad_sequence."""
    rng = random.Random(0)
    sequences = [torch.randint(0, 100, (rng.randint(5, 40),)) for _ in range(256)]
    return compare(
        "pad_batch, 256 sequences of 5-40 ids (reference: pad_sequence)",
        lambda: pad_batch(sequences),
        lambda: pad_sequence(sequences, batch_first=True),
        repeats=21,
    )


def _recurrent(name: str, make_ours, reference: nn.Module, fused: bool = False) -> Comparison:
    """Forward + backward of a layer (or a stack), B=32, T=100, D=H=128, against torch's."""
    seed_everything(0)
    ours = make_ours(reference)
    run_ours = (lambda x: fused_lstm(ours, x)) if fused else ours
    x = torch.randn(32, 100, 128, requires_grad=True)  # (B, T, D)

    def step(module):
        def run():
            outputs, _ = module(x)
            outputs.sum().backward()
        return run

    return compare(name, step(run_ours), step(reference))


def rnn_layer() -> Comparison:
    seed_everything(0)
    return _recurrent("RNN layer fwd+bwd, B=32 T=100 H=128 (nn.RNN)", RNN.from_torch,
                      nn.RNN(128, 128, batch_first=True))


def lstm_layer() -> Comparison:
    seed_everything(0)
    return _recurrent("LSTM layer fwd+bwd, gate by gate, same sizes (nn.LSTM)",
                      LSTM.from_torch, nn.LSTM(128, 128, batch_first=True))


def lstm_layer_fused() -> Comparison:
    seed_everything(0)
    return _recurrent("LSTM layer fwd+bwd, benchmarks.fused_lstm (hand-written BPTT) (nn.LSTM)",
                      LSTM.from_torch, nn.LSTM(128, 128, batch_first=True), fused=True)


def gru_layer() -> Comparison:
    seed_everything(0)
    return _recurrent("GRU layer fwd+bwd, same sizes (nn.GRU)", GRU.from_torch,
                      nn.GRU(128, 128, batch_first=True))


def lstm_stacked_bidirectional() -> Comparison:
    seed_everything(0)
    return _recurrent("LSTM, 2 layers, bidirectional, fwd+bwd, same sizes (nn.LSTM)",
                      LSTM.from_torch,
                      nn.LSTM(128, 128, num_layers=2, bidirectional=True, batch_first=True))


def gru_stacked_bidirectional() -> Comparison:
    seed_everything(0)
    return _recurrent("GRU, 2 layers, bidirectional, fwd+bwd, same sizes (nn.GRU)",
                      GRU.from_torch,
                      nn.GRU(128, 128, num_layers=2, bidirectional=True, batch_first=True))


def dot_product_attention() -> Comparison:
    """Forward pass, B=32, 8 heads, T=256, d=64, no mask."""
    seed_everything(0)
    Q, K, V = (torch.randn(32, 8, 256, 64) for _ in range(3))  # (B, h, T, d)
    with torch.no_grad():
        return compare(
            "scaled dot-product attention, B=32 h=8 T=256 d=64 (F.scaled_dot_product_attention)",
            lambda: scaled_dot_product_attention(Q, K, V),
            lambda: F.scaled_dot_product_attention(Q, K, V),
        )


def dot_product_attention_materialized() -> Comparison:
    """The same, against PyTorch's math backend, which also builds the T x T weights."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    seed_everything(0)
    Q, K, V = (torch.randn(32, 8, 256, 64) for _ in range(3))  # (B, h, T, d)

    def math_backend():
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(Q, K, V)

    with torch.no_grad():
        return compare(
            "scaled dot-product attention, same sizes "
            "(F.scaled_dot_product_attention, math backend)",
            lambda: scaled_dot_product_attention(Q, K, V), math_backend,
        )


def multi_head_attention() -> Comparison:
    """Self-attention forward + backward, B=32, T=128, d_model=256, 8 heads."""
    seed_everything(0)
    reference = nn.MultiheadAttention(256, 8, batch_first=True)
    ours = MultiHeadAttention.from_torch(reference)
    x = torch.randn(32, 128, 256, requires_grad=True)  # (B, T, d_model)

    def step(module):
        def run():
            output, _ = module(x, x, x)
            output.sum().backward()
        return run

    return compare(
        "multi-head self-attention fwd+bwd, B=32 T=128 d=256 h=8 (nn.MultiheadAttention)",
        step(ours), step(reference), repeats=7,
    )


def bleu() -> Comparison:
    """Corpus BLEU of 10,000 tokenized sentence pairs."""
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(2000)]
    references, hypotheses = [], []
    for _ in range(10_000):
        reference = rng.choices(vocabulary, k=rng.randint(5, 30))
        hypothesis = [w if rng.random() < 0.7 else rng.choice(vocabulary) for w in reference]
        references.append(reference)
        hypotheses.append(hypothesis[: rng.randint(3, len(hypothesis))])
    joined_hyps = [" ".join(h) for h in hypotheses]
    joined_refs = [[" ".join(r) for r in references]]
    ours = corpus_bleu(hypotheses, [[r] for r in references])
    theirs = sacrebleu.corpus_bleu(joined_hyps, joined_refs, tokenize="none").score
    assert abs(100 * ours - theirs) < 1e-9, (ours, theirs)  # same score, or no row
    return compare(
        "corpus BLEU, 10,000 sentence pairs (sacrebleu, tokenize='none')",
        lambda: corpus_bleu(hypotheses, [[r] for r in references]),
        lambda: sacrebleu.corpus_bleu(joined_hyps, joined_refs, tokenize="none"),
        repeats=5,
    )


def beam_search_batched() -> Comparison:
    """Beam 5 over 500 test sentences with a briefly trained translator."""
    from seqbook.seq2seq import TranslatorConfig, number_translation_task, train_translator

    task = number_translation_task("de", max_number=9999, num_valid=0, num_test=500,
                                   num_train=3000, seed=0)
    model, _ = train_translator(task, TranslatorConfig(epochs=2, seed=0), device="cpu",
                                progress=False)
    batch = task.batch(task.splits.test)
    src, lengths = batch.src, batch.src_lengths
    bos, eos = task.tgt_vocab.bos_id, task.tgt_vocab.eos_id
    # A search stops when all its beams have ended; max_len only bounds beams that
    # never end, so the longest reference plus a margin is enough.
    max_len = int(batch.tgt_mask.sum(1).max()) + 5

    def batched():
        beam_search(model.step_function(src, lengths), bos, eos, beam_size=5,
                    max_len=max_len, batch_size=src.shape[0])

    def one_at_a_time():
        for i in range(src.shape[0]):
            beam_search(model.step_function(src[i : i + 1], lengths[i : i + 1]), bos, eos,
                        beam_size=5, max_len=max_len, batch_size=1)

    return compare(
        "beam search, beam 5, 500 sentences, batched (reference: one sentence at a time)",
        batched, one_at_a_time, repeats=3, warmup=0,
    )


def hopfield_retrieval() -> Comparison:
    """One update of 1,000 queries against 5,000 stored MNIST digits (d = 784)."""
    images, _ = mnist5k(flatten=True)
    patterns = images - images.mean(dim=1, keepdim=True)  # (N, d)
    memory = ModernHopfield(patterns, beta=0.05)
    g = torch.Generator().manual_seed(0)
    queries = patterns[torch.randperm(5000, generator=g)[:1000]]  # (Q, d)
    queries = queries + 0.3 * torch.randn(queries.shape, generator=g)

    def naive():
        return torch.stack([patterns.T @ torch.softmax(0.05 * (patterns @ q), dim=0)
                            for q in queries])

    with torch.no_grad():
        assert torch.allclose(memory.update(queries), naive(), atol=1e-4)
        return compare(
            "modern Hopfield update, 5,000 MNIST patterns, 1,000 queries (a loop over queries)",
            lambda: memory.update(queries), naive, repeats=5,
        )


def _generation(num_tokens: int) -> Comparison:
    """Greedy generation with the language-model chapter's transformer (untrained).

    The time of generation does not depend on the weights, only on the sizes:
    d_model 64, 4 heads, 2 blocks, 98 symbols; a prompt of 4 tokens.
    """
    seed_everything(0)
    model = TransformerLM(98).eval()
    prompt = torch.randint(0, 98, (1, 4))
    cached = generate(model, prompt, num_tokens, greedy=True)
    assert torch.equal(cached, generate(model, prompt, num_tokens, greedy=True,
                                        use_cache=False))  # same tokens, or no row
    return compare(
        f"transformer LM, greedy generation of {num_tokens} tokens with the KV cache "
        "(reference: without it)",
        lambda: generate(model, prompt, num_tokens, greedy=True),
        lambda: generate(model, prompt, num_tokens, greedy=True, use_cache=False),
        repeats=3,
    )


def kv_cache_short() -> Comparison:
    return _generation(64)


def kv_cache_long() -> Comparison:
    return _generation(250)


ROWS = [
    padding,
    rnn_layer,
    lstm_layer,
    lstm_layer_fused,
    gru_layer,
    lstm_stacked_bidirectional,
    gru_stacked_bidirectional,
    dot_product_attention,
    dot_product_attention_materialized,
    multi_head_attention,
    bleu,
    beam_search_batched,
    hopfield_retrieval,
    kv_cache_short,
    kv_cache_long,
]


# The targets (ratio seqbook / reference, median, 2-core CPU) and, for a row
# that misses its target, why. Rows without a target only show the price.
_RECURRENT_MISS = (
    "torch's recurrent layers run the whole sequence in C++: one matrix product for "
    "all gates per step and the pointwise gate arithmetic in compiled kernels (oneDNN's "
    "fused RNN where it applies), with no Python between steps. A Python "
    "loop pays a dispatch of 10-20 microseconds for each of its half a dozen small "
    "operations (32 x 128 tensors) per step, forward and again backward, which is "
    "as much time as the matrix products. `benchmarks/fused_lstm.py` writes BPTT by "
    "hand and removes autograd's bookkeeping (faster than the gate-by-gate row); "
    "`torch.compile` of the pointwise part was tried and was slower (its per-call "
    "overhead at this size), and TorchScript is deprecated in torch 2.13 and was no "
    "faster. The book keeps the gate-by-gate version and trains with "
    "`LSTM.to_torch()`. A stack of layers and directions pays the same per step, "
    "layer and direction, and torch runs its layers and directions one after the "
    "other too, so the ratio stays close to that of one layer."
)
TARGETS = {
    "rnn_layer": (1.5, _RECURRENT_MISS),
    "lstm_layer": (1.5, _RECURRENT_MISS),
    "lstm_layer_fused": (1.5, _RECURRENT_MISS),
    "gru_layer": (1.5, _RECURRENT_MISS),
    "lstm_stacked_bidirectional": (1.5, _RECURRENT_MISS),
    "gru_stacked_bidirectional": (1.5, _RECURRENT_MISS),
    "dot_product_attention": (1.2, (
        "`seqbook.attention.scaled_dot_product_attention` returns the T x T attention "
        "weights, which the chapters plot, so it must materialise them; "
        "`F.scaled_dot_product_attention` uses a fused (flash-style) kernel that "
        "never does. Against PyTorch's math backend, which materialises them too, "
        "the ratio is in the next row."
    )),
    "dot_product_attention_materialized": (1.2, ""),
    "multi_head_attention": (1.2, ""),
    "bleu": (0.5, ""),
    "beam_search_batched": (0.2, ""),
    "kv_cache_short": (0.8, ""),
    "kv_cache_long": (0.5, (
        "with and without the cache, each new token pays the same fixed cost: its "
        "embedding, its projections, the feed-forward layers, the output layer and the "
        "dispatch of each of these small operations from Python. The cache removes only "
        "the work over the prefix, which grows with the length, so for this 64-wide "
        "model of 2 blocks the ratio falls only slowly from the 64-token row to the "
        "250-token row, towards that fixed share. That is our reading of the two rows, "
        "not a measurement of the fixed cost by itself."
    )),
}
