import numpy as np
import pytest
import torch

from seqbook.notebook import _plain, glue


def test_glue_returns_nothing_outside_a_notebook():
    assert glue("a_number", 3.5) is None


def test_numbers_are_glued_as_plain_python_numbers():
    assert type(_plain(np.float64(0.5))) is float
    assert type(_plain(torch.tensor(3))) is int
    assert _plain("text") == "text"


@pytest.mark.parametrize("name", ["", "has space", "dots.are.bad", 3])
def test_glue_rejects_bad_names(name):
    with pytest.raises(ValueError, match="name"):
        glue(name, 1)
