"""Train the Energy Transformer on masked digits and save its checkpoints.

The chapter "The Energy Transformer" loads the checkpoints in
``seqbook/energy_transformer/checkpoints/`` (one per seed), because training by
backpropagation through the dynamics takes longer than a chapter may run. They were
made with the defaults below (2 epochs of the 4,000 training digits in mini-batches of
32, 250 Adam steps per seed)::

    nice -n 10 python -m seqbook.energy_transformer.train --seeds 0 1 2 --threads 1

(run as three processes, one per seed, which gives the same checkpoints), which writes
``et_seed0.pt``, ``et_seed1.pt`` and ``et_seed2.pt`` (float16 weights, the
configuration, and what the training measured, about 30 KB each). Measured run time:
166, 168 and 169 CPU-seconds per seed (8.4 CPU-minutes in all), on a 2-core machine
shared with other jobs (21 minutes of wall-clock time). ``--smoke`` trains a tiny
model for a few steps (a test that the script runs), ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from seqbook.attractor.tasks import mnist_split
from seqbook.energy_transformer.masked import (
    CHECKPOINTS,
    MaskedConfig,
    MaskedEnergyTransformer,
    save_masked,
    train_masked,
)
from seqbook.provenance import record
from seqbook.utils import seed_everything, seeded_generator

__all__ = ["main", "parse_args"]

DEFAULTS = MaskedConfig()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``python -m seqbook.energy_transformer.train --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.energy_transformer.train",
        description="Train the Energy Transformer on masked MNIST digits.",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--train-size", type=int, default=4000, help="training digits (<= 4000)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--dim", type=int, default=DEFAULTS.dim)
    parser.add_argument("--num-heads", type=int, default=DEFAULTS.num_heads)
    parser.add_argument("--head-dim", type=int, default=DEFAULTS.head_dim)
    parser.add_argument("--num-memories", type=int, default=DEFAULTS.num_memories)
    parser.add_argument("--hopfield", choices=("relu", "softmax"), default=DEFAULTS.hopfield)
    parser.add_argument("--steps", type=int, default=DEFAULTS.steps, help="T, training steps")
    parser.add_argument("--alpha", type=float, default=DEFAULTS.alpha)
    parser.add_argument("--init-std", type=float, default=DEFAULTS.init_std)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--out", type=Path, default=CHECKPOINTS, help="checkpoint folder")
    parser.add_argument(
        "--smoke", action="store_true",
        help="a fast test: a tiny model, 64 digits, 1 epoch (use with --out)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.train_size, args.epochs, args.batch_size = 64, 1, 32
        args.dim, args.num_heads, args.head_dim, args.num_memories, args.steps = 4, 1, 2, 8, 2
    return args


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Train one model per seed and return the paths of their checkpoints."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    train_images, _ = mnist_split(args.train_size, 1)
    paths = []
    for seed in args.seeds:
        seed_everything(seed)
        config = MaskedConfig(
            dim=args.dim, num_heads=args.num_heads, head_dim=args.head_dim,
            num_memories=args.num_memories, hopfield=args.hopfield, steps=args.steps,
            alpha=args.alpha, init_std=args.init_std,
        )
        model = MaskedEnergyTransformer(config, generator=seeded_generator(seed))
        start, cpu = time.perf_counter(), time.process_time()
        history = train_masked(
            model, train_images, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
            seed=seed, progress=not args.smoke,
        )
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        path = save_masked(
            model.eval(), args.out / f"et_seed{seed}.pt",
            seed=seed, epochs=args.epochs, train_size=args.train_size, lr=args.lr,
            batch_size=args.batch_size, seconds=round(seconds, 1),
            cpu_seconds=round(cpu_seconds, 1), threads=torch.get_num_threads(),
            final_loss=history.final_loss, epoch_loss=history.epoch_loss,
            step_loss=[round(v, 5) for v in history.step_loss],
            parameters=sum(p.numel() for p in model.parameters()),
        )
        print(f"seed {seed}: final loss {history.final_loss:.5f}, {seconds:.0f} s "
              f"({cpu_seconds:.0f} s CPU) -> {path}", flush=True)
        record(path, "seqbook.energy_transformer.train", argv, rows=f"seed {seed}")
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
