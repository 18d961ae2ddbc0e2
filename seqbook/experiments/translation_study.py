"""Train the translators of the attention chapters with several seeds, and save a table.

The chapters on sequence-to-sequence models, decoding and transformers compare
translators (a fixed-context and a Bahdanau GRU model, transformers with and without
label smoothing, greedy and beam search). One training run per model fits in a
chapter's time budget, not five; so the chapters train seed 0 live and load the
results of seeds 0 to 4 from ``seqbook/experiments/results/translation_study.json``,
which was made with::

    python -m seqbook.experiments.translation_study --threads 1

(one to two minutes of CPU time per seed on one core). Every model is trained
exactly as the chapters train it (same task, configuration and code), only with
``seed`` set to each of the seeds. ``--smoke`` runs a tiny version as a test that the
script works; ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from seqbook.experiments.translation import (
    accuracy_by_length,
    french_dix_alignment,
    own_translation_attention,
    tens_unit_alignment,
    token_statistics,
)
from seqbook.provenance import record
from seqbook.seq2seq import (
    TranslationTask,
    TranslatorConfig,
    evaluate_translator,
    number_translation_task,
    train_translator,
)
from seqbook.transformer import TransformerConfig, train_transformer

__all__ = ["BEAM_SIZES", "LENGTH_PENALTIES", "RESULTS", "load_study", "main", "study_seed"]

#: Where the committed results live, inside the installed package.
RESULTS = "results/translation_study.json"
#: The beam sizes and length penalties of the decoding chapter's table.
BEAM_SIZES = (1, 2, 4, 8)
LENGTH_PENALTIES = (0.0, 0.75, 1.5)


def chapter_tasks(num_train: int = 3000, num_eval: int = 500) -> dict[str, TranslationTask]:
    """The chapters' tasks: English to German (pieces) and to French (words), with
    ``num_eval`` sentences in each of the validation and test splits."""
    return {
        lang: number_translation_task(lang, max_number=999_999, num_train=num_train,
                                      num_valid=num_eval, num_test=num_eval, balanced=True)
        for lang in ("de", "fr")
    }


def _timed(train, task, config):
    start = time.thread_time()
    model, history = train(task, config, progress=False)
    return model, history, time.thread_time() - start


def _parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _recurrent(task: TranslationTask, config: TranslatorConfig) -> tuple[Any, dict]:
    model, history, seconds = _timed(train_translator, task, config)
    test = task.splits.test
    result = evaluate_translator(model, task, test)
    per_epoch = len(history.step_loss) // len(history.epoch_loss)
    record = {
        "bleu": result.bleu,
        "accuracy": result.accuracy,
        "by_length": accuracy_by_length(task, test, result.correct()),
        "epoch_loss": history.epoch_loss,
        "end_of_first_epoch": max(history.step_loss[max(0, per_epoch - 5) : per_epoch]),
        "seconds": seconds,
        "parameters": _parameters(model),
    }
    return (model, result), record


def study_seed(seed: int, tasks: dict[str, TranslationTask], epochs_scale: float = 1.0) -> dict:
    """Train and measure every model of the three chapters with one seed.

    Args:
        seed: the training seed (initialisation, batch order); the data do not change.
        tasks: ``chapter_tasks()``, the German and the French task.
        epochs_scale: multiply every model's epochs (rounded, at least 1); 1 for the
            chapters' settings, smaller only for a quick smoke test.

    Returns:
        A JSON-able dict of results, one entry per model.
    """
    de, fr = tasks["de"], tasks["fr"]
    test = de.splits.test

    def epochs(n: int) -> int:
        return max(1, round(n * epochs_scale))

    out: dict[str, Any] = {"seed": seed}
    # sequence to sequence: the fixed context and Bahdanau attention, two epochs
    for name, attention in [("plain", False), ("bahdanau", True)]:
        config = TranslatorConfig(attention=attention, epochs=epochs(2), hidden_size=64, seed=seed)
        (model, result), record = _recurrent(de, config)
        if attention:
            weights = own_translation_attention(model, de, test, result.hypotheses)
            unit, tens, checked = tens_unit_alignment(weights, de, test, result.hypotheses)
            record.update(unit_share=unit, tens_share=tens, inversions_checked=checked)
        out[name] = record
    # the fixed context trained four times longer: is it capacity or slow learning?
    config = TranslatorConfig(attention=False, epochs=epochs(8), hidden_size=64, seed=seed)
    _, out["plain_long"] = _recurrent(de, config)
    config = TranslatorConfig(attention=True, epochs=epochs(2), hidden_size=64, seed=seed)
    (model, result), record = _recurrent(fr, config)
    weights = own_translation_attention(model, fr, fr.splits.test, result.hypotheses)
    record["dix_share"], record["dix_checked"] = french_dix_alignment(
        weights, fr, fr.splits.test, result.hypotheses
    )
    out["french"] = record

    # decoding: a Bahdanau model trained for one epoch, searched in several ways
    config = TranslatorConfig(attention=True, epochs=epochs(1), seed=seed)
    model, _, _ = _timed(train_translator, de, config)
    table = {}
    for k in BEAM_SIZES:
        for alpha in LENGTH_PENALTIES:
            if k == 1 and alpha > 0:
                continue  # one beam: the penalty cannot change anything
            r = evaluate_translator(model, de, test, beam_size=k, length_penalty=alpha)
            mean_length = sum(map(len, r.hypotheses)) / len(r.hypotheses)
            table[f"{k},{alpha}"] = {"bleu": r.bleu, "accuracy": r.accuracy, "length": mean_length}
    out["decoding"] = table

    # transformers, with and without label smoothing
    for name, epsilon in [("transformer", 0.1), ("transformer_sharp", 0.0)]:
        transformer_config = TransformerConfig(label_smoothing=epsilon, seed=seed)
        transformer_config.epochs = epochs(transformer_config.epochs)
        model, history, seconds = _timed(train_transformer, de, transformer_config)
        result = evaluate_translator(model, de, test)
        beam = evaluate_translator(model, de, test, beam_size=4)
        confidence, correct, gap = token_statistics(model, de, test)
        weights = own_translation_attention(model, de, test, result.hypotheses)
        unit, tens, checked = tens_unit_alignment(weights, de, test, result.hypotheses)
        out[name] = {
            "bleu": result.bleu,
            "accuracy": result.accuracy,
            "beam4_bleu": beam.bleu,
            "beam4_accuracy": beam.accuracy,
            "median_gap": gap.median().item(),
            "mean_confidence": confidence.mean().item(),
            "token_accuracy": correct.float().mean().item(),
            "unit_share": unit,
            "tens_share": tens,
            "inversions_checked": checked,
            "epoch_loss": history.epoch_loss,
            "seconds": seconds,
            "parameters": _parameters(model),
        }
    return out


def _without_nan(value: Any) -> Any:
    """``value`` with every float NaN replaced by None (JSON has no NaN)."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _without_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nan(v) for v in value]
    return value


def load_study() -> dict:
    """The committed results of :func:`main`: ``{"seeds": [...], "runs": [...]}``.

    Example:
        >>> study = load_study()
        >>> study["seeds"]
        [0, 1, 2, 3, 4]
        >>> sorted(study["runs"][0])[:3]
        ['bahdanau', 'decoding', 'french']
    """
    text = resources.files("seqbook.experiments").joinpath(RESULTS).read_text(encoding="utf-8")
    return json.loads(text)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments.translation_study",
        description="Train the attention chapters' translators with several seeds.",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=None, help="default: the package's results")
    parser.add_argument(
        "--smoke", action="store_true", help="a tiny run (small task, short training)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the study and write its JSON file; return what was written."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    # a smoke run: a small task, and a tenth of the sentences to evaluate (beam search over
    # the test split, eighteen times, was most of its time)
    tasks = chapter_tasks(**(dict(num_train=200, num_eval=50) if args.smoke else {}))
    runs = []
    for seed in args.seeds:
        start = time.time()
        runs.append(study_seed(seed, tasks, epochs_scale=0.25 if args.smoke else 1.0))
        print(f"seed {seed}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    study = {
        "seeds": list(args.seeds),
        "torch": torch.__version__,
        "threads": args.threads,
        "smoke": args.smoke,
        "runs": runs,
    }
    out = args.out
    if out is None:
        out = Path(str(resources.files("seqbook.experiments").joinpath(RESULTS)))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_without_nan(study), indent=1) + "\n", encoding="utf-8")
    record(out, "seqbook.experiments.translation_study", argv, threads=args.threads)
    return study


if __name__ == "__main__":  # pragma: no cover
    main()
