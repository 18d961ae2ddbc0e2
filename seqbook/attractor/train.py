"""Train the attractor chapter's models offline and save their small checkpoints.

The chapter "Self-attention as an attractor network" loads checkpoints from
``seqbook/attractor/checkpoints/``, because training takes longer than a chapter may
run.

**The bare self-attention**, trained as the paper does (pseudo-likelihood, SGD with
mini-batches of 32 for 20 epochs; here on the 4,000 training digits of
:func:`~seqbook.attractor.mnist_split`)::

    python -m seqbook.attractor.train --bare --threads 1

trains three seeds and, at the snapshots (untrained, 32 steps, epochs 1, 3, 10 and
20), measures the reconstruction curves of both tasks on three evaluation sets (with
the trained attention, with uniform attention and, after 32 steps and at the end, with
:math:`\\gamma = 2` and with the Hebbian component of the couplings or the rest of
them alone), the leading eigenvalues of the uniform-attention operator, the
attention's effective number of partners, where long runs end and how concentrated
the couplings are. It writes ``bare.pt``: the couplings of the first seed after the
last epoch (stored by :func:`~seqbook.attractor.save_bare`, one byte per coupling and
a scale per pair) and all these tables.
The seeds are independent, so they can also run in parallel and be merged; a seed may
also run for fewer epochs (its tables hold NaN at the snapshots it does not reach)::

    python -m seqbook.attractor.train --bare --seeds 0 --out runs/0   # and 1, 2
    python -m seqbook.attractor.train --merge runs/0/bare.pt runs/1/bare.pt runs/2/bare.pt

The committed ``checkpoints/bare.pt`` was made so, with seed 0 for the 20 epochs and
seeds 1 and 2 first for one epoch, each on one thread (seed 0: 3.5 CPU minutes of
training and 10 in all, the measurements of the snapshots included; seeds 1 and 2:
about 7 CPU minutes each, nearly all of it measuring)::

    python -m seqbook.attractor.train --bare --seeds 0 --threads 1 --out runs/0
    python -m seqbook.attractor.train --bare --seeds 1 --epochs 1 --threads 1 --out runs/1
    python -m seqbook.attractor.train --bare --seeds 2 --epochs 1 --threads 1 --out runs/2
    python -m seqbook.attractor.train --merge runs/0/bare.pt runs/1/bare.pt runs/2/bare.pt

Then seeds 1 and 2 were trained again to epoch 3 and measured there only (``--measure-from``;
4 CPU minutes for both), and seed 0 retrained without measurements for its couplings
(``--retrain``: 3 CPU minutes; the step losses came within 2e-4 of the first run's), which
``--store`` writes into the checkpoint after checking them against its tables::

    python -m seqbook.attractor.train --bare --seeds 1 2 --epochs 3 --measure-from 375 \
        --threads 1 --out runs/12
    python -m seqbook.attractor.train --retrain runs/bare.pt --threads 1 --out runs/0
    python -m seqbook.attractor.train --store runs/0/couplings.pt runs/bare.pt --out runs/s
    python -m seqbook.attractor.train --extend runs/s/bare.pt runs/12/bare.pt --out runs/e

**The per-block control**: the paper's "the L2 norm of the matrix is kept fixed" may
also be read per block :math:`J_{ij}`; the committed runs fix the norm of the whole
tensor, as the authors' code does. ``--per-block`` trains with every block's norm held
at its initial value instead, measured with the attention and with uniform attention
only, and ``--summarise`` writes the small table ``bare_per_block.json``
(``load_per_block``)::

    python -m seqbook.attractor.train --bare --per-block --seeds 0 --epochs 3 \
        --measure-from 1 --threads 1 --out runs/pb
    python -m seqbook.attractor.train --summarise runs/pb/bare.pt

**The backpropagation baselines** (a recurrent transformer block and a vision
transformer, each for masked prediction and for denoising)::

    python -m seqbook.attractor.train --all --threads 1
    python -m seqbook.attractor.train --all --threads 1 --seed 1   # and --seed 2

writes ``block_mask.pt``, ``block_denoise.pt``, ``vit_mask.pt`` and
``vit_denoise.pt`` (seed 0), and the same names ending in ``_seed1`` and ``_seed2``
for the other training seeds (the two ran side by side, each on one thread: 1,103
and 1,113 s of training for its four models). ``--smoke`` trains tiny models for a
few steps (a test that the script runs), ``--help`` lists the options.

**The short 4 x 4 bare runs** of the section on uniform patches: the bare
self-attention on 4 x 4 patches, trained for 32 steps (one epoch of the first 1,000
training digits) from each seed, then tested on the three evaluation sets with 4 x 4
masks (``bare4_run``); the chapter retrains seed 4 live beside the table::

    python -m seqbook.attractor.train --bare4 --seeds 4 5 6 7 8 --threads 1

writes ``bare4.json`` (a few KB; ``load_bare4``). Measured run time: 70 s of
wall-clock time (15 CPU-seconds) on a 2-core machine shared with other jobs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_int
from seqbook.attractor.bare import BareSelfAttention
from seqbook.attractor.baselines import (
    CHECKPOINTS,
    BaselineConfig,
    build_baseline,
    save_baseline,
    train_baseline,
)
from seqbook.attractor.embedding import PatchEmbedding
from seqbook.attractor.pseudolikelihood import hebbian_couplings, train_pseudo_likelihood
from seqbook.attractor.spectrum import effective_partners, leading_modes, mode_spins
from seqbook.attractor.storage import compress_couplings, expand_couplings, load_bare, save_bare
from seqbook.attractor.tasks import (
    TASKS,
    bare_reconstructions,
    evaluation_set,
    mnist_split,
    mse_curve,
    patch_variance,
)
from seqbook.provenance import provenance_path, read_provenance, record
from seqbook.utils import seed_everything, seeded_generator

__all__ = ["BARE4", "BARE_VARIANTS", "PER_BLOCK", "bare4_run", "hebbian_split", "load_bare4",
           "load_per_block", "main", "measure_bare", "merge_bare", "parse_args",
           "summarise_bare"]

MODELS = ("block", "vit")
#: The dynamics measured at the snapshots: (name, lam, gamma, couplings). The couplings
#: are the trained J, its component along the plain Hebbian couplings of the training
#: digits (:func:`~seqbook.attractor.hebbian_couplings`), or the rest of J. The first two
#: are measured at every snapshot, all of them after 32 steps and at the end.
BARE_VARIANTS = (
    ("attention", 1.0, 1.0, "trained"),
    ("uniform", 0.0, 1.0, "trained"),
    ("gamma2", 1.0, 2.0, "trained"),
    ("hebbian", 1.0, 1.0, "hebbian"),
    ("rest", 1.0, 1.0, "rest"),
)


def hebbian_split(
    J: Float[Tensor, "N N d d"], hebbian: Float[Tensor, "N N d d"]
) -> tuple[Float[Tensor, "N N d d"], Float[Tensor, "N N d d"]]:
    """``J`` as its component along ``hebbian`` (a multiple of it) plus the rest.

    Example:
        >>> H = torch.ones(2, 2, 1, 1)
        >>> along, rest = hebbian_split(3 * H + torch.tensor([1.0, -1.0]).view(2, 1, 1, 1), H)
        >>> along.flatten().tolist(), rest.flatten().tolist()
        ([3.0, 3.0, 3.0, 3.0], [1.0, 1.0, -1.0, -1.0])
    """
    along = (J * hebbian).sum() / (hebbian * hebbian).sum() * hebbian
    return along, J - along


#: The committed table of short 4 x 4 bare runs (``--bare4``), read by ``load_bare4``.
BARE4 = CHECKPOINTS / "bare4.json"
BARE4_TRAIN_SIZE = 1000  # the chapter's live training digits


def bare4_run(
    generator: torch.Generator | None,
    train_spins: Float[Tensor, "P 49 32"],
    eval_sets: int = 3,
    seed: int = -1,
) -> dict:
    """One short bare run on 4 x 4 patches, and what the chapter reads of it.

    The couplings are drawn from ``generator``, which then shuffles one epoch of
    :func:`~seqbook.attractor.train_pseudo_likelihood` (32 steps of 32 of the embedded
    training digits ``train_spins``). On each of the first ``eval_sets`` evaluation
    sets (masked prediction, 4 x 4 masks) the model is read at its best of three
    iterations: the mean within-patch variance of the masked patches that hold ink
    in the clean digit (:func:`~seqbook.attractor.patch_variance`), and the median
    cosine between a hidden patch filled by one step and the mean training spin at
    its position.

    Returns:
        ``{"seed", "step_loss", "variance", "cosine"}``, one value per set for the
        last two.
    """
    check_int("eval_sets", eval_sets, min_value=0)
    embedding4 = PatchEmbedding(patch_size=4)
    model4 = BareSelfAttention(embedding4.num_tokens, embedding4.dim, generator=generator)
    history = train_pseudo_likelihood(model4, train_spins, lr=5.0, generator=generator,
                                      progress=False)
    position_mean = F.normalize(train_spins.mean(0), dim=-1)  # (N, d)
    variance, cosine = [], []
    for s in range(eval_sets):
        digits4 = evaluation_set("mask", s, patch_size=4)
        assert digits4.visible is not None  # masked prediction
        hidden = ~digits4.visible
        images = bare_reconstructions(model4, embedding4, digits4, 3)
        best = int(mse_curve(images, digits4.clean).argmin())
        ink = patch_variance(digits4.clean, 4, hidden) > 0  # patches with ink
        variance.append(patch_variance(images[best], 4, hidden)[ink].mean().item())
        # one step fills a hidden patch with its normalised field
        x0 = embedding4(digits4.corrupted) * digits4.visible[..., None]
        filled = model4.step(x0, digits4.visible)[hidden]  # (M, d)
        where = hidden.nonzero()[:, 1]
        cosine.append((filled * position_mean[where]).sum(-1).median().item())
    return {"seed": seed, "step_loss": history.step_loss, "variance": variance,
            "cosine": cosine}


def load_bare4(path: str | Path = BARE4) -> list[dict]:
    """The committed short 4 x 4 bare runs (``--bare4``): one ``bare4_run`` per seed.

    Example:
        >>> [row["seed"] for row in load_bare4()]
        [4, 5, 6, 7, 8]
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no 4 x 4 bare table at {path}: run python -m "
                                "seqbook.attractor.train --bare4")
    return json.loads(path.read_text(encoding="utf-8"))["rows"]


#: The committed summary of the per-block control (``--bare --per-block``, then
#: ``--summarise``), read by ``load_per_block``.
PER_BLOCK = CHECKPOINTS / "bare_per_block.json"


def summarise_bare(path: str | Path, out: str | Path) -> Path:
    """A small JSON summary of the tables of a ``bare.pt`` (``--summarise``).

    For every seed and measured snapshot: the mean curves of the attention dynamics
    (one per task, averaged over the evaluation sets), the best iteration and error
    of each evaluation set with the attention and with uniform attention, the moduli
    of the two leading eigenvalues, the concentration of the couplings (pairs for 99%
    of the squared norm, share of the ``N`` strongest), the Hebbian cosine, and how
    far the long runs end from the mean digit and from each other; and the runs
    recorded in ``path``'s provenance sidecar (``training_runs``).
    """
    info = torch.load(path, map_location="cpu", weights_only=True)["info"]
    attention, uniform = (info["variants"].index(v) for v in ("attention", "uniform"))
    rows = []
    for r, seed in enumerate(info["seeds"]):
        for k, (step, label) in enumerate(zip(info["snapshot_steps"], info["snapshot_labels"])):
            curves = info["curves"][r, k]  # (V, 2, E, T + 1)
            if curves[attention].isnan().all():
                continue
            best = {name: curves[v].min(-1) for name, v in
                    (("attention", attention), ("uniform", uniform))}
            rows.append({
                "seed": seed, "step": step, "label": label,
                "mean_curve": curves[attention].mean(1).tolist(),  # (2, T + 1)
                **{f"best_t_{name}": b.indices.tolist() for name, b in best.items()},
                **{f"best_mse_{name}": b.values.tolist() for name, b in best.items()},
                "mu": info["eigenvalues"][r, k].norm(dim=-1)[:2].tolist(),
                "pairs99": info["concentration"][r, k, 0].item(),
                "share_top_n": info["concentration"][r, k, 1].item(),
                "hebbian_cosine": info["hebbian"][r, k, 0].item(),
                "attractor": info["attractor"][r, k].tolist(),  # to the mean, pairwise
            })
    table = {"per_block": bool(info.get("per_block", False)), "tasks": list(info["tasks"]),
             "lr": info["lr"], "batch_size": info["batch_size"],
             "train_size": info["train_size"], "cpu_seconds": list(info["cpu_seconds"]),
             "training_runs": read_provenance(path) if provenance_path(path).is_file() else [],
             "rows": rows}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return out


def load_per_block(path: str | Path = PER_BLOCK) -> dict:
    """The committed summary of the per-block control (see :func:`summarise_bare`).

    Example:
        >>> table = load_per_block()
        >>> table["per_block"], sorted({row["label"] for row in table["rows"]})
        (True, ['32 steps', 'epoch 1', 'epoch 3'])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no per-block summary at {path}: run python -m "
                                "seqbook.attractor.train --bare --per-block, then --summarise")
    return json.loads(path.read_text(encoding="utf-8"))


def train_bare4(args: argparse.Namespace) -> Path:
    """``--bare4``: one short 4 x 4 bare run per seed, into ``bare4.json``."""
    train_images, _ = mnist_split(4000, 1000)
    size = 64 if args.smoke else BARE4_TRAIN_SIZE
    train_spins = PatchEmbedding(patch_size=4)(train_images[:size])
    rows = []
    for seed in args.seeds:
        start = time.perf_counter()
        rows.append(bare4_run(torch.Generator().manual_seed(seed), train_spins,
                              args.eval_sets, seed=seed))
        print(f"seed {seed}: variance {rows[-1]['variance']}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    path = args.out / BARE4.name
    path.parent.mkdir(parents=True, exist_ok=True)
    table = {"train_size": size, "eval_sets": args.eval_sets, "rows": rows}
    path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return path


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``python -m seqbook.attractor.train --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.attractor.train",
        description="Train the bare self-attention (--bare) or the transformer baselines.",
    )
    parser.add_argument("--bare", action="store_true", help="train the bare self-attention")
    parser.add_argument("--bare4", action="store_true",
                        help="the short 4 x 4 bare runs, one per seed, into bare4.json")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="merge bare.pt files of single seeds into OUT/bare.pt "
                        "(first: its couplings)")
    parser.add_argument("--retrain", type=Path, default=None,
                        help="retrain the first seed of this bare.pt (its recipe, no "
                        "measurements) and write its float32 couplings to OUT/couplings.pt")
    parser.add_argument("--per-block", action="store_true",
                        help="--bare: hold the norm of every block J_ij fixed, not the "
                        "whole tensor's (the control of the other reading)")
    parser.add_argument("--summarise", type=Path, default=None, metavar="BARE_PT",
                        help="write a small JSON summary of BARE_PT's tables to "
                        "OUT/bare_per_block.json")
    parser.add_argument("--measure-from", type=int, default=0,
                        help="--bare: measure only the snapshots at or after this step")
    parser.add_argument("--extend", type=Path, nargs=2, default=None, metavar=("BASE", "PART"),
                        help="fill BASE's tables of PART's seeds with PART's snapshots, "
                        "into OUT/bare.pt")
    parser.add_argument("--store", type=Path, nargs=2, default=None,
                        metavar=("COUPLINGS", "BASE"),
                        help="BASE with the couplings of COUPLINGS (from --retrain) stored "
                        "in it, checked against its tables, into OUT/bare.pt")
    parser.add_argument("--model", choices=MODELS, default="block")
    parser.add_argument("--task", choices=TASKS, default="mask")
    parser.add_argument("--all", action="store_true", help="train every baseline on every task")
    parser.add_argument("--train-size", type=int, default=4000, help="training digits (<= 4000)")
    parser.add_argument("--epochs", type=int, default=None, help="20 (--bare) or 30 (baselines)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="32 (--bare) or 64 (baselines)")
    parser.add_argument("--lr", type=float, default=None, help="5 (--bare, SGD) or 1e-3 (Adam)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="--bare: training seeds")
    parser.add_argument("--steps", type=int, default=60, help="--bare: iterations of the curves")
    parser.add_argument("--eval-sets", type=int, default=3,
                        help="--bare: evaluation sets of 32 digits")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=5, help="ViT depth")
    parser.add_argument("--patch-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="baselines: the seed")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--out", type=Path, default=CHECKPOINTS, help="checkpoint folder")
    parser.add_argument(
        "--smoke", action="store_true",
        help="a fast test: tiny models, 64 digits, 1 epoch (use with --out)",
    )
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 20 if args.bare else 30
    if args.batch_size is None:
        args.batch_size = 32 if args.bare else 64
    if args.lr is None:
        args.lr = 5.0 if args.bare else 1e-3
    if args.smoke:
        args.train_size, args.epochs, args.batch_size = 64, 1, 32
        args.d_model, args.num_heads, args.d_ff, args.num_layers = 8, 2, 16, 2
        args.seeds, args.steps, args.eval_sets = args.seeds[:1], 3, 1
    return args


# ---------------------------------------------------------------- the bare model
def measure_bare(
    model: BareSelfAttention,
    embedding: PatchEmbedding,
    mean_digit: Float[Tensor, "{embedding.height} {embedding.width}"],
    hebbian: Float[Tensor, "{model.num_tokens} {model.num_tokens} {model.dim} {model.dim}"],
    steps: int = 60,
    eval_sets: int = 3,
    variants: Sequence[tuple[str, float, float, str]] = BARE_VARIANTS,
    num_images: int = 32,
    long_steps: int = 400,
) -> dict[str, Tensor]:
    """What the chapter reports about a bare model at one moment of its training.

    Returns a dict of tensors:

    - ``curves`` ``(V, 2, E, steps + 1)``: the MSE per pixel after ``t`` iterations,
      for each variant of the dynamics (``variants``: name, lam, gamma, couplings; see
      :data:`BARE_VARIANTS`), task ("mask", "denoise") and evaluation set
      (:func:`~seqbook.attractor.evaluation_set`);
    - ``eigenvalues`` ``(4, 2)``: the four of largest modulus of the uniform-attention
      operator (real and imaginary parts), and ``mode_image`` ``(H, W)``: its
      leading eigenvector decoded (signed to agree with the mean training spins);
    - ``partners`` ``(2, 3)``: the effective number of partners at lam = 1 and 5 on
      clean test digits (median, 10th percentile, minimum);
    - ``attractor_image`` ``(H, W)``: the mean of the states after ``long_steps``
      iterations from 8 corrupted digits; ``attractor`` ``(2,)``: their largest MSE to
      the mean digit and to each other; ``to_mean`` ``(long_steps + 1,)``: the mean
      MSE to the mean digit along those runs;
    - ``concentration`` ``(2,)``: how many pairs (i, j) hold 99% of the squared norm
      of J, and the share of the squared norm in the N strongest pairs;
    - ``hebbian`` ``(2,)``: the cosine between J and ``hebbian``, and the norm of J's
      component along it.
    """
    with torch.no_grad():  # measurements only
        N, d = model.num_tokens, model.dim
        J = model.J.detach()
        along, rest = hebbian_split(J, hebbian)
        couplings = {"trained": J, "hebbian": along, "rest": rest}
        curves = torch.full((len(variants), len(TASKS), eval_sets, steps + 1), float("nan"))
        for v, (_, lam, gamma, which) in enumerate(variants):
            dynamics = BareSelfAttention(N, d, lam=lam, gamma=gamma)
            dynamics.J.copy_(couplings[which])
            for k, task in enumerate(TASKS):
                for s in range(eval_sets):
                    digits = evaluation_set(task, s, num_images, embedding.patch_size)
                    images = bare_reconstructions(dynamics, embedding, digits, steps)
                    curves[v, k, s] = mse_curve(images, digits.clean)
        evaluation = BareSelfAttention(N, d, lam=1.0)
        evaluation.J.copy_(J)
        mu, modes = leading_modes(evaluation, k=4, vectors=1)  # only the leading mode is drawn
        reference = embedding(mean_digit[None])[0]
        if modes[0].imag.abs().max() <= 1e-8 * modes[0].abs().max():
            mode_image = embedding.decode(mode_spins(modes[0], reference)[None])[0]
        else:  # a complex leading pair has no single real direction
            mode_image = torch.full_like(mean_digit, float("nan"))
        clean = evaluation_set("mask", 0, num_images).clean
        partners = torch.zeros(2, 3)
        for row, lam in enumerate((1.0, 5.0)):
            hot = BareSelfAttention(N, d, lam=lam)
            hot.J.copy_(J)
            n = effective_partners(hot.attention(embedding(clean))).flatten()
            partners[row] = torch.stack([n.median(), n.quantile(0.1), n.min()])
        starts = [evaluation_set(task, 0, 4) for task in TASKS]
        runs = torch.cat([bare_reconstructions(evaluation, embedding, digits, long_steps)
                          for digits in starts], 1)
        ends = runs[-1]  # (8, H, W)
        to_mean = ((runs - mean_digit) ** 2).mean((2, 3))  # (long_steps + 1, 8)
        pairwise = ((ends[:, None] - ends[None]) ** 2).mean((2, 3))
        block_norms = J.double().flatten(2).norm(dim=-1).flatten().sort(descending=True).values ** 2
        share = block_norms.cumsum(0) / block_norms.sum()
        return {
            "curves": curves,
            "eigenvalues": torch.view_as_real(mu).float(),
            "mode_image": mode_image.half(),
            "partners": partners,
            "attractor_image": ends.mean(0).half(),
            "attractor": torch.stack([to_mean[-1].max(), pairwise.max()]).float(),
            "to_mean": to_mean.mean(1).float(),
            "concentration": torch.tensor([float((share < 0.99).sum() + 1), share[N - 1].item()]),
            "hebbian": torch.tensor([
                (J * hebbian).sum().item() / (J.norm() * hebbian.norm()).item(),
                along.norm().item(),
            ]),
        }


def train_bare(args: argparse.Namespace) -> Path:
    """Train the bare self-attention for every seed, measure the snapshots, save ``bare.pt``."""
    train_images, _ = mnist_split(args.train_size, 1)
    embedding = PatchEmbedding(patch_size=2)
    xi = embedding(train_images)  # (P, N, d)
    mean_digit = train_images.mean(0)
    hebbian = hebbian_couplings(xi)
    per_epoch = -(-args.train_size // args.batch_size)
    marks = {0: "untrained", 32: "32 steps"}
    for epoch in (1, 3, 10, 20):
        if epoch <= args.epochs:
            marks[epoch * per_epoch] = f"epoch {epoch}"
    marks[args.epochs * per_epoch] = f"epoch {args.epochs}"
    snapshots = sorted(s for s in marks if s <= args.epochs * per_epoch)
    # a smoke run tests the pipeline, not the numbers: fewer images, shorter long runs
    long_steps, num_images = (400, 32) if not args.smoke else (5, 4)
    tables: dict[str, list[torch.Tensor]] = {}
    step_losses, seconds = [], []
    final = None
    for seed in args.seeds:
        seed_everything(seed)
        generator = seeded_generator(seed)
        model = BareSelfAttention(embedding.num_tokens, embedding.dim, generator=generator)
        measured: dict[str, list[torch.Tensor]] = {}
        clock = {"train": 0.0, "since": time.process_time()}

        def snapshot(
            step: int, model: BareSelfAttention = model, measured: dict = measured
        ) -> None:
            if step not in marks or step < args.measure_from:
                return
            clock["train"] += time.process_time() - clock["since"]
            full = step in (32, snapshots[-1]) and not args.per_block
            wanted = BARE_VARIANTS if full else BARE_VARIANTS[:2]
            result = measure_bare(model, embedding, mean_digit, hebbian, args.steps, args.eval_sets,
                                  wanted, num_images=num_images, long_steps=long_steps)
            if len(wanted) < len(BARE_VARIANTS):  # pad the variants not measured
                pad = torch.full(
                    (len(BARE_VARIANTS) - len(wanted), *result["curves"].shape[1:]), float("nan")
                )
                result["curves"] = torch.cat([result["curves"], pad])
            for key, value in result.items():
                measured.setdefault(key, []).append(value)
            best = result["curves"][0].mean(1).argmin(-1).tolist()
            print(f"seed {seed}, {marks[step]} (step {step}): best t (mask, denoise) = {best}, "
                  f"|mu| = {result['eigenvalues'][:2].norm(dim=-1).tolist()}", flush=True)
            clock["since"] = time.process_time()

        snapshot(0)
        history = train_pseudo_likelihood(
            model, xi, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, lam=5.0,
            clip=1.0, generator=generator, progress=not args.smoke, on_step=snapshot,
            per_block=args.per_block,
        )
        clock["train"] += time.process_time() - clock["since"]
        seconds.append(clock["train"])
        step_losses.append(torch.tensor(history.step_loss))
        for key, values in measured.items():
            tables.setdefault(key, []).append(torch.stack(values))
        if final is None:
            final = model
    assert final is not None
    # how much the compressed checkpoint changes the curves of seed 0 (set 0, both tasks)
    stored = BareSelfAttention(final.num_tokens, final.dim)
    with torch.no_grad():
        stored.J.copy_(expand_couplings(compress_couplings(final.J)))
    gap = 0.0
    for task in TASKS:
        digits = evaluation_set(task, 0)
        a = mse_curve(bare_reconstructions(final, embedding, digits, args.steps), digits.clean)
        b = mse_curve(bare_reconstructions(stored, embedding, digits, args.steps), digits.clean)
        gap = max(gap, (a - b).abs().max().item())
    path = save_bare(final, args.out / "bare.pt", dict(
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, lam_train=5.0, clip=1.0,
        train_size=args.train_size, steps_per_epoch=per_epoch, seeds=list(args.seeds),
        per_block=args.per_block,
        cpu_seconds=seconds, compression_gap=gap, epochs_per_seed=[args.epochs] * len(args.seeds),
        snapshot_steps=[s for s in snapshots if s >= args.measure_from],
        snapshot_labels=[marks[s] for s in snapshots if s >= args.measure_from],
        variants=[name for name, *_ in BARE_VARIANTS], tasks=list(TASKS),
        step_loss=torch.stack(step_losses),
        **{key: torch.stack(values) for key, values in tables.items()},
    ))
    print(f"bare: {len(args.seeds)} seeds, CPU seconds of training {[round(s) for s in seconds]}, "
          f"compression changes the curves by at most {gap:.1e} -> {path}", flush=True)
    return path


# --------------------------------------------------------------- the baselines
def train_baselines(args: argparse.Namespace) -> list[Path]:
    """Train the chosen baselines and return the paths of their checkpoints."""
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
        suffix = f"_seed{args.seed}" if args.seed else ""  # seed 0: the first checkpoints
        path = save_baseline(
            model.eval(), args.out / f"{kind}_{task}{suffix}.pt",
            task=task, epochs=args.epochs, train_size=args.train_size, lr=args.lr,
            batch_size=args.batch_size, seed=args.seed, seconds=round(seconds, 1),
            final_loss=history.final_loss,
            parameters=sum(p.numel() for p in model.parameters()),
        )
        print(f"{kind} ({task}): final loss {history.final_loss:.5f}, "
              f"{seconds:.0f} s -> {path}", flush=True)
        paths.append(path)
    return paths


# What runs of the bare model must share to be merged (merge_bare, extend_bare).
RECIPE = ("batch_size", "lr", "train_size", "steps_per_epoch", "variants", "tasks")


def _check_same_recipe(info: dict, run: dict, where: object, first: object) -> None:
    """``run`` (the ``info`` of the file ``where``) has the recipe of ``info`` (the file
    ``first``'s) and snapshots among its."""
    for key in RECIPE:
        if run[key] != info[key]:
            raise ValueError(f"{where} differs from {first} in {key}")
    if not set(run["snapshot_steps"]) <= set(info["snapshot_steps"]):
        raise ValueError(f"{where} has snapshots {run['snapshot_steps']}, not among "
                         f"{first}'s {list(info['snapshot_steps'])}")


def merge_bare(paths: Sequence[Path], out: Path) -> Path:
    """One ``bare.pt`` from runs of single seeds: the first file's couplings, every seed's tables.

    The runs must share the recipe (batch size, learning rate, training digits); a run
    may be shorter than the first one (fewer ``--epochs``) if its snapshots are among
    the first run's. Its tables then hold NaN at the snapshots it did not reach, and its
    loss curve is padded with NaN; ``info["epochs_per_seed"]`` says how long each ran and
    ``info["compression_gaps"]`` how much compressing each seed's couplings changed its
    curves (only the first seed's couplings are kept).
    """
    parts = [torch.load(path, map_location="cpu", weights_only=True)["info"] for path in paths]
    checkpoint = torch.load(paths[0], map_location="cpu", weights_only=True)
    info = dict(checkpoint["info"])
    for path, part in zip(paths, parts):
        _check_same_recipe(info, part, path, paths[0])
    steps = list(info["snapshot_steps"])
    longest = max(part["step_loss"].shape[-1] for part in parts)
    for key, value in info.items():
        if not isinstance(value, torch.Tensor):
            continue
        rows = []
        for part in parts:
            table = part[key]  # (1, K, ...) or, for the loss, (1, steps)
            if key == "step_loss":
                row = torch.full((table.shape[0], longest), float("nan"), dtype=table.dtype)
                row[:, : table.shape[1]] = table
            else:
                row = torch.full(
                    (table.shape[0], len(steps), *table.shape[2:]), float("nan"), dtype=table.dtype
                )
                row[:, [steps.index(s) for s in part["snapshot_steps"]]] = table
            rows.append(row)
        info[key] = torch.cat(rows)
    for key in ("seeds", "cpu_seconds"):
        info[key] = [v for part in parts for v in part[key]]
    info["epochs_per_seed"] = [part["epochs"] for part in parts for _ in part["seeds"]]
    info["compression_gaps"] = [part["compression_gap"] for part in parts for _ in part["seeds"]]
    checkpoint["info"] = info
    out.mkdir(parents=True, exist_ok=True)
    torch.save(checkpoint, out / "bare.pt")
    return out / "bare.pt"


def store_couplings(couplings: Path, base: Path, out: Path, steps: int = 60) -> Path:
    """``base`` with the couplings of ``couplings`` (written by ``--retrain``) in its place.

    The couplings are stored by :func:`~seqbook.attractor.save_bare`; the stored model is
    rerun on every evaluation set of ``base``'s first seed at its last snapshot, and
    ``info["compression_gap"]`` records the largest difference of its curves (attention,
    both tasks, ``steps`` iterations) from the table, ``info["couplings"]`` how the
    couplings were made.
    """
    checkpoint = torch.load(base, map_location="cpu", weights_only=True)
    info = dict(checkpoint["info"])
    made = torch.load(couplings, map_location="cpu", weights_only=True)
    if made["seed"] != info["seeds"][0] or made["epochs"] != info["epochs_per_seed"][0]:
        raise ValueError(f"{couplings} is not {base}'s first seed after its last epoch")
    model = BareSelfAttention(made["J"].shape[0], made["J"].shape[2], **{
        k: checkpoint["config"][k] for k in ("lam", "gamma")})
    with torch.no_grad():
        model.J.copy_(made["J"])
    save_bare(model, out / "bare.pt", info)
    stored, _ = load_bare(out / "bare.pt")
    embedding = PatchEmbedding(patch_size=2)
    table = info["curves"][0, -1, info["variants"].index("attention")]  # (2, E, T + 1)
    steps = min(steps, table.shape[-1] - 1)
    gap = 0.0
    for k, task in enumerate(info["tasks"]):
        for s in range(table.shape[1]):
            digits = evaluation_set(task, s, num_images=32, patch_size=2)
            rerun = mse_curve(bare_reconstructions(stored, embedding, digits, steps), digits.clean)
            gap = max(gap, (rerun - table[k, s, : steps + 1]).abs().max().item())
    info["compression_gap"] = gap
    gaps = [float("nan")] * len(info["seeds"])
    gaps[0] = gap
    info["compression_gaps"] = gaps
    info["couplings"] = (
        f"seed {made['seed']} retrained for {made['epochs']} epochs without measurements "
        f"({made['cpu_seconds']:.0f} CPU s; step losses within {made['loss_gap']:.1e} of the "
        f"table's run), stored as int8 per block"
    )
    save_bare(model, out / "bare.pt", info)
    print(f"stored couplings rerun within {gap:.1e} of the table -> {out / 'bare.pt'}", flush=True)
    return out / "bare.pt"


def extend_bare(base: Path, part: Path, out: Path) -> Path:
    """``base`` with the seeds of ``part`` trained further: their tables filled in.

    ``part`` is a run of some of ``base``'s seeds for more epochs (its snapshots among
    ``base``'s), usually measured only at the new snapshots (``--measure-from``). For
    each of its seeds, the snapshots it measured replace ``base``'s entries, its loss
    curve, training time and number of epochs replace ``base``'s; the couplings and
    everything else are ``base``'s.
    """
    checkpoint = torch.load(base, map_location="cpu", weights_only=True)
    info = dict(checkpoint["info"])
    new = torch.load(part, map_location="cpu", weights_only=True)["info"]
    _check_same_recipe(info, new, part, base)
    steps = list(info["snapshot_steps"])
    columns = [steps.index(s) for s in new["snapshot_steps"]]
    info["seeds"], info["cpu_seconds"] = list(info["seeds"]), list(info["cpu_seconds"])
    info["epochs_per_seed"] = list(info["epochs_per_seed"])
    for r, seed in enumerate(new["seeds"]):
        row = info["seeds"].index(seed)
        for key, value in info.items():
            if not isinstance(value, torch.Tensor) or key not in new:
                continue
            value = value.clone()
            if key == "step_loss":
                loss = new[key][r]
                if loss.shape[0] > value.shape[1]:
                    pad = torch.full((value.shape[0], loss.shape[0] - value.shape[1]),
                                     float("nan"), dtype=value.dtype)
                    value = torch.cat([value, pad], 1)
                value[row] = float("nan")
                value[row, : loss.shape[0]] = loss
            else:
                value[row, columns] = new[key][r]
            info[key] = value
        info["cpu_seconds"][row] = new["cpu_seconds"][r]
        info["epochs_per_seed"][row] = new["epochs"]
    checkpoint["info"] = info
    out.mkdir(parents=True, exist_ok=True)
    torch.save(checkpoint, out / "bare.pt")
    return out / "bare.pt"


def retrain_couplings(path: Path, out: Path) -> Path:
    """Retrain the first seed of the bare model in ``path`` and save its full couplings.

    The training is deterministic given the seed (the shuffles come from
    :func:`~seqbook.utils.seeded_generator`), so on the same build of torch this repeats
    the run whose tables ``path`` holds; the measurements are skipped. Writes
    ``out/couplings.pt``: ``{"J": float32 (N, N, d, d), "seed", "epochs", "cpu_seconds",
    "loss_gap"}``, where ``loss_gap`` is the largest difference of the step losses from
    the stored ones (0 when the run was repeated exactly).
    """
    info = torch.load(path, map_location="cpu", weights_only=True)["info"]
    seed, epochs = info["seeds"][0], info["epochs_per_seed"][0]
    train_images, _ = mnist_split(info["train_size"], 1)
    embedding = PatchEmbedding(patch_size=2)
    xi = embedding(train_images)
    seed_everything(seed)
    generator = seeded_generator(seed)
    model = BareSelfAttention(embedding.num_tokens, embedding.dim, generator=generator)
    start = time.process_time()
    history = train_pseudo_likelihood(
        model, xi, epochs=epochs, batch_size=info["batch_size"], lr=info["lr"],
        lam=info["lam_train"], clip=info["clip"], generator=generator, progress=False,
    )
    seconds = time.process_time() - start
    losses = torch.tensor(history.step_loss)
    loss_gap = (losses - info["step_loss"][0, : len(losses)]).abs().max().item()
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"J": model.J.detach().clone(), "seed": seed, "epochs": epochs,
                "cpu_seconds": seconds, "loss_gap": loss_gap}, out / "couplings.pt")
    print(f"seed {seed}, {epochs} epochs: {seconds:.0f} CPU s, losses differ from the stored "
          f"ones by at most {loss_gap:.1e} -> {out / 'couplings.pt'}", flush=True)
    return out / "couplings.pt"


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Train what the options ask for and return the paths of the checkpoints."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.merge:
        paths = [merge_bare(args.merge, args.out)]
    elif args.summarise:
        paths = [summarise_bare(args.summarise, args.out / PER_BLOCK.name)]
    elif args.store:
        paths = [store_couplings(args.store[0], args.store[1], args.out, args.steps)]
    elif args.extend:
        paths = [extend_bare(args.extend[0], args.extend[1], args.out)]
    elif args.retrain:
        paths = [retrain_couplings(args.retrain, args.out)]
    elif args.bare4:
        paths = [train_bare4(args)]
    elif args.bare:
        paths = [train_bare(args)]
    else:
        paths = train_baselines(args)
    for path in paths:
        record(path, "seqbook.attractor.train", argv)
    return paths


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
