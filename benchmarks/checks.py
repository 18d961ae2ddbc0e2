"""What checking the arguments costs per public call, at the book's sizes.

Each row times one public call as a reader makes it, with the package's checks (the
annotations checked by jaxtyping and beartype at the outermost call, remembered once
passed) and inside ``seqbook._typecheck.unchecked()`` (no check at all): thread CPU
time of alternating rounds, one thread, the median over pairs of adjacent rounds (a
checked one and a bare one share the machine's load), at two sizes: the book's smallest
examples (B=2, T=8, d=16), where a call is cheapest and the check weighs most, and a
training batch of the language-model chapter (B=32, T=64, d=64).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from seqbook._typecheck import unchecked

MARKDOWN_HEADER = ("| public call | sizes | unchecked (us) | checked (us) | check (us) | "
                   "check (%) |\n| --- | --- | ---: | ---: | ---: | ---: |")
SIZES = ((2, 8, 16), (32, 64, 64))  # (B, T, d)


@dataclass
class CheckCost:
    name: str
    sizes: str
    bare_us: float
    checked_us: float
    overhead: float  # the check's share of the bare call's time

    def markdown_row(self) -> str:
        return (f"| {self.name} | {self.sizes} | {self.bare_us:.1f} | {self.checked_us:.1f} | "
                f"{self.checked_us - self.bare_us:.1f} | {100 * self.overhead:.0f}% |")


def measure(
    name: str, sizes: str, call: Callable[[], object], rounds: int = 41, n: int = 50
) -> CheckCost:
    """Per-call thread-CPU time of ``call`` with and without the checks: the medians
    over pairs of adjacent rounds, the checked one first in every other pair. The
    check's share is their ratio's median, a steadier measure on a busy machine than
    the difference of two minima."""
    call()  # the first call is checked in full, and remembered
    checked, bare, ratios = [], [], []
    for i in range(rounds):
        times = []
        for context in ((contextlib.nullcontext, unchecked) if i % 2 else
                        (unchecked, contextlib.nullcontext)):
            with context():
                start = time.thread_time_ns()
                for _ in range(n):
                    call()
                times.append((time.thread_time_ns() - start) / n / 1e3)
        pair = times if i % 2 else times[::-1]  # (checked, bare)
        checked.append(pair[0])
        bare.append(pair[1])
        ratios.append(pair[0] / pair[1])
    return CheckCost(name, sizes, statistics.median(bare), statistics.median(checked),
                     statistics.median(ratios) - 1)


def calls(B: int, T: int, d: int) -> dict[str, Callable[[], object]]:
    """The public calls measured, built at sizes ``B``, ``T``, ``d``."""
    from seqbook.attention import MultiHeadAttention, masked_softmax, scaled_dot_product_attention
    from seqbook.language_model import TransformerLM
    from seqbook.recurrent import LSTM
    from seqbook.transformer import EncoderBlock, FeedForward, LayerNorm

    x = torch.randn(B, T, d)
    scores, causal = torch.randn(B, T, T), torch.ones(T, T, dtype=torch.bool).tril()
    Q = torch.randn(B, 2, T, d // 2)
    norm, ffn = LayerNorm(d).eval(), FeedForward(d, 4 * d).eval()
    mha, block = MultiHeadAttention(d, 2).eval(), EncoderBlock(d, 2, 4 * d).eval()
    lstm = LSTM(d, d, batch_first=True).eval()
    lm = TransformerLM(vocab_size=32, d_model=d, num_heads=2, num_layers=2, d_ff=4 * d,
                       max_len=T).eval()
    ids = torch.randint(0, 32, (B, T))
    return {
        "masked_softmax": lambda: masked_softmax(scores, causal),
        "scaled_dot_product_attention": lambda: scaled_dot_product_attention(Q, Q, Q),
        "LayerNorm": lambda: norm(x),
        "FeedForward": lambda: ffn(x),
        "MultiHeadAttention": lambda: mha(x, x, x),
        "EncoderBlock": lambda: block(x),
        "LSTM (one layer)": lambda: lstm(x),
        "TransformerLM (2 blocks)": lambda: lm(ids),
    }


def run_all() -> list[CheckCost]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            return [measure(name, f"B={B}, T={T}, d={d}", call, n=n)
                    for B, T, d in SIZES for n in [50 if B * T * d < 10_000 else 5]
                    for name, call in calls(B, T, d).items()]
    finally:
        torch.set_num_threads(threads)
