r"""The trained LSTM and transformer of the language-model chapter, as a checkpoint.

The chapter "A decoder-only transformer language model" compares an LSTM language
model and a transformer of the same size trained for the same CPU time: the LSTM for
400 steps at a learning rate of 0.01, the transformer for 220 at 0.003, both on the
same random windows of the character-level Python corpus (32 windows of 32
characters per step, Adam, gradient norm clipped at 1). Training both takes longer
than the chapter's other cells together, and every later cell (the samples, the
sampling counts, the key-value cache) only needs the trained models, so they are
trained here, offline, with :func:`train_pair`, and saved with their per-step losses
and CPU seconds in ``seqbook/experiments/results/lm_checkpoints.pt``, which the chapter
loads (:func:`load_lm_checkpoints`). The corpus is the standard library of the Python
that runs the script, so the checkpoint records a digest of its training text: on
another text it does not load, and the chapter trains the models itself. The chapter
reruns the first steps of both trainings live, with the same :func:`train_pair`, and
compares their losses with the checkpoint's. These are seed 0 at one unit of budget of
the comparison table (``python -m seqbook.language_model.compare``), which trains the
same way. The checkpoint was made with::

    python -m seqbook.experiments.lm_checkpoints --threads 1

(about 15 seconds of CPU time on one core). ``--smoke`` trains a few steps, as a test
that the script works; without ``--out`` it never writes over the committed file.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqbook.experiments.results import RESULTS_DIR, _checkpoint_options
from seqbook.language_model.data import CharCorpus, char_corpus, random_windows
from seqbook.language_model.evaluate import lm_loss
from seqbook.language_model.model import TransformerLM
from seqbook.language_model.recurrent import RecurrentLM
from seqbook.provenance import record
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = ["RECIPE", "RESULTS", "build_pair", "load_lm_checkpoints", "main", "text_digest",
           "train_pair"]

#: The committed checkpoint.
RESULTS = RESULTS_DIR / "lm_checkpoints.pt"
#: Each model's training steps and learning rate: the same CPU time for both.
RECIPE = {"LSTM": (400, 0.01), "transformer": (220, 0.003)}
#: Steps per epoch of :func:`~seqbook.train.fit` (the epochs only group the steps).
STEPS_PER_EPOCH = 20


def text_digest(corpus: CharCorpus) -> str:
    """A digest of the corpus' training text, which the models' training depends on."""
    return hashlib.sha256(corpus.train_text.encode("utf-8")).hexdigest()


def build_pair(vocab_size: int, seed: int = 0) -> dict[str, nn.Module]:
    """The chapter's two untrained models, each initialised from ``seed``."""
    seed_everything(seed)
    lstm = RecurrentLM(vocab_size, hidden_size=128, embedding_dim=32)
    seed_everything(seed)
    return {"LSTM": lstm, "transformer": TransformerLM(vocab_size)}


def train_pair(models: dict[str, nn.Module], train_ids: torch.Tensor,
               steps: dict[str, int] | None = None, seed: int = 0) -> dict[str, Any]:
    """Train each model on the same windows (drawn from ``seed + 1``) for its steps.

    ``steps`` defaults to the :data:`RECIPE`'s (a multiple of 20 each). Returns, per
    model, ``{"step_loss": [...], "cpu_seconds": ...}`` (the CPU time of this thread).
    """
    out: dict[str, Any] = {}
    for name, model in models.items():
        n_steps, lr = RECIPE[name]
        n_steps = n_steps if steps is None else steps[name]
        generator = seeded_generator(seed + 1)  # the windows: the same for both

        def batches(g: torch.Generator = generator) -> list[Any]:
            return [random_windows(train_ids, g) for _ in range(STEPS_PER_EPOCH)]

        start = time.thread_time()
        history = fit(model, lm_loss, batches,
                      torch.optim.Adam(model.parameters(), lr=lr),
                      epochs=n_steps // STEPS_PER_EPOCH, clip=1.0, progress=False)
        out[name] = {"step_loss": history.step_loss,
                     "cpu_seconds": time.thread_time() - start}
        model.eval()
    return out


def load_lm_checkpoints(corpus: CharCorpus, path: str | Path = RESULTS
                        ) -> tuple[dict[str, nn.Module], dict[str, Any]] | None:
    """The trained models of the checkpoint and its record of their training
    (per model: ``step_loss``, ``cpu_seconds``), the models in evaluation mode;
    ``None`` where ``corpus`` is not the text they were trained on (another Python's
    standard library)."""
    saved = torch.load(Path(path), weights_only=True)
    if saved["text_digest"] != text_digest(corpus):
        return None
    models = build_pair(corpus.vocab_size)
    for name, model in models.items():
        model.load_state_dict(saved["state"][name])
        model.eval()
    return models, saved["training"]


def main(argv: Sequence[str] | None = None) -> Path:
    """Train both models and write the checkpoint; returns its path."""
    args = _checkpoint_options(argv, "seqbook.experiments.lm_checkpoints",
                               "The language-model chapter's trained models.", RESULTS,
                               "20 steps each, a test")
    corpus = char_corpus()
    models = build_pair(corpus.vocab_size)
    steps = {name: STEPS_PER_EPOCH for name in RECIPE} if args.smoke else None
    training = train_pair(models, corpus.train_ids, steps)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state": {name: m.state_dict() for name, m in models.items()},
                "training": training, "text_digest": text_digest(corpus)}, args.out)
    record(args.out, "seqbook.experiments.lm_checkpoints", argv,
           threads=torch.get_num_threads())
    print({name: f"{t['cpu_seconds']:.1f} CPU s, final loss {t['step_loss'][-1]:.3f}"
           for name, t in training.items()})
    return args.out


if __name__ == "__main__":  # pragma: no cover
    main()
