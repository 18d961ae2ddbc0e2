r"""Capacity compared: four associative memories of 100 spins, from 8 to 4,096 patterns.

The chapter "Hopfield networks" stores :math:`N` random patterns of :math:`d = 100`
spins in the classical network, the dense associative memories with a cubic and with
an exponential energy, and the continuous modern network (:math:`\beta = 1`), cues
eight of them with 10% of the spins flipped, lets each memory run at most three sweeps
(:func:`~seqbook.hopfield.capacity_curve`), and counts a pattern retrieved when at
most 5% of its spins end wrong. One seed (:func:`capacity_run`) draws the patterns and
cues of every :math:`N` for the four memories in turn.

Thirty-two seeds take longer than a chapter may run (the dense memories update one spin
at a time), so they are computed offline into the table
``seqbook/experiments/results/capacity_compared.json`` that the chapter loads
(:func:`load_capacity_table`); the chapter reruns seed 0 live with the same
:func:`capacity_run`. The table was made with::

    python -m seqbook.experiments.capacity_compared --threads 1

(about 40 CPU-seconds on one core). ``--smoke`` runs a tiny version as a test that the
script works.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from seqbook.experiments._common import one_thread
from seqbook.experiments.results import RESULTS_DIR
from seqbook.hopfield import CapacityCurve, capacity_curve
from seqbook.provenance import record
from seqbook.utils import seeded_generator

__all__ = ["RESULTS", "DIM", "SIZES", "MEMORY_SETTINGS", "SEEDS", "capacity_run",
           "capacity_grid", "load_capacity_table", "main"]

#: The committed table.
RESULTS = RESULTS_DIR / "capacity_compared.json"
#: The number of spins.
DIM = 100
#: The numbers of stored patterns.
SIZES = (8, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096)
#: The four memories, by the chapter's names, and their options of capacity_curve.
MEMORY_SETTINGS: dict[str, dict[str, Any]] = {
    "classical": dict(memory="classical"),
    "polynomial, n = 3": dict(memory="poly", degree=3),
    "exponential": dict(memory="exp"),
    "continuous, beta = 1": dict(memory="modern", beta=1.0),
}
#: The seeds of the table.
SEEDS = tuple(range(32))
# the retrieval: cues, spins flipped in each, sweeps at most
_QUERIES, _CORRUPTION, _SWEEPS = 8, 0.1, 3


def capacity_run(seed: int, sizes: Sequence[int] = SIZES) -> dict[str, CapacityCurve]:
    """The capacity curve of every memory from ``seed``, on one thread.

    One generator (:func:`~seqbook.utils.seeded_generator` of ``300 + seed``) draws
    the patterns and cues of the four memories in turn.

    Returns:
        A :class:`~seqbook.hopfield.CapacityCurve` with one trial per memory.

    Example:
        >>> curves = capacity_run(0, sizes=[8, 64])
        >>> [tuple(curve.errors.shape) for curve in curves.values()]
        [(2, 1, 8), (2, 1, 8), (2, 1, 8), (2, 1, 8)]
    """
    generator = seeded_generator(300 + seed)
    with one_thread():
        return {name: capacity_curve(dim=DIM, num_patterns=list(sizes), num_trials=1,
                                     num_queries=_QUERIES, corruption=_CORRUPTION,
                                     max_sweeps=_SWEEPS, generator=generator, **kwargs)
                for name, kwargs in MEMORY_SETTINGS.items()}


def capacity_grid(seeds: Iterable[int] = SEEDS, sizes: Sequence[int] = SIZES
                  ) -> dict[str, CapacityCurve]:
    """:func:`capacity_run` of every seed, each seed a trial of the returned curves.

    Example:
        >>> curves = capacity_grid([0, 1], sizes=[8])
        >>> tuple(curves["exponential"].errors.shape)
        (1, 2, 8)
    """
    runs = [capacity_run(seed, sizes) for seed in seeds]
    return {name: CapacityCurve(runs[0][name].memory, DIM, runs[0][name].num_patterns,
                                torch.cat([run[name].errors for run in runs], 1))
            for name in MEMORY_SETTINGS}


def load_capacity_table(path: Path | str = RESULTS) -> tuple[dict, dict[str, CapacityCurve]]:
    """The committed table: ``(config, curves)``, the curve of every memory with one
    trial per seed.

    Example:
        >>> config, curves = load_capacity_table()
        >>> config["seeds"], tuple(curves["classical"].errors.shape)
        (32, (13, 32, 8))
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be a table written by main(), got {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    sizes = torch.tensor(data["config"]["sizes"])
    # the wrong spins of every cue, out of DIM: the bit errors exactly
    return data["config"], {
        name: CapacityCurve(MEMORY_SETTINGS[name]["memory"], DIM, sizes,
                            torch.tensor(wrong, dtype=torch.float32) / DIM)
        for name, wrong in data["wrong_spins"].items()}


def main(argv: Sequence[str] | None = None) -> Path:
    """Run every seed; write the table and return its path."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments.capacity_compared",
        description="Capacity curves of four associative memories of 100 spins.")
    parser.add_argument("--seeds", type=int, default=len(SEEDS),
                        help="the number of seeds (0, 1, ...)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a tiny run")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    seeds, sizes = (range(2), (8, 64)) if args.smoke else (range(args.seeds), SIZES)
    start = time.process_time()
    curves = capacity_grid(seeds, sizes)
    config = dict(dim=DIM, sizes=list(sizes), queries=_QUERIES, corruption=_CORRUPTION,
                  max_sweeps=_SWEEPS, seeds=len(seeds),
                  cpu_seconds=round(time.process_time() - start, 1))
    wrong = {name: (curve.errors * DIM).round().int().tolist()  # (L, seeds, Q)
             for name, curve in curves.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(dict(config=config, wrong_spins=wrong)) + "\n",
                        encoding="utf-8")
    record(args.out, "seqbook.experiments.capacity_compared", argv, threads=args.threads)
    print(f"wrote {len(seeds)} seeds to {args.out} in {config['cpu_seconds']} CPU s",
          file=sys.stderr)
    return args.out


if __name__ == "__main__":  # pragma: no cover
    main()
