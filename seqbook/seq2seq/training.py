"""Build, train and evaluate a number translator in a few lines (both chapters use it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from seqbook._checks import check_device, check_positive_int, check_real
from seqbook.data import NumberPair
from seqbook.metrics import corpus_bleu
from seqbook.seq2seq.bahdanau import BahdanauDecoder
from seqbook.seq2seq.data import TranslationTask, _check_pairs
from seqbook.seq2seq.decoder import Seq2SeqDecoder
from seqbook.seq2seq.encoder import Seq2SeqEncoder
from seqbook.seq2seq.model import EncoderDecoder
from seqbook.train import History, fit
from seqbook.utils import default_device, seed_everything

__all__ = [
    "TranslatorConfig",
    "Translations",
    "build_translator",
    "evaluate_translator",
    "train_translator",
]


@dataclass
class TranslatorConfig:
    """Sizes and training settings of a number translator."""

    attention: bool = True  # Bahdanau decoder; False: one fixed context vector
    embed_size: int = 32  # source and target embeddings
    hidden_size: int = 64  # per encoder direction (bidirectional) and decoder
    dropout: float = 0.0  # on the embeddings
    epochs: int = 8
    batch_size: int = 64
    lr: float = 5e-3  # Adam
    clip: float = 1.0  # gradient-norm clipping
    seed: int = 0

    def __post_init__(self) -> None:
        check_positive_int("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        check_real("lr", self.lr, min_value=0.0, strict_min=True)


def build_translator(task: TranslationTask, config: TranslatorConfig) -> EncoderDecoder:
    """A seeded, untrained :class:`EncoderDecoder` sized for ``task``.

    Example:
        >>> from seqbook.seq2seq import number_translation_task
        >>> task = number_translation_task("de", max_number=99, num_valid=5, num_test=5)
        >>> model = build_translator(task, TranslatorConfig(hidden_size=8))
        >>> model.uses_attention, model.encoder.output_size
        (True, 16)
    """
    seed_everything(config.seed)
    # the encoder checks embed_size, hidden_size and dropout
    E, H = config.embed_size, config.hidden_size
    encoder = Seq2SeqEncoder(len(task.src_vocab), E, H, bidirectional=True, dropout=config.dropout)
    D = encoder.output_size
    decoder: Seq2SeqDecoder | BahdanauDecoder
    if config.attention:
        decoder = BahdanauDecoder(len(task.tgt_vocab), E, H, D, dropout=config.dropout)
    else:
        decoder = Seq2SeqDecoder(len(task.tgt_vocab), E, H, D, dropout=config.dropout)
    v = task.tgt_vocab
    return EncoderDecoder(encoder, decoder, v.pad_id, v.bos_id, v.eos_id)


def train_translator(
    task: TranslationTask,
    config: TranslatorConfig,
    device: torch.device | str | None = None,
    progress: bool = True,
) -> tuple[EncoderDecoder, History]:
    """Build a translator and train it with teacher forcing on ``task``'s training split.

    Adam, gradient clipping, freshly shuffled (seeded) batches each epoch, through
    :func:`seqbook.train.fit`.

    Returns:
        The trained model (in eval mode) and the training :class:`~seqbook.train.History`.
    """
    device = check_device("device", device)
    model = build_translator(task, config)
    device = default_device() if device is None else device
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    batches = task.epochs(task.splits.train, config.batch_size, seed=config.seed)
    kind = "attention" if config.attention else "fixed context"
    history = fit(
        model, lambda m, b: m.loss(b), batches, optimizer, config.epochs, config.clip,
        device=device, progress=progress, desc=kind,
    )
    model.eval()
    return model, history


@dataclass
class Translations:
    """Hypotheses and references of a test set, as target tokens, and their scores."""

    hypotheses: list[list[str]]
    references: list[list[str]]
    bleu: float  # corpus BLEU-4 over target tokens, in [0, 1]
    accuracy: float  # share of exactly right translations

    def correct(self) -> list[bool]:
        return [h == r for h, r in zip(self.hypotheses, self.references)]


def evaluate_translator(
    model: nn.Module,
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    beam_size: int = 1,
    length_penalty: float = 0.0,
    max_len: int | None = None,
    batch_size: int = 1000,
) -> Translations:
    """Translate ``pairs`` (batched) and score them: corpus BLEU and exact matches.

    Args:
        max_len: the most target tokens to generate; default: the longest training
            target plus 5.
        batch_size: sentences decoded at once.
    """
    generate = getattr(model, "generate", None)
    if not (isinstance(model, nn.Module) and callable(generate)):
        raise TypeError(f"model must be a translator with a generate method (EncoderDecoder, "
                        f"Transformer), got {type(model).__name__}")
    _check_pairs("pairs", pairs), check_positive_int("batch_size", batch_size)
    if max_len is None:
        max_len = max(len(task.encode(p)[1]) for p in task.splits.train) + 5
    device = next(model.parameters()).device
    hypotheses: list[list[str]] = []
    for start in range(0, len(pairs), batch_size):
        batch = task.batch(pairs[start : start + batch_size])
        out = generate(
            batch.src.to(device), batch.src_lengths.to(device), max_len, beam_size, length_penalty
        )
        hypotheses += [task.tgt_vocab.decode(ids) for ids in out.tokens]
    references = [task.target_tokens_of(p.target) for p in pairs]
    bleu = corpus_bleu(hypotheses, [[r] for r in references])
    accuracy = sum(h == r for h, r in zip(hypotheses, references)) / len(pairs)
    return Translations(hypotheses, references, bleu, accuracy)
