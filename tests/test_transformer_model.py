import pytest
import torch

from seqbook.decoding import greedy_search
from seqbook.seq2seq import evaluate_translator, number_translation_task
from seqbook.transformer import (
    Transformer,
    TransformerConfig,
    build_transformer,
    train_transformer,
    warmup_lr,
)


@pytest.fixture(scope="module")
def task():
    return number_translation_task("de", max_number=99, num_valid=10, num_test=10)


def small_model(**kwargs):
    torch.manual_seed(0)
    options = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=20)
    options.update(kwargs)
    return Transformer(12, 11, **options).eval()


@pytest.mark.parametrize("norm_first", [True, False])
def test_future_target_tokens_do_not_change_earlier_logits(norm_first):
    model = small_model(norm_first=norm_first)
    src, lengths = torch.tensor([[4, 5, 6, 2]]), torch.tensor([4])
    tgt = torch.tensor([[1, 5, 6, 7, 8]])
    changed = tgt.clone()
    changed[0, 3:] = torch.tensor([3, 9])
    a, b = model(src, lengths, tgt), model(src, lengths, changed)
    assert torch.allclose(a[:, :3], b[:, :3], atol=1e-6)
    assert not torch.allclose(a[:, 3:], b[:, 3:])


def test_source_padding_changes_nothing():
    model = small_model()
    short = torch.tensor([[4, 5, 2]])
    batch = torch.tensor([[4, 5, 2, 0, 0], [7, 8, 9, 10, 2]])
    tgt = torch.tensor([[1, 5, 6]])
    alone = model(short, torch.tensor([3]), tgt)
    together = model(batch, torch.tensor([3, 5]), tgt.expand(2, -1))
    assert torch.allclose(alone[0], together[0], atol=1e-5)
    assert (model.attention_maps()["cross"][0][0, :, :, 3:] == 0).all()


def test_step_function_matches_teacher_forcing():
    model = small_model()
    src, lengths = torch.tensor([[4, 5, 6, 2], [7, 2, 0, 0]]), torch.tensor([4, 2])
    prefixes = torch.tensor([[[1, 5, 6], [1, 7, 8]], [[1, 9, 3], [1, 4, 4]]])  # (N, K, t)
    log_probs, state = model.step_function(src, lengths)(prefixes, None)
    assert state is None and log_probs.shape == (2, 2, 11)
    for n in range(2):
        for k in range(2):
            logits = model(src[n : n + 1], lengths[n : n + 1], prefixes[n, k : k + 1])
            expected = torch.log_softmax(logits[0, -1], -1)
            expected[[0, 1]] = float("-inf")
            assert torch.allclose(log_probs[n, k], expected, atol=1e-5)


def test_generate_greedy_equals_greedy_search():
    model = small_model()
    src, lengths = torch.tensor([[4, 5, 6, 2], [7, 2, 0, 0]]), torch.tensor([4, 2])
    out = model.generate(src, lengths, max_len=6)
    found = greedy_search(model.step_function(src, lengths), 1, 2, 6, batch_size=2)
    assert out.tokens == found.tokens
    beam = model.generate(src, lengths, max_len=6, beam_size=3)
    assert len(beam.tokens) == 2 and all(len(t) <= 6 for t in beam.tokens)


def test_embeddings_are_scaled_and_pad_is_zero():
    model = small_model()
    assert torch.equal(model.src_embedding.weight[0], torch.zeros(16))
    ids = torch.tensor([[3, 4]])
    expected = model.tgt_embedding(ids) * 4 + model.positional.pe[:2]
    assert torch.allclose(model.embed(ids, model.tgt_embedding), expected)


def test_training_learns_and_evaluates(task):
    config = TransformerConfig(d_model=16, num_heads=2, num_layers=1, d_ff=32,
                               dropout=0.0, epochs=3, batch_size=16, warmup=5)
    model, history = train_transformer(task, config, device="cpu", progress=False)
    assert not model.training
    assert history.epoch_loss[-1] < history.epoch_loss[0]
    result = evaluate_translator(model, task, task.splits.test[:5])
    assert 0.0 <= result.bleu <= 1.0 and len(result.hypotheses) == 5


def test_loss_equals_plain_cross_entropy_without_smoothing(task):
    model = build_transformer(task, TransformerConfig(d_model=16, d_ff=32))
    batch = task.batch(task.splits.train[:8])
    logits = model.eval()(batch.src, batch.src_lengths, batch.tgt_in)
    from seqbook.seq2seq import masked_cross_entropy

    expected = masked_cross_entropy(logits, batch.tgt_out, batch.tgt_mask)
    assert torch.allclose(model.loss(batch), expected, atol=1e-6)
    assert model.loss(batch, label_smoothing=0.1) > model.loss(batch)


def test_warmup_lr():
    lrs = [warmup_lr(s, 1e-3, 10, 100) for s in range(1, 101)]
    assert max(lrs) == pytest.approx(1e-3) and lrs.index(max(lrs)) == 9
    assert lrs[-1] == 0.0 and all(a <= b for a, b in zip(lrs[:10], lrs[1:10]))


def test_bad_input(task):
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        Transformer(10, 10, d_model=10, num_heads=3)
    with pytest.raises(ValueError, match="eos_id"):
        Transformer(10, 2, d_model=8, num_heads=2)
    model = small_model(max_len=5)
    too_long = torch.full((1, 6), 4)
    with pytest.raises(ValueError, match="max_len=5"):
        model(too_long, torch.tensor([6]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="max_len=5"):
        model(torch.tensor([[4, 2]]), torch.tensor([2]), torch.full((1, 6), 4))
    with pytest.raises(ValueError, match="src_lengths"):
        model(torch.tensor([[4, 2]]), torch.tensor([2, 2]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="tgt_in"):
        model(torch.tensor([[4, 2]]), torch.tensor([2]), torch.tensor([1]))
    with pytest.raises(TypeError, match="TransformerConfig"):
        build_transformer(task, object())


@pytest.mark.parametrize("training", [True, False])
def test_generate_searches_in_eval_mode_and_restores_the_mode(training):
    model = small_model(dropout=0.5)
    model.train(training)
    src, lengths = torch.tensor([[4, 5, 6, 2]]), torch.tensor([4])
    first = model.generate(src, lengths, max_len=6, beam_size=2)
    second = model.generate(src, lengths, max_len=6, beam_size=2)
    assert first.tokens == second.tokens  # no dropout noise: eval mode during search
    assert model.training == training
