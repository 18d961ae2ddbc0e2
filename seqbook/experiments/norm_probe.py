r"""Pre-norm and post-norm stacks at initialisation: one step's output change, gradients.

The chapter "The Transformer" measures, on freshly initialised stacks of 1 to 32 of its
:class:`~seqbook.transformer.EncoderBlock` (width 32, 4 heads, feed-forward width 64,
no dropout), the two effects that Xiong et al. (2020) attribute to where the layer norm
sits (:func:`stack_probe`): how far one sign-gradient step
(:math:`\theta \leftarrow \theta - \eta\,\operatorname{sign}(\nabla\mathcal L)`,
:math:`\eta = 10^{-3}`) on a random classification loss moves the stack's output, and
the gradient norm of every block (and of its feed-forward :math:`\mathbf W_2` alone).

Single initialisations scatter widely, so the chapter's statements are about means
over many of them. Sixty-four initialisations of every depth, pre-norm and post-norm,
take longer than a chapter may run; they are computed offline into
``seqbook/experiments/results/norm_probe.json`` (:func:`load_norm_probe` reads it), and
the chapter reruns seed 0 live with the same :func:`stack_probe`. The table was made
with::

    python -m seqbook.experiments.norm_probe --threads 1

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

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.results import RESULTS_DIR
from seqbook.provenance import record
from seqbook.transformer import EncoderBlock, LayerNorm
from seqbook.utils import seed_everything

__all__ = ["RESULTS", "DEPTHS", "SEEDS", "FORMS", "stack_probe", "probe_grid",
           "load_norm_probe", "main"]

#: The committed table.
RESULTS = RESULTS_DIR / "norm_probe.json"
#: The numbers of blocks probed.
DEPTHS = (1, 2, 4, 8, 16, 32)
#: The initialisations of the table.
SEEDS = tuple(range(64))
#: The two forms, by name, and their ``norm_first``.
FORMS = {"pre-norm": True, "post-norm": False}
# the table's quantities: one value per depth, or one per block of the deepest stack
_PER_DEPTH, _PER_BLOCK = ("change", "top_grad", "stream"), ("grads", "w2_grads")


def stack_probe(
    norm_first: bool, depth: int, d: int = 32, lr: float = 1e-3, seed: int = 0
) -> tuple[float, Float[Tensor, " {depth}"], float, Float[Tensor, " {depth}"]]:
    """Probe a fresh stack of ``depth`` encoder blocks, initialised from ``seed``.

    A random batch (16 sequences of 10 vectors) and random targets over 10 classes,
    a linear read-out after the stack (and after a final layer norm in pre-norm), the
    cross-entropy's gradient, and one step of size ``lr`` along the sign of every
    block's gradient.

    Returns:
        The relative change of the output after the step, the gradient norm of every
        block ``(depth,)``, the mean norm of the residual stream's vectors after the
        last block, and the gradient norm of every block's feed-forward
        :math:`\\mathbf W_2` ``(depth,)``.

    Example:
        >>> change, grads, stream, w2 = stack_probe(True, 2)
        >>> change > 0, tuple(grads.shape), tuple(w2.shape)
        (True, (2,), (2,))
    """
    check_positive_int("depth", depth)
    seed_everything(seed)
    stack = [EncoderBlock(d, 4, 2 * d, dropout=0.0, norm_first=norm_first)
             for _ in range(depth)]
    blocks = nn.ModuleList(stack)
    final = LayerNorm(d) if norm_first else nn.Identity()
    readout = nn.Linear(d, 10)
    x, target = torch.randn(16, 10, d), torch.randint(0, 10, (16, 10))

    def run():
        h = x
        for block in blocks:
            h = block(h)
        return final(h), h.norm(dim=-1).mean().item()  # (B, T, d)

    before, stream = run()
    F.cross_entropy(readout(before).flatten(0, 1), target.flatten()).backward()
    grads = [torch.cat([_grad(p).flatten() for p in b.parameters()]).norm()
             for b in stack]
    w2 = [_grad(b.feed_forward.linear_2.weight).norm() for b in stack]
    with torch.no_grad():
        for p in blocks.parameters():
            p.sub_(lr * _grad(p).sign())
        change = ((run()[0] - before).norm() / before.norm()).item()
    return change, torch.stack(grads), stream, torch.stack(w2)


def _grad(p: Tensor) -> Tensor:
    """The gradient of ``p`` (every parameter of the probed stack has one)."""
    if p.grad is None:
        raise RuntimeError("a parameter of the stack received no gradient")
    return p.grad


def probe_grid(seeds: Iterable[int] = SEEDS, depths: Sequence[int] = DEPTHS
               ) -> dict[str, dict[str, np.ndarray]]:
    """:func:`stack_probe` of both forms at every depth from every seed, on one thread.

    Returns:
        For each form of :data:`FORMS`: ``change``, ``top_grad`` (the last block's
        gradient norm) and ``stream``, each ``(seeds, depths)``, and ``grads`` and
        ``w2_grads`` of the deepest stack's blocks, each ``(seeds, max(depths))``.

    Example:
        >>> grid = probe_grid([0], depths=[1, 2])
        >>> grid["pre-norm"]["change"].shape, grid["post-norm"]["grads"].shape
        ((1, 2), (1, 2))
    """
    seeds = list(seeds)
    grid = {}
    with one_thread():
        for name, norm_first in FORMS.items():
            probes = [[stack_probe(norm_first, depth, seed=seed) for depth in depths]
                      for seed in seeds]
            grid[name] = {
                "change": np.array([[c for c, *_ in run] for run in probes]),
                "top_grad": np.array([[g[-1].item() for _, g, *_ in run]
                                      for run in probes]),
                "stream": np.array([[size for _, _, size, _ in run] for run in probes]),
                "grads": np.array([run[-1][1].tolist() for run in probes]),
                "w2_grads": np.array([run[-1][3].tolist() for run in probes]),
            }
    return grid


def _rounded(values: np.ndarray) -> list:
    """Nested lists of floats with 7 significant digits (the probes run in float32)."""
    return [float(f"{v:.7g}") for v in values] if values.ndim == 1 else [
        _rounded(row) for row in values]


def load_norm_probe(path: Path | str = RESULTS) -> tuple[dict, dict[str, dict[str, np.ndarray]]]:
    """The committed table: ``(config, grid)``, the grid as :func:`probe_grid` returns it.

    Example:
        >>> config, grid = load_norm_probe()
        >>> config["depths"], grid["post-norm"]["change"].shape
        ([1, 2, 4, 8, 16, 32], (64, 6))
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be a table written by main(), got {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    grid = {name: {key: np.array(values) for key, values in form.items()}
            for name, form in data["grid"].items()}
    return data["config"], grid


def main(argv: Sequence[str] | None = None) -> Path:
    """Probe every seed, depth and form; write the table and return its path."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments.norm_probe",
        description="Pre-norm and post-norm encoder stacks at initialisation.")
    parser.add_argument("--seeds", type=int, default=len(SEEDS),
                        help="the number of initialisations (seeds 0, 1, ...)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a tiny run")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    seeds, depths = (range(2), (1, 2)) if args.smoke else (range(args.seeds), DEPTHS)
    start = time.process_time()
    grid = probe_grid(seeds, depths)
    config = dict(d=32, heads=4, d_ff=64, lr=1e-3, depths=list(depths),
                  seeds=len(seeds), cpu_seconds=round(time.process_time() - start, 1))
    data = dict(config=config, grid={name: {key: _rounded(values) for key, values in
                                            form.items()} for name, form in grid.items()})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data) + "\n", encoding="utf-8")
    record(args.out, "seqbook.experiments.norm_probe", argv, threads=args.threads)
    print(f"wrote {len(seeds)} seeds to {args.out} in {config['cpu_seconds']} CPU s",
          file=sys.stderr)
    return args.out


if __name__ == "__main__":  # pragma: no cover
    main()
