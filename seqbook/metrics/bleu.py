r"""BLEU: n-gram precision of a candidate translation against references.

Two definitions live here. :func:`~seqbook.metrics.bleu_d2l` is the variant of the
source slides (and of *Dive into Deep Learning*): one prediction, one label, precisions
weighted by :math:`1/2^n`. :func:`~seqbook.metrics.corpus_bleu` and
:func:`~seqbook.metrics.sentence_bleu` are the standard BLEU of Papineni et al. (2002)
as computed by sacrebleu: clipped n-gram counts summed over the whole corpus, a brevity
penalty against the closest reference length, and the geometric mean of the precisions
of orders 1 to ``max_order``. With ``tokenize="none"`` and the same smoothing,
``100 * corpus_bleu(...)`` equals ``sacrebleu.corpus_bleu(...).score``.

All functions take **pre-tokenized** input: a sentence is a list of tokens (strings,
or any hashable tokens such as ids). Nothing is lower-cased or re-tokenized.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from seqbook._checks import check_choice, check_positive_int, check_real, check_sequence
from seqbook.metrics.ngrams import corpus_ngram_statistics

__all__ = [
    "BLEUStatistics",
    "SMOOTH_DEFAULTS",
    "bleu_d2l",
    "bleu_statistics",
    "clipped_matches",
    "corpus_bleu",
    "ngram_counts",
    "sentence_bleu",
]

#: One sentence: a list (or tuple) of hashable tokens, not a str.
Tokens: TypeAlias = Sequence[Hashable]

#: Smoothing methods of Chen & Cherry (2014) and their default values, as in sacrebleu.
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}


def _check_smoothing(smooth: str, smooth_value: float | None) -> None:
    check_choice("smooth", smooth, SMOOTH_DEFAULTS)
    if smooth_value is not None:
        check_real("smooth_value", smooth_value, min_value=0.0)


def _unhashable(token: object) -> bool:
    try:
        hash(token)
    except TypeError:
        return True
    return False


def _check_tokens(name: str, tokens: Any) -> Sequence[Any]:
    if type(tokens) is list or type(tokens) is tuple:  # the fast, common case
        return tokens
    if isinstance(tokens, str):
        raise TypeError(f"{name} must be a list of tokens, got str {tokens!r}; tokenize it "
                        "first, e.g. text.split()")
    return list(check_sequence(name, tokens, what="a list of tokens"))


def _check_sentence(name: str, tokens: Any) -> Sequence[Any]:
    """A list of tokens that can all be counted: a ``TypeError`` names the first that
    cannot (a list, a dict)."""
    tokens = _check_tokens(name, tokens)
    try:
        set(tokens)
    except TypeError:
        bad = next(t for t in tokens if _unhashable(t))
        raise TypeError(f"{name} must hold hashable tokens (str, int, tuple, ...), got {bad!r} "
                        f"({type(bad).__name__})") from None
    return tokens


def _check_pair(pred_tokens: object, label_tokens: object, order: str, n: int) -> None:
    """A prediction and a label (lists of hashable tokens) and an n-gram order ``n`` >= 1
    (the argument ``order``)."""
    _check_sentence("pred_tokens", pred_tokens), _check_sentence("label_tokens", label_tokens)
    check_positive_int(order, n)


def ngram_counts(tokens: Tokens, n: int) -> Counter:
    """Count the n-grams of one sentence (unigrams are the tokens themselves).

    Example:
        >>> ngram_counts("A B B C".split(), 2)
        Counter({('A', 'B'): 1, ('B', 'B'): 1, ('B', 'C'): 1})
    """
    tokens = _check_tokens("tokens", tokens)
    check_positive_int("n", n)
    try:
        if n == 1:
            return Counter(tokens)
        return Counter(zip(*[tokens[i:] for i in range(n)]))  # C-level, no Python loop
    except TypeError:  # an unhashable token: say which
        _check_sentence("tokens", tokens)
        raise


def clipped_matches(pred_tokens: Tokens, label_tokens: Tokens, n: int) -> int:
    """The numerator of :math:`p_n` in :func:`~seqbook.metrics.bleu_d2l`: the predicted
    n-grams found in the label, each counted at most as often as it occurs there.

    Example:
        >>> clipped_matches("A B B C D".split(), "A B C D E F".split(), 1)
        4
    """
    _check_pair(pred_tokens, label_tokens, "n", n)
    label_counts = ngram_counts(label_tokens, n)
    pred_counts = ngram_counts(pred_tokens, n)
    # each n-gram counts at most as often as in the label (eq-bleu-clipped)
    return sum(
        min(c, label_counts[g])
        for g, c in pred_counts.items()
        if g in label_counts
    )


def bleu_d2l(pred_tokens: Tokens, label_tokens: Tokens, k: int) -> float:
    r"""The BLEU variant of the DSCI 565 slides and *Dive into Deep Learning*.

    .. math::
        \exp\Bigl(\min\Bigl(0, 1 - \frac{\mathrm{len}_\mathrm{label}}
        {\mathrm{len}_\mathrm{pred}}\Bigr)\Bigr) \prod_{n=1}^{k} p_n^{1/2^n}

    where :math:`p_n` is the clipped n-gram precision of the prediction against the one
    label. Orders longer than the prediction are skipped (their factor is 1), as in
    the book's reference code; an empty prediction scores 0.

    Args:
        pred_tokens: the predicted sentence, a list of tokens.
        label_tokens: the reference sentence, a list of tokens.
        k: the longest n-gram order (>= 1).

    Returns:
        The score in [0, 1].

    Example:
        >>> round(bleu_d2l("A B B C D".split(), "A B C D E F".split(), k=3), 4)
        0.594
    """
    _check_pair(pred_tokens, label_tokens, "k", k)
    pred, label = pred_tokens, label_tokens
    if not pred:
        return 0.0
    score = math.exp(min(0.0, 1 - len(label) / len(pred)))  # (eq-bleu-d2l)
    for n in range(1, min(k, len(pred)) + 1):
        matches = clipped_matches(pred, label, n)  # (eq-bleu-clipped)
        score *= (matches / (len(pred) - n + 1)) ** (0.5**n)  # (eq-bleu-d2l)
    return score


@dataclass(frozen=True)
class BLEUStatistics:
    """The sufficient statistics of BLEU, summed over a corpus.

    ``correct[n-1]`` is the number of clipped matching n-grams, ``total[n-1]`` the
    number of n-grams in the hypotheses; ``hyp_len`` and ``ref_len`` are the summed
    hypothesis and (closest) reference lengths. Statistics of two corpora add up
    with ``+``.
    """

    correct: tuple[int, ...]
    total: tuple[int, ...]
    hyp_len: int
    ref_len: int

    def __add__(self, other: BLEUStatistics) -> BLEUStatistics:
        if not isinstance(other, BLEUStatistics) or len(other.correct) != len(self.correct):
            raise TypeError("can only add BLEUStatistics of the same max_order")
        return BLEUStatistics(
            tuple(a + b for a, b in zip(self.correct, other.correct)),
            tuple(a + b for a, b in zip(self.total, other.total)),
            self.hyp_len + other.hyp_len,
            self.ref_len + other.ref_len,
        )

    @property
    def brevity_penalty(self) -> float:
        r""":math:`\min(1, e^{1 - r/c})`, and 0 for an empty output (``c = 0``)."""
        c, r = self.hyp_len, self.ref_len
        if c >= r:
            return 1.0
        return math.exp(1 - r / c) if c > 0 else 0.0  # (eq-bleu-bp)

    @property
    def precisions(self) -> list[float]:
        """The unsmoothed n-gram precisions (0 where there are no n-grams)."""
        return [c / t if t else 0.0 for c, t in zip(self.correct, self.total)]

    def score(
        self, smooth: str = "none", smooth_value: float | None = None,
        effective_order: bool = False,
    ) -> float:
        """BLEU in [0, 1] from these statistics (arguments as in :func:`corpus_bleu`)."""
        _check_smoothing(smooth, smooth_value)
        bp = self.brevity_penalty
        if not any(self.correct):
            return 0.0
        precisions, order = self._smoothed_precisions(
            smooth, smooth_value, effective_order
        )
        if any(p == 0.0 for p in precisions[:order]):
            return 0.0  # the geometric mean of a zero precision
        log_mean = sum(math.log(p) for p in precisions[:order]) / order
        return bp * math.exp(log_mean)  # (eq-bleu-corpus)

    def _smoothed_precisions(
        self, smooth: str, smooth_value: float | None, effective_order: bool
    ) -> tuple[list[float], int]:
        """The precisions :math:`p_n` after smoothing, and the number of orders to average."""
        if smooth_value is None:  # the defaults of "none" and "exp" (None) are not used
            smooth_value = SMOOTH_DEFAULTS[smooth] or 0.0
        max_order = len(self.correct)
        order = max_order
        precisions = [0.0] * max_order
        mteval = 1.0
        for n in range(1, max_order + 1):
            correct: float = self.correct[n - 1]
            total: float = self.total[n - 1]
            if smooth == "add-k" and n > 1:  # Chen & Cherry's method 2
                correct, total = correct + smooth_value, total + smooth_value
            if total == 0:
                break  # no n-grams of this order (or longer) in the whole output
            if effective_order:
                order = n
            if correct > 0:
                precisions[n - 1] = correct / total
            elif smooth == "exp":  # method 3 (NIST): 1/2, 1/4, ... of a match
                mteval *= 2
                precisions[n - 1] = 1 / (mteval * total)
            elif smooth == "floor":  # method 1: a small count instead of zero
                precisions[n - 1] = smooth_value / total
        return precisions, order


def _check_references(name: str, refs: Any) -> Sequence[Any]:
    """The references of one hypothesis: a non-empty list of token lists."""
    if (type(refs) is list or type(refs) is tuple) and refs:
        if all(type(ref) is list or type(ref) is tuple for ref in refs):
            return refs  # the fast, common case: a list of token lists
    check_sequence(name, refs, what="a list of references", non_empty=True)
    if isinstance(refs[0], str) and len(refs[0]) != 0:
        raise TypeError(f"{name} must be a list of references, each a list of tokens; "
                        f"got a list of str ({list(refs[:3])!r}...). With one reference per "
                        "sentence, wrap each one: [[ref] for ref in refs]")
    return [_check_tokens(f"{name}[{j}]", ref) for j, ref in enumerate(refs)]


def bleu_statistics(
    hypotheses: Sequence[Tokens], references: Sequence[Sequence[Tokens]], max_order: int = 4
) -> BLEUStatistics:
    """Sum BLEU's sufficient statistics over a corpus.

    For each hypothesis, every n-gram count is clipped by the largest count of that
    n-gram in any one of its references, and the reference length closest to the
    hypothesis length (the shorter on ties) enters ``ref_len``.

    Args:
        hypotheses: ``N`` token lists.
        references: ``N`` non-empty lists of references, each a token list.
        max_order: the longest n-gram order (>= 1).

    Returns:
        A :class:`BLEUStatistics`.

    Example:
        >>> stats = bleu_statistics([["A", "B", "B"]], [[["A", "B", "C"]]], 2)
        >>> stats.correct, stats.total, stats.hyp_len, stats.ref_len
        ((2, 1), (3, 2), 3, 3)
    """
    # the tokens are counted, and named if unhashable, by corpus_ngram_statistics
    check_sequence("hypotheses", hypotheses, what="a list of token lists", non_empty=True)
    check_sequence("references", references,
                   what="a list with one list of references per hypothesis")
    if len(references) != len(hypotheses):
        raise ValueError(f"references must hold N = {len(hypotheses)} items (as in hypotheses), "
                         f"got {len(references)}")
    check_positive_int("max_order", max_order)
    hypotheses = [_check_tokens(f"hypotheses[{i}]", hyp) for i, hyp in enumerate(hypotheses)]
    references = [_check_references(f"references[{i}]", refs)
                  for i, refs in enumerate(references)]
    # (eq-bleu-clipped), summed over the corpus
    correct, total, hyp_len, ref_len = corpus_ngram_statistics(hypotheses, references, max_order)
    return BLEUStatistics(tuple(correct), tuple(total), hyp_len, ref_len)


def corpus_bleu(
    hypotheses: Sequence[Tokens],
    references: Sequence[Sequence[Tokens]],
    max_order: int = 4,
    smooth: str = "none",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> float:
    r"""Standard corpus BLEU (Papineni et al., 2002), in [0, 1].

    .. math::
        \mathrm{BLEU} = \mathrm{BP} \cdot \exp\Bigl(\frac{1}{N}\sum_{n=1}^{N}
        \log p_n\Bigr), \qquad
        p_n = \frac{\sum_{s} \sum_{g \in s} \min(c_s(g), \max_r c_r(g))}
        {\sum_s \sum_{g \in s} c_s(g)}, \qquad
        \mathrm{BP} = \min(1, e^{1 - r/c})

    with n-gram counts summed over the corpus *before* dividing, :math:`c` the total
    hypothesis length and :math:`r` the total closest-reference length.

    Args:
        hypotheses: ``N`` token lists (the system output).
        references: ``N`` non-empty lists of references, each a token list.
        max_order: :math:`N`, the longest n-gram order (>= 1; BLEU-4 by default).
        smooth: ``"none"``; ``"floor"`` (a zero count becomes ``smooth_value``,
            default 0.1); ``"add-k"`` (``smooth_value``, default 1, added to the
            matches and totals of orders >= 2); ``"exp"`` (the k-th zero precision
            becomes :math:`1/(2^k \cdot \mathrm{total})`), as in sacrebleu.
        smooth_value: the value of ``"floor"`` and ``"add-k"`` smoothing.
        effective_order: ignore the orders longer than any hypothesis n-gram.

    Returns:
        BLEU in [0, 1]; multiply by 100 for sacrebleu's scale.

    Example:
        >>> hyp = ["the cat sat on the mat".split()]
        >>> refs = [["the cat sat on a mat".split(), "a cat sat on the mat".split()]]
        >>> round(corpus_bleu(hyp, refs), 4)
        0.9554
    """
    _check_smoothing(smooth, smooth_value)  # bleu_statistics checks the corpus and max_order
    stats = bleu_statistics(hypotheses, references, max_order)
    return stats.score(smooth, smooth_value, effective_order)


def sentence_bleu(
    hypothesis: Tokens,
    references: Sequence[Tokens],
    max_order: int = 4,
    smooth: str = "none",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> float:
    """BLEU of one sentence: :func:`corpus_bleu` of a corpus of one.

    sacrebleu's own ``sentence_bleu`` defaults to ``smooth="exp"`` and
    ``effective_order=True``, because without smoothing one missing 4-gram makes a
    sentence score 0; pass those to get its numbers.

    Example:
        >>> sentence_bleu("A B B C D".split(), ["A B C D E F".split()])
        0.0
        >>> round(sentence_bleu("A B B C D".split(), ["A B C D E F".split()],
        ...                     smooth="exp"), 4)
        0.3872
    """
    _check_sentence("hypothesis", hypothesis), _check_references("references", references)
    _check_smoothing(smooth, smooth_value)
    stats = bleu_statistics([hypothesis], [references], max_order)
    return stats.score(smooth, smooth_value, effective_order)
