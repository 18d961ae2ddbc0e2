r"""Measurements on the number-translation task shared by the attention chapters.

Where does the first German word of a number come from? German says the unit of a
tens-unit pair before the tens ("vierunddreißig", *four-and-thirty*), so the first
German number word does not always translate the first English word.
:func:`first_word_source_index` finds the English word it translates, which the
chapters on sequences and on sequence-to-sequence models use to measure how far a
translator must read ahead before it can write.

The other functions measure trained translators, the same way in the chapters on
sequence-to-sequence models, decoding and transformers and in the several-seed study
of :mod:`seqbook.experiments.translation_study`: accuracy by source length
(:func:`accuracy_by_length`), where attention looks across the German unit-tens
inversion (:func:`own_translation_attention`, :func:`tens_unit_alignment`) and the
French "dix-sept" (:func:`french_dix_alignment`), how confident a model is
(:func:`token_statistics`), and how much better it predicts the next token from the
reference prefix than from its own (:func:`teacher_forcing_gap`).

Shape letters: ``B`` pairs, ``h`` heads, ``T_y`` target and ``T_x`` source positions,
``N`` real target tokens, ``V`` the target vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import torch
from jaxtyping import Bool, Float, Shaped
from torch import Tensor, nn

from seqbook._checks import check_int, check_sequence
from seqbook.data import NumberPair, spell_number, tokenize
from seqbook.seq2seq import TranslationTask
from seqbook.utils import to_device

__all__ = [
    "LENGTH_BINS",
    "TeacherForcingGap",
    "accuracy_by_length",
    "first_word_source_index",
    "free_running_right",
    "french_dix_alignment",
    "german_number_words",
    "own_translation_attention",
    "teacher_forced_right",
    "teacher_forcing_gap",
    "tens_unit_alignment",
    "token_statistics",
]


@lru_cache(maxsize=1)
def german_number_words() -> dict[str, str]:
    """English number words and the German words that start their translations.

    The atoms of English number names (``zero`` to ``nineteen``, the tens, ``hundred``
    and ``thousand``) mapped to German as ``num2words`` writes them, except that
    ``one`` maps to ``ein``: the form that begins "einhundert", "eintausend" and
    "einundzwanzig" (and "eins").

    Example:
        >>> words = german_number_words()
        >>> words["four"], words["thirty"], words["one"], words["thousand"]
        ('vier', 'dreißig', 'ein', 'tausend')
    """
    atoms = [*range(20), *range(20, 100, 10)]
    words = {spell_number(n, "en"): spell_number(n, "de") for n in atoms}
    words["one"] = "ein"
    words["hundred"], words["thousand"] = "hundert", "tausend"
    return words


def _check_pairs(pairs: Any, non_empty: bool = False, **per_pair: Any) -> None:
    """``pairs`` a sequence of :class:`~seqbook.data.NumberPair`, and each of
    ``per_pair`` a sequence with one entry per pair."""
    check_sequence("pairs", pairs, what="a list of NumberPair", of=NumberPair,
                   non_empty=non_empty)
    for name, values in per_pair.items():
        check_sequence(name, values, what="a sequence with one entry per pair")
        if len(values) != len(pairs):
            raise ValueError(f"{name} must hold B = {len(pairs)} items (as in pairs), "
                             f"got {len(values)}")


def first_word_source_index(number: int) -> int:
    r"""The index of the English word that the German number's first word translates.

    English is cut into word tokens as by :func:`seqbook.data.tokenize` (hyphens and
    commas are tokens of their own). Among the English number words whose German
    translation (:func:`german_number_words`) begins the German number, the longest
    translation wins ("vierzehn" for *fourteen* over "vier" for *four*), then the
    earliest word.

    Args:
        number: an integer in ``[0, 999_999]``, the range of the book's translation
            task.

    Returns:
        A 0-based index into ``tokenize(spell_number(number, "en"), "word")``.

    Example:
        >>> first_word_source_index(345)       # three hundred and forty - five
        0
        >>> first_word_source_index(34)        # thirty - four: "vier..." is word 2
        2
        >>> first_word_source_index(45_678)    # forty - five thousand, ...
        2
    """
    check_int("number", number, min_value=0, max_value=999_999)
    english = tokenize(spell_number(number, "en"), "word")
    german = spell_number(number, "de")
    words = german_number_words()
    matches = [
        (len(words[token]), -index)
        for index, token in enumerate(english)
        if token in words and german.startswith(words[token])
    ]
    if not matches:  # pragma: no cover - every number in range has one (tested)
        raise ValueError(f"no English word of {number} begins its German translation")
    _, negative_index = max(matches)
    return -negative_index


# --------------------------------------------------------------------------------------
# Measuring trained translators (shared by the seq2seq, decoding and transformer pages)
# --------------------------------------------------------------------------------------

#: English source lengths (in word tokens) by which the chapters break accuracy down.
LENGTH_BINS: tuple[tuple[int, int], ...] = ((1, 4), (5, 7), (8, 9), (10, 11), (12, 14))


def accuracy_by_length(
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    correct: Sequence[bool],
    bins: Sequence[tuple[int, int]] = LENGTH_BINS,
) -> list[float]:
    """The share of correct translations among the sources of each length bin.

    Args:
        task: the translation task (its source tokenizer measures the length).
        pairs: the translated pairs.
        correct: one bool per pair.
        bins: inclusive ``(shortest, longest)`` source lengths, in word tokens.

    Returns:
        One share per bin (NaN for a bin without sources).

    Example:
        >>> from seqbook.seq2seq import number_translation_task
        >>> task = number_translation_task("de", max_number=99, num_valid=5, num_test=5)
        >>> pairs = [p for p in task.splits.test]
        >>> accuracy_by_length(task, pairs, [True] * len(pairs), bins=[(1, 3)])
        [1.0]
    """
    _check_pairs(pairs, correct=correct)
    lengths = [len(task.source_tokens(p.source)) for p in pairs]
    shares = []
    for lo, hi in bins:
        inside = [c for c, n in zip(correct, lengths) if lo <= n <= hi]
        shares.append(sum(inside) / len(inside) if inside else math.nan)
    return shares


def _peaks(weights: Tensor, row: int) -> Tensor:
    """The key each head attends most to from ``row``: shape ``(h,)`` or ``(1,)``."""
    w = weights if weights.dim() == 3 else weights.unsqueeze(0)  # (h, T_y, T_x)
    return w[:, row].argmax(-1)


def tens_unit_alignment(
    weights: Shaped[Tensor, "B T_y T_x"] | Shaped[Tensor, "B h T_y T_x"],
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    hypotheses: Sequence[Sequence[str]],
) -> tuple[float, float, int]:
    """How often a German translator's attention follows the unit-tens inversion.

    For every pair whose number ends in a tens-unit pair (``34``: "... thirty - four",
    "...vierunddreißig") and whose translation is right, look at the attention from the
    German unit piece ("vier") and from the tens piece ("dreißig"): does it peak on the
    English unit word ("four") and tens word ("thirty")? With several heads, one head
    peaking there is enough.

    Args:
        weights: teacher-forced attention of the model's own translations,
            ``(B, T_y, T_x)`` (one attention) or ``(B, h, T_y, T_x)`` (heads); row
            ``i`` is the attention while predicting target piece ``i``.
        task: a German :class:`~seqbook.seq2seq.TranslationTask` with pieces.
        pairs, hypotheses: the ``B`` pairs and the model's translations (pieces).

    Returns:
        ``(unit share, tens share, number of pairs checked)``.
    """
    _check_pairs(pairs, hypotheses=hypotheses)
    _check_rows(weights, pairs)
    unit_ok = tens_ok = checked = 0
    for b, (pair, hypothesis) in enumerate(zip(pairs, hypotheses)):
        if not (pair.number % 100 > 20 and pair.number % 10):
            continue  # only numbers ending in a tens-unit pair, e.g. 34
        if task.join_target(hypothesis) != pair.target:
            continue  # and only right translations
        words = task.source_tokens(pair.source)  # ..., thirty, -, four
        unit_row = len(hypothesis) - 3  # ..., vier, und, dreißig
        checked += 1
        unit_ok += bool((_peaks(weights[b], unit_row) == len(words) - 1).any())
        tens_ok += bool((_peaks(weights[b], unit_row + 2) == len(words) - 3).any())
    if checked == 0:
        return math.nan, math.nan, 0
    return unit_ok / checked, tens_ok / checked, checked


def french_dix_alignment(
    weights: Shaped[Tensor, "B T_y T_x"],
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    hypotheses: Sequence[Sequence[str]],
) -> tuple[float, int]:
    """How often a French translator's "dix" attends to the English unit word.

    French says 77 as "soixante-dix-sept" and 97 as "quatre-vingt-dix-sept": sixty
    (or four-twenty) plus *dix-sept*, seventeen. For every right translation of a
    number ending in 77-79 or 97-99 (the endings written with "dix-"), does the
    attention from the word "dix" peak on the English unit word ("seven" of
    "seventy - seven"), not on the tens word?

    Args:
        weights: ``(B, T_y, T_x)`` teacher-forced attention of the model's own
            translations (word tokens, the hyphen a token of its own).
        task: an English-to-French :class:`~seqbook.seq2seq.TranslationTask`.
        pairs, hypotheses: the ``B`` pairs and the model's translations.

    Returns:
        ``(share, number of pairs checked)``.
    """
    _check_pairs(pairs, hypotheses=hypotheses)
    _check_rows(weights, pairs)
    ok = checked = 0
    for b, (pair, hypothesis) in enumerate(zip(pairs, hypotheses)):
        if pair.number % 100 not in (77, 78, 79, 97, 98, 99):
            continue
        if task.join_target(hypothesis) != pair.target:
            continue
        dix_row = len(hypothesis) - 3  # ..., dix, -, sept
        checked += 1
        ok += int(weights[b, dix_row].argmax()) == len(task.source_tokens(pair.source)) - 1
    return (ok / checked if checked else math.nan), checked


def _check_rows(weights: Tensor, pairs: Sequence[NumberPair]) -> None:
    if weights.shape[0] != len(pairs):
        raise ValueError(f"weights must have one row per pair ({len(pairs)}), got shape "
                         f"{tuple(weights.shape)}")


def _device_of(model: nn.Module) -> torch.device:
    """Where the model's parameters live (the batches it reads must be there too)."""
    return next(model.parameters()).device


def own_translation_attention(
    model: nn.Module,
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    hypotheses: Sequence[Sequence[str]],
) -> Float[Tensor, "B T_y T_x"] | Float[Tensor, "B h T_y T_x"]:
    """Teacher-forced attention of a translator fed its own translations.

    Feeding a model its own greedy output reproduces the weights it used while
    decoding. Recurrent :class:`~seqbook.seq2seq.EncoderDecoder` models return
    ``(B, T_y, T_x)``; a :class:`~seqbook.transformer.Transformer` returns the
    cross-attention of its first decoder block, ``(B, h, T_y, T_x)``. The batch runs
    on the model's device (a GPU where it was trained there); the weights come back
    on the CPU, for counting and plotting.
    """
    from seqbook.transformer import Transformer

    _check_pairs(pairs, hypotheses=hypotheses)
    batch = task.batch([p._replace(target=task.join_target(h)) for p, h in zip(pairs, hypotheses)])
    batch = to_device(batch, _device_of(model))
    with torch.no_grad():
        output = model(batch.src, batch.src_lengths, batch.tgt_in)
    if isinstance(model, Transformer):
        cross = model.attention_maps()["cross"][0]
        assert cross is not None  # the call above has just set it
        return cross.cpu()  # (B, h, T_y, T_x)
    return output[1].cpu()  # (B, T_y, T_x)


def token_statistics(
    model: nn.Module, task: TranslationTask, pairs: Sequence[NumberPair]
) -> tuple[Float[Tensor, " N"], Bool[Tensor, " N"], Float[Tensor, " N"]]:
    """Confidence, correctness and logit gap of every real target token.

    For the teacher-forced logits :math:`\\mathbf{l}` of every real target position:
    the probability of the top token (the model's confidence), whether the top token
    is the right one, and the gap between the top logit and the mean of the others.

    Returns:
        Three tensors of shape ``(N,)``, ``N`` the number of real target tokens, on
        the CPU (the batch runs on the model's device).
    """
    _check_pairs(pairs)
    batch = to_device(task.batch(pairs), _device_of(model))
    with torch.no_grad():
        logits = model(batch.src, batch.src_lengths, batch.tgt_in)
    if isinstance(logits, tuple):  # a recurrent translator: (logits, weights)
        logits = logits[0]
    z = logits[batch.tgt_mask].cpu()  # (N, V)
    y = batch.tgt_out[batch.tgt_mask].cpu()  # (N,)
    confidence = torch.softmax(z, -1).max(-1).values
    top = z.max(-1).values
    rest = (z.sum(-1) - top) / (z.shape[-1] - 1)
    return confidence, z.argmax(-1) == y, top - rest


class TeacherForcingGap(NamedTuple):
    """One entry per reference token (each target's tokens and its ``<eos>``; ``N``)."""

    teacher_forced: Bool[Tensor, " N"]  # right given the reference prefix
    free_running: Bool[Tensor, " N"]  # right in the model's own translation
    after_first_error: Bool[Tensor, " N"]  # after its translation's first error

    def accuracies(self) -> tuple[float, float]:
        """Teacher-forced and free-running token accuracy, over all ``N`` tokens."""
        return (self.teacher_forced.float().mean().item(),
                self.free_running.float().mean().item())


def teacher_forcing_gap(
    model: nn.Module,
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    hypotheses: Sequence[Sequence[str]],
) -> TeacherForcingGap:
    r"""Next-token accuracy from the reference prefix against the model's own translation.

    For every reference token :math:`y_{bi}` (the target's tokens, then ``<eos>``):
    is the most probable token given the *reference* prefix right (teacher forced,
    the condition the model was trained in),

    .. math:: \arg\max_y P(y \mid y_{b,<i}, \mathbf{x}_b) = y_{bi},

    and is the token at position :math:`i` of the model's own translation right (free
    running: :math:`\hat y_{bi} = y_{bi}`, where each :math:`\hat y_{bi}` was chosen
    given the model's earlier tokens :math:`\hat y_{b,<i}`)? A translation shorter than
    the reference is wrong at the positions it lacks; every hypothesis is taken to
    end with ``<eos>``. Up to and including a translation's first wrong token both
    see the same prefix, so greedy hypotheses agree there; they differ only
    ``after_first_error``.

    Args:
        model: a translator (:class:`~seqbook.seq2seq.EncoderDecoder`,
            :class:`~seqbook.transformer.Transformer`); it runs on its own device.
        task: the translation task.
        pairs: the ``B`` reference pairs.
        hypotheses: the model's translations of them, as target tokens (e.g.
            :class:`~seqbook.seq2seq.Translations` ``.hypotheses``).

    Returns:
        A :class:`TeacherForcingGap` of three ``(N,)`` bool tensors on the CPU, in the
        order of the pairs and, within each, of the positions.

    Example:
        >>> from seqbook.seq2seq import (TranslatorConfig, build_translator,
        ...                              number_translation_task)
        >>> task = number_translation_task("de", max_number=99, num_valid=5,
        ...                                num_test=5)
        >>> model = build_translator(task, TranslatorConfig(hidden_size=8))
        >>> pairs = task.splits.test[:2]
        >>> right = [task.target_tokens_of(p.target) for p in pairs]
        >>> gap = teacher_forcing_gap(model, task, pairs, right)
        >>> bool(gap.free_running.all()), bool(gap.after_first_error.any())
        (True, False)
    """
    _check_pairs(pairs, non_empty=True, hypotheses=hypotheses)
    for h in hypotheses:
        if isinstance(h, str) or not all(isinstance(t, str) for t in h):
            raise TypeError(f"hypotheses must be lists of token strings, got {h!r}")
    teacher = teacher_forced_right(model, task, pairs)
    free, after = free_running_right(task, pairs, hypotheses)
    return TeacherForcingGap(teacher, free, after)


def teacher_forced_right(
    model: nn.Module, task: TranslationTask, pairs: Sequence[NumberPair]
) -> Bool[Tensor, " N"]:
    """Whether the argmax given the reference prefix is the reference token, ``(N,)``."""
    batch = to_device(task.batch(pairs), _device_of(model))
    with torch.no_grad():
        logits = model(batch.src, batch.src_lengths, batch.tgt_in)
    if isinstance(logits, tuple):  # a recurrent translator: (logits, weights)
        logits = logits[0]
    mask = batch.tgt_mask.cpu()
    # (eq-s2s-tf-accuracy)
    return (logits.argmax(-1).cpu() == batch.tgt_out.cpu())[mask]


def free_running_right(
    task: TranslationTask,
    pairs: Sequence[NumberPair],
    hypotheses: Sequence[Sequence[str]],
) -> tuple[Bool[Tensor, " N"], Bool[Tensor, " N"]]:
    """Whether the model's own token is the reference token, ``(N,)``, and whether the
    position comes after the translation's first wrong token, ``(N,)``."""
    eos = task.tgt_vocab.tokens[task.tgt_vocab.eos_id]
    free: list[bool] = []
    after: list[bool] = []
    for pair, hypothesis in zip(pairs, hypotheses):
        reference = [*task.target_tokens_of(pair.target), eos]
        own = [*hypothesis, eos]
        # (eq-s2s-free-accuracy)
        right = [i < len(own) and own[i] == y for i, y in enumerate(reference)]
        first = right.index(False) if False in right else len(right)
        free += right
        after += [i > first for i in range(len(right))]
    return torch.tensor(free), torch.tensor(after)
