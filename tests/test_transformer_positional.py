import math

import pytest
import torch

from seqbook.transformer import PositionalEncoding, positional_encoding, relative_position_map


def test_matches_the_formula_entry_by_entry():
    pe = positional_encoding(30, 10)
    for pos in (0, 1, 7, 29):
        for i in range(5):
            angle = pos / 10000 ** (2 * i / 10)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_odd_width_ends_with_a_sine():
    pe = positional_encoding(12, 7)
    assert pe.shape == (12, 7)
    angle = torch.arange(12.0) / 10000 ** (6 / 7)
    assert torch.allclose(pe[:, 6], torch.sin(angle), atol=1e-6)


@pytest.mark.parametrize("offset", [0, 1, 5, 17, -3])
def test_shift_is_one_rotation_for_every_position(offset):
    d_model, L = 16, 200
    pe = positional_encoding(L, d_model).double()
    M = relative_position_map(offset, d_model).double()
    lo, hi = max(0, -offset), min(L, L - offset)
    shifted = pe[lo:hi] @ M.T  # (positions, d_model)
    assert torch.allclose(shifted, pe[lo + offset : hi + offset], atol=1e-5)
    # a rotation: orthogonal, determinant 1, and M_a M_b = M_(a+b)
    assert torch.allclose(M @ M.T, torch.eye(d_model, dtype=M.dtype), atol=1e-6)
    M2 = relative_position_map(2, d_model).double()
    assert torch.allclose(
        M @ M2, relative_position_map(offset + 2, d_model).double(), atol=1e-5
    )


def test_dot_products_depend_on_the_offset_only():
    pe = positional_encoding(100, 32).double()
    gram = pe @ pe.T
    for k in (1, 4, 9):
        diagonal = torch.diagonal(gram, offset=k)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-5)


def test_module_adds_the_table_and_keeps_shape():
    module = PositionalEncoding(d_model=8, max_len=20).eval()
    x = torch.randn(3, 11, 8)
    assert torch.allclose(module(x), x + positional_encoding(20, 8)[:11])
    assert "pe" not in module.state_dict()  # recomputed, not saved


def test_dropout_is_applied_in_training_only():
    module = PositionalEncoding(d_model=8, max_len=20, dropout=0.5)
    x = torch.randn(4, 10, 8)
    assert not torch.allclose(module.train()(x), module.eval()(x))


def test_bad_input():
    with pytest.raises(ValueError, match="max_len"):
        positional_encoding(0, 8)
    with pytest.raises(TypeError, match="^d_model must be int"):
        positional_encoding(5, 8.0)
    with pytest.raises(ValueError, match="base"):
        positional_encoding(5, 8, base=1.0)
    with pytest.raises(ValueError, match=r"d_model must be a multiple of 2 .*, got 7"):
        relative_position_map(1, 7)
    with pytest.raises(ValueError, match="d_model must be >= 1, got 0"):
        relative_position_map(1, 0)
    module = PositionalEncoding(d_model=8, max_len=10)
    with pytest.raises(ValueError, match=r"x must be at most max_len = 10 positions long, got 11"):
        module(torch.randn(2, 11, 8))
    with pytest.raises(TypeError, match=r"^x must be .*\{self.d_model\}=8"):
        module(torch.randn(2, 5, 6))
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B T \{self.d_model\}'\]"):
        module(torch.randn(5, 8))
    with pytest.raises(ValueError, match="dropout"):
        PositionalEncoding(8, dropout=1.0)
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype"):
        positional_encoding(5, 8, dtype=torch.long)


def test_float64_tables_are_float64_accurate():
    pe = positional_encoding(50, 12, dtype=torch.float64)
    assert pe.dtype == torch.float64
    pos, i = 37, 4
    assert pe[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (8 / 12)), abs=1e-15)
    M = relative_position_map(5, 12, dtype=torch.float64)
    assert torch.allclose(pe[:45] @ M.T, pe[5:], atol=1e-13, rtol=0)
    # the module adds float64-accurate positions to float64 input
    module = PositionalEncoding(d_model=12, max_len=50).double()
    x = torch.zeros(1, 50, 12, dtype=torch.float64)
    assert torch.equal(module(x)[0], pe)
    assert PositionalEncoding(12, 50)(torch.zeros(1, 3, 12)).dtype == torch.float32
