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

The chapter also compares the ETs with the bare self-attention of
:mod:`seqbook.attractor`, trained as in that chapter (one epoch of pseudo-likelihood on
the first 1,000 training digits, in mini-batches of 32) from several seeds. A bare
model's couplings are ``N x N x d x d`` (10 MB), too large to commit one per seed, so
``--bare`` trains one model per seed, runs it beside the ETs on the chapter's masked
test digits (``comparison_masks``) and stores what the chapter reads, a few KB per
seed, in ``bare_comparison.json`` (``load_bare_comparison``); the chapter retrains
seed 0 live and compares it with its row::

    python -m seqbook.energy_transformer.train --bare --seeds 0 1 2 3 4 --threads 1

Measured run time: 122 s of wall-clock time (39 CPU-seconds) for the five seeds, on
a 2-core machine shared with other jobs.

Two epochs leave the models far from converged. ``--resume`` continues a committed
checkpoint for ``--epochs`` more epochs (a fresh Adam state, the same learning rate
and batch size, shuffles and masks from a generator of seed ``1000 + seed``, apart
from the first run's), scores it after every epoch on the chapter's comparison
(the masked test digits of ``comparison_masks``, 20 iterations; recorded, never used
to choose anything) and writes ``<name>_continued.pt`` with the first run's step
losses and its own::

    python -m seqbook.energy_transformer.train --resume et_seed0 --epochs 4 --threads 1

Measured run time: 248 CPU-seconds (27 minutes of wall-clock time on a 2-core machine
shared with other jobs), which wrote ``et_seed0_continued.pt``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from seqbook._checks import check_positive_int
from seqbook.attractor.bare import BareSelfAttention
from seqbook.attractor.embedding import PatchEmbedding, image_to_patches
from seqbook.attractor.pseudolikelihood import train_pseudo_likelihood
from seqbook.attractor.tasks import mask_tokens, mnist_split, mse_curve
from seqbook.energy_transformer.masked import (
    CHECKPOINTS,
    MaskedConfig,
    MaskedEnergyTransformer,
    load_masked,
    paste_visible,
    save_masked,
    train_masked,
)
from seqbook.provenance import record
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "BARE_COMPARISON",
    "BareRow",
    "bare_comparison_run",
    "comparison_masks",
    "load_bare_comparison",
    "main",
    "parse_args",
]

DEFAULTS = MaskedConfig()

#: The committed table of bare models beside the ETs (written by ``--bare``).
BARE_COMPARISON = CHECKPOINTS / "bare_comparison.json"
# the comparison: the first 64 test digits, masks from a fixed seed, 20 iterations;
# the bare models: one epoch on the first 1,000 training digits, as in attractor
COMPARISON_DIGITS, COMPARISON_STEPS, MASK_SEED, BARE_TRAIN_SIZE = 64, 20, 1, 1000
#: ``--resume``: the continued run's shuffles and masks come from seed 1000 + seed
RESUME_SEED_OFFSET = 1000


def comparison_masks(
    spins: Float[Tensor, "B N d"],
) -> tuple[Float[Tensor, "B N d"], Bool[Tensor, "B N"]]:
    """The masks of the chapter's comparison: :func:`~seqbook.attractor.mask_tokens`
    (30% of the tokens) with a generator of fixed seed 1, the same for every reader
    (not shifted by ``SEQBOOK_SEED_SHIFT``), so that the committed bare runs and a
    reader's ETs are scored on the same masks.

    Shapes:
        spins: ``(B, N, d)``; returns the masked spins ``(B, N, d)`` and the mask
        ``(B, N)``, True = visible.
    """
    return mask_tokens(spins, 0.3, torch.Generator().manual_seed(MASK_SEED))


@dataclass(frozen=True)
class BareRow:
    r"""What one bare model did on the masked test digits (one row of the table).

    ``curve`` and ``pasted`` are the error per pixel of the whole image after
    ``t = 0, ..., T`` iterations (:func:`~seqbook.attractor.mse_curve`), without and
    with the clean visible patches pasted back; ``energy`` is the total energy
    (:meth:`~seqbook.attractor.BareSelfAttention.energy`, at the model's
    :math:`\lambda = 1`) averaged over the digits; ``largest_rise`` and ``rises`` are
    the largest change of one digit's energy in one step and the number of steps that
    raised it; ``movement`` is the mean distance a spin moves in each step;
    ``step_loss`` the training loss at every SGD step.
    """

    seed: int
    step_loss: Float[Tensor, " steps"]
    curve: Float[Tensor, " T1"]  # T1 = T + 1
    pasted: Float[Tensor, " T1"]
    energy: Float[Tensor, " T1"]
    largest_rise: float
    rises: int
    movement: Float[Tensor, " T"]


def bare_comparison_run(
    generator: torch.Generator | None,
    train_spins: Float[Tensor, "P N d"],
    x_masked: Float[Tensor, "B N d"],
    visible: Bool[Tensor, "B N"],
    clean: Float[Tensor, "B H W"],
    steps: int = COMPARISON_STEPS,
    seed: int = -1,
) -> BareRow:
    r"""Train one bare model as in attractor and run it on the masked digits.

    The couplings are drawn from ``generator``, which then shuffles the mini-batches of
    one epoch of :func:`~seqbook.attractor.train_pseudo_likelihood` (batches of 32,
    learning rate 5, :math:`\lambda = 5`, gradients clipped to 1); the model then runs
    ``steps`` iterations from the masked spins (masked tokens not attended to in the
    first step), decoded by the 2 x 2 :class:`~seqbook.attractor.PatchEmbedding`.

    Args:
        generator: the generator of the initial couplings and the shuffles.
        train_spins: the embedded training digits.
        x_masked, visible: the masked spins and their mask (``comparison_masks``).
        clean: the clean digits.
        steps: iterations of the dynamics.
        seed: the seed to record in the row.
    """
    check_positive_int("steps", steps)
    embedding = PatchEmbedding(patch_size=2)
    bare = BareSelfAttention(embedding.num_tokens, embedding.dim, generator=generator)
    history = train_pseudo_likelihood(bare, train_spins, epochs=1, batch_size=32, lr=5.0,
                                      lam=5.0, clip=1.0, generator=generator,
                                      progress=False)
    run = bare.run(x_masked, steps, key_mask=visible)  # (T + 1, B, N, d)
    images = torch.stack([embedding.decode(x) for x in run])  # (T + 1, B, H, W)
    with torch.no_grad():
        energies = torch.stack([bare.energy(x) for x in run])  # (T + 1, B)
    rise = energies.diff(dim=0)
    return BareRow(
        seed=seed,
        step_loss=torch.tensor(history.step_loss),
        curve=mse_curve(images, clean),
        pasted=mse_curve(paste_visible(images, clean, visible, 2), clean),
        energy=energies.mean(-1),
        largest_rise=rise.max().item(),
        rises=int((rise > 0).sum()),
        movement=run.diff(dim=0).norm(dim=-1).mean((1, 2)),  # unit spins
    )


def _row_to_json(row: BareRow) -> dict:
    return {k: v.tolist() if isinstance(v, torch.Tensor) else v
            for k, v in asdict(row).items()}


def _row_from_json(row: dict[str, Any]) -> BareRow:
    names = {f.name for f in fields(BareRow)}
    values: dict[str, Any] = {k: torch.tensor(v) if isinstance(v, list) else v
                              for k, v in row.items() if k in names}
    return BareRow(**values)


def load_bare_comparison(path: str | Path = BARE_COMPARISON) -> list[BareRow]:
    """The committed bare models beside the ETs (``--bare``), one :class:`BareRow` per seed.

    Example:
        >>> rows = load_bare_comparison()
        >>> [row.seed for row in rows], tuple(rows[0].curve.shape)
        ([0, 1, 2, 3, 4], (21,))
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no bare comparison table at {path}: run python -m "
                                "seqbook.energy_transformer.train --bare")
    table = json.loads(path.read_text(encoding="utf-8"))
    return [_row_from_json(row) for row in table["rows"]]


def bare_table(argv: Sequence[str] | None, args: argparse.Namespace) -> Path:
    """``--bare``: one bare model per seed on the comparison's digits, into the table."""
    train_images, test_images = mnist_split(4000, 1000)
    embedding = PatchEmbedding(patch_size=2)
    digits = 8 if args.smoke else COMPARISON_DIGITS
    clean = test_images[:digits]
    x_masked, visible = comparison_masks(embedding(clean))
    train_spins = embedding(train_images[:64 if args.smoke else BARE_TRAIN_SIZE])
    rows = []
    for seed in args.seeds:
        start = time.perf_counter()
        row = bare_comparison_run(torch.Generator().manual_seed(seed), train_spins, x_masked,
                                  visible, clean, steps=3 if args.smoke else
                                  COMPARISON_STEPS, seed=seed)
        rows.append(_row_to_json(row))
        print(f"seed {seed}: best error {row.curve.min():.5f} at t = "
              f"{int(row.curve.argmin())}, {time.perf_counter() - start:.0f} s", flush=True)
    path = args.out / BARE_COMPARISON.name
    path.parent.mkdir(parents=True, exist_ok=True)
    table = {"digits": digits, "mask_seed": MASK_SEED,
             "masked": int((~visible).sum()), "train_size": len(train_spins),
             "rows": rows}
    path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    record(path, "seqbook.energy_transformer.train", argv, rows="all")
    return path


def _comparison_scores(model: torch.nn.Module, clean: Tensor,
                       mean_digit: Tensor) -> dict[str, float]:
    """A model on the chapter's comparison: its best whole-image error over
    ``t = 0..20``, where, and its best error with the visible patches pasted back;
    ``mean_fill`` is the yardstick's error on the same digits."""
    assert isinstance(model, MaskedEnergyTransformer)
    x_masked, visible = comparison_masks(PatchEmbedding(patch_size=2)(clean))
    patches = image_to_patches(clean, model.patch_size)
    with torch.no_grad():
        images = model.to_images(model.run(patches, visible, COMPARISON_STEPS))
    curve = mse_curve(images, clean)
    pasted = mse_curve(paste_visible(images, clean, visible, 2), clean)
    filled = paste_visible(mean_digit.expand_as(clean), clean, visible, 2)
    return {"best": curve.min().item(), "best_t": int(curve.argmin()),
            "fill_best": pasted.min().item(),
            "mean_fill": mse_curve(filled[None], clean)[0].item()}


def resume(argv: Sequence[str] | None, args: argparse.Namespace) -> Path:
    """``--resume``: continue a saved model for ``args.epochs`` more epochs."""
    model, first = load_masked(args.resume)
    seed = int(first["seed"])
    train_images, test_images = mnist_split(args.train_size, COMPARISON_DIGITS)
    mean_digit = train_images.mean(0)

    def score(m: torch.nn.Module) -> dict[str, float]:
        return _comparison_scores(m, test_images, mean_digit)

    seed_everything(seed)
    start_scores = score(model)
    start, cpu = time.perf_counter(), time.process_time()
    history = train_masked(
        model.train(), train_images, epochs=args.epochs, batch_size=args.batch_size,
        lr=args.lr, progress=not args.smoke, eval_fn=score,
        generator=torch.Generator().manual_seed(RESUME_SEED_OFFSET + seed),
    )
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    name = Path(args.resume).stem
    path = save_masked(
        model.eval(), args.out / f"{name}_continued.pt",
        seed=seed, resumed_from=name, first_epochs=first["epochs"],
        first_step_loss=first["step_loss"], epochs=args.epochs,
        train_size=args.train_size, lr=args.lr, batch_size=args.batch_size,
        seconds=round(seconds, 1), cpu_seconds=round(cpu_seconds, 1),
        threads=torch.get_num_threads(), final_loss=history.final_loss,
        epoch_loss=history.epoch_loss,
        step_loss=[round(v, 5) for v in history.step_loss],
        start_scores=start_scores, scores=history.metrics,
        parameters=sum(p.numel() for p in model.parameters()),
    )
    print(f"{name} + {args.epochs} epochs: loss {history.epoch_loss}, scores "
          f"{history.metrics} (start {start_scores}), {cpu_seconds:.0f} s CPU -> {path}",
          flush=True)
    # the file holds this one model: a run rewrites all of it
    record(path, "seqbook.energy_transformer.train", argv, rows="all")
    return path


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
        "--bare", action="store_true",
        help="the bare self-attention beside the ETs, one per seed, into "
             "bare_comparison.json (see the module's docstring)",
    )
    parser.add_argument(
        "--resume", default=None,
        help="continue this checkpoint (a name such as et_seed0, or a path) for "
             "--epochs more epochs into <name>_continued.pt (see the module's docstring)",
    )
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
    """Train one model per seed and return the paths of their checkpoints (with
    ``--bare``: the path of the bare models' table)."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.bare:
        return [bare_table(argv, args)]
    if args.resume is not None:
        return [resume(argv, args)]
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
