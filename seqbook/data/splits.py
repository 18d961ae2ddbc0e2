"""Deterministic, disjoint train / validation / test splits."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from seqbook._checks import check_callable, check_int, check_real, check_sequence

__all__ = ["Splits", "split_dataset"]

T = TypeVar("T")


@dataclass(frozen=True)
class Splits(Generic[T]):
    """The three splits of a data set; unpacks as ``train, valid, test = splits``."""

    train: list[T]
    valid: list[T]
    test: list[T]

    def __iter__(self) -> Iterator[list[T]]:
        return iter((self.train, self.valid, self.test))

    def sizes(self) -> tuple[int, int, int]:
        return len(self.train), len(self.valid), len(self.test)


def split_dataset(
    items: Sequence[T],
    valid_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 0,
    stratify: Callable[[T], Hashable] | None = None,
) -> Splits[T]:
    """Shuffle ``items`` with ``seed`` and cut them into disjoint train/valid/test lists.

    Args:
        items: the examples (each appears in exactly one split).
        valid_fraction, test_fraction: shares of the validation and test splits, each in
            [0, 1) and summing to less than 1.
        seed: the shuffle's seed; the same seed gives the same splits.
        stratify: optional function giving each item's class; the fractions are then
            applied within every class, so each split keeps the class balance.

    Example:
        >>> train, valid, test = split_dataset(list(range(10)), 0.2, 0.2, seed=1)
        >>> len(train), len(valid), len(test), sorted(train + valid + test) == list(range(10))
        (6, 2, 2, True)
    """
    check_sequence("items", items, what="a sequence (e.g. a list)")
    for name, fraction in (("valid_fraction", valid_fraction), ("test_fraction", test_fraction)):
        check_real(name, fraction, min_value=0.0, max_value=1.0, strict_max=True)
    check_int("seed", seed, min_value=0)
    if stratify is not None:
        check_callable("stratify", stratify, signature="stratify(item)", nargs=1)
    if valid_fraction + test_fraction >= 1:
        raise ValueError(
            "valid_fraction + test_fraction must be < 1 so that training data remains, "
            f"got {valid_fraction} + {test_fraction}"
        )
    groups: dict[Hashable, list[T]] = defaultdict(list)
    for item in items:
        groups[stratify(item) if stratify else None].append(item)
    rng = random.Random(seed)
    train: list[T] = []
    valid: list[T] = []
    test: list[T] = []
    for key in sorted(groups, key=repr):  # a fixed group order keeps the result seeded
        group = groups[key][:]
        rng.shuffle(group)
        n_valid = round(valid_fraction * len(group))
        n_test = round(test_fraction * len(group))
        valid += group[:n_valid]
        test += group[n_valid : n_valid + n_test]
        train += group[n_valid + n_test :]
    for split in (train, valid, test):  # mix the classes again
        rng.shuffle(split)
    return Splits(train, valid, test)
