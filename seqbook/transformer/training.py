"""Build and train a transformer translator on a :class:`~seqbook.seq2seq.TranslationTask`.

The task, its batches and the evaluation (:func:`seqbook.seq2seq.evaluate_translator`)
are those of the recurrent translators, so the models are compared on equal terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_int, check_positive_int, check_real
from seqbook.seq2seq.data import TranslationBatch, TranslationTask
from seqbook.train import History, fit
from seqbook.transformer.model import Transformer
from seqbook.utils import default_device, seed_everything

__all__ = ["TransformerConfig", "build_transformer", "train_transformer", "warmup_lr"]


@dataclass
class TransformerConfig:
    """Sizes and training settings of a transformer translator."""

    d_model: int = 64  # model width
    num_heads: int = 4  # attention heads per sublayer
    num_layers: int = 1  # blocks N_x in the encoder, and in the decoder
    d_ff: int = 128  # hidden width of the feed-forward sublayers
    dropout: float = 0.0  # clean data and short runs: no need (the paper: 0.1)
    norm_first: bool = True  # pre-norm; False: the paper's post-norm
    max_len: int = 64  # longest sequence the positional encoding covers
    label_smoothing: float = 0.1  # epsilon of the loss; 0: plain cross-entropy
    epochs: int = 4
    batch_size: int = 64
    lr: float = 2e-3  # Adam's peak learning rate, after the warm-up
    warmup: int = 100  # optimizer steps of linear warm-up
    clip: float = 1.0  # gradient-norm clipping
    seed: int = 0

    def __post_init__(self) -> None:
        check_real("label_smoothing", self.label_smoothing, min_value=0.0, max_value=1.0)
        check_positive_int("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        check_real("lr", self.lr, min_value=0.0, strict_min=True)
        check_int("warmup", self.warmup, min_value=0)


def warmup_lr(
    step: int,
    lr: float,
    warmup: int,
    total: int,
) -> float:
    r"""Linear warm-up to ``lr`` over ``warmup`` steps, then linear decay to 0 at ``total``.

    .. math::
        \eta_s = \eta \min\!\left(\frac{s}{w}, \frac{S - s}{S - w}\right)

    for steps :math:`s = 1, \dots, S`. (The paper warms up linearly and then decays as
    :math:`s^{-1/2}`; this schedule decays linearly instead, so that a short run ends at
    a learning rate of zero with no extra constant to choose. The book does not compare
    the two schedules.)

    Example:
        >>> [round(warmup_lr(s, 1.0, 2, 6), 2) for s in range(1, 7)]
        [0.5, 1.0, 0.75, 0.5, 0.25, 0.0]
    """
    check_positive_int("step", step), check_positive_int("total", total)
    check_real("lr", lr, min_value=0.0, strict_min=True), check_int("warmup", warmup, min_value=0)
    if step <= warmup:
        return lr * step / warmup
    return lr * max(0.0, (total - step) / max(total - warmup, 1))


def build_transformer(
    task: TranslationTask, config: TransformerConfig
) -> Transformer:
    """A seeded, untrained :class:`Transformer` sized for ``task``.

    Example:
        >>> from seqbook.seq2seq import number_translation_task
        >>> task = number_translation_task("de", max_number=99, num_valid=5, num_test=5)
        >>> model = build_transformer(task, TransformerConfig(d_model=16, d_ff=32))
        >>> model.output.out_features == len(task.tgt_vocab)
        True
    """
    seed_everything(config.seed)
    v = task.tgt_vocab
    if (task.src_vocab.pad_id, task.src_vocab.eos_id) != (v.pad_id, v.eos_id):
        raise ValueError("source and target vocabularies must share <pad> and <eos> ids")
    return Transformer(
        len(task.src_vocab),
        len(v),
        config.d_model,
        config.num_heads,
        config.num_layers,
        config.d_ff,
        config.dropout,
        config.norm_first,
        config.max_len,
        v.pad_id,
        v.bos_id,
        v.eos_id,
    )


def train_transformer(
    task: TranslationTask,
    config: TransformerConfig,
    device: torch.device | str | None = None,
    progress: bool = True,
) -> tuple[Transformer, History]:
    """Build a transformer and train it with teacher forcing on ``task``'s training split.

    Adam (:math:`\\beta_2 = 0.98`, as in the paper), the learning rate of
    :func:`warmup_lr` set before every step, gradient clipping, label smoothing
    ``config.label_smoothing``, freshly shuffled (seeded) batches each epoch, through
    :func:`seqbook.train.fit`.

    Returns:
        The trained model (in eval mode) and the training :class:`~seqbook.train.History`.
    """
    model = build_transformer(task, config)
    device = default_device() if device is None else device
    model.to(device)
    epochs, epsilon = config.epochs, config.label_smoothing  # checked by the config
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, 0.98))
    batches = task.epochs(task.splits.train, config.batch_size, seed=config.seed)
    per_epoch = -(-len(task.splits.train) // config.batch_size)
    total = epochs * per_epoch
    steps = iter(range(1, total + 1))

    def loss_fn(m: Transformer, batch: TranslationBatch) -> Float[Tensor, ""]:
        lr = warmup_lr(next(steps), config.lr, config.warmup, total)
        for group in optimizer.param_groups:  # the step that follows uses this lr
            group["lr"] = lr
        return m.loss(batch, epsilon)

    history = fit(
        model, loss_fn, batches, optimizer, epochs, config.clip,
        device=device, progress=progress, desc="transformer",
    )
    model.eval()
    return model, history
