"""seqbook.experiments.translation: where the first German number word comes from."""

import pytest

from seqbook.data import spell_number, tokenize
from seqbook.experiments.translation import first_word_source_index, german_number_words


@pytest.mark.parametrize(
    "number, index",
    [
        (0, 0),          # zero -> null
        (1, 0),          # one -> eins
        (14, 0),         # fourteen -> vierzehn (not "vier" of four)
        (17, 0),         # seventeen -> siebzehn
        (21, 2),         # twenty - one -> einundzwanzig
        (34, 2),         # thirty - four -> vierunddreißig
        (60, 0),         # sixty -> sechzig
        (100, 0),        # one hundred -> einhundert
        (1021, 0),       # one thousand and twenty - one -> eintausend...
        (21_000, 2),     # twenty - one thousand -> einundzwanzigtausend
        (45_678, 2),     # forty - five thousand, ... -> fünfundvierzigtausend...
        (345_678, 0),    # three hundred ... -> dreihundert...
        (999_999, 0),
    ],
)
def test_known_numbers(number, index):
    assert first_word_source_index(number) == index


def test_the_found_word_translates_the_start_of_the_german_number():
    words = german_number_words()
    for number in range(0, 10_000, 7):
        english = tokenize(spell_number(number, "en"), "word")
        index = first_word_source_index(number)
        assert spell_number(number, "de").startswith(words[english[index]])


def test_reading_ahead_happens_below_one_hundred_and_in_five_digit_numbers_only():
    # the first German word translates a later English word only for a leading
    # tens-unit pair: 21..99 (the last word) or the thousands of 21,000..99,999
    for number in [*range(0, 1100), *range(20_000, 100_000, 97), *range(100_000, 999_999, 4999)]:
        index = first_word_source_index(number)
        leading = number // 1000 if number >= 1000 else number
        inverted = 20 < leading < 100 and leading % 10 != 0
        assert (index > 0) == inverted, number


@pytest.mark.parametrize("bad", [-1, 1_000_000])
def test_out_of_range_numbers_are_refused(bad):
    with pytest.raises(ValueError, match="number must be"):
        first_word_source_index(bad)


@pytest.mark.parametrize("bad", [3.0, "34", True, None])
def test_non_integers_are_refused(bad):
    with pytest.raises(TypeError, match="^number must be"):
        first_word_source_index(bad)


# --- measuring translators ----------------------------------------------------------

import math  # noqa: E402

import torch  # noqa: E402

from seqbook.data import NumberPair  # noqa: E402
from seqbook.experiments.translation import (  # noqa: E402
    accuracy_by_length,
    french_dix_alignment,
    own_translation_attention,
    tens_unit_alignment,
    token_statistics,
)
from seqbook.seq2seq import (  # noqa: E402
    TranslatorConfig,
    build_translator,
    number_translation_task,
)


@pytest.fixture(scope="module")
def de_task():
    return number_translation_task("de", max_number=999, num_valid=20, num_test=40)


@pytest.fixture(scope="module")
def fr_task():
    return number_translation_task("fr", max_number=999, num_valid=20, num_test=40)


def test_accuracy_by_length_counts_each_bin(de_task):
    pairs = list(de_task.splits.test)
    lengths = [len(de_task.source_tokens(p.source)) for p in pairs]
    correct = [n <= 2 for n in lengths]              # right exactly on short ones
    shares = accuracy_by_length(de_task, pairs, correct, bins=[(1, 2), (3, 20), (50, 60)])
    assert shares[0] == 1.0 and shares[1] == 0.0 and math.isnan(shares[2])


def test_accuracy_by_length_refuses_mismatched_input(de_task):
    with pytest.raises(ValueError, match=r"correct must hold B = \d+ items \(as in pairs\)"):
        accuracy_by_length(de_task, list(de_task.splits.test), [True])
    with pytest.raises(TypeError, match="^pairs must be"):
        accuracy_by_length(de_task, [(1, "one", "eins")], [True])


def _perfect_alignment(task, pairs, heads=None):
    """Hand-made attention that looks exactly where tens_unit_alignment checks."""
    hypotheses = [task.target_tokens_of(p.target) for p in pairs]
    T_y = max(map(len, hypotheses)) + 1
    T_x = max(len(task.source_tokens(p.source)) for p in pairs) + 1
    weights = torch.zeros(len(pairs), T_y, T_x)
    for b, (pair, hypothesis) in enumerate(zip(pairs, hypotheses)):
        words = task.source_tokens(pair.source)
        weights[b, :, 0] = 1.0
        if pair.number % 100 > 20 and pair.number % 10:
            weights[b, len(hypothesis) - 3] = 0.0
            weights[b, len(hypothesis) - 3, len(words) - 1] = 1.0   # unit -> unit
            weights[b, len(hypothesis) - 1] = 0.0
            weights[b, len(hypothesis) - 1, len(words) - 3] = 1.0   # tens -> tens
    if heads is not None:   # head 0 looks nowhere useful, the last head aligns
        weights = torch.stack([torch.full_like(weights, 0.0)] * (heads - 1) + [weights], 1)
    return weights, hypotheses


def test_tens_unit_alignment_finds_a_perfect_alignment(de_task):
    pairs = [p for p in de_task.splits.train if p.number % 100 > 20 and p.number % 10][:15]
    weights, hypotheses = _perfect_alignment(de_task, pairs)
    assert tens_unit_alignment(weights, de_task, pairs, hypotheses) == (1.0, 1.0, 15)
    # swapping the rows of unit and tens breaks both
    swapped = weights.clone()
    for b, h in enumerate(hypotheses):
        swapped[b, [len(h) - 3, len(h) - 1]] = weights[b, [len(h) - 1, len(h) - 3]]
    assert tens_unit_alignment(swapped, de_task, pairs, hypotheses)[:2] == (0.0, 0.0)


def test_tens_unit_alignment_needs_one_head_only(de_task):
    pairs = [p for p in de_task.splits.train if p.number % 100 > 20 and p.number % 10][:5]
    weights, hypotheses = _perfect_alignment(de_task, pairs, heads=3)
    assert tens_unit_alignment(weights, de_task, pairs, hypotheses) == (1.0, 1.0, 5)
    assert tens_unit_alignment(weights[:, 0], de_task, pairs, hypotheses)[:2] == (0.0, 0.0)


def test_tens_unit_alignment_skips_wrong_translations_and_other_numbers(de_task):
    pairs = [p for p in de_task.splits.train if p.number % 100 > 20 and p.number % 10][:3]
    pairs.append(next(p for p in de_task.splits.train if p.number % 100 < 20))
    weights, hypotheses = _perfect_alignment(de_task, pairs)
    hypotheses[0] = ["null"]                          # a wrong translation
    assert tens_unit_alignment(weights, de_task, pairs, hypotheses)[2] == 2


def test_tens_unit_alignment_refuses_bad_shapes(de_task):
    pairs = list(de_task.splits.test)[:2]
    with pytest.raises(ValueError, match="weights must have one row per pair"):
        tens_unit_alignment(torch.zeros(3, 4, 5), de_task, pairs, [[], []])
    with pytest.raises(ValueError, match=r"hypotheses must hold B = 2 items \(as in pairs\)"):
        tens_unit_alignment(torch.zeros(2, 4, 5), de_task, pairs, [[]])


def test_french_dix_alignment(fr_task):
    numbers = [97, 77, 95, 34]
    pairs = [NumberPair(n, spell_number(n, "en"), spell_number(n, "fr")) for n in numbers]
    hypotheses = [fr_task.target_tokens_of(p.target) for p in pairs]
    T_y, T_x = max(map(len, hypotheses)), 8
    weights = torch.zeros(len(pairs), T_y, T_x)
    for b, (pair, h) in enumerate(zip(pairs, hypotheses)):
        unit = len(fr_task.source_tokens(pair.source)) - 1
        weights[b, len(h) - 3, unit if b == 0 else 0] = 1.0   # 97 right, 77 not
    share, checked = french_dix_alignment(weights, fr_task, pairs, hypotheses)
    assert checked == 2 and share == 0.5            # 95 and 34 have no "dix"
    assert "dix" not in fr_task.target_tokens_of(pairs[2].target)
    with pytest.raises(TypeError, match="^weights must be"):
        french_dix_alignment(weights[0], fr_task, pairs, hypotheses)


def test_own_translation_attention_and_token_statistics(de_task):
    model = build_translator(de_task, TranslatorConfig(hidden_size=8, embed_size=4)).eval()
    pairs = list(de_task.splits.test)[:6]
    hypotheses = [de_task.target_tokens_of(p.target) for p in pairs]
    weights = own_translation_attention(model, de_task, pairs, hypotheses)
    batch = de_task.batch(pairs)
    assert weights.shape == (6, batch.tgt_in.shape[1], batch.src.shape[1])
    assert torch.allclose(weights.sum(-1), torch.ones(6, batch.tgt_in.shape[1]), atol=1e-5)
    confidence, correct, gap = token_statistics(model, de_task, pairs)
    n = int(batch.tgt_mask.sum())
    assert confidence.shape == correct.shape == gap.shape == (n,)
    assert ((confidence > 0) & (confidence <= 1)).all() and (gap >= 0).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_measurements_run_a_gpu_model_on_its_device_and_return_cpu_tensors(de_task):
    # the task's batches are made on the CPU; a model trained on a GPU reads them there
    model = build_translator(de_task, TranslatorConfig(hidden_size=8, embed_size=4))
    model = model.cuda().eval()
    pairs = list(de_task.splits.test)[:6]
    hypotheses = [de_task.target_tokens_of(p.target) for p in pairs]
    weights = own_translation_attention(model, de_task, pairs, hypotheses)
    statistics = token_statistics(model, de_task, pairs)
    assert weights.device.type == "cpu" and weights.shape[0] == 6
    assert all(t.device.type == "cpu" for t in statistics)
    cpu_statistics = token_statistics(model.cpu(), de_task, pairs)
    assert torch.allclose(statistics[0], cpu_statistics[0], atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_transformer_measurements_run_on_its_device(de_task):
    from seqbook.transformer import TransformerConfig, build_transformer

    config = TransformerConfig(d_model=16, num_heads=2, d_ff=32, num_layers=1)
    model = build_transformer(de_task, config).cuda().eval()
    pairs = list(de_task.splits.test)[:6]
    hypotheses = [de_task.target_tokens_of(p.target) for p in pairs]
    weights = own_translation_attention(model, de_task, pairs, hypotheses)
    assert weights.device.type == "cpu" and weights.shape[:2] == (6, 2)
    confidence, correct, gap = token_statistics(model, de_task, pairs)
    assert confidence.device.type == correct.device.type == gap.device.type == "cpu"


# --- teacher forced against free running -----------------------------------------------

from seqbook.experiments.translation import teacher_forcing_gap  # noqa: E402
from seqbook.seq2seq import evaluate_translator  # noqa: E402


@pytest.fixture(scope="module")
def small_model(de_task):
    torch.manual_seed(0)    # a test's fixed model, not a chapter's seed
    return build_translator(de_task, TranslatorConfig(hidden_size=8, embed_size=4)).eval()


def test_teacher_forced_tokens_are_token_statistics(de_task, small_model):
    pairs = list(de_task.splits.test)[:8]
    references = [de_task.target_tokens_of(p.target) for p in pairs]
    gap = teacher_forcing_gap(small_model, de_task, pairs, references)
    _, correct, _ = token_statistics(small_model, de_task, pairs)
    assert torch.equal(gap.teacher_forced, correct)
    n = sum(len(r) + 1 for r in references)         # the tokens and <eos>
    assert gap.free_running.shape == gap.after_first_error.shape == (n,)
    assert gap.free_running.all() and not gap.after_first_error.any()
    assert gap.accuracies() == (correct.float().mean().item(), 1.0)


def test_free_running_counts_position_by_position(de_task, small_model):
    pair = next(p for p in de_task.splits.test
                if len(de_task.target_tokens_of(p.target)) >= 3)
    reference = de_task.target_tokens_of(pair.target)
    other = next(t for t in de_task.tgt_vocab.tokens[4:] if t != reference[1])
    substituted = [reference[0], other, *reference[2:]]
    gap = teacher_forcing_gap(small_model, de_task, [pair], [substituted])
    expected = [i != 1 for i in range(len(reference) + 1)]
    assert gap.free_running.tolist() == expected
    assert gap.after_first_error.tolist() == [i > 1 for i in range(len(reference) + 1)]
    # a translation that stops early is wrong where it has no token
    gap = teacher_forcing_gap(small_model, de_task, [pair], [reference[:1]])
    assert gap.free_running.tolist() == [True] + [False] * len(reference)
    # an empty translation is wrong from the first token on, <eos> included
    gap = teacher_forcing_gap(small_model, de_task, [pair], [[]])
    assert not gap.free_running.any()


def test_greedy_translations_agree_with_teacher_forcing_up_to_their_first_error(
        de_task, small_model):
    # the trusted twin: greedy search, which sees the same prefix until it errs
    pairs = list(de_task.splits.test)
    result = evaluate_translator(small_model, de_task, pairs)
    gap = teacher_forcing_gap(small_model, de_task, pairs, result.hypotheses)
    before = ~gap.after_first_error
    assert torch.equal(gap.teacher_forced[before], gap.free_running[before])
    assert gap.after_first_error.any()              # an untrained model errs


def test_teacher_forcing_gap_refuses_bad_input(de_task, small_model):
    pairs = list(de_task.splits.test)[:2]
    hypotheses = [de_task.target_tokens_of(p.target) for p in pairs]
    with pytest.raises(ValueError, match=r"hypotheses must hold B = 2 items \(as in pairs\)"):
        teacher_forcing_gap(small_model, de_task, pairs, hypotheses[:1])
    with pytest.raises(TypeError, match="hypotheses must be lists of token strings"):
        teacher_forcing_gap(small_model, de_task, pairs, ["vier", "drei"])
    with pytest.raises(TypeError, match="hypotheses must be a sequence"):
        teacher_forcing_gap(small_model, de_task, pairs, "vier")
    with pytest.raises(TypeError, match="^model must be"):
        teacher_forcing_gap(lambda *a: None, de_task, pairs, hypotheses)
    with pytest.raises(TypeError, match="^task must be"):
        teacher_forcing_gap(small_model, "de", pairs, hypotheses)
    with pytest.raises(ValueError, match="pairs must hold at least one item"):
        teacher_forcing_gap(small_model, de_task, [], [])


from seqbook.experiments.teacher_forcing import length_records  # noqa: E402
from seqbook.experiments.translation import teacher_forced_right  # noqa: E402


def test_length_records_split_the_tokens_by_source_length(de_task, small_model):
    pairs = list(de_task.splits.test)
    right = teacher_forced_right(small_model, de_task, pairs)
    bins = [(1, 3), (4, 20)]
    rows = length_records(de_task, pairs, right, "plain", 0, bins=bins)
    lengths = [len(de_task.source_tokens(p.source)) for p in pairs]
    sizes = [len(de_task.target_tokens_of(p.target)) + 1 for p in pairs]
    per_pair = right.split(sizes)
    for row, (lo, hi) in zip(rows, bins):
        inside = [i for i, n in enumerate(lengths) if lo <= n <= hi]
        assert row.numbers == len(inside)
        assert row.tokens == sum(sizes[i] for i in inside)
        hits = sum(int(per_pair[i].sum()) for i in inside)
        assert row.teacher_forced == pytest.approx(hits / row.tokens)
        assert row.all_right == sum(bool(per_pair[i].all()) for i in inside) / len(inside)
        a = row.teacher_forced
        assert row.independent == pytest.approx(
            sum(a ** sizes[i] for i in inside) / len(inside))
    # greedy's exactly right translations are those with every token right
    result = evaluate_translator(small_model, de_task, pairs)
    whole, = length_records(de_task, pairs, right, "plain", 0, bins=[(1, 99)])
    assert whole.all_right == pytest.approx(result.accuracy)


def test_length_records_refuse_a_mismatched_token_count(de_task, small_model):
    pairs = list(de_task.splits.test)[:3]
    right = teacher_forced_right(small_model, de_task, pairs)
    with pytest.raises(ValueError, match="teacher_forced must hold one bool per"):
        length_records(de_task, pairs, right[:-1], "plain", 0)
    with pytest.raises(TypeError, match="pairs"):
        length_records(de_task, "pairs", right, "plain", 0)
