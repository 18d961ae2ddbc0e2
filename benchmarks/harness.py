"""Timing two implementations of the same thing fairly."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Comparison:
    """One row of the benchmark table."""

    name: str
    seqbook_seconds: float  # median
    reference_seconds: float  # median
    repeats: int

    @property
    def ratio(self) -> float:
        """seqbook time / reference time: below 1 means seqbook is faster."""
        return self.seqbook_seconds / self.reference_seconds

    def markdown_row(self, target: str = "") -> str:
        """The table's row; ``target`` fills the last column (e.g. "<= 1.2: met")."""
        return (
            f"| {self.name} | {1e3 * self.seqbook_seconds:.3f} | "
            f"{1e3 * self.reference_seconds:.3f} | {self.ratio:.2f} | {target} |"
        )


MARKDOWN_HEADER = (
    "| row | seqbook (ms, median) | reference (ms, median) | ratio | target |\n"
    "| --- | ---: | ---: | ---: | --- |"
)


def compare(
    name: str,
    seqbook: Callable[[], object],
    reference: Callable[[], object],
    repeats: int = 7,
    warmup: int = 1,
) -> Comparison:
    """Time ``seqbook()`` and ``reference()`` alternately ``repeats`` times each.

    Alternating (A B A B ...) rather than running all of A then all of B spreads any
    slow phase of the machine over both; the median ignores the odd outlier.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):  # first calls pay for allocation, caches, lazy imports
        seqbook()
        reference()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeats):
        for fn, times in ((seqbook, ours), (reference, theirs)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return Comparison(name, statistics.median(ours), statistics.median(theirs), repeats)
