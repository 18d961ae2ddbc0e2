"""Bad input to every public callable of seqbook.hopfield gets a clear error.

Each kind of mistake (mixed dtypes, wrong shapes, beta <= 0, non-spin patterns, ...)
is tried on every callable that can receive it; the message must name the argument
and what was expected. A last test makes sure no public callable is left out.
"""

import math

import pytest
import torch

import seqbook.hopfield as hop
from seqbook._checks import check_beta, check_patterns, check_state

D = torch.float64
SPINS = torch.tensor([[1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]])  # (N, d) = (2, 4)
W = hop.hebbian_weights(SPINS)
U = torch.zeros(4)
ORDER = torch.arange(4)
REAL = torch.randn(3, 4)

# (callable name, a bad call, the exception, a regex its message must match)
CASES = [
    # non-spin patterns or states
    ("hebbian_weights", lambda: hop.hebbian_weights(SPINS * 0.5), ValueError,
     r"patterns must contain only -1 and \+1"),
    ("classical_energy", lambda: hop.classical_energy(SPINS * 0, W, U), ValueError,
     r"xi must contain only -1 and \+1"),
    ("async_sweep", lambda: hop.async_sweep(SPINS * 2, W, U, ORDER), ValueError,
     r"xi must contain only -1 and \+1"),
    ("sync_step", lambda: hop.sync_step(REAL, W, U), ValueError,
     r"xi must contain only -1 and \+1"),
    ("async_relax", lambda: hop.async_relax(REAL[None], W[None], U[None]), ValueError,
     "xi must contain only"),
    ("ClassicalHopfield", lambda: hop.ClassicalHopfield(torch.tensor([[0.0, 1.0]])), ValueError,
     "only -1 and"),
    ("DenseAssociativeMemory", lambda: hop.DenseAssociativeMemory(REAL), ValueError,
     r"patterns must contain only"),
    ("dense_energy", lambda: hop.dense_energy(SPINS, REAL), ValueError,
     r"patterns must contain only -1"),
    ("dense_async_sweep", lambda: hop.dense_async_sweep(REAL, SPINS, "exp", 3, ORDER), ValueError,
     "xi must contain"),
    ("corrupt", lambda: hop.corrupt(REAL, 0.1), ValueError,
     r"patterns must contain only -1 and \+1"),
    ("retrieval_errors", lambda: hop.retrieval_errors("exp", SPINS * 0.5), ValueError,
     "patterns must contain only"),
    ("retrieved_fraction", lambda: hop.retrieved_fraction("poly", REAL), ValueError,
     "patterns must contain only"),
    # wrong shapes
    ("hebbian_weights", lambda: hop.hebbian_weights(torch.ones(4)), TypeError,
     r"^patterns must be Float\[Tensor, 'N d'\] \| Float\[Tensor, 'T N d'\], got f32\[4\]"),
    ("classical_energy", lambda: hop.classical_energy(SPINS, W, U[:3]), TypeError,
     r"^U must be Float\[Tensor, '\.\.\. d'\], got f32\[3\].*existing value of 4"),
    ("classical_energy", lambda: hop.classical_energy(SPINS, W[:, :3], U), TypeError,
     r"^W must be Float\[Tensor, '\.\.\. d d'\], got f32\[4,3\].*existing value of 4"),
    ("sync_step", lambda: hop.sync_step(SPINS[:, :3], W, U), TypeError,
     r"^W must be Float\[Tensor, '\.\.\. d d'\].*existing value of 3"),
    ("async_relax", lambda: hop.async_relax(SPINS, W, U), TypeError,
     r"^xi must be Float\[Tensor, 'T B d'\], got f32\[2,4\]\(torch\): this array has 2 dimensions"),
    ("async_sweep", lambda: hop.async_sweep(SPINS, W, U, torch.tensor([4])), ValueError,
     r"order must hold spin indices in \[0, d = 4\), got values from 4 to 4"),
    ("async_sweep", lambda: hop.async_sweep(SPINS, W, U, torch.tensor([0.0])), TypeError,
     r"^order must be Int\[Tensor, 'n'\], got f32\[1\]"),
    ("async_sweep", lambda: hop.async_sweep(SPINS, W, U, torch.tensor([True])), TypeError,
     r"^order must be Int\[Tensor, 'n'\], got bool\[1\]"),
    ("dense_async_sweep", lambda: hop.dense_async_sweep(SPINS, SPINS, "exp", 3,
                                                        torch.tensor([-1])), ValueError,
     r"order must hold spin indices in \[0, d = 4\), got values from -1"),
    ("ClassicalHopfield", lambda: hop.ClassicalHopfield(SPINS, threshold=torch.zeros(3)),
     TypeError, r"^threshold must be float \| Float\[Tensor, 'd'\], got f32\[3\]"),
    ("dense_async_sweep", lambda: hop.dense_async_sweep(SPINS[:, :3], SPINS, "exp", 3, ORDER),
     TypeError, r"^patterns must be Float\[Tensor, '\.\.\. N d'\].*existing value of 3"),
    ("dense_energy", lambda: hop.dense_energy(SPINS.double(), SPINS), TypeError,
     "patterns has dtype torch.float32 but xi has dtype torch.float64"),
    ("dense_energy", lambda: hop.dense_energy(SPINS * 0, SPINS), ValueError,
     r"xi must contain only -1 and \+1"),
    ("ModernHopfield", lambda: hop.ModernHopfield(torch.randn(3), beta=1.0), TypeError,
     r"^patterns must be Real\[Tensor, 'N d'\], got f32\[3\]"),
    ("ModernHopfield", lambda: hop.ModernHopfield(torch.ones(0, 3), beta=1.0), ValueError,
     "at least one pattern"),
    ("modern_energy", lambda: hop.modern_energy(torch.randn(5), REAL, 1.0), TypeError,
     r"^patterns must be Float\[Tensor, 'N d'\], got f32\[3,4\].*existing value of 5"),
    ("modern_update", lambda: hop.modern_update(torch.randn(2, 3), REAL, 1.0), TypeError,
     r"^patterns must be Float\[Tensor, 'N d'\] \| Float\[Tensor, 'T N d'\], got f32\[3,4\]"),
    ("modern_update",
     lambda: hop.modern_update(torch.randn(4), REAL, 1.0, values=torch.randn(2, 2)),
     TypeError, r"^values must be Float\[Tensor, 'N d_v'\] \| None, got f32\[2,2\]"),
    ("separation", lambda: hop.separation(torch.randn(1, 4)), ValueError,
     r"patterns must hold at least two patterns \(N >= 2\), got shape \(1, 4\)"),
    ("lse", lambda: hop.lse(1.0, torch.tensor([1, 2])), TypeError,
     r"^u must be Float\[Tensor, '\*batch N'\], got i64\[2\]"),
    ("bit_errors", lambda: hop.bit_errors(torch.ones(3), torch.ones(4)), TypeError,
     r"^patterns must be Shaped\[Tensor, '\*#batch d'\], got f32\[4\].*existing value of 3"),
    ("random_patterns", lambda: hop.random_patterns(0, 4), ValueError, "num_patterns must be >= 1"),
    ("capacity_curve", lambda: hop.capacity_curve("classical", 10, []), ValueError,
     "num_patterns must list"),
    ("CapacityCurve",
     lambda: hop.CapacityCurve("classical", 4, torch.tensor([1]), torch.zeros(1, 1, 1)).capacity(
        method="spline"), ValueError, "method must be one of"),
    ("Retrieval",
     lambda: hop.Retrieval(torch.zeros(2, 4), torch.zeros(3), torch.ones((), dtype=torch.bool)),
     TypeError, r"^energies must be Float\[Tensor, 'steps \*batch'\], got f32\[3\]\(torch\): "
     r"the size of dimension steps is 3 which does not equal the existing value of 2"),
    ("Retrieval", lambda: hop.Retrieval([[1.0]], torch.zeros(1), torch.ones((), dtype=torch.bool)),
     TypeError, "^states must be Float"),  # before: an AttributeError
    ("Retrieval",
     lambda: hop.Retrieval(
         torch.zeros(2, 5, 4), torch.zeros(2, 5), torch.ones(4, dtype=torch.bool)),
     TypeError, r"^converged must be Bool\[Tensor, '\*batch'\], got bool\[4\]"),
    # mixed dtypes
    ("classical_energy", lambda: hop.classical_energy(SPINS.double(), W, U), TypeError,
     "W has dtype torch.float32 but xi has dtype torch.float64"),
    ("classical_energy", lambda: hop.classical_energy(SPINS, W, U.double()), TypeError,
     "U has dtype torch.float64 but xi has dtype torch.float32"),
    ("dense_energy", lambda: hop.dense_energy(SPINS.double(), SPINS), TypeError,
     "xi has dtype torch.float64"),
    ("ModernHopfield", lambda: hop.ModernHopfield(REAL, 1.0).update(REAL.double()), TypeError,
     "xi has dtype torch.float64 but the stored patterns have dtype torch.float32"),
    ("modern_update",
     lambda: hop.modern_update(REAL[0], REAL, 1.0, values=torch.randn(3, 2, dtype=D)),
     TypeError, "values has dtype torch.float64"),
    ("ClassicalHopfield", lambda: hop.ClassicalHopfield(SPINS, threshold=torch.zeros(4, dtype=D)),
     TypeError, "threshold has dtype torch.float64"),
    ("HopfieldLayer",
     lambda: hop.HopfieldLayer(3, 2, 4)(torch.randn(1, 2, 3, dtype=D), torch.randn(1, 5, 2)),
     TypeError, r"R must have the dtype of the module's parameters \(torch.float32\), got "
     r"torch.float64"),
    ("hopfield_association",
     lambda: hop.hopfield_association(
         torch.randn(1, 1, 2, 4), torch.randn(1, 1, 5, 4, dtype=D), 1.0),
     TypeError, "K has dtype torch.float64"),
    # beta <= 0 (and other bad numbers)
    ("ModernHopfield", lambda: hop.ModernHopfield(REAL, beta=0.0), ValueError, "beta must be > 0"),
    ("ModernHopfield", lambda: hop.ModernHopfield(REAL, beta=math.inf), ValueError,
     "beta must be finite"),
    ("lse", lambda: hop.lse(-1.0, REAL), ValueError, "beta must be > 0"),
    ("modern_energy", lambda: hop.modern_energy(REAL, REAL, 0.0), ValueError, "beta must be > 0"),
    ("modern_update", lambda: hop.modern_update(REAL, REAL, -2.0), ValueError, "beta must be > 0"),
    ("HopfieldConfig", lambda: hop.HopfieldConfig(beta=-1.0), ValueError, "beta must be > 0"),
    ("HopfieldPooling", lambda: hop.HopfieldPooling(3, 4, config=hop.HopfieldConfig(beta=0.0)),
     ValueError, "beta must be > 0"),
    ("hopfield_association",
     lambda: hop.hopfield_association(torch.randn(1, 1, 2, 4), torch.randn(1, 1, 5, 4), 0.0),
     ValueError, "beta must be > 0"),
    ("retrieval_errors", lambda: hop.retrieval_errors("modern", SPINS, beta=0.0), ValueError,
     "beta must be > 0"),
    ("DenseAssociativeMemory", lambda: hop.DenseAssociativeMemory(SPINS, degree=1), ValueError,
     "degree must be >= 2"),
    ("DenseAssociativeMemory", lambda: hop.DenseAssociativeMemory(SPINS, F="tanh"), ValueError,
     "F must be one of"),
    ("DenseAssociativeMemory",
     lambda: hop.DenseAssociativeMemory(SPINS, F="poly").log_neg_energy(SPINS),
     ValueError, "log_neg_energy needs F='exp'"),
    ("corrupt", lambda: hop.corrupt(SPINS, 1.5), ValueError, "fraction must be <= 1.0"),
    ("capacity_curve", lambda: hop.capacity_curve("hebb", 10, [2]), ValueError,
     "memory must be one of"),
    ("retrieved_fraction", lambda: hop.retrieved_fraction("classical", SPINS, tolerance=2.0),
     ValueError, "tolerance must be <= 1.0"),
    ("async_relax", lambda: hop.async_relax(SPINS[None], W[None], U[None], max_flips=0), ValueError,
     "max_flips must be >= 1"),
    ("HopfieldLayer", lambda: hop.HopfieldLayer(3, 3, 0), ValueError, "hidden_size must be >= 1"),
    ("HopfieldPooling", lambda: hop.HopfieldPooling(3, 4)(torch.randn(2, 5, 4)), TypeError,
     r"^Y must be Float\[Tensor, 'B N \{self.input_size\}'\], got f32\[2,5,4\]\(torch\): "
     r"the dimension size 4 does not equal the existing value of \{self.input_size\}=3"),
]


@pytest.mark.parametrize(
    "name,call,error,message", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_input_gets_a_clear_error(name, call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_every_public_callable_is_tried():
    public = {name for name in hop.__all__ if callable(getattr(hop, name))}
    tried = {case[0] for case in CASES}
    assert public <= tried, f"no bad-input case for {sorted(public - tried)}"


def test_methods_of_the_memories_check_their_states():
    memories = [hop.ClassicalHopfield(SPINS), hop.DenseAssociativeMemory(SPINS, F="exp")]
    for memory in memories:
        with pytest.raises(ValueError, match="xi must have last dimension d = 4"):
            memory.energy(torch.ones(3))
        with pytest.raises(ValueError, match=r"xi must contain only -1 and \+1"):
            memory.update(torch.zeros(4))
        with pytest.raises(ValueError, match=r"^[il] must be <= 3, got 4"):
            memory.update_neuron(torch.ones(4), 4)
        with pytest.raises(ValueError, match="max_sweeps must be >= 1"):
            memory.retrieve(torch.ones(4), max_sweeps=0)
        with pytest.raises(TypeError, match=r"^xi must be Real\[Tensor, '\*batch d'\], got bool"):
            memory.energy(torch.ones(4, dtype=torch.bool))
    modern = hop.ModernHopfield(REAL, beta=1.0)
    for method in (modern.energy, modern.weights, modern.update, modern.retrieve):
        with pytest.raises(ValueError, match="xi must be finite"):
            method(torch.tensor([1.0, math.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="steps must be 1 when values are given"):
        modern.update(REAL[0], steps=2, values=torch.randn(3, 2))
    with pytest.raises(ValueError, match="tol must be >= 0"):
        modern.retrieve(REAL[0], tol=-1.0)


def test_spin_states_of_any_real_dtype_are_converted_exactly():
    # spins are -1 and +1 in every dtype, so the binary memories accept them as they are
    net = hop.ClassicalHopfield(SPINS)
    as_int = net.update(SPINS.long(), mode="sync")
    assert as_int.dtype == torch.float32 and torch.equal(as_int, net.update(SPINS, mode="sync"))


def test_the_shared_checks_name_what_they_check():
    with pytest.raises(TypeError, match="patterns must have a real dtype"):
        check_patterns("patterns", torch.ones(2, 2, dtype=torch.bool), binary=False)
    with pytest.raises(ValueError, match="patterns must be finite"):
        check_patterns("patterns", torch.tensor([[math.inf]]), binary=False)
    with pytest.raises(ValueError, match="got a scalar"):
        check_state("xi", torch.tensor(1.0), 3, binary=False, dtype=torch.float32)
    with pytest.raises(ValueError, match="beta must be finite"):
        check_beta("beta", math.inf)
