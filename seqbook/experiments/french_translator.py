r"""The English-to-French attention translator of the sequence-to-sequence chapter.

The chapter "Sequence to sequence" closes with a second language pair: the same
Bahdanau model and the same training (:func:`~seqbook.seq2seq.train_translator`, two
epochs on 3,000 balanced number pairs, seed 0) on English to French. Its later cells
(the BLEU and exact match, an alignment, how often "dix" looks at the English unit)
only need the trained model, and training it takes longer than the rest of the
chapter's French section, so it is trained here, offline, and saved with its per-step
losses and CPU seconds in ``seqbook/experiments/results/french_translator.pt``, which
the chapter loads (:func:`load_french_translator`). It is seed 0 of the translation
study (``python -m seqbook.experiments.translation_study``), which trains it the same
way. The chapter reruns its first steps live, with :func:`first_steps`, and compares
their losses with the checkpoint's. The checkpoint was made with::

    python -m seqbook.experiments.french_translator --threads 1

(about 8 seconds of CPU time on one core). ``--smoke`` trains a tiny model on a tiny
task, as a test that the script works; without ``--out`` it never writes over the
committed file.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import torch

from seqbook.experiments.results import RESULTS_DIR, _checkpoint_options
from seqbook.provenance import record
from seqbook.seq2seq import (
    EncoderDecoder,
    TranslationTask,
    TranslatorConfig,
    build_translator,
    number_translation_task,
    train_translator,
)
from seqbook.train import fit

__all__ = ["CONFIG", "RESULTS", "first_steps", "french_task", "load_french_translator",
           "main"]

#: The committed checkpoint.
RESULTS = RESULTS_DIR / "french_translator.pt"
#: The chapter's attention model and training (seed 0).
CONFIG = TranslatorConfig(attention=True, epochs=2, hidden_size=64)


def french_task(num_train: int = 3000, max_number: int = 999_999, num_eval: int = 500
                ) -> TranslationTask:
    """The chapter's English-to-French task (the study's, with its defaults)."""
    return number_translation_task("fr", max_number=max_number, num_train=num_train,
                                   num_valid=num_eval, num_test=num_eval, balanced=True)


def first_steps(task: TranslationTask, config: TranslatorConfig, steps: int) -> list[float]:
    """The losses of the first ``steps`` training steps of
    :func:`~seqbook.seq2seq.train_translator`: the same model, optimizer and batches,
    stopped early."""
    model = build_translator(task, config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    epoch = task.epochs(task.splits.train, config.batch_size, seed=config.seed)()
    history = fit(model, lambda m, b: m.loss(b), list(islice(epoch, steps)), optimizer,
                  1, config.clip, progress=False)
    return history.step_loss


def load_french_translator(task: TranslationTask, path: str | Path = RESULTS
                           ) -> tuple[EncoderDecoder, dict[str, Any]]:
    """The trained model of the checkpoint, in evaluation mode, and its record of
    training (``step_loss``, ``epoch_loss``, ``cpu_seconds``); ``task`` is
    :func:`french_task`'s, whose vocabularies the model was built for."""
    saved = torch.load(Path(path), weights_only=True)
    model = build_translator(task, TranslatorConfig(**saved["config"]))
    model.load_state_dict(saved["state"])
    model.eval()
    return model, saved["training"]


def main(argv: Sequence[str] | None = None) -> Path:
    """Train the model and write the checkpoint; returns its path."""
    args = _checkpoint_options(argv, "seqbook.experiments.french_translator",
                               "The seq2seq chapter's French model.", RESULTS,
                               "a tiny task and model, a test")
    config = CONFIG
    if args.smoke:
        task = french_task(num_train=64, max_number=999, num_eval=8)
        config = TranslatorConfig(attention=True, epochs=1, hidden_size=8, embed_size=8)
    else:
        task = french_task()
    start = time.thread_time()
    model, history = train_translator(task, config, progress=False)
    training = {"step_loss": history.step_loss, "epoch_loss": history.epoch_loss,
                "cpu_seconds": time.thread_time() - start}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state": model.state_dict(), "training": training,
                "config": dataclasses.asdict(config)}, args.out)
    record(args.out, "seqbook.experiments.french_translator", argv,
           threads=torch.get_num_threads())
    print(f"{training['cpu_seconds']:.1f} CPU s, final loss {history.step_loss[-1]:.4f}")
    return args.out


if __name__ == "__main__":
    main()
