"""The bad inputs an independent reader who knows PyTorch reported, one test each.

Each kind once escaped as an error from deep inside torch or as a silent wrong result;
each now fails with a ValueError or TypeError naming the argument (or computes what
torch computes). ``test_checks_public_api.py`` tries every kind on every public callable.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.attention import (
    AdditiveAttention,
    AttentionPooling,
    MultiHeadAttention,
    scaled_dot_product_attention,
)
from seqbook.data import number_translation
from seqbook.decoding import beam_search, exhaustive_search, greedy_search, reorder_state
from seqbook.losses import label_smoothing_loss
from seqbook.metrics import corpus_bleu
from seqbook.seq2seq import BahdanauDecoder, Seq2SeqDecoder, Seq2SeqEncoder
from seqbook.transformer import AddNorm, DecoderBlock, EncoderBlock, FeedForward, Transformer

# --- 1. floating dtypes: a clear TypeError naming the argument and both dtypes --------


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_mixed_dtypes_in_scaled_dot_product_attention(dtype):
    Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    with pytest.raises(TypeError, match=f"K has dtype {dtype} but Q has dtype torch.float32"):
        scaled_dot_product_attention(Q, K.to(dtype), V)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_float32_modules_name_the_input_of_another_dtype(dtype):
    x = torch.randn(2, 3, 8, dtype=dtype)
    expected = f"must have the dtype of the module's parameters \\(torch.float32\\), got {dtype}"
    calls = [
        ("query", lambda: MultiHeadAttention(8, 2)(x, x.float(), x.float())),
        ("queries", lambda: AdditiveAttention(8, 8, 4)(x, x.float(), x.float())),
        ("bags", lambda: AttentionPooling(8, 4)(x)),
        ("src", lambda: EncoderBlock(8, 2, 16)(x)),
        ("tgt", lambda: DecoderBlock(8, 2, 16)(x, x.float())),
        ("memory", lambda: DecoderBlock(8, 2, 16)(x.float(), x)),
        ("x", lambda: FeedForward(8, 16)(x)),
        ("x", lambda: AddNorm(8)(x, lambda h: h)),
    ]
    for name, call in calls:
        with pytest.raises(TypeError, match=f"{name} {expected}"):
            call()


def test_float64_modules_compute_in_float64():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    assert MultiHeadAttention(8, 2).double()(x, x, x)[0].dtype == torch.float64
    assert EncoderBlock(8, 2, 16).double()(x).dtype == torch.float64


def test_seq2seq_decoders_name_a_state_or_encoding_of_another_dtype():
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(10, 4, 3, bidirectional=True)
    encoded = encoder(torch.tensor([[4, 5, 2]]), torch.tensor([3]))
    for decoder in (Seq2SeqDecoder(9, 4, 5, 6), BahdanauDecoder(9, 4, 5, 6)):
        with pytest.raises(TypeError, match=r"^state must have the dtype of the module's "
                           r"parameters \(torch.float32\), got torch.float64"):
            decoder.step(torch.tensor([1]), torch.zeros(1, 5, dtype=torch.float64), encoded)
        with pytest.raises(TypeError, match=r"^encoded.outputs must have the dtype of the "
                           r"decoder's parameters \(torch.float32\), got torch.float64"):
            decoder(torch.tensor([[1, 5]]), type(encoded)(*(
                t.double() if t.is_floating_point() else t for t in encoded)))


# --- 2. token ids: every module that embeds ids checks them ----------------------------


def test_transformer_checks_source_and_target_ids():
    model = Transformer(10, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    src, lengths, tgt = torch.tensor([[4, 5, 2]]), torch.tensor([3]), torch.tensor([[1, 6]])
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 10\)"):
        model(src + 7, lengths, tgt)
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 10\).* from -3"):
        model(src - 5, lengths, tgt)
    with pytest.raises(ValueError, match=r"tgt_in must hold token ids in \[0, 9\)"):
        model(src, lengths, tgt + 8)


def test_seq2seq_decoders_check_target_ids():
    encoder = Seq2SeqEncoder(10, 4, 3, bidirectional=True)
    encoded = encoder(torch.tensor([[4, 5, 2]]), torch.tensor([3]))
    for decoder in (Seq2SeqDecoder(9, 4, 5, 6), BahdanauDecoder(9, 4, 5, 6)):
        with pytest.raises(ValueError, match=r"tgt_in must hold token ids in \[0, 9\)"):
            decoder(torch.tensor([[1, 9]]), encoded)
        with pytest.raises(ValueError, match=r"y_prev must hold token ids in \[0, 9\)"):
            decoder.step(torch.tensor([-1]), decoder.init_state(encoded), encoded)


# --- 3. search: eos in range, log-probabilities that are log-probabilities -------------


def table_step(prefixes, state):
    N, K, _ = prefixes.shape
    return torch.tensor([0.5, 0.3, 0.2]).log().expand(N, K, 3), None  # <eos> = 2


@pytest.mark.parametrize("search", [
    lambda step, eos: greedy_search(step, bos=3, eos=eos, max_len=4),
    lambda step, eos: beam_search(step, bos=3, eos=eos, beam_size=2, max_len=4),
    lambda step, eos: exhaustive_search(step, bos=3, eos=eos, max_len=4),
], ids=["greedy", "beam", "exhaustive"])
def test_searches_check_eos_and_the_step_functions_output(search):
    with pytest.raises(
        ValueError, match=r"eos must be one of the step function's token ids \[0, 3\)"
    ):
        search(table_step, 5)  # greedy returned max_len tokens, the others an IndexError
    nan_step = lambda p, s: (table_step(p, s)[0] * float("nan"), None)  # noqa: E731
    with pytest.raises(ValueError, match="NaN log-probabilities"):
        search(nan_step, 2)
    probability_step = lambda p, s: (table_step(p, s)[0].exp(), None)  # noqa: E731
    with pytest.raises(ValueError, match="did it return probabilities"):
        search(probability_step, 2)


# --- 4. messages name the argument the caller passed ----------------------------------


def test_messages_name_what_the_caller_passed():
    block = DecoderBlock(8, 2, 16)
    tgt = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match=r"^memory must be .*the size of dimension B is 3 .*"
                                        r"existing value of 2 \(sizes so far: B=2, T=3, bound "
                                        r"by tgt\)"):
        block(tgt, torch.randn(3, 4, 8))
    with pytest.raises(TypeError, match=r"^memory must be .*\{self.d_model\}=8"):
        block(tgt, torch.randn(2, 4, 6))
    model = Transformer(10, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    with pytest.raises(ValueError, match=r"src_lengths must hold values in \[1, S = 3"):
        model(torch.tensor([[4, 5, 2]]), torch.tensor([5]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="num_valid \\+ num_test must leave at least one"):
        number_translation(max_number=9, num_valid=10, num_test=10)


# --- 5. the other escapes -------------------------------------------------------------


def test_bias_free_layers_copy_and_compute_like_torch():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, bias=False, batch_first=True)
    ours = EncoderBlock.from_torch(layer.eval()).eval()
    x = torch.randn(2, 4, 8)
    assert torch.allclose(ours(x), layer(x), atol=1e-5)


def test_other_escapes_are_named():
    # a tuple holding a list: a Hashable to the type check, unhashable when counted
    with pytest.raises(TypeError, match=r"hypotheses\[0\] must hold hashable tokens"):
        corpus_bleu([["a", ("b", ["c"])]], [[["a", "b"]]])
    with pytest.raises(TypeError, match=r"^x must be .*\{self.d_model\}=8"):
        FeedForward(8, 16)(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match="sublayer must return a tensor of its input's shape"):
        AddNorm(8)(torch.randn(2, 3, 8), nn.Linear(8, 4))
    with pytest.raises(ValueError, match=r"parent must hold row indices in \[0, 2\)"):
        reorder_state(torch.zeros(1, 2, 3), torch.tensor([[0, 2]]))


# --- 6. precision: float64 is float64-accurate -----------------------------------------


def test_label_smoothing_in_float64_is_float64_accurate():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 50, dtype=torch.float64, generator=g) * 3
    target = torch.randint(0, 50, (64,), generator=g)
    ours = label_smoothing_loss(logits, target, 0.1)
    expected = F.cross_entropy(logits, target, label_smoothing=0.1)
    assert abs(ours.item() / expected.item() - 1) < 1e-14  # was about 4e-8


# --- 7. torch's names, torch's meanings ------------------------------------------------


def test_a_torch_key_padding_mask_gives_torchs_result():
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(reference)
    x = torch.randn(2, 5, 8)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])  # torch: True = ignore
    expected, _ = reference(x, x, x, key_padding_mask=padding)
    output, _ = ours(x, x, x, key_padding_mask=padding)
    assert torch.allclose(output, expected, atol=1e-6)


# --- boundary leaks found by a differential review: torch or Python errors before -------


def test_losses_and_profiles_refuse_bad_batches_naming_the_argument():
    from seqbook.costs import CausalConvolution
    from seqbook.costs.generation import generation_profile
    from seqbook.decoding import length_normalized
    from seqbook.language_model import RecurrentLM, lm_loss
    from seqbook.seq2seq import EncoderDecoder

    model = RecurrentLM(vocab_size=10, hidden_size=8, embedding_dim=4)
    ids = torch.randint(0, 10, (2, 6))
    with pytest.raises(ValueError, match=r"targets must hold token ids in \[0, 10\)"):
        lm_loss(model, (ids, ids + 10))
    with pytest.raises(TypeError, match="^batch must be .*TranslationBatch, got None"):
        Transformer(12, 12, d_model=8, num_heads=2, num_layers=1, d_ff=16).loss(None)
    with pytest.raises(TypeError, match=r"^batch must be .*TranslationBatch, got None"):
        EncoderDecoder.loss(None, None)
    with pytest.raises(TypeError, match="^model must be .*Module, got None"):
        generation_profile(None, 4)
    with pytest.raises(TypeError, match=r"^x must have the dtype of the module's parameters "
                       r"\(torch.float32\), got torch.float64"):
        CausalConvolution(4, 3)(torch.zeros(1, 5, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"^length must be .*cannot be broadcast"):
        length_normalized(torch.zeros(3), torch.ones(2, dtype=torch.long), 0.5)
    with pytest.raises(TypeError, match=r"^length must be Int\[.*dtype float32"):
        length_normalized(torch.zeros(3), torch.ones(3), 0.5)
