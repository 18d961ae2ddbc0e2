import pytest

from seqbook.data import Splits, split_dataset


def test_splits_are_disjoint_complete_and_seeded():
    items = list(range(100))
    splits = split_dataset(items, 0.1, 0.2, seed=3)
    train, valid, test = splits
    assert splits.sizes() == (70, 10, 20)
    assert sorted(train + valid + test) == items
    assert split_dataset(items, 0.1, 0.2, seed=3) == splits
    assert split_dataset(items, 0.1, 0.2, seed=4) != splits


def test_stratified_split_keeps_class_balance():
    items = [(i, i % 3) for i in range(90)]
    splits = split_dataset(items, 0.1, 0.1, seed=0, stratify=lambda item: item[1])
    for split, size in zip(splits, (24, 3, 3)):
        for label in range(3):
            assert sum(1 for _, y in split if y == label) == size


def test_split_dataset_bad_input():
    with pytest.raises(ValueError, match="valid_fraction \\+ test_fraction"):
        split_dataset([1, 2, 3], 0.5, 0.5)
    with pytest.raises(ValueError, match="valid_fraction"):
        split_dataset([1, 2, 3], -0.1, 0.1)
    with pytest.raises(TypeError, match="items"):
        split_dataset({1, 2, 3})
    with pytest.raises(ValueError, match="seed"):
        split_dataset([1, 2, 3], seed=-1)


def test_splits_unpack_in_order():
    train, valid, test = Splits([1], [2], [3])
    assert (train, valid, test) == ([1], [2], [3])
