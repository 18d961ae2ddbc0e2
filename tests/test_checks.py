"""The shared argument checks of seqbook._checks: each names the argument and what was expected."""

import pytest
import torch

from seqbook._checks import (
    check_generator,
    check_probability,
    check_same_dtype,
    check_token_ids,
)


def test_new_checks():
    assert check_probability("dropout", 0.5) == 0.5
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="dropout"):
            check_probability("dropout", bad)
    with pytest.raises(
        TypeError,
        match=r"x has dtype torch.float64 but the module's parameters have dtype torch.float32",
    ):
        check_same_dtype(
            "x", torch.zeros(2, dtype=torch.float64), torch.float32, of="the module's parameters"
        )
    ids = torch.tensor([[0, 4]])
    assert check_token_ids("src", ids, 5) is ids
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 4\)"):
        check_token_ids("src", ids, 4)
    with pytest.raises(ValueError, match="from -1"):
        check_token_ids("src", torch.tensor([-1]), 4)
    with pytest.raises(TypeError, match="integer"):
        check_token_ids("src", torch.tensor([0.0]), 4)
    with pytest.raises(TypeError, match="bool"):
        check_token_ids("src", torch.tensor([True]), 4)


def test_check_generator():
    g = torch.Generator()
    assert check_generator("generator", g) is g
    assert check_generator("generator", None) is None
    with pytest.raises(TypeError, match=r"generator must be a torch.Generator or None .*0 \(int\)"):
        check_generator("generator", 0)
