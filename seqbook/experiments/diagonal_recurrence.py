r"""Is a fully connected LSTM needed? The first-symbol task with diagonal recurrence.

Shape letters: ``D`` input features, ``H`` LSTM blocks.

In the LSTM of the LSTM chapter every block's cell input and gates read the previous
outputs of *all* blocks through :math:`W_{hg}, W_{hi}, W_{hf}, W_{ho}` (``H x H`` each): the
recurrent layer is fully connected. Hochreiter and Schmidhuber (1997) remarked that
less connectivity may work as well. The sparsest version keeps only the diagonal of
every recurrent matrix: block :math:`j`'s cell input and gates read only its *own*
previous output,

.. math::
    g_{t,j} = \tanh\big(\mathbf{w}_{xg,j}^\top \mathbf{x}_t + w_{hg,j}\, h_{t-1,j}
    + b_{g,j}\big),
    \qquad (\text{likewise } i_{t,j},\ f_{t,j},\ o_{t,j}),

while the inputs :math:`W_{x\bullet} \mathbf{x}_t` stay fully connected: ``H`` independent
one-block LSTMs that share the input (the blocks meet only in the readout). It has
:math:`H` recurrent weights per gate instead of :math:`H^2`.

:func:`diagonal_recurrence` makes a fused ``nn.LSTM`` diagonal (its off-diagonal
recurrent weights zeroed, and their gradients zeroed by hooks, so that training keeps
them at 0), and :func:`diagonal_lag_run` trains one on the first-symbol task with the
protocol and seeds of the LSTM chapter's first-symbol table
(:func:`~seqbook.experiments.long_lag_run`): the same initial draws, then the
off-diagonal entries removed. The table ``results/diagonal_recurrence.csv`` holds the
diagonal and the fully connected layer of ``SPECS`` from every seed of
``SEEDS`` at the lengths ``TS``, on one machine; it was made with::

    python -m seqbook.experiments.diagonal_recurrence --threads 1

(about two minutes of CPU time on one core). ``--smoke`` runs a tiny version.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence

import torch
from torch import nn

from seqbook._checks import check_bool, check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.classifier import LastOutputClassifier
from seqbook.experiments.first_symbol import FirstSymbolTask
from seqbook.experiments.layers import LayerSpec, recurrent_layer
from seqbook.experiments.long_lag import RunRecord
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.experiments.until_solved import SolveResult, train_until_solved
from seqbook.utils import seed_everything

__all__ = [
    "RESULTS", "SPECS", "TS", "SEEDS", "DIAGONAL_SUFFIX", "diagonal_recurrence",
    "diagonal_lag_run", "diagonal_grid", "load_diagonal_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "diagonal_recurrence.csv"
#: The layers: the 1997 LSTM with Hochreiter and Schmidhuber's negative input-gate
#: bias (the only layer of the first-symbol table that solves T = 100) and the default
#: LSTM with forget gate.
SPECS = (
    LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0),
    LayerSpec("lstm"),
)
#: The lengths of the first-symbol task.
TS = (30, 100)
#: The seeds: the first-symbol table's 0-4 and five more.
SEEDS = tuple(range(10))
#: Appended to a spec's label in the table's rows of diagonal layers.
DIAGONAL_SUFFIX = ", W_h diagonal"


def diagonal_recurrence(layer: nn.LSTM) -> nn.LSTM:
    """Keep only the diagonal of every gate's recurrent matrix of a one-layer ``nn.LSTM``.

    Zeroes the off-diagonal entries of the four ``H x H`` blocks of ``weight_hh_l0``
    in place and registers a gradient hook that zeroes their gradients, so that
    training without weight decay keeps them at 0 (Adam's update of an entry whose
    gradient is always 0 is 0).

    Args:
        layer: a one-layer, one-direction ``nn.LSTM`` without projection.

    Returns:
        ``layer`` itself.

    Example:
        >>> layer = diagonal_recurrence(nn.LSTM(3, 4))
        >>> W_hi = layer.weight_hh_l0[:4]               # torch's first gate, i
        >>> bool((W_hi - torch.diag(torch.diag(W_hi))).eq(0).all())
        True
    """
    if not isinstance(layer, nn.LSTM):
        raise TypeError(f"layer must be a torch.nn.LSTM, got {type(layer).__name__}")
    if layer.num_layers != 1 or layer.bidirectional or layer.proj_size:
        raise ValueError("layer must have one layer, one direction and no projection, got "
                         f"num_layers={layer.num_layers}, bidirectional={layer.bidirectional}, "
                         f"proj_size={layer.proj_size}")
    H = layer.hidden_size
    weight = layer.get_parameter("weight_hh_l0")  # (4H, H): four H x H blocks
    keep = torch.eye(H, dtype=weight.dtype, device=weight.device).repeat(4, 1)  # (4H, H)
    with torch.no_grad():
        weight.mul_(keep)
    weight.register_hook(lambda grad: grad * keep)
    return layer


def diagonal_lag_run(
    spec: LayerSpec,
    T: int,
    seed: int,
    diagonal: bool = True,
    hidden_size: int = 32,
    max_steps: int = 150,
) -> SolveResult:
    """:func:`~seqbook.experiments.long_lag_run`, optionally with diagonal recurrence.

    The same protocol and the same draws: everything seeded with ``seed``, the layer
    built by :func:`~seqbook.experiments.recurrent_layer`, then (with ``diagonal``)
    made diagonal by :func:`diagonal_recurrence`, trained with a linear readout by
    :func:`~seqbook.experiments.train_until_solved` (Adam, learning rate 0.01, batches
    of 64, clipped at 1, until 99% validation accuracy or ``max_steps``); on one CPU
    thread. With ``diagonal=False`` it is ``long_lag_run(spec, T, seed, ...)``.

    Args:
        spec: an LSTM layer (``spec.kind == "lstm"``).
        T: the length of the first-symbol task (>= 1).
        seed: the seed (>= 0).
        diagonal: keep only the diagonal of the recurrent matrices.
        hidden_size: blocks (>= 1).
        max_steps: the training budget (>= 25).

    Example:
        >>> spec = LayerSpec("lstm", forget_gate=False)
        >>> result = diagonal_lag_run(spec, T=3, seed=0, hidden_size=4, max_steps=25)
        >>> result.steps
        25
    """
    if not isinstance(spec, LayerSpec) or spec.kind != "lstm":
        raise ValueError(f"spec must be an LSTM LayerSpec (kind 'lstm'), got {spec!r}")
    check_positive_int("T", T)
    check_int("seed", seed, min_value=0)
    check_bool("diagonal", diagonal)
    check_positive_int("hidden_size", hidden_size)
    task = FirstSymbolTask(T)
    with one_thread():
        seed_everything(seed)
        layer = recurrent_layer(spec, task.input_size, hidden_size)
        assert isinstance(layer, nn.LSTM)
        if diagonal:
            diagonal_recurrence(layer)
        model = LastOutputClassifier(layer, hidden_size, task.num_classes)
        return train_until_solved(model, task, seed, max_steps=max_steps)


def diagonal_grid(
    specs: Iterable[LayerSpec] = SPECS,
    Ts: Iterable[int] = TS,
    seeds: Iterable[int] = SEEDS,
    max_steps: int = 150,
    log=None,
) -> list[RunRecord]:
    """:func:`diagonal_lag_run` for every spec, fully connected and diagonal, at every
    ``T``, from every seed; rows as in the first-symbol table, the diagonal layers'
    labels ending in ``DIAGONAL_SUFFIX``.

    Example:
        >>> rows = diagonal_grid([LayerSpec("lstm")], [3], [0], max_steps=25)
        >>> [row.label for row in rows]
        ['LSTM', 'LSTM, W_h diagonal']
    """
    records = []
    Ts, seeds = list(Ts), list(seeds)
    for spec in specs:
        for diagonal in (False, True):
            label = spec.label + (DIAGONAL_SUFFIX if diagonal else "")
            for T in Ts:
                for seed in seeds:
                    start = time.process_time()
                    result = diagonal_lag_run(spec, T, seed, diagonal, max_steps=max_steps)
                    seconds = time.process_time() - start
                    records.append(RunRecord(
                        label, spec.kind, spec.forget_gate, spec.input_gate_bias,
                        spec.forget_gate_bias, spec.update_gate_bias, "first_symbol", T,
                        seed, max_steps, result.accuracy, result.steps, result.solved,
                        round(seconds, 2), spec.chrono_t_max,
                    ))
                    if log is not None:
                        print(f"{label:36s} T={T:4d} seed={seed} {result.describe():>12s} "
                              f"{seconds:6.1f} s", file=log, flush=True)
    return records


def load_diagonal_table() -> list[RunRecord]:
    """The committed table (``results/diagonal_recurrence.csv``).

    Example:
        >>> rows = load_diagonal_table()
        >>> sorted({row.T for row in rows}) == sorted(TS)
        True
    """
    return load_table(RESULTS, RunRecord)


def main(argv: Sequence[str] | None = None) -> list[RunRecord]:
    """Run the grid and write the table; returns its rows."""
    args = _table_options(argv, "seqbook.experiments.diagonal_recurrence",
                          "The first-symbol task with fully connected and diagonal "
                          "recurrent LSTM layers, from several seeds.", SEEDS, RESULTS)
    torch.set_flush_denormal(True)  # as the first-symbol table was computed
    if args.smoke:
        records = diagonal_grid(SPECS[:1], (5,), args.seeds[:1], max_steps=25, log=sys.stderr)
    else:
        records = diagonal_grid(SPECS, TS, args.seeds, log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.diagonal_recurrence", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
