import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.decoding import exhaustive_search, greedy_search
from seqbook.seq2seq import (
    BahdanauDecoder,
    Encoded,
    EncoderDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    TranslationBatch,
    TranslatorConfig,
    evaluate_translator,
    masked_cross_entropy,
    number_translation_task,
    train_translator,
)


def batch(seed=0, B=3, T=5, V=11):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([5, 3, 1][:B])
    src = torch.randint(3, V, (B, T), generator=g)
    src[torch.arange(T) >= lengths.unsqueeze(1)] = 0
    return src, lengths


@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_matches_nn_gru_on_each_unpadded_sentence(bidirectional):
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=bidirectional)
    src, lengths = batch()
    encoded = encoder(src, lengths)
    D = encoder.output_size
    assert encoded.outputs.shape == (3, 5, D) and encoded.state.shape == (3, D)
    for b, n in enumerate(lengths.tolist()):
        x = encoder.embedding(src[b : b + 1, :n])
        out, h_n = encoder.rnn(x)
        assert torch.allclose(encoded.outputs[b, :n], out[0], atol=1e-6)
        assert torch.allclose(encoded.state[b], torch.cat(list(h_n[:, 0])), atol=1e-6)
        assert (encoded.outputs[b, n:] == 0).all()
    assert encoded.mask.tolist()[1] == [True] * 3 + [False] * 2


def test_encoder_ignores_what_padding_holds():
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True)
    src, lengths = batch()
    noisy = src.clone()
    noisy[src == 0] = 7
    a, b = encoder(src, lengths), encoder(noisy, lengths)
    assert torch.allclose(a.outputs, b.outputs) and torch.allclose(a.state, b.state)


@pytest.mark.parametrize("decoder_class", [Seq2SeqDecoder, BahdanauDecoder])
def test_teacher_forcing_equals_step_by_step_decoding(decoder_class):
    torch.manual_seed(1)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True)
    decoder = decoder_class(9, 5, 7, context_size=encoder.output_size)
    src, lengths = batch(1)
    encoded = encoder(src, lengths)
    tgt_in = torch.tensor([[1, 4, 5, 6], [1, 7, 8, 0], [1, 3, 0, 0]])
    logits, weights = decoder(tgt_in, encoded)
    s = decoder.init_state(encoded)
    for i in range(4):
        step_logits, s, alpha = decoder.step(tgt_in[:, i], s, encoded)
        assert torch.allclose(step_logits, logits[:, i], atol=1e-5)
        if weights is not None:
            assert torch.allclose(alpha, weights[:, i], atol=1e-6)
    if decoder_class is BahdanauDecoder:
        assert torch.allclose(weights.sum(-1), torch.ones(3, 4), atol=1e-6)
        assert (weights[2, :, 1:] == 0).all()  # sentence 3 has one real token


def test_bahdanau_context_is_the_attention_average_of_the_annotations():
    torch.manual_seed(2)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True)
    decoder = BahdanauDecoder(9, 5, 7, context_size=12)
    src, lengths = batch(2)
    encoded = encoder(src, lengths)
    s0 = decoder.init_state(encoded)
    att = decoder.attention
    # eqs. 4.3-4.5 by hand
    e = torch.stack(
        [
            att.w_v(torch.tanh(att.W_q(s0) + att.W_k(encoded.outputs[:, j]))).squeeze(-1)
            for j in range(5)
        ],
        1,
    )
    e = e.masked_fill(~encoded.mask, float("-inf"))
    alpha = torch.softmax(e, -1)
    c = (alpha.unsqueeze(-1) * encoded.outputs).sum(1)
    y = decoder.embedding(torch.tensor([1, 1, 1]))
    s1 = decoder.cell(torch.cat([y, c], -1), s0)
    logits, s, weights = decoder.step(torch.tensor([1, 1, 1]), s0, encoded)
    assert torch.allclose(weights, alpha, atol=1e-6)
    assert torch.allclose(s, s1, atol=1e-6)
    assert torch.allclose(logits, decoder.W_o(torch.cat([s1, c], -1)), atol=1e-6)


def test_masked_cross_entropy_equals_ignore_index():
    torch.manual_seed(3)
    logits = torch.randn(2, 4, 6)
    targets = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
    loss = masked_cross_entropy(logits, targets, targets != 0)
    reference = F.cross_entropy(logits.reshape(-1, 6), targets.reshape(-1), ignore_index=0)
    assert torch.allclose(loss, reference, atol=1e-6)


def test_step_function_drives_greedy_search_like_teacher_forcing():
    torch.manual_seed(4)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True)
    model = EncoderDecoder(encoder, BahdanauDecoder(9, 5, 7, 12)).eval()
    src, lengths = batch(4)
    out = greedy_search(model.step_function(src, lengths), 1, 2, max_len=6, batch_size=3)
    for b, tokens in enumerate(out.tokens):
        tgt_in = torch.tensor([[1, *tokens]])
        with torch.no_grad():
            logits, _ = model(src[b : b + 1, : lengths[b]], lengths[b : b + 1], tgt_in)
        log_probs = torch.log_softmax(logits, -1)
        log_probs[..., [0, 1]] = float("-inf")
        predicted = log_probs.argmax(-1)[0].tolist()
        assert predicted[: len(tokens)] == tokens
        if out.finished[b]:
            assert predicted[len(tokens)] == 2


def test_searches_over_a_translator_keep_their_guarantees():
    torch.manual_seed(4)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True)
    model = EncoderDecoder(encoder, BahdanauDecoder(6, 5, 7, 12)).eval()  # V = 6
    src, lengths = batch(4)
    step = model.step_function(src, lengths)
    greedy = greedy_search(step, 1, 2, max_len=4, batch_size=3)
    # beam size 1 is greedy search
    one = model.generate(src, lengths, max_len=4, beam_size=1)
    assert one.tokens == greedy.tokens
    assert torch.allclose(one.log_prob, greedy.log_prob, atol=1e-6)
    # exhaustive search is the optimum: no search scores better on the same max_len
    exact = exhaustive_search(step, 1, 2, max_len=4, batch_size=3)
    for k in (1, 2, 3):
        beam = model.generate(src, lengths, max_len=4, beam_size=k)
        assert (beam.score <= exact.score + 1e-6).all()
    # wider than all prefixes of max_len - 1 tokens (<pad>, <bos> have p = 0): exhaustive
    wide = model.generate(src, lengths, max_len=4, beam_size=4**3)
    assert torch.allclose(wide.score, exact.score, atol=1e-6)
    assert wide.tokens == exact.tokens


def test_a_small_translator_learns():
    torch.set_num_threads(1)
    task = number_translation_task("de", max_number=99, num_valid=10, num_test=10)
    model, history = train_translator(
        task, TranslatorConfig(hidden_size=16, embed_size=8, epochs=15, batch_size=16),
        device="cpu", progress=False,
    )
    assert history.epoch_loss[-1] < history.epoch_loss[0] / 3
    result = evaluate_translator(model, task, task.splits.train[:40])
    assert result.accuracy > 0.3 and 0 <= result.bleu <= 1
    assert len(result.hypotheses) == 40


def test_bad_input_gives_clear_errors():
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True)
    src, lengths = batch()
    with pytest.raises(ValueError, match="lengths"):
        encoder(src, torch.tensor([5, 0, 1]))
    T = src.shape[1]
    with pytest.raises(ValueError, match=rf"src_lengths must hold values in \[1, T = {T} \(as in"):
        encoder(src, torch.tensor([T + 1, 1, 1]))
    with pytest.raises(TypeError, match=r"^src_lengths must be Int\[Tensor, 'B'\], got i64\[2\]"
                                        r".* does not equal the existing value of 3"):
        encoder(src, torch.tensor([5, 3]))
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 11\)"):
        encoder(src + 20, lengths)
    with pytest.raises(TypeError, match=r"^src must be Int\[Tensor, 'B T'\], got f32"):
        encoder(src.float(), lengths)
    with pytest.raises(ValueError, match="context_size"):
        EncoderDecoder(encoder, Seq2SeqDecoder(9, 4, 5, context_size=6))
    with pytest.raises(TypeError, match=r"^decoder must be .*Seq2SeqDecoder.*, got GRU"):
        EncoderDecoder(encoder, nn.GRU(3, 3))
    with pytest.raises(ValueError, match=r"eos_id must be < decoder.vocab_size = 9 \(decoder"):
        EncoderDecoder(encoder, Seq2SeqDecoder(9, 4, 5, context_size=12), eos_id=9)
    with pytest.raises(ValueError, match="pad_id must be >= 0"):
        EncoderDecoder(encoder, Seq2SeqDecoder(9, 4, 5, context_size=12), pad_id=-1)
    decoder = BahdanauDecoder(9, 4, 5, context_size=12)
    encoded = encoder(src, lengths)
    with pytest.raises(ValueError, match=r"encoded.outputs must have shape \(B, T_x, context_size\)"
                       r" with B = 2 \(as in tgt_in\)"):
        decoder(torch.ones(2, 3, dtype=torch.long), encoded)
    with pytest.raises(ValueError, match="tgt_in"):
        decoder(torch.full((3, 2), 9), encoded)
    with pytest.raises(TypeError, match=r"^encoded must be .*Encoded.*, got f32\[3,5,12\]"):
        decoder(torch.ones(3, 2, dtype=torch.long), encoded.outputs)
    with pytest.raises(TypeError, match=r"encoded.state must have the dtype of the decoder's"):
        decoder(torch.ones(3, 2, dtype=torch.long), encoded._replace(state=encoded.state.double()))
    with pytest.raises(TypeError, match=r"^state must be Float\[Tensor, 'B \{self.hidden_size"):
        decoder.step(torch.ones(3, dtype=torch.long), torch.zeros(3, 4), encoded)
    with pytest.raises(ValueError, match="context_size"):
        Seq2SeqDecoder(9, 4, 5, context_size=7).init_state(encoded)
    with pytest.raises(ValueError, match="at least one"):
        masked_cross_entropy(
            torch.zeros(1, 2, 3),
            torch.zeros(1, 2, dtype=torch.long),
            torch.zeros(1, 2, dtype=torch.bool),
        )
    with pytest.raises(ValueError, match="dropout"):
        Seq2SeqEncoder(11, 4, 6, dropout=1.5)
    assert isinstance(encoded, Encoded)


def test_float64_equals_torch_gru_and_the_decoder_equations():
    torch.manual_seed(6)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True).double()
    src, lengths = batch(6)
    encoded = encoder(src, lengths)
    for b, n in enumerate(lengths.tolist()):  # nn.GRU on each unpadded sentence
        out, h_n = encoder.rnn(encoder.embedding(src[b : b + 1, :n]))
        assert torch.allclose(encoded.outputs[b, :n], out[0], atol=1e-15, rtol=1e-12)
    assert encoded.outputs.dtype == torch.float64
    decoder = BahdanauDecoder(9, 5, 7, context_size=12).double()
    s0 = decoder.init_state(encoded)
    logits, s1, alpha = decoder.step(torch.tensor([1, 1, 1]), s0, encoded)
    att = decoder.attention
    e = torch.tanh(att.W_q(s0)[:, None] + att.W_k(encoded.outputs)) @ att.w_v.weight[0]
    expected_alpha = torch.softmax(e.masked_fill(~encoded.mask, float("-inf")), -1)
    c = (expected_alpha[..., None] * encoded.outputs).sum(1)
    expected_s1 = decoder.cell(torch.cat([decoder.embedding(torch.tensor([1, 1, 1])), c], -1), s0)
    assert torch.allclose(alpha, expected_alpha, atol=1e-15, rtol=1e-13)
    assert torch.allclose(s1, expected_s1, atol=1e-15, rtol=1e-13)
    assert torch.allclose(logits, decoder.W_o(torch.cat([s1, c], -1)), atol=1e-14, rtol=1e-12)
    tgt_in = torch.tensor([[1, 4, 5], [1, 7, 0], [1, 3, 0]])
    plain = Seq2SeqDecoder(9, 5, 7, context_size=12).double()
    forced, _ = plain(tgt_in, encoded)
    s = plain.init_state(encoded)
    for i in range(3):
        step_logits, s, _ = plain.step(tgt_in[:, i], s, encoded)
        assert torch.allclose(step_logits, forced[:, i], atol=1e-14, rtol=1e-12)
    targets = torch.tensor([[4, 5, 2], [7, 2, 0], [3, 2, 0]])
    loss = masked_cross_entropy(forced, targets, targets != 0)
    reference = F.cross_entropy(forced.reshape(-1, 9), targets.reshape(-1), ignore_index=0)
    assert loss.dtype == torch.float64
    assert torch.allclose(loss, reference, atol=1e-15, rtol=1e-13)


def test_bahdanau_decoder_checks_its_attention_once_not_per_step():
    """The decoder calls its attention as a module (hooks fire), and the attention's
    annotations are not checked again at every step: only the outermost call is."""
    from seqbook import _typecheck

    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(10, 4, 6, bidirectional=True)
    decoder = BahdanauDecoder(12, 4, 8, context_size=12, attention_size=5)
    encoded = encoder(torch.tensor([[3, 4, 2], [5, 2, 0]]), torch.tensor([3, 2]))
    tgt_in = torch.tensor([[1, 5, 6, 7], [1, 8, 0, 0]])
    inside = []
    decoder.attention.register_forward_pre_hook(
        lambda module, args: inside.append(_typecheck._inside))
    logits, weights = decoder(tgt_in, encoded)
    assert inside == [True] * 4  # one call per step, each within the decoder's checked call
    assert torch.equal(weights[1, :, 2], torch.zeros(4))  # the padded source position


@pytest.mark.parametrize("attention", [False, True])
def test_forward_hooks_of_every_submodule_fire(attention):
    """Submodules are called as modules, never through private methods: a forward hook
    on each of them fires on a call of the model (teacher forcing) and, but for the
    decoder's own forward (a search calls its ``step``), of a search."""
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(11, 4, 6, bidirectional=True, dropout=0.1)
    decoder = (BahdanauDecoder if attention else Seq2SeqDecoder)(9, 5, 7, 12, dropout=0.1)
    model = EncoderDecoder(encoder, decoder)
    src, lengths = batch()
    tgt_in = torch.tensor([[1, 4, 5], [1, 7, 0], [1, 3, 0]])
    names = {name for name, _ in model.named_modules()}
    for call, expected in ((lambda: model(src, lengths, tgt_in), names),
                           (lambda: model.generate(src, lengths, max_len=3, beam_size=2),
                            names - {"", "decoder"})):
        fired = set()
        handles = [module.register_forward_hook(lambda m, args, out, name=name: fired.add(name))
                   for name, module in model.named_modules()]
        call()
        for handle in handles:
            handle.remove()
        assert fired == expected, expected - fired


def test_loss_refuses_targets_the_signature_cannot_reach():
    """``loss`` takes a whole batch: its targets' ids, shape and mask are checked in
    the body, by their field names, instead of ending in torch's IndexError."""
    torch.manual_seed(0)
    model = EncoderDecoder(Seq2SeqEncoder(11, 4, 6), Seq2SeqDecoder(9, 4, 5, context_size=6))
    src, lengths = batch(4)
    tgt_in = torch.tensor([[1, 3, 4], [1, 5, 0], [1, 0, 0]])
    tgt_out = torch.tensor([[3, 4, 2], [5, 2, 0], [2, 0, 0]])
    good = TranslationBatch(src, lengths, tgt_in, tgt_out, tgt_out != 0)
    assert torch.isfinite(model.loss(good))
    with pytest.raises(ValueError, match=r"batch.tgt_out must hold token ids in \[0, 9\)"):
        model.loss(good._replace(tgt_out=tgt_out + 7))
    with pytest.raises(ValueError, match=r"batch.tgt_out must have shape \(3, 3\)"):
        model.loss(good._replace(tgt_out=tgt_out[:, :2]))
    with pytest.raises(TypeError, match="batch.tgt_mask must have dtype torch.bool"):
        model.loss(good._replace(tgt_mask=good.tgt_mask.float()))
    with pytest.raises(ValueError, match="batch.tgt_mask must keep at least one"):
        model.loss(good._replace(tgt_mask=torch.zeros(3, 3, dtype=torch.bool)))
