"""Train the LSTM and the transformer language models at matched CPU time, over seeds.

The chapter "A decoder-only transformer language model" trains one seed of each model
live and loads the table this script writes, ``results/comparison.json``, for the
spread over seeds and for longer budgets than a chapter can afford. It was made with::

    python -m seqbook.language_model.compare --threads 1

Both models read the same random windows of the training text (the LSTM chapter's
recipe: 32 windows of 32 characters per step, Adam, gradient norm clipped at 1), in the
same order; per unit of budget the LSTM takes ``--lstm-steps`` steps and the
transformer ``--transformer-steps``, chosen so that both use the same CPU time (the
script measures and records the CPU seconds of every run; ``--calibrate`` measures the
cost of a step of each). Validation perplexity is measured after 1, 2, 4, ... units.
``--smoke`` is a fast test that the script runs; ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from seqbook.language_model.bigram import bigram_perplexity
from seqbook.language_model.data import CharCorpus, char_corpus, random_windows
from seqbook.language_model.evaluate import lm_loss, loss_by_position, perplexity
from seqbook.language_model.model import TransformerLM
from seqbook.language_model.recurrent import RecurrentLM
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = ["RESULTS", "build_model", "load_comparison", "main", "parse_args", "train_segment"]

RESULTS = Path(__file__).parent / "results" / "comparison.json"
MODELS = ("lstm", "transformer")
LEARNING_RATES = {"lstm": 0.01, "transformer": 0.003}


def build_model(name: str, vocab_size: int, seed: int) -> nn.Module:
    """The chapter's models: the LSTM chapter's LSTM LM and a matched transformer."""
    seed_everything(seed)
    if name == "lstm":
        return RecurrentLM(vocab_size, hidden_size=128, embedding_dim=32)
    return TransformerLM(vocab_size)  # TransformerLMConfig's defaults


def train_segment(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_ids: torch.Tensor,
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
         eval_window: int) -> list[dict]:
    model = build_model(name, corpus.vocab_size, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATES[name])
    generator = seeded_generator(seed + 1)
    rows, done, cpu = [], 0, 0.0
    for unit in units:
        steps = unit * steps_per_unit - done
        cpu += train_segment(model, optimizer, corpus.train_ids, generator, steps)
        done += steps
        model.eval()
        row = {
            "model": name, "seed": seed, "budget": unit, "steps": done,
            "cpu_seconds": round(cpu, 2),
            "params": sum(p.numel() for p in model.parameters()),
            "valid_ppl": perplexity(model, corpus.valid_ids, window=eval_window),
            "loss_by_position": [
                round(v, 5) for v in loss_by_position(model, corpus.valid_ids, 32).tolist()
            ],
        }
        if name == "lstm":
            row["valid_ppl_full_stream"] = perplexity(model, corpus.valid_ids)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def calibrate(corpus: CharCorpus, steps: int = 30) -> dict[str, float]:
    """Median CPU seconds of one training step of each model, timed alternately."""
    models = {name: build_model(name, corpus.vocab_size, 0) for name in MODELS}
    optimizers = {n: torch.optim.Adam(m.parameters(), lr=1e-3) for n, m in models.items()}
    generator = seeded_generator(1)
    times: dict[str, list[float]] = {name: [] for name in MODELS}
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


def load_comparison(path: Path = RESULTS) -> dict:
    """The results table written by ``python -m seqbook.language_model.compare``.

    By default the committed table, which the chapter loads.

    Keys: ``"recipe"`` (the training recipe), ``"bigram_ppl"``, ``"runs"`` (one dict
    per model, seed and budget: steps, CPU seconds, parameters, validation perplexity,
    loss by position in a window) and ``"wall_seconds"``.
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
    parser.add_argument("--lstm-steps", type=int, default=400, help="LSTM steps per unit")
    parser.add_argument("--transformer-steps", type=int, default=220,
                        help="transformer steps per unit (the same CPU time)")
    parser.add_argument("--eval-window", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--calibrate", action="store_true", help="only time a step of each")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true",
                        help="a fast test: 1 seed, 20 + 10 steps, a small corpus")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds, args.units = [0], [1]
        args.lstm_steps, args.transformer_steps = 20, 10
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the comparison and write (and return) the results table."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = char_corpus(num_chars=100_000 if args.smoke else 300_000)
    if args.calibrate:
        costs = calibrate(corpus)
        print({**costs, "ratio": costs["lstm"] / costs["transformer"]})
        return costs
    started = time.perf_counter()
    runs = []
    for seed in args.seeds:
        for name, steps in (("lstm", args.lstm_steps), ("transformer", args.transformer_steps)):
            runs += _run(name, seed, corpus, steps, args.units, args.eval_window)
    results = {
        "recipe": {
            "batch_size": 32, "window": 32, "clip": 1.0, "learning_rates": LEARNING_RATES,
            "lstm_steps_per_unit": args.lstm_steps,
            "transformer_steps_per_unit": args.transformer_steps,
            "eval_window": args.eval_window, "eval_stride": args.eval_window // 2,
            "threads": torch.get_num_threads(), "torch": torch.__version__,
        },
        "bigram_ppl": bigram_perplexity(corpus.train_ids, corpus.valid_ids, corpus.vocab_size),
        "runs": runs,
        "wall_seconds": round(time.perf_counter() - started),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
