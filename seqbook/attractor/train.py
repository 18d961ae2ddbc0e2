"""Train the backpropagation baselines of the attractor chapter and save their checkpoints.

The chapter "Self-attention as an attractor network" loads the four checkpoints in
``seqbook/attractor/checkpoints/`` (a recurrent transformer block and a vision
transformer, each for masked prediction and for denoising), because training them
takes longer than a chapter may run. They were made with::

    python -m seqbook.attractor.train --all --threads 1

which trains every model with the defaults below (on one CPU thread, several minutes
per model) and writes ``block_mask.pt``, ``block_denoise.pt``, ``vit_mask.pt`` and
``vit_denoise.pt``. ``--smoke`` trains tiny models for a few steps (a test that the
script runs), ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from seqbook.attractor.baselines import (
    CHECKPOINTS,
    BaselineConfig,
    build_baseline,
    save_baseline,
    train_baseline,
)
from seqbook.attractor.tasks import mnist_split
from seqbook.utils import seed_everything

__all__ = ["main", "parse_args"]

MODELS = ("block", "vit")
TASKS = ("mask", "denoise")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``python -m seqbook.attractor.train --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.attractor.train",
        description="Train the recurrent transformer block and the ViT baselines.",
    )
    parser.add_argument("--model", choices=MODELS, default="block")
    parser.add_argument("--task", choices=TASKS, default="mask")
    parser.add_argument("--all", action="store_true", help="train every model on every task")
    parser.add_argument("--train-size", type=int, default=4000, help="training digits (<= 4000)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=5, help="ViT depth")
    parser.add_argument("--patch-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--out", type=Path, default=CHECKPOINTS, help="checkpoint folder")
    parser.add_argument(
        "--smoke", action="store_true",
        help="a fast test: tiny models, 64 digits, 1 epoch (use with --out)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.train_size, args.epochs, args.batch_size = 64, 1, 32
        args.d_model, args.num_heads, args.d_ff, args.num_layers = 8, 2, 16, 2
    return args


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Train the chosen baselines and return the paths of their checkpoints."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    train_images, _ = mnist_split(args.train_size, 1)
    jobs = [(m, t) for m in MODELS for t in TASKS] if args.all else [(args.model, args.task)]
    paths = []
    for kind, task in jobs:
        seed_everything(args.seed)
        config = BaselineConfig(
            kind=kind,
            patch_size=args.patch_size,
            d_model=args.d_model,
            num_heads=args.num_heads,
            d_ff=args.d_ff,
            num_layers=args.num_layers if kind == "vit" else 1,
        )
        model = build_baseline(config)
        start = time.perf_counter()
        history = train_baseline(
            model, train_images, task, epochs=args.epochs, batch_size=args.batch_size,
            lr=args.lr, seed=args.seed, progress=not args.smoke,
        )
        seconds = time.perf_counter() - start
        path = save_baseline(
            model.eval(), args.out / f"{kind}_{task}.pt",
            task=task, epochs=args.epochs, train_size=args.train_size, lr=args.lr,
            batch_size=args.batch_size, seed=args.seed, seconds=round(seconds, 1),
            final_loss=history.final_loss,
            parameters=sum(p.numel() for p in model.parameters()),
        )
        print(f"{kind} ({task}): final loss {history.final_loss:.5f}, "
              f"{seconds:.0f} s -> {path}", flush=True)
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
