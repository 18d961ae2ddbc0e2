import time

import numpy as np
import pytest
import torch

from seqbook.utils import Timer, default_device, seed_everything, to_device


def test_seed_everything_makes_all_generators_repeat():
    seed_everything(123)
    first = (np.random.rand(3), torch.rand(3), __import__("random").random())
    seed_everything(123)
    second = (np.random.rand(3), torch.rand(3), __import__("random").random())
    assert np.array_equal(first[0], second[0])
    assert torch.equal(first[1], second[1])
    assert first[2] == second[2]


def test_different_seeds_differ():
    seed_everything(1)
    a = torch.rand(5)
    seed_everything(2)
    assert not torch.equal(a, torch.rand(5))


def test_seed_accepts_seeds_beyond_32_bits():
    seed_everything(2**40)  # NumPy alone would reject this


@pytest.mark.parametrize(
    "bad, error", [(-1, ValueError), (1.5, TypeError), ("0", TypeError), (True, TypeError)]
)
def test_seed_everything_rejects_bad_seeds(bad, error):
    from seqbook.utils import seeded_generator, shifted_seed

    for function in (seed_everything, seeded_generator, shifted_seed):
        with pytest.raises(error, match="^seed must be"):
            function(bad)


@pytest.mark.parametrize("available, expected", [(True, "cuda"), (False, "cpu")])
def test_default_device_follows_cuda_availability(monkeypatch, available, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    assert default_device() == torch.device(expected)


def test_default_device_holds_tensors():
    x = torch.ones(3, device=default_device())
    assert x.device.type == default_device().type and x.sum().item() == 3


def test_to_device_names_a_bad_device():
    with pytest.raises(ValueError, match="^device must name a device"):
        to_device(torch.zeros(1), "gpu")
    with pytest.raises(TypeError, match=r"^device must be torch.device \| str \| None"):
        to_device(torch.zeros(1), 3.5)
    with pytest.raises(ValueError, match="^device must name a device"):
        to_device([torch.zeros(1), "x"], "gpu")


def test_to_device_walks_nested_containers_and_keeps_other_values():
    batch = {"x": torch.zeros(2), "pair": (torch.ones(1), "name"), "lengths": [torch.tensor(3), 4]}
    moved = to_device(batch, "cpu")
    assert isinstance(moved, dict) and isinstance(moved["pair"], tuple)
    assert moved["pair"][1] == "name" and moved["lengths"][1] == 4
    assert torch.equal(moved["x"], batch["x"])


def test_to_device_keeps_named_tuples():
    from seqbook.data import NumberPair

    pair = NumberPair(3, "three", "drei")
    assert to_device(pair, "cpu") == pair


def test_find_checkpoint_names_what_is_wrong(tmp_path):
    from seqbook.utils import find_checkpoint

    (tmp_path / "model.pt").write_bytes(b"")
    assert find_checkpoint("model", tmp_path, "train it") == tmp_path / "model.pt"
    assert find_checkpoint(tmp_path / "model.pt", tmp_path, "train it") == tmp_path / "model.pt"
    with pytest.raises(FileNotFoundError, match="train one with `train it`"):
        find_checkpoint("other", tmp_path, "train it")
    with pytest.raises(TypeError, match="^name_or_path must be a str or Path, got 3"):
        find_checkpoint(3, tmp_path, "train it")


def test_timer_measures_elapsed_time():
    with Timer() as timer:
        time.sleep(0.02)
    assert 0.015 < timer.seconds < 1.0
    assert "Timer(seconds=" in repr(timer)


def test_seed_shift_is_zero_where_unset_and_read_from_the_environment(monkeypatch):
    from seqbook.utils import SEED_SHIFT_VARIABLE, seed_shift, seeded_generator, shifted_seed

    monkeypatch.delenv(SEED_SHIFT_VARIABLE, raising=False)
    assert seed_shift() == 0 and shifted_seed(7) == 7
    printed = torch.rand(3, generator=seeded_generator(7))
    assert torch.equal(printed, torch.rand(3, generator=torch.Generator().manual_seed(7)))
    monkeypatch.setenv(SEED_SHIFT_VARIABLE, "2")
    assert seed_shift() == 2 and shifted_seed(7) == 2007
    assert not torch.equal(printed, torch.rand(3, generator=seeded_generator(7)))


def test_seed_everything_follows_the_shift(monkeypatch):
    from seqbook.utils import SEED_SHIFT_VARIABLE

    monkeypatch.setenv(SEED_SHIFT_VARIABLE, "1")
    seed_everything(3)
    shifted = torch.rand(3)
    monkeypatch.delenv(SEED_SHIFT_VARIABLE)
    seed_everything(1003)
    assert torch.equal(shifted, torch.rand(3))


@pytest.mark.parametrize("bad", ["-1", "one", "1.5"])
def test_a_bad_seed_shift_names_the_variable(monkeypatch, bad):
    from seqbook.utils import SEED_SHIFT_VARIABLE, seed_shift

    monkeypatch.setenv(SEED_SHIFT_VARIABLE, bad)
    with pytest.raises(ValueError, match=SEED_SHIFT_VARIABLE):
        seed_shift()
