"""Every public callable of seqbook's attention, transformer, decoding, metrics, losses,
seq2seq, data, train, utils and plot modules, called with each kind of bad input.

For each callable there is one valid call (``CASES``). Each argument of it is then
replaced, one at a time, by values of the wrong type, dtype, rank, size or range
(``mutations``). A call may succeed (many mutations are legal, e.g. a float64 input
to a function without parameters), but when it fails it must fail with a ValueError or
TypeError whose message names the argument that was changed: never with an error from
deep inside torch, NumPy or Python (RuntimeError, IndexError, AttributeError, ...).
``test_every_public_name_has_a_case`` keeps the list complete.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

import seqbook.attention as attention
import seqbook.data as data
import seqbook.decoding as decoding
import seqbook.losses as losses
import seqbook.metrics as metrics
import seqbook.plot as plot
import seqbook.seq2seq as seq2seq
import seqbook.train as train
import seqbook.transformer as transformer
import seqbook.utils as utils


@dataclass
class Case:
    """One valid call: ``target(**kwargs)``; ``skip`` lists arguments not to mutate,
    ``user_code`` arguments (a module, a sublayer) whose wrong values fail inside the
    caller's own code, where any error may arise."""

    name: str
    target: Callable[..., Any]
    kwargs: dict[str, Any]
    skip: tuple[str, ...] = ()
    user_code: tuple[str, ...] = ()


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed))


def _step(prefixes: torch.Tensor, state: Any) -> tuple[torch.Tensor, None]:
    """A fixed next-token distribution over V = 4 tokens (<eos> = 3)."""
    N, K, _ = prefixes.shape
    probs = torch.tensor([0.4, 0.3, 0.2, 0.1])
    return probs.log().expand(N, K, 4).contiguous(), None


def _tiny_task() -> seq2seq.TranslationTask:
    return seq2seq.number_translation_task("de", max_number=40, num_valid=5, num_test=5)


def cases() -> list[Case]:
    torch.manual_seed(0)
    out: list[Case] = []

    def add(_name: str, _target: Callable[..., Any], *, skip=(), user_code=(), **kw) -> None:
        out.append(Case(_name, _target, kw, tuple(skip), tuple(user_code)))

    # --- attention -------------------------------------------------------------------
    keep = torch.tensor([[True, True, True, False], [True, True, True, True]])
    add("masked_softmax", attention.masked_softmax, scores=_rand(2, 3, 4),
        mask=keep[:, None, :], dim=-1)
    add("causal_mask", attention.causal_mask, T_q=3, T_k=4, device="cpu")
    add("project_heads", attention.project_heads, x=_rand(2, 5, 8), W=_rand(3, 8, 4),
        b=_rand(3, 4))
    add("scaled_dot_product_attention", attention.scaled_dot_product_attention,
        Q=_rand(2, 3, 5), K=_rand(2, 4, 5, seed=1), V=_rand(2, 4, 6, seed=2),
        attn_mask=keep[:, None, :], dropout_p=0.0, scale=0.5)
    add("scaled_dot_product_attention[is_causal]", attention.scaled_dot_product_attention,
        Q=_rand(2, 3, 5), K=_rand(2, 4, 5, seed=1), V=_rand(2, 4, 6, seed=2), is_causal=True)
    add("kernel_function", attention.kernel_function, u=_rand(5).abs(), kernel="boxcar")
    add("nadaraya_watson", attention.nadaraya_watson, queries=_rand(3, 2), keys=_rand(5, 2),
        values=_rand(5, 4), kernel="gaussian", bandwidth=0.5)
    add("AdditiveAttention", attention.AdditiveAttention, query_size=3, key_size=5,
        hidden_size=4)
    add("AdditiveAttention.forward", attention.AdditiveAttention(3, 5, 4),
        queries=_rand(2, 3), keys=_rand(2, 4, 5), values=_rand(2, 4, 6), mask=keep)
    add("MultiHeadAttention", attention.MultiHeadAttention, d_model=8, num_heads=2,
        dropout=0.1, bias=True, kdim=6, vdim=4, d_k=3, d_v=5)
    mha = attention.MultiHeadAttention(8, 2, kdim=6, vdim=4)
    add("MultiHeadAttention.forward", mha, query=_rand(2, 3, 8), key=_rand(2, 4, 6),
        value=_rand(2, 4, 4), key_padding_mask=~keep, need_weights=True,
        attn_mask=torch.zeros(3, 4), average_attn_weights=False, is_causal=False)
    add("MultiHeadAttention.from_torch", attention.MultiHeadAttention.from_torch,
        module=nn.MultiheadAttention(8, 2, batch_first=True))
    add("MultiHeadAttention.to_torch", attention.MultiHeadAttention(8, 2).to_torch)
    add("AttentionPooling", attention.AttentionPooling, input_size=4, hidden_size=3)
    add("AttentionPooling.forward", attention.AttentionPooling(4, 3), bags=_rand(2, 4, 4),
        mask=keep)

    # --- transformer -----------------------------------------------------------------
    add("positional_encoding", transformer.positional_encoding, max_len=5, d_model=6,
        base=100.0, device="cpu", dtype=torch.float64)
    add("relative_position_map", transformer.relative_position_map, offset=2, d_model=6,
        base=100.0, dtype=torch.float64)
    add("PositionalEncoding", transformer.PositionalEncoding, d_model=6, max_len=5,
        dropout=0.1, base=100.0)
    add("PositionalEncoding.forward", transformer.PositionalEncoding(6, 5), x=_rand(2, 4, 6))
    add("layer_norm", transformer.layer_norm, x=_rand(2, 3, 6), a=torch.ones(6),
        b=torch.zeros(6), eps=1e-5)
    add("LayerNorm", transformer.LayerNorm, d_model=6, eps=1e-5, bias=False)
    add("LayerNorm.forward", transformer.LayerNorm(6), x=_rand(2, 3, 6))
    add("LayerNorm.from_torch", transformer.LayerNorm.from_torch, module=nn.LayerNorm(6))
    add("AddNorm", transformer.AddNorm, d_model=6, dropout=0.1, norm_first=True, eps=1e-5,
        bias=True)
    add("AddNorm.forward", transformer.AddNorm(6), user_code=("sublayer",), x=_rand(2, 3, 6),
        sublayer=nn.Linear(6, 6))
    add("FeedForward", transformer.FeedForward, d_model=6, d_ff=8, dropout=0.1,
        activation="gelu", bias=True)
    add("FeedForward.forward", transformer.FeedForward(6, 8), x=_rand(2, 3, 6))
    block_args = dict(d_model=8, num_heads=2, d_ff=12, dropout=0.1, activation="relu",
                      layer_norm_eps=1e-5, norm_first=True, bias=True)
    add("EncoderBlock", transformer.EncoderBlock, **block_args)
    add("DecoderBlock", transformer.DecoderBlock, **block_args)
    padding = ~keep
    add("EncoderBlock.forward", transformer.EncoderBlock(8, 2, 12).eval(), src=_rand(2, 4, 8),
        src_mask=torch.zeros(4, 4), src_key_padding_mask=padding, is_causal=False)
    add("DecoderBlock.forward", transformer.DecoderBlock(8, 2, 12).eval(), tgt=_rand(2, 3, 8),
        memory=_rand(2, 4, 8), tgt_mask=torch.zeros(3, 3), memory_mask=torch.zeros(3, 4),
        tgt_key_padding_mask=torch.zeros(2, 3, dtype=torch.bool),
        memory_key_padding_mask=padding, tgt_is_causal=True, memory_is_causal=False)
    for cls, layer in ((transformer.EncoderBlock, nn.TransformerEncoderLayer(8, 2, 12)),
                       (transformer.DecoderBlock, nn.TransformerDecoderLayer(8, 2, 12))):
        add(f"{cls.__name__}.from_torch", cls.from_torch, module=layer)
        add(f"{cls.__name__}.to_torch", cls(8, 2, 12).to_torch)
    model_args = dict(src_vocab_size=12, tgt_vocab_size=11, d_model=8, num_heads=2,
                      num_layers=1, d_ff=12, dropout=0.0, norm_first=True, max_len=8,
                      pad_id=0, bos_id=1, eos_id=2, activation="gelu", layer_norm_eps=1e-5,
                      bias=True)
    add("Transformer", transformer.Transformer, **model_args)
    tf = transformer.Transformer(12, 11, d_model=8, num_heads=2, num_layers=1, d_ff=12,
                                 max_len=8).eval()
    src, src_lengths = torch.tensor([[4, 5, 2, 0], [6, 7, 8, 2]]), torch.tensor([3, 4])
    tgt_in = torch.tensor([[1, 5, 6], [1, 7, 0]])
    add("Transformer.forward", tf, src=src, src_lengths=src_lengths, tgt_in=tgt_in)
    add("Transformer.encode", tf.encode, src=src, src_lengths=src_lengths)
    memory, memory_padding = tf.encode(src, src_lengths)
    add("Transformer.decode", tf.decode, tgt_in=tgt_in, memory=memory.detach(),
        memory_key_padding_mask=memory_padding)
    add("Transformer.generate", tf.generate, src=src, src_lengths=src_lengths, max_len=3,
        beam_size=2, length_penalty=0.5)
    add("Transformer.step_function", tf.step_function, src=src, src_lengths=src_lengths)
    add("warmup_lr", transformer.warmup_lr, step=3, lr=1e-3, warmup=2, total=10)
    task = _tiny_task()
    config = transformer.TransformerConfig(d_model=8, num_heads=2, d_ff=8)
    add("build_transformer", transformer.build_transformer, task=task, config=config)
    batch = task.batch(task.splits.train[:4])
    add("Transformer.loss", transformer.build_transformer(task, config).loss, skip=("batch",),
        batch=batch, label_smoothing=0.1)

    # --- decoding --------------------------------------------------------------------
    search_args = dict(step_fn=_step, bos=4, eos=3, max_len=3, batch_size=2, device="cpu")
    add("greedy_search", decoding.greedy_search, **search_args)
    add("beam_search", decoding.beam_search, beam_size=2, length_penalty=0.5, trace=True,
        **search_args)
    add("exhaustive_search", decoding.exhaustive_search, length_penalty=0.5,
        max_prefixes=100, **search_args)
    add("reorder_state", decoding.reorder_state, state=torch.arange(12).view(2, 3, 2),
        parent=torch.tensor([[0, 2], [1, 1]]))
    add("length_normalized", decoding.length_normalized, log_prob=torch.tensor([-2.0, -1.0]),
        length=torch.tensor([4, 2]), length_penalty=0.5)

    # --- metrics ---------------------------------------------------------------------
    hyps = [["the", "cat", "sat"], ["a", "dog"]]
    refs = [[["the", "cat", "sat", "down"]], [["a", "dog", "ran"], ["the", "dog"]]]
    add("corpus_bleu", metrics.corpus_bleu, hypotheses=hyps, references=refs, max_order=2,
        smooth="floor", smooth_value=0.1, effective_order=True)
    add("bleu_statistics", metrics.bleu_statistics, hypotheses=hyps, references=refs,
        max_order=2)
    add("sentence_bleu", metrics.sentence_bleu, hypothesis=hyps[0], references=refs[0],
        max_order=2, smooth="exp", effective_order=True)
    add("bleu_d2l", metrics.bleu_d2l, pred_tokens=hyps[0], label_tokens=refs[0][0], k=2)
    add("ngram_counts", metrics.ngram_counts, tokens=hyps[0], n=2)
    stats = metrics.bleu_statistics(hyps, refs, 2)
    add("BLEUStatistics.score", stats.score, smooth="add-k", smooth_value=1.0,
        effective_order=False)

    # --- losses ----------------------------------------------------------------------
    p = torch.softmax(_rand(3, 5), -1)
    q = torch.softmax(_rand(3, 5, seed=1), -1)
    add("cross_entropy", losses.cross_entropy, p=p, q=q)
    add("kl_divergence", losses.kl_divergence, p=p, q=q)
    add("entropy", losses.entropy, p=p)
    add("smoothed_targets", losses.smoothed_targets, target=torch.tensor([0, 4]),
        num_classes=5, epsilon=0.1, dtype=torch.float64)
    add("label_smoothing_loss", losses.label_smoothing_loss, logits=_rand(2, 3, 5),
        target=torch.tensor([[0, 4, -100], [1, 2, 3]]), epsilon=0.1, ignore_index=-100,
        reduction="mean")

    # --- seq2seq ---------------------------------------------------------------------
    add("Seq2SeqEncoder", seq2seq.Seq2SeqEncoder, vocab_size=12, embed_size=4, hidden_size=5,
        bidirectional=True, dropout=0.1)
    encoder = seq2seq.Seq2SeqEncoder(12, 4, 5, bidirectional=True)
    add("Seq2SeqEncoder.forward", encoder, src=src, src_lengths=src_lengths)
    encoded = seq2seq.Encoded(*(x.detach() for x in encoder(src, src_lengths)))
    for cls in (seq2seq.Seq2SeqDecoder, seq2seq.BahdanauDecoder):
        decoder = cls(11, 4, 6, context_size=10)
        add(cls.__name__, cls, vocab_size=11, embed_size=4, hidden_size=6, context_size=10,
            dropout=0.1)
        add(f"{cls.__name__}.forward", decoder, tgt_in=tgt_in, encoded=encoded)
        add(f"{cls.__name__}.init_state", decoder.init_state, encoded=encoded)
        add(f"{cls.__name__}.step", decoder.step, y_prev=torch.tensor([1, 5]),
            state=_rand(2, 6), encoded=encoded)
    s2s = seq2seq.EncoderDecoder(encoder, seq2seq.BahdanauDecoder(11, 4, 6, 10)).eval()
    add("EncoderDecoder", seq2seq.EncoderDecoder, encoder=encoder,
        decoder=seq2seq.Seq2SeqDecoder(11, 4, 6, 10), pad_id=0, bos_id=1, eos_id=2)
    add("EncoderDecoder.forward", s2s, src=src, src_lengths=src_lengths, tgt_in=tgt_in)
    add("EncoderDecoder.generate", s2s.generate, src=src, src_lengths=src_lengths, max_len=3,
        beam_size=2, length_penalty=0.5)
    add("EncoderDecoder.step_function", s2s.step_function, src=src, src_lengths=src_lengths)
    add("masked_cross_entropy", seq2seq.masked_cross_entropy, logits=_rand(2, 3, 5),
        targets=torch.tensor([[1, 2, 0], [3, 4, 4]]),
        mask=torch.tensor([[1, 1, 0], [1, 1, 1]]).bool())
    add("PieceTokenizer", seq2seq.PieceTokenizer, pieces=["vier", "und", "zwanzig"])
    tokenizer = seq2seq.PieceTokenizer(["vier", "und", "zwanzig"])
    add("PieceTokenizer.tokenize", tokenizer.tokenize, text="vierundzwanzig")
    add("PieceTokenizer.learn", seq2seq.PieceTokenizer.learn,
        texts=["einundzwanzig", "zweiundzwanzig"], seed_pieces=["zwanzig"], min_count=2,
        max_new=3)
    add("join_words", seq2seq.join_words, tokens=["quatre", "-", "vingt"])
    add("number_translation_task", seq2seq.number_translation_task, tgt="fr",
        target_tokens="word", max_number=40, num_valid=5, num_test=5, num_train=20, seed=1,
        balanced=True)
    add("TranslationTask.batches", task.batches, pairs=task.splits.train[:6], batch_size=4,
        shuffle=True, seed=0)
    add("build_translator", seq2seq.build_translator, task=task,
        config=seq2seq.TranslatorConfig(embed_size=4, hidden_size=5))
    small = seq2seq.build_translator(task, seq2seq.TranslatorConfig(embed_size=4, hidden_size=5))
    add("evaluate_translator", seq2seq.evaluate_translator, model=small, task=task,
        pairs=task.splits.test, beam_size=2, length_penalty=0.0, max_len=6, batch_size=3)

    # --- data ------------------------------------------------------------------------
    add("tokenize", data.tokenize, text="forty-two", level="word")
    add("learn_bpe", data.learn_bpe, words=["low", "lower", "newest"], num_merges=3)
    add("apply_bpe", data.apply_bpe, word="lowest", merges=[("l", "o"), ("e", "s")])
    add("Vocab", data.Vocab, corpus=[["a", "b"], ["a"]], min_freq=1)
    vocab = data.Vocab([["a", "b"], ["a"]])
    add("Vocab.encode", vocab.encode, tokens=["a", "z"], add_bos=True, add_eos=True)
    add("Vocab.decode", vocab.decode, ids=[1, 4, 5, 2], skip_specials=True)
    add("pad_batch", data.pad_batch, sequences=[[5, 6, 7], [8]], pad_value=0)
    add("lengths_to_mask", data.lengths_to_mask, lengths=torch.tensor([3, 1]), max_len=4)
    add("split_dataset", data.split_dataset, items=list(range(20)), valid_fraction=0.1,
        test_fraction=0.2, seed=1, stratify=lambda i: i % 2)
    add("number_translation", data.number_translation, src="en", tgt="de", max_number=30,
        num_valid=3, num_test=3, num_train=10, seed=0)
    add("spell_number", data.spell_number, number=34, lang="de")
    add("mnist5k", data.mnist5k, flatten=True)
    add("surnames", data.surnames, languages=["German", "Italian"], per_language=20,
        valid_fraction=0.1, test_fraction=0.1, seed=0)
    add("python_source_corpus", data.python_source_corpus, num_chars=2000,
        max_file_chars=30_000, valid_fraction=0.1, test_fraction=0.1, seed=0)

    # --- train, utils, plot ----------------------------------------------------------
    linear = nn.Linear(1, 1)
    add("fit", train.fit, skip=("optimizer",), user_code=("model",), model=linear,
        loss_fn=lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
        batches=[(torch.ones(2, 1), torch.zeros(2, 1))],
        optimizer=torch.optim.SGD(linear.parameters(), lr=0.1), epochs=1, clip=1.0,
        eval_fn=lambda m: {"w": m.weight.item()}, device="cpu", progress=False, desc="t")
    add("seed_everything", utils.seed_everything, seed=3)
    add("shifted_seed", utils.shifted_seed, seed=3)
    add("seeded_generator", utils.seeded_generator, seed=3)
    add("to_device", utils.to_device, batch=(torch.zeros(2), "x"), device="cpu")
    history = train.History(step_loss=[1.0, 0.5], grad_norm=[1.0, 1.0],
                            epoch_loss=[1.0, 0.5], metrics={"acc": [0.1, 0.2]})
    add("plot_history", plot.plot_history, history=history, metrics=["acc"], ax=None, log=True)
    add("heatmap", plot.heatmap, matrix=_rand(2, 3), ax=None, xticklabels=["a", "b", "c"],
        yticklabels=["x", "y"], xlabel="k", ylabel="q", title="t", cmap="viridis",
        colorbar=True, annotate=True, fmt=".1f")
    return out


CASES = cases()

# Names in __all__ that are data, not callables with arguments to get wrong.
NOT_CALLABLES = {
    "KERNELS", "SMOOTH_DEFAULTS", "SURNAME_LOCALES", "Hypotheses", "BLEUStatistics",
    "Encoded", "TranslationBatch", "Translations", "TranslatorConfig", "TransformerConfig",
    "NumberPair", "SourceFile", "Splits", "Surname", "History", "Timer",
    "TranslationTask",  # built by number_translation_task; its methods have cases
    "default_device", "seed_shift",  # take no arguments
    "SEED_SHIFT_VARIABLE",
}
# Public callables whose only arguments are models or tasks trained for minutes; their
# arguments are the validated configs of build_translator / build_transformer.
SLOW = {"train_translator", "train_transformer"}


def test_every_public_name_has_a_case():
    covered = {case.name.split(".")[0].split("[")[0] for case in CASES}
    missing = []
    for module in (attention, transformer, decoding, metrics, losses, seq2seq, data, train,
                   utils, plot):
        for name in module.__all__:
            if name not in covered | NOT_CALLABLES | SLOW:
                missing.append(f"{module.__name__}.{name}")
    assert not missing, f"public callables without a bad-input case: {missing}"


def test_every_valid_call_succeeds():
    for case in CASES:
        case.target(**case.kwargs)
    plt.close("all")


BAD_MODULE = nn.Linear(2, 2)


def mutations(value: Any) -> list[tuple[str, Any]]:
    """Wrong values for an argument whose valid value is ``value``."""
    if isinstance(value, torch.Tensor):
        bad: list[tuple[str, Any]] = [("a list", value.tolist()), ("a str", "tensor")]
        bad.append(("one more dimension", value.unsqueeze(0)))
        if value.dim() >= 1:
            bad.append(("one dimension less", value[0]))
        if value.dim() >= 1 and value.shape[-1] > 1:
            bad.append(("a shorter last dimension", value[..., :-1]))
        if value.dim() >= 2 and value.shape[0] > 1:
            bad.append(("a smaller first dimension", value[:1]))
        if value.is_floating_point():
            bad += [("dtype int64", value.long()), ("dtype float64", value.double()),
                    ("dtype float16", value.half()), ("dtype bool", value > 0),
                    ("dtype complex64", value.to(torch.complex64)),
                    ("NaN entries", torch.full_like(value, math.nan))]
        elif value.dtype == torch.bool:
            bad += [("dtype int64", value.long()), ("dtype float64 ones", value.double())]
        else:
            bad += [("dtype float32", value.float()), ("dtype bool", value > 0),
                    ("negative entries", value - 100), ("huge entries", value + 10**6)]
        return bad
    if isinstance(value, bool):
        return [("the int 1", 1), ("a str", "yes"), ("None", None)]
    if isinstance(value, int):
        return [("-1", -1), ("0", 0), ("a float", 2.5), ("a str", "3"), ("a bool", True),
                ("None", None)]
    if isinstance(value, float):
        return [("-1.0", -1.0), ("NaN", math.nan), ("1.0", 1.0), ("2.0", 2.0), ("a str", "0.1"),
                ("infinity", math.inf), ("None", None)]
    if isinstance(value, str):
        return [("an unknown str", "nonsense"), ("an int", 3), ("None", None)]
    if isinstance(value, torch.dtype):
        return [("an integer dtype", torch.long), ("a str", "float64")]
    if isinstance(value, nn.Module) and not callable(getattr(value, "step_function", None)):
        return [("a Linear", BAD_MODULE), ("None", None), ("a str", "module")]
    if callable(value) and not isinstance(value, type):
        return [("a str", "not callable"), ("None", None), ("a function of no arguments",
                                                           lambda: None)]
    if isinstance(value, (list, tuple)):
        bad = [("a str", "a b c"), ("an int", 3), ("None", None), ("an empty list", [])]
        if value and isinstance(value[0], str):
            bad.append(("unhashable tokens", [["x"]] + list(value[1:])))
        if value and isinstance(value[0], list):
            bad.append(("a list of str", [" ".join(map(str, v)) for v in value]))
        return bad
    return [("None", None), ("a str", "x"), ("an int", 3)]


def _param_cases() -> list[tuple[str, Case, str]]:
    """Each argument of each case: its bad values are tried in one test (a test item per
    value, over two thousand, cost pytest more than the calls themselves)."""
    return [(f"{case.name}-{arg}", case, arg) for case in CASES for arg in case.kwargs
            if arg not in case.skip]


PARAMS = _param_cases()


def _names_the_argument(message: str, arg: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])", message) is not None


def _fault(case: Case, arg: str, label: str, bad: Any) -> str | None:
    """What is wrong with ``case`` called with ``arg=bad`` (None: nothing)."""
    kwargs = dict(case.kwargs, **{arg: bad})
    try:
        result = case.target(**kwargs)
        if callable(result) and case.name.endswith("step_function"):
            # a step function is checked when the search calls it
            decoding.greedy_search(result, 1, 2, max_len=2, batch_size=kwargs["src"].shape[0])
    except (ValueError, TypeError) as error:
        message = str(error)
        if not _names_the_argument(message, arg):
            return (f"{case.name}({arg}={label}) raised {type(error).__name__} without "
                    f"naming {arg!r}: {message}")
    except Exception as error:  # noqa: BLE001 - that is the point of the test
        if arg in case.user_code and isinstance(bad, nn.Module):
            return None  # the caller's module itself failed on the caller's data
        return f"{case.name}({arg}={label}) raised {type(error).__name__} from inside: {error}"
    finally:
        plt.close("all")
    return None


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case, arg", [p[1:] for p in PARAMS], ids=[p[0] for p in PARAMS])
def test_bad_input_fails_loudly_and_names_the_argument(case, arg):
    values = mutations(case.kwargs[arg])
    assert values, f"no bad value to try for {case.name}({arg})"
    faults = [fault for label, bad in values if (fault := _fault(case, arg, label, bad))]
    assert not faults, "\n".join(faults)
