import pytest
import torch
from torch import nn

from seqbook.transformer import AddNorm, LayerNorm, layer_norm


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_equals_torch_layer_norm(eps):
    torch.manual_seed(0)
    reference = nn.LayerNorm(16, eps=eps)
    with torch.no_grad():  # gains and biases other than 1 and 0
        reference.weight.normal_()
        reference.bias.normal_()
    ours = LayerNorm.from_torch(reference)
    x = torch.randn(4, 7, 16) * 3 + 2
    assert torch.allclose(ours(x), reference(x), atol=1e-6)
    assert ours.eps == eps


def test_gradients_equal_torch():
    torch.manual_seed(1)
    reference = nn.LayerNorm(8)
    ours = LayerNorm.from_torch(reference)
    x = torch.randn(3, 8, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    (reference(x) ** 3).sum().backward()
    (ours(x2) ** 3).sum().backward()
    assert torch.allclose(x.grad, x2.grad, atol=1e-5)
    assert torch.allclose(reference.weight.grad, ours.a.grad, atol=1e-5)


def test_output_is_standardised_and_constant_input_is_finite():
    y = LayerNorm(32)(torch.randn(5, 32) * 10 + 4)
    assert torch.allclose(y.mean(-1), torch.zeros(5), atol=1e-5)
    assert torch.allclose(y.var(-1, unbiased=False), torch.ones(5), atol=1e-3)
    assert torch.equal(LayerNorm(4)(torch.full((1, 4), 3.0)), torch.zeros(1, 4))


def test_notes_form_with_sample_std_differs():
    # Aryaman's notes' (x - mean) / (s + eps) with the sample std is off by sqrt(d/(d-1))
    x = torch.randn(6, 8)
    notes_form = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)
    ours = layer_norm(x, torch.ones(8), torch.zeros(8))
    ratio = (ours / notes_form).median()
    assert ratio.item() == pytest.approx((8 / 7) ** 0.5, rel=1e-3)


def test_add_norm_pre_and_post():
    torch.manual_seed(2)
    x = torch.randn(2, 3, 4)
    linear = nn.Linear(4, 4)
    pre, post = AddNorm(4, norm_first=True), AddNorm(4)  # post-norm: torch's default
    assert torch.allclose(pre(x, linear), x + linear(pre.norm(x)))
    assert torch.allclose(post(x, linear), post.norm(x + linear(x)))
    # post-norm output is normalised, pre-norm output is not
    assert torch.allclose(post(x, linear).mean(-1), torch.zeros(2, 3), atol=1e-6)


def test_add_norm_dropout_only_in_training():
    add_norm = AddNorm(4, dropout=0.5, norm_first=True)
    x = torch.randn(20, 4)
    ones = lambda h: torch.ones_like(h)  # noqa: E731
    assert torch.equal(add_norm.eval()(x, ones), x + 1)
    dropped = add_norm.train()(x, ones) - x
    assert (dropped.abs() < 1e-5).any() and ((dropped - 2).abs() < 1e-5).any()
    assert ((dropped.abs() < 1e-5) | ((dropped - 2).abs() < 1e-5)).all()


def test_bad_input():
    with pytest.raises(TypeError, match=r"^x must be .*\{self.d_model\}=4"):
        LayerNorm(4)(torch.randn(2, 5))
    with pytest.raises(ValueError, match="eps"):
        LayerNorm(4, eps=0.0)
    with pytest.raises(TypeError, match=r"^a must be .*the size of dimension d is 4"):
        layer_norm(torch.randn(2, 3), torch.ones(4), torch.zeros(3))
    with pytest.raises(TypeError, match=r"^x must be .*dtype int64"):
        LayerNorm(4)(torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="^module must be "):
        LayerNorm.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="one dimension"):
        LayerNorm.from_torch(nn.LayerNorm((2, 3)))
    with pytest.raises(TypeError, match="^norm_first must be bool"):
        AddNorm(4, norm_first="yes")
    with pytest.raises(TypeError, match="^sublayer must be "):
        AddNorm(4)(torch.randn(2, 4), "not a function")
    with pytest.raises(ValueError, match="dropout"):
        AddNorm(4, dropout=1.0)


@pytest.mark.parametrize("bias", [True, False])
def test_float64_equals_torch_and_round_trips(bias):
    torch.manual_seed(3)
    reference = nn.LayerNorm(6, eps=1e-3, bias=bias, dtype=torch.float64)
    with torch.no_grad():
        reference.weight.normal_()
        if bias:
            reference.bias.normal_()
    ours = LayerNorm.from_torch(reference)
    assert ours.a.dtype == torch.float64 and (ours.b is None) == (not bias)
    x = torch.randn(3, 5, 6, dtype=torch.float64) * 4 + 1
    assert torch.allclose(ours(x), reference(x), atol=1e-13, rtol=0)
    back = ours.to_torch()
    assert torch.allclose(back(x), reference(x), atol=1e-13, rtol=0)
    b = None if not bias else reference.bias
    expected = torch.nn.functional.layer_norm(x, (6,), reference.weight, b, 1e-3)
    assert torch.allclose(layer_norm(x, reference.weight, b, 1e-3), expected, atol=1e-13, rtol=0)


def test_dtypes_must_agree():
    with pytest.raises(TypeError, match="x must have the dtype of the module's parameters"):
        LayerNorm(4)(torch.randn(2, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match="a has dtype torch.float64 but x has dtype torch.float32"):
        layer_norm(torch.randn(2, 4), torch.ones(4, dtype=torch.float64))


@pytest.mark.parametrize("norm_first", [True, False])
def test_add_norm_rejects_a_sublayer_that_changes_the_shape(norm_first):
    add_norm = AddNorm(4, norm_first=norm_first)
    x = torch.randn(2, 3, 4)
    with pytest.raises(
        ValueError, match=r"sublayer must return a tensor of its input's shape \(2, 3, 4\)"
    ):
        add_norm(x, nn.Linear(4, 1))  # (2, 3, 1) would broadcast silently
    with pytest.raises(ValueError, match="sublayer must return a tensor"):
        add_norm(x, lambda h: h.tolist())
    with pytest.raises(TypeError, match=r"^x must be .*\{self.d_model\}=4"):
        add_norm(torch.randn(2, 3, 5), nn.Linear(5, 5))


@pytest.mark.parametrize("norm_first", [True, False])
def test_add_norm_in_float64_is_the_formula(norm_first):
    torch.manual_seed(7)
    add_norm = AddNorm(5, norm_first=norm_first).double()
    with torch.no_grad():
        add_norm.norm.a.normal_(), add_norm.norm.b.normal_()
    x, linear = torch.randn(3, 4, 5, dtype=torch.float64), nn.Linear(5, 5).double()
    ln = lambda h: torch.nn.functional.layer_norm(h, (5,), add_norm.norm.a, add_norm.norm.b)  # noqa: E731
    expected = x + linear(ln(x)) if norm_first else ln(x + linear(x))
    out = add_norm(x, linear)
    assert out.dtype == torch.float64
    assert torch.allclose(out, expected, atol=1e-14, rtol=1e-13)


@pytest.mark.parametrize("training", [True, False])
def test_from_torch_copies_the_training_mode(training):
    assert LayerNorm.from_torch(nn.LayerNorm(4).train(training)).training is training
