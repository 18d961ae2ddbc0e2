"""Train the book's language models at matched CPU time, over seeds.

The chapter "A decoder-only transformer language model" trains one seed of the LSTM
and the transformer live and loads the table this script writes,
``results/comparison.json``, for the spread over seeds and for longer budgets than a
chapter can afford; part VI's last chapter adds rows for four
:class:`~seqbook.language_model.MixerLM` models (linear attention, delta rule,
Mamba, mLSTM) of about the same number of parameters. It was made with::

    python -m seqbook.language_model.compare --threads 1

(``--models`` reruns some models and keeps the others' rows.) A transformer whose
readout shares the embedding's matrix (``transformer_tied``) shows what weight tying
does at this size; ``--lr-control`` trains the transformer at other learning rates
(and the LSTM at the transformer's) and stores those runs apart, under
``"lr_control"``. Every row has the perplexity on the first validation-sized stretch
of the training text too, to show whether a model overfits. All models read the
same random windows of the training text (the LSTM chapter's recipe: 32 windows of 32
characters per step, Adam, gradient norm clipped at 1), in the same order; per unit of
budget each takes its ``STEPS_PER_UNIT`` steps, chosen so that all use the same CPU
time as the LSTM's 400 (the script measures and records the CPU seconds of every run;
``--calibrate`` measures the cost of a step of each). Validation perplexity is measured
after 1, 2, 4, ... units. ``--smoke`` is a fast test that the script runs; ``--help``
lists the options; without ``--out`` it writes to the system's temporary folder,
never over the committed table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from jaxtyping import Int
from torch import Tensor, nn

from seqbook._checks import check_choice
from seqbook.language_model.bigram import bigram_perplexity
from seqbook.language_model.data import CharCorpus, char_corpus, random_windows
from seqbook.language_model.evaluate import lm_loss, loss_by_position, perplexity
from seqbook.language_model.mixers import MixerLM
from seqbook.language_model.model import TransformerLM
from seqbook.language_model.recurrent import RecurrentLM
from seqbook.provenance import record
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "LR_CONTROL", "MODELS", "RESULTS", "STEPS_PER_UNIT", "build_model", "load_comparison", "main",
    "parse_args", "train_segment",
]

RESULTS = Path(__file__).parent / "results" / "comparison.json"
#: The widths of the MixerLM rows: two blocks, four heads, about 90-100k parameters.
MIXER_WIDTHS = {"linear": 56, "delta": 56, "mamba": 58, "mlstm": 56}
MODELS = ("lstm", "transformer", "transformer_tied", *MIXER_WIDTHS)
LEARNING_RATES = {"lstm": 0.01, "transformer": 0.003, "transformer_tied": 0.003,
                  **{m: 0.003 for m in MIXER_WIDTHS}}
#: Steps per unit of budget: the CPU time of the LSTM's 400 (from ``--calibrate``).
STEPS_PER_UNIT = {"lstm": 400, "transformer": 220, "transformer_tied": 220, "linear": 230,
                  "delta": 80, "mamba": 80, "mlstm": 215}
#: The learning-rate control: the rates tried besides each model's own.
LR_CONTROL = {"transformer": (0.001, 0.006, 0.01), "lstm": (0.003,)}


def build_model(name: str, vocab_size: int, seed: int) -> nn.Module:
    """The comparison's models: the LSTM chapter's LSTM LM, a transformer of the same
    size, and MixerLMs of about that size (:data:`MIXER_WIDTHS`)."""
    check_choice("name", name, MODELS)
    seed_everything(seed)
    if name == "lstm":
        return RecurrentLM(vocab_size, hidden_size=128, embedding_dim=32)
    if name == "transformer":
        return TransformerLM(vocab_size)  # TransformerLMConfig's defaults
    if name == "transformer_tied":
        return TransformerLM(vocab_size, tie_weights=True)
    return MixerLM(vocab_size, MIXER_WIDTHS[name], name, num_layers=2, num_heads=4)


def train_segment(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_ids: Int[Tensor, " N"],
    generator: torch.Generator,
    steps: int,
    window: int = 32,
    batch_size: int = 32,
) -> float:
    """Train ``steps`` more steps on random windows; return the CPU seconds it took."""
    per_epoch = 10 if steps % 50 else 50
    start = time.thread_time()
    fit(model, lm_loss,
        lambda: [random_windows(train_ids, generator, batch_size, window)
                 for _ in range(per_epoch)],
        optimizer, epochs=steps // per_epoch, clip=1.0, progress=False)
    return time.thread_time() - start


def _run(name: str, seed: int, corpus: CharCorpus, steps_per_unit: int, units: list[int],
         eval_window: int, lr: float | None = None) -> list[dict]:
    model = build_model(name, corpus.vocab_size, seed)
    lr = LEARNING_RATES[name] if lr is None else lr
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    train_part = corpus.train_ids[: len(corpus.valid_ids)]  # as long as the validation text
    generator = seeded_generator(seed + 1)
    rows, done, cpu = [], 0, 0.0
    for unit in units:
        steps = unit * steps_per_unit - done
        cpu += train_segment(model, optimizer, corpus.train_ids, generator, steps)
        done += steps
        model.eval()
        row = {
            "model": name, "seed": seed, "budget": unit, "steps": done, "lr": lr,
            "cpu_seconds": round(cpu, 2),
            "params": sum(p.numel() for p in model.parameters()),
            "valid_ppl": perplexity(model, corpus.valid_ids, window=eval_window),
            "train_ppl": perplexity(model, train_part, window=eval_window),
            "loss_by_position": [
                round(v, 5)
                for v in loss_by_position(model, corpus.valid_ids, 32, offsets=32).tolist()
            ],
        }
        if name == "lstm":
            row["valid_ppl_full_stream"] = perplexity(model, corpus.valid_ids)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def calibrate(corpus: CharCorpus, names: Sequence[str] = MODELS,
              steps: int = 30) -> dict[str, float]:
    """Median CPU seconds of one training step of each model, timed alternately."""
    models = {name: build_model(name, corpus.vocab_size, 0) for name in names}
    optimizers = {n: torch.optim.Adam(m.parameters(), lr=1e-3) for n, m in models.items()}
    generator = seeded_generator(1)
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(steps):
        batch = random_windows(corpus.train_ids, generator)
        for name, model in models.items():
            start = time.thread_time()
            loss = lm_loss(model, batch)
            optimizers[name].zero_grad()
            loss.backward()
            optimizers[name].step()
            times[name].append(time.thread_time() - start)
    return {name: statistics.median(t[3:]) for name, t in times.items()}


def load_comparison(path: Path | str = RESULTS) -> dict:
    """The results table written by ``python -m seqbook.language_model.compare``.

    By default the committed table, which the chapter loads.

    Keys: ``"recipe"`` (the training recipe), ``"bigram_ppl"``, ``"runs"`` (one dict
    per model, seed and budget: steps, learning rate, CPU seconds, parameters,
    validation and training perplexity, loss by position in a window),
    ``"lr_control"`` (rows of the same kind, at the rates of ``LR_CONTROL``) and
    ``"wall_seconds"``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no results table at {path}; run python -m seqbook.language_model.compare"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``python -m seqbook.language_model.compare --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.language_model.compare",
        description="LSTM against transformer language model at matched CPU time.",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--units", type=int, nargs="+", default=[1, 2, 4],
                        help="budgets at which to evaluate, in units of the LSTM's 400 steps")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS,
                        help="models to run (the table keeps the other models' rows)")
    parser.add_argument("--steps-per-unit", nargs="+", default=[], metavar="MODEL=STEPS",
                        help="override STEPS_PER_UNIT, e.g. lstm=400 mamba=150")
    parser.add_argument("--eval-window", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--calibrate", action="store_true", help="only time a step of each")
    parser.add_argument("--lr-control", action="store_true",
                        help="only run the learning-rate control (LR_CONTROL) and store it")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true",
                        help="a fast test: 1 seed, 20 LSTM steps and 10 of the others, "
                             "evaluated on a short stretch of the validation text")
    args = parser.parse_args(argv)
    args.steps = dict(STEPS_PER_UNIT)
    for item in args.steps_per_unit:
        name, _, steps = item.partition("=")
        if name not in MODELS or not steps.isdigit() or int(steps) < 1:
            parser.error(f"--steps-per-unit takes MODEL=STEPS with MODEL in {MODELS}, "
                         f"got {item!r}")
        args.steps[name] = int(steps)
    if args.smoke:  # never over the committed table
        args.seeds, args.units = [0], [1]
        if args.out == RESULTS:
            args.out = Path(tempfile.gettempdir()) / "seqbook_comparison_smoke.json"
        args.steps = {name: 20 if name == "lstm" else 10 for name in MODELS}
    return args


SMOKE_VALID_CHARS = 512  # the validation text of a --smoke run


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the comparison and write (and return) the results table."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = char_corpus(num_chars=100_000 if args.smoke else 300_000)
    if args.smoke:  # evaluate on a short stretch of the validation text: it only has to run
        corpus = dataclasses.replace(corpus, valid_text=corpus.valid_text[:SMOKE_VALID_CHARS],
                                     valid_ids=corpus.valid_ids[:SMOKE_VALID_CHARS])
    if args.calibrate:
        costs = calibrate(corpus, ["lstm", *(m for m in args.models if m != "lstm")])
        lstm_steps = args.steps["lstm"]
        print({name: f"{c * 1e3:.1f} ms/step, {round(lstm_steps * costs['lstm'] / c)} "
                     "steps per unit" for name, c in costs.items()})
        return costs
    started = time.perf_counter()
    earlier = load_comparison(args.out) if args.out.is_file() and not args.smoke else None
    runs: list[dict] = []
    lr_control = [] if earlier is None else earlier.get("lr_control", [])
    if args.lr_control:  # the control alone; the table's other rows stay
        lr_control = [row for seed in args.seeds for name, rates in LR_CONTROL.items()
                      for lr in rates for row in _run(name, seed, corpus, args.steps[name],
                                                      args.units, args.eval_window, lr)]
        runs = [] if earlier is None else earlier["runs"]
    else:
        for seed in args.seeds:
            for name in args.models:
                runs += _run(name, seed, corpus, args.steps[name], args.units, args.eval_window)
        if earlier is not None:  # keep the rows of the models not rerun
            runs = [r for r in earlier["runs"] if r["model"] not in args.models] + runs
    steps = {name: args.steps[name] for name in MODELS if any(r["model"] == name for r in runs)}
    results = {
        "recipe": {
            "batch_size": 32, "window": 32, "clip": 1.0, "learning_rates": LEARNING_RATES,
            "steps_per_unit": steps,
            "lstm_steps_per_unit": steps.get("lstm"),
            "transformer_steps_per_unit": steps.get("transformer"),
            "mixer_widths": MIXER_WIDTHS, "mixer_layers": 2, "mixer_heads": 4,
            "eval_window": args.eval_window, "eval_stride": args.eval_window // 2,
            "threads": torch.get_num_threads(), "torch": torch.__version__,
        },
        "bigram_ppl": bigram_perplexity(corpus.train_ids, corpus.valid_ids, corpus.vocab_size),
        "runs": runs,
        "lr_control": lr_control,
        "wall_seconds": round(time.perf_counter() - started),  # of this invocation
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    rerun = "the learning-rate control" if args.lr_control else " ".join(args.models)
    record(args.out, "seqbook.language_model.compare", argv, rows=f"models {rerun}")
    return results


if __name__ == "__main__":
    main()
