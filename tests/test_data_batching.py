import pytest
import torch
from torch.nn.utils.rnn import pad_sequence

from seqbook.data import lengths_to_mask, pad_batch


def test_pad_batch_of_id_lists():
    padded, lengths, mask = pad_batch([[5, 6, 7], [8], [9, 10]])
    assert padded.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert lengths.tolist() == [3, 1, 2]
    assert mask.tolist() == [[True, True, True], [True, False, False], [True, True, False]]
    assert padded.dtype == torch.long and mask.dtype == torch.bool


def test_pad_batch_equals_torch_pad_sequence_for_feature_sequences():
    sequences = [torch.randn(t, 4) for t in (5, 2, 7)]
    padded, lengths, mask = pad_batch(sequences, pad_value=-1.0)
    assert padded.shape == (3, 7, 4)
    assert torch.equal(padded, pad_sequence(sequences, batch_first=True, padding_value=-1.0))
    assert torch.equal(mask.sum(1), lengths)


def test_pad_batch_with_an_empty_sequence_keeps_integer_ids():
    padded, lengths, mask = pad_batch([[], [3, 4]])
    assert padded.dtype == torch.long
    assert lengths.tolist() == [0, 2] and not mask[0].any()


def test_pad_batch_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        pad_batch([])
    with pytest.raises(TypeError, match="sequences"):
        pad_batch(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="sequences"):
        pad_batch("abc")
    with pytest.raises(ValueError, match="trailing shape"):
        pad_batch([torch.zeros(2, 3), torch.zeros(2, 4)])
    with pytest.raises(ValueError, match=r"sequences\[1\]"):
        pad_batch([torch.zeros(2), torch.zeros(2, 2, 2)])


def test_lengths_to_mask():
    assert lengths_to_mask(torch.tensor([2, 0, 3])).tolist() == [
        [True, True, False], [False, False, False], [True, True, True],
    ]
    assert lengths_to_mask(torch.tensor([1]), max_len=3).tolist() == [[True, False, False]]


def test_lengths_to_mask_bad_input():
    with pytest.raises(TypeError, match=r"^lengths must be .*2 dimensions"):
        lengths_to_mask(torch.tensor([[1, 2]]))
    with pytest.raises(TypeError, match=r"^lengths must be .*dtype float32"):
        lengths_to_mask(torch.tensor([1.0]))
    with pytest.raises(ValueError, match=r"lengths must hold values in \[0, inf\]"):
        lengths_to_mask(torch.tensor([2, -1]))
    with pytest.raises(ValueError, match=r"lengths must hold values in \[0, max_len = 2\]"):
        lengths_to_mask(torch.tensor([4]), max_len=2)
    with pytest.raises(ValueError, match="max_len must be >= 0"):
        lengths_to_mask(torch.tensor([4]), max_len=-1)


def test_pad_batch_accepts_any_iterable_of_ids_and_names_bad_ones():
    import numpy as np

    padded, lengths, _ = pad_batch([np.array([5, 6]), range(3), (7,)])
    assert padded.tolist() == [[5, 6, 0], [0, 1, 2], [7, 0, 0]] and lengths.tolist() == [2, 3, 1]
    with pytest.raises(TypeError, match=r"sequences\[1\] must be a list of token ids"):
        pad_batch([[1, 2], "ab"])
    with pytest.raises(TypeError, match="pad_value"):
        pad_batch([[1, 2]], pad_value="0")
