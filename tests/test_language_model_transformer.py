"""The decoder-only transformer LM, its key-value cache and generation with it."""

import math

import pytest
import torch
from torch import nn

from seqbook.language_model import (
    KVCache,
    RecurrentLM,
    TransformerLM,
    TransformerLMConfig,
    generate,
    next_token,
)
from seqbook.transformer import EncoderBlock, LayerNorm, positional_encoding


def small(seed=0, **overrides):
    torch.manual_seed(seed)
    sizes = dict(d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=64)
    return TransformerLM(11, **{**sizes, **overrides}).eval()


def randomise(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or "bias" in name:
                p.normal_(std=0.5)
    return module


@pytest.mark.parametrize("norm_first", [True, False])
def test_forward_equals_a_stack_of_torch_encoder_layers_with_a_causal_mask(norm_first):
    model = small(norm_first=norm_first)
    layers = [randomise(nn.TransformerEncoderLayer(16, 4, 32, 0.0, batch_first=True,
                                                   norm_first=norm_first)).eval()
              for _ in range(2)]
    model.blocks = nn.ModuleList(EncoderBlock.from_torch(layer) for layer in layers)
    final = randomise(nn.LayerNorm(16))
    if norm_first:
        model.norm = LayerNorm.from_torch(final)
    ids = torch.randint(0, 11, (3, 9))
    ignore_future = ~torch.ones(9, 9, dtype=torch.bool).tril()  # torch: True = ignore
    x = model.embedding(ids) * math.sqrt(16) + positional_encoding(64, 16)[:9]
    for layer in layers:
        x = layer(x, src_mask=ignore_future)
    expected = model.readout(final(x) if norm_first else x)
    logits, state = model(ids)
    assert state is None
    assert torch.allclose(logits, expected, atol=1e-5)


def test_the_past_does_not_see_the_future():
    model = small()
    ids = torch.randint(0, 11, (2, 12))
    changed = ids.clone()
    changed[:, 7] = (ids[:, 7] + 1) % 11
    before, after = model(ids)[0], model(changed)[0]
    assert torch.equal(before[:, :7], after[:, :7])
    assert (before[:, 7:] - after[:, 7:]).abs().amax() > 1e-3


@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("chunks", [(20,), (1,) * 20, (5, 1, 1, 13), (12, 8)])
def test_cached_logits_equal_the_full_pass(dtype, atol, chunks):
    model = small().to(dtype)
    ids = torch.randint(0, 11, (3, 20))
    full, _ = model(ids)
    cache, pieces, start = model.init_state(3), [], 0
    for size in chunks:
        logits, cache = model(ids[:, start:start + size], cache)
        pieces.append(logits)
        start += size
    assert cache.length == 20 and full.dtype == dtype
    assert cache.keys[0].dtype == dtype
    assert torch.allclose(torch.cat(pieces, 1), full, atol=atol, rtol=0)


def test_cache_memory_is_two_tensors_per_layer_of_b_t_d_model():
    model = small(num_layers=3)
    cache = model.init_state(4)
    model(torch.randint(0, 11, (4, 10)), cache)
    assert len(cache.keys) == len(cache.values) == 3
    assert all(k.shape == (4, 4, 10, 4) for k in cache.keys + cache.values)
    assert cache.nbytes == 2 * 3 * 4 * 10 * 16 * 4  # 2 N_x B T d_model bytes
    assert model.double().init_state(1).keys[0].dtype == torch.float64


def test_cache_errors_name_the_problem():
    model, other = small(), small(seed=1)
    cache = model.init_state(2)
    model(torch.randint(0, 11, (2, 5)), cache)
    with pytest.raises(ValueError, match="cache holds a batch of 2 sequences, but ids has 3"):
        model(torch.randint(0, 11, (3, 1)), cache)
    with pytest.raises(ValueError, match="cache was made by another model"):
        other(torch.randint(0, 11, (2, 1)), cache)
    with pytest.raises(ValueError, match="ids has 60 positions after 5 cached ones, more "
                                         "than the model's max_len=64"):
        model(torch.randint(0, 11, (2, 60)), cache)
    with pytest.raises(TypeError, match=r"^cache must be .*KVCache \| None, got \{'keys'"):
        model(torch.randint(0, 11, (2, 1)), {"keys": []})
    assert cache.length == 5  # a refused call leaves the cache as it was


def test_model_bad_input():
    model = small()
    with pytest.raises(ValueError, match=r"^ids must hold token ids in \[0, 11\) \(the "
                                         r"vocabulary size\), got ids from 0 to 11"):
        model(torch.tensor([[0, 11]]))
    with pytest.raises(ValueError, match=r"got ids from -1 to 12; outside it: -1, 12$"):
        model(torch.tensor([[-1, 3, 12, 12]]))
    with pytest.raises(ValueError, match=r"\(the vocabulary size\), got ids from 98 to 98$"):
        model(torch.tensor([[98]]))
    with pytest.raises(TypeError, match=r"^ids must be Int\[Tensor, 'B T'\], got f32\[1,3\]"):
        model(torch.rand(1, 3))
    with pytest.raises(ValueError, match="ids has 65 positions, more than the model's "
                                         "max_len=64"):
        model(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^d_model must be a multiple of num_heads = 4, "
                       r"got 10"):
        TransformerLM(11, d_model=10, num_heads=4)
    with pytest.raises(ValueError, match="d_model must be a multiple of num_heads = 4"):
        TransformerLMConfig(d_model=6)                   # refused where it is made
    with pytest.raises(ValueError, match=r"ids must have shape \(B, T\) with T >= 1, got \(1, 0\)"):
        model(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(TypeError, match="unknown TransformerLM options: \\['width'\\]"):
        TransformerLM(11, width=3)
    with pytest.raises(ValueError, match="dropout must be in \\[0, 1\\)"):
        TransformerLM(11, dropout=1.0)
    with pytest.raises(TypeError, match="^config must be .*TransformerLMConfig"):
        TransformerLM(11, {"d_model": 8})
    with pytest.raises(TypeError, match="^d_model must be int, got 8.0"):
        TransformerLMConfig(d_model=8.0)
    with pytest.raises(TypeError, match="^d_ff must be an int, got 8.0"):
        TransformerLM(11, d_ff=8.0)                     # checked inside as well
    assert TransformerLM(11, TransformerLMConfig(num_layers=3)).num_layers == 3


def test_cached_and_uncached_generation_give_the_same_tokens():
    model = small()
    prompt = torch.randint(0, 11, (3, 4))
    greedy = [generate(model, prompt, 30, greedy=True, use_cache=c) for c in (True, False)]
    assert torch.equal(greedy[0], greedy[1]) and torch.equal(greedy[0][:, :4], prompt)
    sampled = [generate(model, prompt, 30, temperature=1.3, use_cache=c,
                        generator=torch.Generator().manual_seed(7)) for c in (True, False)]
    assert torch.equal(sampled[0], sampled[1])
    assert not torch.equal(sampled[0], greedy[0])   # sampling does sample


def test_generation_restores_the_training_mode():
    model = small().train()
    generate(model, torch.tensor([[1]]), 3)
    assert model.training
    model.eval()
    generate(model, torch.tensor([[1]]), 3)
    assert not model.training


def test_generation_bad_input():
    model = small()
    prompt = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="temperature must be > 0.0, got 0.0"):
        generate(model, prompt, 5, temperature=0.0)
    with pytest.raises(ValueError, match="temperature must be > 0.0, got -1.0"):
        generate(model, prompt, 5, temperature=-1.0)
    # the last token is never read back: 3 + 62 tokens need 64 positions, 3 + 63 need 65
    assert generate(model, prompt, 62, greedy=True).shape == (1, 65)
    with pytest.raises(ValueError, match="prompt length 3 \\+ num_tokens 63 - 1 = 65 positions "
                                         "to read, more than the model's max_len=64"):
        generate(model, prompt, 63)
    with pytest.raises(ValueError, match=r"prompt must hold token ids in \[0, 11\)"):
        generate(model, torch.tensor([[1, 20]]), 5)
    with pytest.raises(ValueError, match="num_tokens must be >= 1"):
        generate(model, prompt, 0)
    with pytest.raises(TypeError, match=r"^prompt must be Int\[Tensor, 'B T_0'\], got i64\[2\]"):
        generate(model, torch.tensor([1, 2]), 5)
    with pytest.raises(ValueError, match=r"prompt must have shape \(B, T_0\) with T_0 >= 1"):
        generate(model, torch.zeros(1, 0, dtype=torch.long), 5)
    with pytest.raises(TypeError, match=r"^generator must be .*Generator \| None, got 3"):
        generate(model, prompt, 5, generator=3)
    with pytest.raises(TypeError, match="^greedy must be bool, got 'yes'"):
        generate(model, prompt, 5, greedy="yes")
    with pytest.raises(TypeError, match="^temperature must be float, got 'hot'"):
        generate(model, prompt, 5, temperature="hot", greedy=True)
    with pytest.raises(TypeError, match="^model must be .*Module, got 'model'"):
        generate("model", prompt, 5)


def test_next_token_greedy_and_temperature():
    logits = torch.tensor([[0.0, 3.0, 1.0], [5.0, 0.0, 0.0]])
    assert next_token(logits, greedy=True).tolist() == [1, 0]
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([next_token(logits, temperature=1.0, generator=g)
                         for _ in range(4000)])          # (n, B)
    frequency = (draws[:, 0] == 1).double().mean().item()
    expected = torch.softmax(logits[0], -1)[1].item()
    assert abs(frequency - expected) < 0.03
    hot = torch.stack([next_token(logits, temperature=100.0, generator=g)
                       for _ in range(3000)])
    assert abs((hot[:, 0] == 0).double().mean().item() - 1 / 3) < 0.04


def test_a_recurrent_model_has_no_length_limit():
    torch.manual_seed(0)
    model = RecurrentLM(11, hidden_size=8, embedding_dim=4)
    out = generate(model, torch.tensor([[1]]), 300, greedy=True)
    assert out.shape == (1, 301)


def test_kv_cache_is_a_public_dataclass():
    model = small()
    cache = model.init_state(1)
    assert isinstance(cache, KVCache) and cache.length == 0 and cache.nbytes == 0
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        model.init_state(0)


def test_a_sliding_context_writes_past_max_len_and_reads_only_the_window():
    model = small()
    prompt = torch.randint(0, 11, (2, 5))
    long = generate(model, prompt, 100, greedy=True, use_cache=False, context=8)
    assert long.shape == (2, 105)
    # each step is the model's greedy choice given the last 8 tokens only
    for t in (20, 60, 104):
        logits, _ = model(long[:, t - 8:t])
        assert torch.equal(logits[:, -1].argmax(-1), long[:, t])
    # a window as long as the text changes nothing
    assert torch.equal(generate(model, prompt, 20, greedy=True, use_cache=False, context=25),
                       generate(model, prompt, 20, greedy=True))
    with pytest.raises(ValueError, match="context needs use_cache=False"):
        generate(model, prompt, 5, context=8)
    with pytest.raises(ValueError, match=r"^context must be <= 64, got 65"):
        generate(model, prompt, 5, context=65, use_cache=False)
    with pytest.raises(ValueError, match="context must be >= 1"):
        generate(model, prompt, 5, context=0, use_cache=False)


def test_cached_self_attention_bad_input():
    from seqbook.language_model import cached_self_attention
    model = small()
    attention = model.blocks[0].self_attention
    cache = model.init_state(2)
    x = torch.randn(2, 3, 16)
    with torch.no_grad():  # a cache serves generation
        with pytest.raises(TypeError, match="^attention must be .*MultiHeadAttention, got Linear"):
            cached_self_attention(nn.Linear(16, 16), x, cache, 0)
        with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B T "
                           r"\{attention.d_model\}'\], got f32\[2,3,8\].*existing value of "
                           r"\{attention.d_model\}=16"):
            cached_self_attention(attention, torch.randn(2, 3, 8), cache, 0)
        with pytest.raises(ValueError, match=r"^layer must be <= 1, got 2"):
            cached_self_attention(attention, x, cache, 2)
        with pytest.raises(ValueError, match="^layer must be >= 0, got -1"):
            cached_self_attention(attention, x, cache, -1)
        with pytest.raises(ValueError, match=r"^x must have the cache's batch size 2 \(B, T, "
                           r"d_model\), got shape \(1, 3, 16\)"):
            cached_self_attention(attention, x[:1], cache, 0)
        with pytest.raises(TypeError, match="^x has dtype torch.float64 but cache.dtype"):
            cached_self_attention(attention, x.double(), cache, 0)
        with pytest.raises(TypeError, match="^cache must be .*KVCache, got None"):
            cached_self_attention(attention, x, None, 0)
        assert cache.length == 0                           # nothing was appended


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"temperature": -1.0}, ValueError, "temperature must be > 0.0, got -1.0"),
        ({"temperature": 0.0}, ValueError, "temperature must be > 0.0, got 0.0"),
        ({"temperature": "hot"}, TypeError, "^temperature must be float, got 'hot'"),
        ({"temperature": "hot", "greedy": True}, TypeError,
         "^temperature must be float, got 'hot'"),
        ({"greedy": "yes"}, TypeError, "^greedy must be bool, got 'yes'"),
        ({"generator": 3}, TypeError, r"^generator must be .*Generator \| None, got 3"),
    ],
)
def test_next_token_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        next_token(torch.randn(2, 5), **kwargs)


def test_next_token_rejects_bad_logits():
    with pytest.raises(TypeError,
                       match=r"^logits must be Float\[Tensor, 'B V'\], got f32\[5\]"):
        next_token(torch.randn(5))
    with pytest.raises(TypeError, match=r"^logits must be Float\[Tensor, 'B V'\], got i64"):
        next_token(torch.ones(2, 5, dtype=torch.long), greedy=True)
    with pytest.raises(TypeError, match="^logits must be Float"):
        next_token([[0.0, 1.0]], greedy=True)
    with pytest.raises(ValueError, match=r"^logits must hold .* \(V >= 1\), got shape \(2, 0\)"):
        next_token(torch.randn(2, 0), greedy=True)


def test_greedy_next_token_ignores_the_temperature():
    logits = torch.tensor([[0.0, 3.0, 1.0]])
    for temperature in (-1.0, 0.0, 2.0):
        assert next_token(logits, temperature, greedy=True).tolist() == [1]


@pytest.mark.parametrize("norm_first", [True, False])
def test_a_forward_hook_on_every_submodule_fires(norm_first):
    model = small(norm_first=norm_first)
    # every module but the container of the blocks (a ModuleList has no forward)
    modules = {name: module for name, module in model.named_modules()
               if not isinstance(module, nn.ModuleList)}
    fired = set()
    for name, module in modules.items():
        module.register_forward_hook(lambda *_, name=name: fired.add(name))
    model(torch.randint(0, 11, (2, 9)))
    assert fired == set(modules)


def test_the_forward_pass_compiles_without_a_graph_break():
    dynamo = pytest.importorskip("torch._dynamo")
    model = small()
    ids = torch.randint(0, 11, (2, 9))
    try:  # explain traces the forward pass without compiling it (no C compiler needed)
        explanation = dynamo.explain(model)(ids)
        compiled = torch.compile(model, backend="eager")
        logits, _ = compiled(ids)
    except (RuntimeError, ImportError, NotImplementedError) as error:  # dynamo's own
        pytest.skip(f"torch.compile is not available here: {type(error).__name__}: {error}")
    # a check that read a tensor's value (the ids' range) would break the graph
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert torch.allclose(logits, model(ids)[0], atol=1e-6)


def test_the_cache_appends_keys_and_values_after_the_cached_ones():
    model = small()
    cache = model.init_state(2)
    keys, values = torch.randn(2, 2, 4, 3, 4)               # (B, h, T, d_k) each
    K, V = cache.append(1, keys, values)
    assert cache.lengths == [0, 3] and torch.equal(K, keys) and torch.equal(V, values)
    K, V = cache.append(1, keys[:, :, :1], values[:, :, :1])
    assert K.shape == (2, 4, 4, 4) and torch.equal(K[:, :, 3], keys[:, :, 0])
    with pytest.raises(TypeError, match=r"^keys must be Float\[Tensor, '\{self.batch_size\} h T "
                       r"d_k'\], got f32\[1,4,3,4\]"):
        cache.append(0, keys[:1], values[:1])
    with pytest.raises(ValueError, match="^keys has 62 positions after 4 cached ones, more than "
                       "the cache's capacity of 64"):
        cache.append(1, torch.randn(2, 4, 62, 4), torch.randn(2, 4, 62, 4))
    with pytest.raises(ValueError, match="^layer must be <= 1, got 2"):
        cache.append(2, keys, values)
    assert cache.lengths == [0, 4]
