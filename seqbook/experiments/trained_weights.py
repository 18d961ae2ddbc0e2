r"""Trained networks that the LSTM and GRU chapters load instead of training them live.

* The value-stream study's seed 0 (LSTM chapter): the 1997 LSTM with input-gate bias
  :math:`-2` and the LSTM with forget gate, each trained by
  :func:`~seqbook.experiments.value_stream_run` as its seed-0 row of the committed
  table ``value_stream.csv``. The chapter plots their cell states and cuts their
  weights; it recomputes their errors, which must give the table's row.
* The GRU chapter's character language models from seeds 1 to 5
  (:func:`train_gru_lm`, the recipe by which the chapter trains seed 0 live). The
  corpus is the standard library of the Python that runs the script, so the file
  records a digest of the training text: on another text :func:`load_gru_lms` returns
  ``None`` and the chapter trains them itself.

The file ``seqbook/experiments/results/trained_weights.pt`` was made with::

    python -m seqbook.experiments.trained_weights --threads 1

(about 20 seconds of CPU time on one core). ``--smoke`` trains a few steps, as a test
that the script works; without ``--out`` it never writes over the committed file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from seqbook.experiments._common import one_thread
from seqbook.experiments.layers import LayerSpec, recurrent_layer
from seqbook.experiments.lm_checkpoints import text_digest
from seqbook.experiments.results import RESULTS_DIR, _checkpoint_options
from seqbook.experiments.value_stream import (
    EVAL_SEED,
    StepRegressor,
    ValueStreamTask,
    rmse,
    value_stream_run,
)
from seqbook.language_model.data import CharCorpus, char_corpus, random_windows
from seqbook.language_model.evaluate import lm_loss
from seqbook.language_model.recurrent import RecurrentLM
from seqbook.provenance import record
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = ["GRU_LM_SEEDS", "RESULTS", "STREAM_SEED_0", "StreamErrors", "load_gru_lms",
           "load_value_stream_models", "main", "stream_errors", "train_gru_lm"]

#: The committed file.
RESULTS = RESULTS_DIR / "trained_weights.pt"
#: The value-stream networks whose seed 0 is saved (the LSTM chapter's two).
STREAM_SEED_0 = (LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0),
                 LayerSpec("lstm"))
#: The seeds of the GRU chapter's saved language models (seed 0 is trained live).
GRU_LM_SEEDS = (1, 2, 3, 4, 5)
#: The GRU chapter's language model: units, embedding size, epochs of 50 steps.
GRU_LM_HIDDEN, GRU_LM_EMBEDDING, GRU_LM_EPOCHS = 64, 32, 4


def train_gru_lm(corpus: CharCorpus, seed: int, epochs: int = GRU_LM_EPOCHS) -> RecurrentLM:
    """The GRU chapter's character language model from ``seed``: 50 random windows an
    epoch (drawn from ``seed + 1``), Adam at 0.01, gradient norm clipped at 1."""
    seed_everything(seed)
    model = RecurrentLM(corpus.vocab_size, hidden_size=GRU_LM_HIDDEN,
                        embedding_dim=GRU_LM_EMBEDDING, cell="gru")
    generator = seeded_generator(seed + 1)
    fit(model, lm_loss,
        lambda: [random_windows(corpus.train_ids, generator) for _ in range(50)],
        torch.optim.Adam(model.parameters(), lr=0.01), epochs=epochs, clip=1.0,
        progress=False)
    return model.eval()


def _stream_model(spec: LayerSpec, hidden_size: int = 32) -> StepRegressor:
    return StepRegressor(recurrent_layer(spec, ValueStreamTask().input_size, hidden_size),
                         hidden_size)


class StreamErrors(NamedTuple):
    """The three errors of :func:`~seqbook.experiments.value_stream_run`."""

    rmse_episodes: float  # one episode per stream, from a reset state
    rmse_train_length: float  # continual streams of the training length
    rmse_long: float  # continual streams of long_length steps


def stream_errors(model: StepRegressor, train_length: int = 120, long_length: int = 2400,
                  eval_size: int = 50) -> StreamErrors:
    """A trained value-stream network's errors, measured as
    :func:`~seqbook.experiments.value_stream_run` measures them (the same streams)."""
    task = ValueStreamTask(train_length)
    episodes = ValueStreamTask(task.max_gap + 1, continual=False)
    with one_thread():
        return StreamErrors(*(rmse(model, *problem(eval_size, seeded_generator(EVAL_SEED)))
                              for problem in (episodes, task, ValueStreamTask(long_length))))


def load_value_stream_models(path: str | Path = RESULTS) -> dict[str, StepRegressor]:
    """The saved seed-0 value-stream networks by label, in evaluation mode.

    Example:
        >>> sorted(load_value_stream_models())
        ['LSTM', 'LSTM 1997, b_i = -2']
    """
    saved = torch.load(Path(path), weights_only=True)
    models = {}
    for spec in STREAM_SEED_0:
        model = _stream_model(spec)
        model.load_state_dict(saved["value_stream"][spec.label])
        models[spec.label] = model.eval()
    return models


def load_gru_lms(corpus: CharCorpus, path: str | Path = RESULTS
                 ) -> dict[int, RecurrentLM] | None:
    """The saved GRU language models by seed, in evaluation mode; ``None`` where
    ``corpus`` is not the text they were trained on (another Python's standard
    library)."""
    saved = torch.load(Path(path), weights_only=True)
    if saved["text_digest"] != text_digest(corpus):
        return None
    models = {}
    for seed, state in saved["gru_lms"].items():
        model = RecurrentLM(corpus.vocab_size, hidden_size=GRU_LM_HIDDEN,
                            embedding_dim=GRU_LM_EMBEDDING, cell="gru")
        model.load_state_dict(state)
        models[int(seed)] = model.eval()
    return models


def main(argv: Sequence[str] | None = None) -> Path:
    """Train the networks and write the file; returns its path."""
    args = _checkpoint_options(argv, "seqbook.experiments.trained_weights",
                               "Networks the LSTM and GRU chapters load.", RESULTS,
                               "a few steps each, a test")
    torch.set_flush_denormal(True)  # as the table's runs
    start = time.process_time()
    options = dict(steps=2, train_length=30, long_length=60, eval_size=4) if args.smoke else {}
    streams = {}
    for spec in STREAM_SEED_0:
        row, model = value_stream_run(spec, seed=0, **options)
        streams[spec.label] = model.state_dict()
        print(f"{spec.label}: rmse_long {row.rmse_long:.6g}")
    corpus = char_corpus()
    lms = {str(seed): train_gru_lm(corpus, seed, epochs=1 if args.smoke else GRU_LM_EPOCHS
                                   ).state_dict() for seed in GRU_LM_SEEDS}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"value_stream": streams, "gru_lms": lms, "text_digest": text_digest(corpus)},
               args.out)
    record(args.out, "seqbook.experiments.trained_weights", argv,
           threads=torch.get_num_threads())
    print(f"wrote {args.out} ({time.process_time() - start:.1f} CPU s)")
    return args.out


if __name__ == "__main__":
    main()
