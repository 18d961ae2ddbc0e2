import pytest
import torch

from seqbook.attention import causal_mask, masked_softmax


def test_masked_softmax_equals_softmax_over_the_unmasked_entries():
    torch.manual_seed(0)
    scores = torch.randn(3, 4, 6)
    mask = torch.rand(3, 4, 6) > 0.4
    mask[..., 0] = True  # every row keeps at least one key
    weights = masked_softmax(scores, mask)
    for b in range(3):
        for i in range(4):
            keep = mask[b, i]
            expected = torch.softmax(scores[b, i, keep], dim=0)
            assert torch.allclose(weights[b, i, keep], expected, atol=1e-7)
            assert (weights[b, i, ~keep] == 0).all()


def test_rows_are_convex_combinations():
    torch.manual_seed(1)
    scores = torch.randn(5, 7) * 10
    mask = torch.rand(5, 7) > 0.5
    mask[:, 3] = True
    weights = masked_softmax(scores, mask)
    assert (weights >= 0).all()
    assert torch.allclose(weights.sum(-1), torch.ones(5), atol=1e-6)


def test_fully_masked_row_gives_zeros_not_nan():
    scores = torch.randn(2, 3, requires_grad=True)
    mask = torch.tensor([[False, False, False], [True, False, True]])
    weights = masked_softmax(scores, mask)
    assert torch.equal(weights[0], torch.zeros(3))
    assert torch.allclose(weights[1].sum(), torch.tensor(1.0))
    weights.sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_mask_broadcasts_and_none_is_plain_softmax():
    scores = torch.randn(2, 4, 5)
    key_mask = torch.tensor([[True] * 5, [True] * 2 + [False] * 3]).unsqueeze(1)
    weights = masked_softmax(scores, key_mask)
    assert (weights[1, :, 2:] == 0).all()
    assert torch.allclose(masked_softmax(scores), torch.softmax(scores, -1))


def test_large_scores_do_not_overflow():
    scores = torch.tensor([[1e30, -1e30, 5.0]])
    weights = masked_softmax(scores, torch.tensor([[True, True, False]]))
    assert torch.equal(weights, torch.tensor([[1.0, 0.0, 0.0]]))


def test_other_dim():
    scores = torch.randn(4, 3)
    mask = torch.ones(4, 3, dtype=torch.bool)
    assert torch.allclose(masked_softmax(scores, mask, dim=0), torch.softmax(scores, 0))


@pytest.mark.parametrize(
    "mask, error, match",
    [
        (torch.ones(2, 4, dtype=torch.bool), TypeError,
         r"^mask must be Bool\[Tensor, '\*#shape'\] \| None, got bool\[2,4\]"),
        (torch.ones(3, 2, 5, dtype=torch.bool), TypeError, r"^mask must be .*got bool\[3,2,5\]"),
        (torch.ones(2, 5), TypeError, r"^mask must be .*got f32\[2,5\]"),
        ([[True] * 5] * 2, TypeError, r"^mask must be "),
    ],
)
def test_bad_masks_are_rejected(mask, error, match):
    with pytest.raises(error, match=match):
        masked_softmax(torch.randn(2, 5), mask)


def test_bad_scores_are_rejected():
    with pytest.raises(TypeError, match="scores"):
        masked_softmax(torch.ones(2, 3, dtype=torch.long), None)
    with pytest.raises(ValueError, match="dim"):
        masked_softmax(torch.randn(2, 3), None, dim=2)


def test_causal_mask():
    mask = causal_mask(4)
    assert torch.equal(mask, torch.tril(torch.ones(4, 4, dtype=torch.bool)))
    wide = causal_mask(2, 4)
    assert wide.shape == (2, 4) and wide.tolist() == [
        [True, False, False, False],
        [True, True, False, False],
    ]


@pytest.mark.parametrize(
    "args, error", [((0,), ValueError), ((2, 0), ValueError), ((2.0,), TypeError)]
)
def test_causal_mask_rejects_bad_sizes(args, error):
    with pytest.raises(error, match="T_"):
        causal_mask(*args)


def test_float64_equals_torch_softmax_to_float64_accuracy():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(4, 5, 6, dtype=torch.float64, generator=g) * 10
    mask = torch.rand(4, 5, 6, generator=g) > 0.3
    mask[..., 0] = True
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    weights = masked_softmax(scores, mask)
    assert weights.dtype == torch.float64
    assert torch.allclose(weights, expected, atol=1e-16, rtol=1e-14)
