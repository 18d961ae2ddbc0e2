"""The MixerLM's seven mixers: both forms agree, generation states have the sizes the
table states, Mamba's step equals mambapy's, and bad input is named."""

import math

import pytest
import torch

from seqbook.language_model.mixers import MIXERS, MambaMixer, MixerLM, state_floats
from seqbook.ssm.selective import MambaBlock

HEADED = ("softmax", "linear", "delta", "mlstm")


def _model(mixer, seed=0, **kw):
    torch.manual_seed(seed)
    return MixerLM(20, d_model=16, mixer=mixer, num_heads=2 if mixer in HEADED else 1,
                   **kw).double()


@pytest.mark.parametrize("mixer", list(MIXERS))
def test_step_by_step_generation_equals_the_parallel_forward_in_float64(mixer):
    model = _model(mixer)
    ids = torch.randint(0, 20, (3, 11), generator=torch.Generator().manual_seed(1))
    full = model(ids)
    state, steps = model.init_state(3), []
    for t in range(ids.shape[1]):
        logits, state = model.step(ids[:, t], state)
        steps.append(logits)
    assert (torch.stack(steps, 1) - full).abs().max() < 1e-12


@pytest.mark.parametrize("mixer", list(MIXERS))
def test_the_state_has_the_size_the_table_states(mixer):
    model = _model(mixer, num_layers=1)
    state = model.init_state(1)
    for t in range(5):
        _, state = model.step(torch.tensor([t]), state)
    floats = sum(x.numel() for x in _tensors(state["mixers"][0])
                 if not (x.dtype == torch.float64 and x.numel() == 1 and x.isinf().all()))
    heads = 2 if mixer in HEADED else 1
    assert floats == state_floats(mixer, 16, heads, position=5)


def _tensors(state):
    if isinstance(state, torch.Tensor):
        return [state]
    return [x for part in state for x in _tensors(part)]


def test_gradients_reach_every_parameter():
    for mixer in MIXERS:
        model = _model(mixer)
        model(torch.randint(0, 20, (2, 6))).sum().backward()
        missing = [n for n, p in model.named_parameters() if p.grad is None]
        assert not missing, (mixer, missing)


def test_mamba_step_equals_mambapys_step():
    mamba = pytest.importorskip("mambapy.mamba")
    torch.manual_seed(0)
    config = mamba.MambaConfig(d_model=8, n_layers=1, d_state=4, expand_factor=2)
    theirs = mamba.MambaBlock(config).double()
    ours = MambaMixer(8, state_size=4, expand=2).double()
    ours.load_state_dict(MambaBlock.from_mambapy(theirs).state_dict())
    x = torch.randn(2, 7, 8, dtype=torch.float64)
    cache = (torch.zeros(2, 16, 4, dtype=torch.float64), torch.zeros(2, 16, 3, dtype=torch.float64))
    state = ours.init_state(2, x)
    for t in range(7):
        y_theirs, cache = theirs.step(x[:, t], cache)
        y_ours, state = ours.step(x[:, t], state)
        # mambapy's step computes A = -exp(A_log) in float32 (A_log.float()), ours in
        # float64: the outputs (about 0.05) differ by about 1e-12
        assert (y_ours - y_theirs).abs().max() < 1e-10


def test_mamba_starts_with_step_sizes_as_mamba_does():
    torch.manual_seed(0)
    block = MambaBlock(32, state_size=4)
    delta = torch.nn.functional.softplus(block.dt_proj.bias)
    assert 1e-3 * 0.999 <= delta.min() and delta.max() <= 0.1 * 1.001
    # log-uniform: about half the steps below the geometric mean of the range
    assert 0.25 < (delta < math.sqrt(1e-3 * 0.1)).float().mean() < 0.75


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="mixer"):
        MixerLM(10, mixer="rwkv")
    with pytest.raises(ValueError, match="multiple of num_heads"):
        MixerLM(10, d_model=10, mixer="linear", num_heads=3)
    MixerLM(10, d_model=10, mixer="mamba", num_heads=3)  # heads are an attention matter
    model = MixerLM(10, d_model=8)
    with pytest.raises(ValueError, match="ids"):
        model(torch.tensor([[1, 12]]))
    with pytest.raises(ValueError, match=r"^ids must hold token ids in \[0, 10\)"):
        model.step(torch.tensor([12]), model.init_state(1))
    with pytest.raises(TypeError, match=r"^ids must be Int\[Tensor, 'B'\]"):
        model.step(torch.tensor([[1]]), model.init_state(1))
    with pytest.raises(ValueError, match="batch_size"):
        model.init_state(0)
    with pytest.raises(ValueError, match="mixer"):
        state_floats("rnn", 8)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: MixerLM(10, d_model=8, mlp="yes"), TypeError, "^mlp must be bool"),
        (lambda: state_floats("gru", "8"), TypeError, "^d must be int"),
        (lambda: state_floats("linear", 8, num_heads=0), ValueError, "num_heads must be >= 1"),
        (lambda: state_floats("linear", 8, num_heads=3), ValueError, "multiple of num_heads"),
        (lambda: state_floats("softmax", 8, position=-1), ValueError, "position must be >= 0"),
        (lambda: state_floats("mamba", 8, state_size=0), ValueError, "state_size must be >= 1"),
    ],
)
def test_bad_sizes_and_flags_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("mixer", list(MIXERS))
def test_a_state_of_another_batch_size_is_named(mixer):
    # the delta and mLSTM mixers broadcast a batch-1 state silently, the others failed
    # deep inside torch
    model = MixerLM(10, d_model=8, mixer=mixer)
    with pytest.raises(ValueError, match=r"state\['previous'\] must have the batch size of ids"):
        model.step(torch.tensor([1, 2]), model.init_state(1))
    with pytest.raises(TypeError, match="^state must be dict"):
        model.step(torch.tensor([1]), [model.init_state(1)])
    with pytest.raises(TypeError, match="^state must be the dict that init_state returns"):
        model.step(torch.tensor([1]), {"previous": torch.zeros(1, 8)})


def test_the_mlstm_mixers_head_norm_is_the_xlstm_packages_multi_head_layer_norm():
    ln = pytest.importorskip("xlstm.components.ln")
    mixer = MIXERS["mlstm"](16, 4)
    with torch.no_grad():
        mixer.head_norm_weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(0))
    reference = ln.MultiHeadLayerNorm(ndim=16, weight=True, bias=False)
    with torch.no_grad():  # the package stores the gain as 1 + weight
        reference.weight.copy_(mixer.head_norm_weight - 1)
    h = torch.randn(2, 4, 7, 4, generator=torch.Generator().manual_seed(1))  # (B, NH, S, DH)
    ours = mixer._head_norm(h.transpose(1, 2).reshape(2, 7, 16))  # heads side by side
    theirs = reference(h).transpose(1, 2).reshape(2, 7, 16)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("mlp", [True, False])
@pytest.mark.parametrize("mixer", list(MIXERS))
def test_forward_hooks_fire_on_every_submodule(mixer, mlp):
    model = _model(mixer, mlp=mlp)
    # every module but the containers (ModuleList has no forward of its own)
    modules = {name: module for name, module in model.named_modules()
               if not isinstance(module, torch.nn.ModuleList)}
    fired = set()
    for name, module in modules.items():
        module.register_forward_hook(lambda *_, name=name: fired.add(name))
    model(torch.randint(0, 20, (2, 5)))
    assert fired == set(modules)


def test_a_block_without_its_mlp_is_the_mixer_alone():
    model = _model("gru", mlp=False)
    ids = torch.randint(0, 20, (2, 5))
    e = model.embed(ids)
    x = e + model.shift(torch.nn.functional.pad(e, (0, 0, 1, 0))[:, :-1])
    for layer, mixer in enumerate(model.mixers):
        x = x + mixer(model.norms[2 * layer](x))
    assert torch.equal(model(ids), model.readout(model.final_norm(x)))
    assert not any(isinstance(m, torch.nn.Linear) for m in model.mlps.modules())
