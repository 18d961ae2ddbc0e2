import pytest
import torch
from torch import nn

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
    expected = model.tgt_embedding(ids) * 4 + model.positional.pe[:2].float()
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
    with pytest.raises(ValueError, match=r"src must be at most max_len = 5 long, got 6"):
        model(too_long, torch.tensor([6]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match=r"tgt_in must be at most max_len = 5 long, got 6"):
        model(torch.tensor([[4, 2]]), torch.tensor([2]), torch.full((1, 6), 4))
    with pytest.raises(TypeError, match="^src_lengths must be "):
        model(torch.tensor([[4, 2]]), torch.tensor([2, 2]), torch.tensor([[1]]))
    with pytest.raises(TypeError, match="^tgt_in must be "):
        model(torch.tensor([[4, 2]]), torch.tensor([2]), torch.tensor([1]))
    with pytest.raises(TypeError, match="^config must be .*TransformerConfig"):
        build_transformer(task, object())


def test_bad_ids_and_lengths_name_the_argument():
    model = small_model()  # source vocabulary 12, target vocabulary 11
    src, lengths, tgt = torch.tensor([[4, 5, 2]]), torch.tensor([3]), torch.tensor([[1, 5]])
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 12\).*to 13"):
        model(src + 8, lengths, tgt)
    with pytest.raises(ValueError, match=r"src must hold token ids .* from -3"):
        model(src - 5, lengths, tgt)
    with pytest.raises(ValueError, match=r"tgt_in must hold token ids in \[0, 11\)"):
        model(src, lengths, tgt + 10)
    with pytest.raises(ValueError, match=r"src_lengths must hold values in \[1, S = 3\].*\[5\]"):
        model(src, torch.tensor([5]), tgt)
    with pytest.raises(ValueError, match=r"src_lengths must hold values in \[1, S = 3\].*\[0\]"):
        model(src, torch.tensor([0]), tgt)
    with pytest.raises(TypeError, match=r"^tgt_in must be .*the size of dimension B is 2"):
        model(src, lengths, tgt.expand(2, -1))
    with pytest.raises(ValueError, match=r"pad_id must be an id in \[0, src_vocab_size = 3\)"):
        Transformer(3, 10, d_model=8, num_heads=2, pad_id=5, bos_id=1, eos_id=2)
    for name in ("pad_id", "bos_id", "eos_id"):
        with pytest.raises(ValueError, match=rf"{name} must be an id in \[0, tgt_vocab_size = 6\)"):
            Transformer(10, 6, d_model=8, num_heads=2, **{name: 6})
    with pytest.raises(ValueError, match=r"prefixes \(bos\) must hold token ids"):
        greedy_search(model.step_function(src, lengths), bos=20, eos=2, max_len=3)


def test_loss_names_a_batch_whose_targets_do_not_fit():
    from seqbook.seq2seq.data import TranslationBatch

    model = small_model()  # target vocabulary 11
    src, lengths, tgt_in = torch.tensor([[4, 5, 2]]), torch.tensor([3]), torch.tensor([[1, 5]])
    tgt_out, keep = torch.tensor([[5, 2]]), torch.tensor([[True, True]])
    assert model.loss(TranslationBatch(src, lengths, tgt_in, tgt_out, keep)).isfinite()
    with pytest.raises(ValueError, match=r"batch.tgt_out must hold token ids in \[0, 11\)"):
        model.loss(TranslationBatch(src, lengths, tgt_in, tgt_out + 20, keep))
    # an id outside the mask is ignored, as the loss ignores it
    ignored = torch.tensor([[5, -100]]), torch.tensor([[True, False]])
    assert model.loss(TranslationBatch(src, lengths, tgt_in, *ignored)).isfinite()
    with pytest.raises(ValueError, match=r"batch.tgt_out must have the shape \(1, 2\)"):
        model.loss(TranslationBatch(src, lengths, tgt_in, torch.tensor([[5, 2, 2]]), keep))
    with pytest.raises(TypeError, match="batch.tgt_out must have an integer dtype"):
        model.loss(TranslationBatch(src, lengths, tgt_in, tgt_out.float(), keep))
    with pytest.raises(ValueError, match=r"batch.tgt_mask must have the shape \(1, 2\)"):
        model.loss(TranslationBatch(src, lengths, tgt_in, tgt_out, keep[:, :1].expand(1, 3)))
    with pytest.raises(TypeError, match="batch.tgt_mask must have a boolean dtype"):
        model.loss(TranslationBatch(src, lengths, tgt_in, tgt_out, keep.float()))


def test_float64_model_equals_torch_layers_built_from_its_blocks():
    torch.manual_seed(6)
    model = Transformer(12, 11, d_model=16, num_heads=4, num_layers=2, d_ff=24, dropout=0.0,
                        norm_first=True, activation="gelu").double().eval()
    src = torch.tensor([[4, 5, 6, 2], [7, 2, 0, 0]])
    lengths, tgt = torch.tensor([4, 2]), torch.tensor([[1, 5, 6], [1, 3, 0]])
    padding = torch.tensor([[False] * 4, [False] * 2 + [True] * 2])
    encoder = nn.TransformerEncoder(model.encoder_blocks[0].to_torch(), 2,
                                    norm=model.encoder_norm.to_torch(), enable_nested_tensor=False)
    decoder = nn.TransformerDecoder(model.decoder_blocks[0].to_torch(), 2,
                                    norm=model.decoder_norm.to_torch())
    for i in range(2):  # the stacks' layers are copies of the first: give them ours
        encoder.layers[i] = model.encoder_blocks[i].to_torch()
        decoder.layers[i] = model.decoder_blocks[i].to_torch()
    encoder.eval(), decoder.eval()
    memory = encoder(model.embed(src, model.src_embedding), src_key_padding_mask=padding)
    future = nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    out = decoder(model.embed(tgt, model.tgt_embedding), memory, tgt_mask=future,
                  memory_key_padding_mask=padding)
    expected = model.output(out)
    assert torch.allclose(model(src, lengths, tgt), expected, atol=1e-12, rtol=0)


def test_defaults_follow_torch():
    model = Transformer(10, 10, d_model=8, num_heads=2)
    reference = nn.Transformer(d_model=8, nhead=2, batch_first=True)
    assert model.norm_first is reference.encoder.layers[0].norm_first is False
    assert model.encoder_blocks[0].add_norm_1.dropout.p == reference.encoder.layers[0].dropout1.p


@pytest.mark.parametrize("training", [True, False])
def test_generate_searches_in_eval_mode_and_restores_the_mode(training):
    model = small_model(dropout=0.5)
    model.train(training)
    src, lengths = torch.tensor([[4, 5, 6, 2]]), torch.tensor([4])
    first = model.generate(src, lengths, max_len=6, beam_size=2)
    second = model.generate(src, lengths, max_len=6, beam_size=2)
    assert first.tokens == second.tokens  # no dropout noise: eval mode during search
    assert model.training == training


def test_train_transformer_checks_the_learning_rate_schedule_once(task):
    with pytest.raises(ValueError, match="lr must be > 0.0"):
        train_transformer(task, TransformerConfig(d_model=16, d_ff=32, lr=-1.0), device="cpu",
                          progress=False)
    with pytest.raises(ValueError, match="warmup must be >= 0"):
        train_transformer(task, TransformerConfig(d_model=16, d_ff=32, warmup=-1), device="cpu",
                          progress=False)
