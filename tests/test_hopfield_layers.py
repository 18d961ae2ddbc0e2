"""seqbook.hopfield.layers: Hopfield layers are attention, with hflayers' options.

Every option of HopfieldConfig is checked against the formulas of Ramsauer et al.
(written out here with torch primitives) and, where the layer reduces to attention,
against torch.nn.MultiheadAttention or F.scaled_dot_product_attention, in float64.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.attention import scaled_dot_product_attention
from seqbook.hopfield import (
    HopfieldConfig,
    HopfieldLayer,
    HopfieldPooling,
    ModernHopfield,
    hopfield_association,
)

D = torch.float64


def _layer(config=None, **sizes):
    torch.manual_seed(0)
    sizes = {"state_size": 6, "stored_size": 5, "hidden_size": 8, "value_size": 3, **sizes}
    return HopfieldLayer(config=config, **sizes).to(D)


def _inputs(B=2, S=4, N=7, d_r=6, d_y=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, S, d_r, generator=g, dtype=D),
        torch.randn(B, N, d_y, generator=g, dtype=D),
    )


def _heads_formula(layer, R, Y, P=None, steps=0):
    """Ramsauer et al.'s layer, one head at a time, with explicit loops."""
    c = layer.config
    P = Y if P is None else P
    outputs = []
    for i in range(c.num_heads):
        Q = R if layer.W_Q is None else R @ layer.W_Q[i]
        K = Y @ layer.W_K[i]
        V = (P @ layer.W_K[i] if c.pattern_projection_as_connected else P) @ layer.W_V[i]
        for _ in range(steps):
            Q = torch.softmax(layer.beta * Q @ K.transpose(1, 2), -1) @ K
        A = torch.softmax(layer.beta * Q @ K.transpose(1, 2), -1)
        outputs.append(A @ V)
    return torch.cat(outputs, -1)


# --- the default layer is the book's equations, i.e. scaled dot-product attention ----


def test_default_layer_equals_scaled_dot_product_attention():
    layer = _layer()
    R, Y = _inputs()
    Z, A = layer(R, Y, return_weights=True)
    assert Z.dtype == D and A.shape == (2, 1, 4, 7)
    Q, K = R @ layer.W_Q[0], Y @ layer.W_K[0]
    V = K @ layer.W_V[0]  # tied values: V = Y W_K W_V
    assert layer.beta == 1 / math.sqrt(8)
    assert torch.allclose(Z, F.scaled_dot_product_attention(Q, K, V), atol=1e-12)
    out, weights = scaled_dot_product_attention(Q, K, V)
    assert torch.allclose(Z, out, atol=1e-12)
    assert torch.allclose(A[:, 0], weights, atol=1e-12)


def test_beta_scales_the_scores():
    layer = _layer(HopfieldConfig(beta=0.3))
    R, Y = _inputs()
    Q, K = R @ layer.W_Q[0], Y @ layer.W_K[0]
    expected = torch.softmax(0.3 * Q @ K.transpose(1, 2), -1) @ K @ layer.W_V[0]
    assert torch.allclose(layer(R, Y), expected, atol=1e-12)


# --- heads, biases, output projection, untied values: nn.MultiheadAttention ---------


@pytest.mark.parametrize("bias", [True, False])
def test_from_torch_equals_multihead_attention(bias):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(12, 3, bias=bias, batch_first=True).to(D)
    layer = HopfieldLayer.from_torch(mha)
    assert layer.config.num_heads == 3 and layer.config.output_size == 12
    g = torch.Generator().manual_seed(2)
    R, Y, P = (torch.randn(2, n, 12, generator=g, dtype=D) for n in (4, 9, 9))
    assert torch.allclose(layer(R, Y, P), mha(R, Y, P)[0], atol=1e-12)
    padding = torch.ones(2, 9, dtype=torch.bool)
    padding[1, 6:] = False  # True = present here; nn.MultiheadAttention: True = ignore
    Z, A = layer(R, Y, P, mask=padding, return_weights=True)
    expected, weights = mha(R, Y, P, key_padding_mask=~padding, average_attn_weights=False)
    assert torch.allclose(Z, expected, atol=1e-12)
    assert torch.allclose(A, weights, atol=1e-12)


def test_heads_are_independent_hopfield_updates_concatenated():
    config = HopfieldConfig(num_heads=3)
    layer = _layer(config)
    R, Y = _inputs()
    Z = layer(R, Y)
    assert Z.shape == (2, 4, 9)
    assert torch.allclose(Z, _heads_formula(layer, R, Y), atol=1e-12)


def test_output_projection_and_biases():
    layer = _layer(HopfieldConfig(num_heads=2, input_bias=True, output_size=11))
    with torch.no_grad():
        for b in (layer.b_Q, layer.b_K, layer.b_V, layer.b_O):
            b.normal_()
    R, Y = _inputs()
    heads = []
    for i in range(2):
        Q = R @ layer.W_Q[i] + layer.b_Q[i]
        K = Y @ layer.W_K[i] + layer.b_K[i]
        V = K @ layer.W_V[i] + layer.b_V[i]  # tied: V = (Y W_K + b_K) W_V + b_V
        heads.append(F.scaled_dot_product_attention(Q, K, V, scale=layer.beta))
    expected = torch.cat(heads, -1) @ layer.W_O + layer.b_O
    assert layer.output_size == 11
    assert torch.allclose(layer(R, Y), expected, atol=1e-12)


def test_untied_values_project_the_pattern_projection():
    layer = _layer(HopfieldConfig(pattern_projection_as_connected=False), pattern_projection_size=4)
    R, Y = _inputs()
    P = torch.randn(2, 7, 4, dtype=D)
    Q, K, V = R @ layer.W_Q[0], Y @ layer.W_K[0], P @ layer.W_V[0]
    assert torch.allclose(layer(R, Y, P), F.scaled_dot_product_attention(Q, K, V), atol=1e-12)
    assert torch.allclose(layer(R, Y, P), _heads_formula(layer, R, Y, P), atol=1e-12)


def test_static_state_patterns_are_not_projected():
    layer = _layer(HopfieldConfig(state_pattern_as_static=True, num_heads=2), state_size=8)
    assert layer.W_Q is None
    R, Y = _inputs(d_r=8)
    assert torch.allclose(layer(R, Y), _heads_formula(layer, R, Y), atol=1e-12)


# --- layer norms (hflayers' normalize_* options) -----------------------------------


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norms_on_state_stored_and_projected_patterns(affine):
    config = HopfieldConfig(
        normalize_state_pattern=True, normalize_state_pattern_affine=affine,
        normalize_stored_pattern=True, normalize_stored_pattern_affine=affine,
        normalize_pattern_projection=True, normalize_pattern_projection_affine=affine,
        pattern_projection_as_connected=False,
    )
    layer = _layer(config, pattern_projection_size=4)
    if affine:
        with torch.no_grad():
            for norm in (layer.norm_state, layer.norm_stored, layer.norm_projection):
                norm.weight.uniform_(0.5, 2.0)
                norm.bias.normal_()
    R, Y = _inputs()
    P = torch.randn(2, 7, 4, dtype=D)

    def ln(x, norm):
        return F.layer_norm(
            x, x.shape[-1:], norm.weight if affine else None, norm.bias if affine else None
        )

    expected = _heads_formula(
        layer, ln(R, layer.norm_state), ln(Y, layer.norm_stored), ln(P, layer.norm_projection)
    )
    assert torch.allclose(layer(R, Y, P), expected, atol=1e-12)
    assert (sum(p.numel() for p in layer.parameters()) > 6 * 8 + 5 * 8 + 4 * 3) == affine


def test_layer_norm_in_the_hopfield_space():
    layer = _layer(
        HopfieldConfig(normalize_hopfield_space=True, normalize_hopfield_space_affine=True)
    )
    with torch.no_grad():
        layer.norm_hopfield.weight.uniform_(0.5, 2.0)
        layer.norm_hopfield.bias.normal_()
    R, Y = _inputs()
    w, b = layer.norm_hopfield.weight, layer.norm_hopfield.bias
    Q = F.layer_norm(R @ layer.W_Q[0], (8,), w, b)
    K_raw = Y @ layer.W_K[0]
    K = F.layer_norm(K_raw, (8,), w, b)
    V = K_raw @ layer.W_V[0]  # the values are projected from the raw keys
    expected = F.scaled_dot_product_attention(Q, K, V, scale=layer.beta)
    assert torch.allclose(layer(R, Y), expected, atol=1e-12)


# --- updates of the state patterns before the retrieval ----------------------------


@pytest.mark.parametrize("steps", [1, 3])
def test_update_steps_are_modern_hopfield_updates_in_key_space(steps):
    layer = _layer(
        HopfieldConfig(beta=0.5, update_steps_max=steps, update_steps_eps=1e-300, num_heads=2)
    )
    R, Y = _inputs()
    assert torch.allclose(layer(R, Y), _heads_formula(layer, R, Y, steps=steps), atol=1e-12)
    # the same, with the package's continuous Hopfield network: K's rows are the memory
    Q, K = R[0] @ layer.W_Q[1], Y[0] @ layer.W_K[1]
    memory = ModernHopfield(K, beta=0.5)
    _, A = layer(R, Y, return_weights=True)
    expected = memory.weights(memory.update(Q, steps=steps))
    assert torch.allclose(A[0, 1], expected, atol=1e-12)


def test_update_to_convergence_reaches_a_fixed_point():
    layer = _layer(HopfieldConfig(beta=2.0, update_steps_max=None, update_steps_eps=1e-10))
    R, Y = _inputs(S=5, N=30)
    _, A = layer(R, Y, return_weights=True)
    K = (Y @ layer.W_K[0])[:, None]  # (B, 1, N, d_k)
    once_more = hopfield_association(A @ K, K, beta=2.0)
    assert (once_more - A).norm(dim=(-2, -1)).max() <= 1e-10
    one_step = _layer(HopfieldConfig(beta=2.0))(R, Y, return_weights=True)[1]
    assert (one_step - A).abs().max() > 1e-6  # the updates did change something


def test_convergence_is_decided_per_sample():
    # hflayers stops a head when all samples of the batch have converged; here every
    # sample stops on its own, so its result does not depend on its batch companions
    layer = _layer(HopfieldConfig(beta=1.0, update_steps_max=None, update_steps_eps=1e-3))
    R, Y = _inputs(B=3)
    together = layer(R, Y)
    for b in range(3):
        assert torch.equal(layer(R[b : b + 1], Y[b : b + 1])[0], together[b])


def test_update_steps_eps_stops_early():
    K = torch.eye(3, dtype=D).expand(1, 1, 3, 3) * 6.0  # well separated patterns
    Q = torch.tensor([[[[3.0, 1.0, 0.0]]]], dtype=D)
    loose = hopfield_association(Q, K, beta=1.0, update_steps_max=50, update_steps_eps=0.5)
    tight = hopfield_association(Q, K, beta=1.0, update_steps_max=50, update_steps_eps=1e-14)
    one = hopfield_association(Q, K, beta=1.0, update_steps_max=1)
    assert torch.equal(loose, one)  # the first update changed A by less than 0.5
    assert not torch.equal(tight, one)


# --- dropout on the association matrix ---------------------------------------------


def test_dropout_acts_on_the_association_matrix_in_training_only():
    layer = _layer(HopfieldConfig(dropout=0.4))
    R, Y = _inputs()
    layer.eval()
    Z_eval, A = layer(R, Y, return_weights=True)
    assert torch.allclose(Z_eval, _heads_formula(layer, R, Y), atol=1e-12)
    layer.train()
    torch.manual_seed(5)
    Z_train = layer(R, Y)
    torch.manual_seed(5)
    V = (Y @ layer.W_K[0] @ layer.W_V[0])[:, None]
    expected = (F.dropout(A, 0.4, training=True) @ V)[:, 0]
    assert torch.allclose(Z_train, expected, atol=1e-12)
    assert not torch.allclose(Z_train, Z_eval)


# --- masks, gradients, dtypes --------------------------------------------------------


def test_masked_stored_patterns_are_ignored():
    layer = _layer()
    R, Y = _inputs()
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[0, 5:] = False
    Z = layer(R, Y, mask=mask)
    assert torch.allclose(Z[0], layer(R[:1], Y[:1, :5])[0], atol=1e-12)
    per_state = mask[:, None].expand(2, 4, 7).clone()
    per_state[1, 2, :3] = False
    Q, K = R @ layer.W_Q[0], Y @ layer.W_K[0]
    reference = F.scaled_dot_product_attention(Q, K, K @ layer.W_V[0], attn_mask=per_state)
    assert torch.allclose(layer(R, Y, mask=per_state), reference, atol=1e-12)


def test_hopfield_layer_trains():
    layer = _layer(HopfieldConfig(num_heads=2, input_bias=True, output_size=4, update_steps_max=2,
                                  normalize_stored_pattern=True, normalize_state_pattern=True))
    R, Y = _inputs()
    layer(R, Y).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())


def test_float32_layer_computes_in_float32():
    torch.manual_seed(0)
    layer = HopfieldLayer(6, 5, 8)
    R, Y = _inputs()
    Z = layer(R.float(), Y.float())
    assert Z.dtype == torch.float32
    assert torch.allclose(Z.double(), layer.double()(R, Y), atol=1e-5)


# --- pooling -----------------------------------------------------------------------


def test_pooling_with_a_zero_query_is_mean_pooling():
    torch.manual_seed(0)
    pool = HopfieldPooling(input_size=5, hidden_size=4, value_size=3).to(D)
    with torch.no_grad():
        pool.query.zero_()
    Y = torch.randn(3, 11, 5, dtype=D)
    expected = (Y @ pool.hopfield.W_K[0] @ pool.hopfield.W_V[0]).mean(1)
    assert torch.allclose(pool(Y), expected, atol=1e-12)


def test_pooling_is_permutation_invariant_and_respects_the_mask():
    torch.manual_seed(0)
    pool = HopfieldPooling(input_size=5, hidden_size=4, num_queries=2).to(D)
    Y = torch.randn(3, 11, 5, dtype=D)
    z, A = pool(Y, return_weights=True)
    assert z.shape == (3, 8) and A.shape == (3, 1, 2, 11)
    assert torch.allclose(z, pool(Y[:, torch.randperm(11)]), atol=1e-12)
    mask = torch.ones(3, 11, dtype=torch.bool)
    mask[1, 6:] = False
    padded = Y.clone()
    padded[1, 6:] = 100.0  # padding content must not matter
    assert torch.allclose(pool(padded, mask=mask)[1], pool(Y[1:2, :6])[0], atol=1e-12)


def test_pooling_is_a_hopfield_layer_with_a_learned_static_state_pattern():
    torch.manual_seed(0)
    pool = HopfieldPooling(
        input_size=5, hidden_size=4, config=HopfieldConfig(num_heads=2, beta=0.7)
    ).to(D)
    assert pool.hopfield.W_Q is None and pool.beta == 0.7
    Y = torch.randn(2, 6, 5, dtype=D)
    R = pool.query.detach().expand(2, 1, 4)
    assert torch.allclose(pool(Y), _heads_formula(pool.hopfield, R, Y)[:, 0], atol=1e-12)


# --- bad input ------------------------------------------------------------------------


def test_bad_configs_are_rejected():
    with pytest.raises(ValueError, match="beta must be > 0"):
        HopfieldConfig(beta=0.0)
    with pytest.raises(ValueError, match="beta must be finite"):
        HopfieldConfig(beta=math.inf)
    with pytest.raises(ValueError, match="num_heads must be >= 1"):
        HopfieldConfig(num_heads=0)
    with pytest.raises(ValueError, match="update_steps_max must be >= 0"):
        HopfieldConfig(update_steps_max=-1)
    with pytest.raises(ValueError, match="update_steps_eps must be > 0"):
        HopfieldConfig(update_steps_eps=0.0)
    with pytest.raises(ValueError, match="dropout must be in \\[0, 1\\)"):
        HopfieldConfig(dropout=1.0)
    with pytest.raises(TypeError, match="^normalize_stored_pattern must be bool, got 1"):
        HopfieldConfig(normalize_stored_pattern=1)
    with pytest.raises(ValueError, match="output_size must be >= 1"):
        HopfieldConfig(output_size=0)
    with pytest.raises(TypeError, match=r"^config must be seqbook\.hopfield\.layers\."
                                        r"HopfieldConfig"):
        HopfieldLayer(3, 3, 4, config={"num_heads": 2})
    with pytest.raises(ValueError, match="hidden_size must be >= 1"):
        HopfieldLayer(3, 3, 0)
    with pytest.raises(
        ValueError, match="state_size must equal hidden_size = 4 for static state patterns"
    ):
        HopfieldLayer(3, 3, 4, config=HopfieldConfig(state_pattern_as_static=True))
    with pytest.raises(ValueError, match="pattern_projection_size must equal stored_size = 3"):
        HopfieldLayer(3, 3, 4, pattern_projection_size=5)
    with pytest.raises(TypeError, match=r"^module must be torch\.nn\.modules\.activation\."
                                        r"MultiheadAttention, got Linear"):
        HopfieldLayer.from_torch(nn.Linear(3, 3))
    with pytest.raises(ValueError, match="kdim == vdim == embed_dim"):
        HopfieldLayer.from_torch(nn.MultiheadAttention(4, 2, kdim=3))


def test_bad_inputs_are_rejected():
    layer = HopfieldLayer(3, 2, 4)
    with pytest.raises(TypeError, match=r"^R must be Float\[Tensor, 'B S \{self.state_size\}'\], "
                                        r"got f32\[1,2,4\].*\{self.state_size\}=3"):
        layer(torch.randn(1, 2, 4), torch.randn(1, 5, 2))
    with pytest.raises(TypeError, match=r"^Y must be .*\{self.stored_size\}=2"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 3))
    with pytest.raises(TypeError, match=r"^Y must be .* the size of dimension B is 1 which does "
                                        r"not equal the existing value of 2"):
        layer(torch.randn(2, 2, 3), torch.randn(1, 5, 2))
    with pytest.raises(TypeError, match="^R must be .* this array has 2 dimensions"):
        layer(torch.randn(2, 3), torch.randn(1, 5, 2))
    with pytest.raises(TypeError, match=r"^R must be Float\[.*got i64\[1,2,3\]"):
        layer(torch.ones(1, 2, 3, dtype=torch.long), torch.randn(1, 5, 2))
    with pytest.raises(
        TypeError,
        match=r"^Y must have the dtype of the module's parameters \(torch.float32\), got "
              r"torch.float64",
    ):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2, dtype=D))
    with pytest.raises(ValueError, match=r"^Y must hold at least one stored pattern \(N >= 1\)"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 0, 2))
    with pytest.raises(TypeError, match=r"^P must be Float\[Tensor, 'B N "
                                        r"\{self.pattern_projection_size\}'\] \| None, "
                                        r"got f32\[1,4,2\]"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), torch.randn(1, 4, 2))
    with pytest.raises(TypeError, match=r"^mask must be Bool\[Tensor, 'B N'\] \| "
                                        r"Bool\[Tensor, 'B S N'\] \| None, got f32\[1,5\]"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), mask=torch.ones(1, 5))
    with pytest.raises(TypeError, match=r"^mask must be .* got bool\[1,4\].*N=5"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), mask=torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="no stored pattern to attend to"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), mask=torch.zeros(1, 5, dtype=torch.bool))
    pool = HopfieldPooling(3, 4)
    with pytest.raises(TypeError, match=r"^Y must be .*\{self.input_size\}=3"):
        pool(torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match=r"^Y must hold at least one stored pattern \(N >= 1\)"):
        pool(torch.randn(2, 0, 3))
    with pytest.raises(TypeError, match=r"^config must be seqbook\.hopfield\.layers\."
                                        r"HopfieldConfig"):
        HopfieldPooling(3, 4, config=2)


def test_bad_association_arguments_are_rejected():
    Q, K = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 5, 4)
    with pytest.raises(TypeError, match="^Q must be .* this array has 3 dimensions, not the 4"):
        hopfield_association(Q[0], K, 1.0)
    with pytest.raises(TypeError, match=r"^K must be Float\[Tensor, 'B #h N d_k'\], got "
                                        r"f32\[1,1,5,3\]\(torch\): the size of dimension d_k is 3"):
        hopfield_association(Q, K[..., :3], 1.0)
    with pytest.raises(
        TypeError,
        match="^K has dtype torch.float64 but Q has dtype torch.float32",
    ):
        hopfield_association(Q, K.double(), 1.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        hopfield_association(Q, K, -1.0)
    with pytest.raises(ValueError, match="update_steps_max must be >= 0"):
        hopfield_association(Q, K, 1.0, update_steps_max=-2)
    with pytest.raises(TypeError, match=r"^mask must be Bool\[Tensor, '#N'\] .* got f32"):
        hopfield_association(Q, K, 1.0, mask=torch.ones(1, 1, 1, 5))


def test_association_checks_batch_heads_and_mask_shape():
    Q, K = torch.randn(2, 3, 4, 6), torch.randn(2, 3, 5, 6)
    with pytest.raises(TypeError, match=r"^K must be .* the size of dimension B is 1 which does "
                                        r"not equal the existing value of 2"):
        hopfield_association(Q, K[:1], 1.0)
    # Q and K have the same number of heads h, or one of them has one
    with pytest.raises(TypeError, match=r"^K must be .* the size of dimension h is 2 which does "
                                        r"not equal the existing value of 3"):
        hopfield_association(Q, K[:, :2], 1.0)
    ones = torch.ones(2, 3, 4, 5, dtype=torch.bool)
    for bad in (ones[..., :4], ones[:, :2], ones[None], torch.ones(3, 5, dtype=torch.bool)):
        # broadcastable to (B, h, S, N) = (2, 3, 4, 5)
        with pytest.raises(TypeError, match=r"^mask must be Bool\[Tensor, '#N'\] \| .*"
                                            r"Bool\[Tensor, '#B #h #S #N'\] \| None, got bool"):
            hopfield_association(Q, K, 1.0, mask=bad)
    # one head of Q (or K) is shared by the other's heads; masks broadcast
    shared = hopfield_association(Q[:, :1], K, 1.0, mask=ones[:, :1, :1])
    assert torch.allclose(shared, hopfield_association(Q[:, :1].expand(-1, 3, -1, -1), K, 1.0))
    assert hopfield_association(Q, K[:, :1], 1.0, mask=ones[0, 0]).shape == (2, 3, 4, 5)


def test_return_weights_must_be_a_bool():
    R, Y = torch.randn(1, 2, 3), torch.randn(1, 5, 2)
    with pytest.raises(TypeError, match="^return_weights must be bool, got 'yes'"):
        HopfieldLayer(3, 2, 4)(R, Y, return_weights="yes")
    with pytest.raises(TypeError, match="^return_weights must be bool, got 1"):
        HopfieldPooling(2, 4)(Y, return_weights=1)


@pytest.mark.parametrize("training", [True, False])
def test_from_torch_copies_the_training_mode(training):
    mha = nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=True).train(training)
    assert HopfieldLayer.from_torch(mha).training is training


# --- the submodules run as modules: their forward hooks fire ------------------------


@pytest.mark.parametrize("config", [
    HopfieldConfig(),
    HopfieldConfig(num_heads=2, normalize_stored_pattern=True, normalize_state_pattern=True,
                   normalize_pattern_projection=True, normalize_hopfield_space=True),
])
def test_forward_hooks_of_every_submodule_fire(config):
    torch.manual_seed(0)
    R, Y = (x.float() for x in _inputs(d_r=6, d_y=5))
    models = {"layer": (HopfieldLayer(6, 5, 8, config=config), (R, Y)),
              "pooling": (HopfieldPooling(5, 8, config=config), (Y,))}
    for name, (model, inputs) in models.items():
        fired = set()
        for sub_name, sub in model.named_modules():
            sub.register_forward_hook(lambda m, args, out, sub_name=sub_name: fired.add(sub_name))
        model(*inputs)
        assert fired == {n for n, _ in model.named_modules()}, name
