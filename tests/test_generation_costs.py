"""Generation costs: state bytes and operations per token, measured on real models."""

import pytest
import torch

from seqbook.costs.generation import generation_profile, state_bytes
from seqbook.language_model import RecurrentLM, TransformerLM
from seqbook.language_model.mixers import MixerLM


def test_a_kv_cache_grows_by_its_keys_and_values_and_a_recurrent_state_does_not():
    torch.manual_seed(0)
    transformer = TransformerLM(12, d_model=16, num_heads=2, d_ff=32, num_layers=2)
    kv = generation_profile(transformer, 12, block_size=4, repeats=1)
    per_token = 2 * 2 * 16 * 4  # keys and values, 2 layers, 16 floats, 4 bytes
    assert kv["state_bytes"] == [per_token * p for p in (4, 8, 12)]
    # the attention products grow by 2 x 2 x d operations per cached position and layer
    growth = [b - a for a, b in zip(kv["flops_per_token"], kv["flops_per_token"][1:])]
    assert growth == [2 * 2 * 2 * 16 * 4] * 2
    lstm = generation_profile(RecurrentLM(12, hidden_size=8, embedding_dim=4), 8, 4, 1)
    assert lstm["state_bytes"] == [2 * 8 * 4] * 2
    assert len(set(lstm["flops_per_token"])) == 1
    mamba = generation_profile(MixerLM(12, 8, "mamba", num_layers=1), 8, 4, 1)
    assert len(set(mamba["state_bytes"])) == 1 and len(set(mamba["flops_per_token"])) == 1
    assert all(t > 0 for t in kv["seconds_per_token"] + lstm["seconds_per_token"])


def test_state_bytes_reads_nested_states():
    assert state_bytes(None) == 0
    assert state_bytes({"a": torch.zeros(3), "b": [torch.zeros(2, dtype=torch.float64)]}) == 28


def test_profile_leaves_the_model_as_it_was_and_checks_arguments():
    model = MixerLM(5, 8, "gru")
    model.train()
    generation_profile(model, 2, 1, 1)
    assert model.training
    with pytest.raises(ValueError, match="multiple of block_size"):
        generation_profile(model, 5, 2)
    with pytest.raises(ValueError, match="num_tokens"):
        generation_profile(model, 0)
    with pytest.raises(ValueError, match="repeats"):
        generation_profile(model, 2, 1, 0)
