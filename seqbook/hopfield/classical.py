r"""The classical Hopfield network (Hopfield, 1982): binary spins, Hebbian weights.

Shapes: ``N`` stored patterns, ``d`` spins (neurons), ``B`` states updated together
(any number of leading dimensions ``...`` is allowed where noted; the pure functions
also accept a leading batch of independent networks, which the capacity experiments
use).

The state :math:`\boldsymbol\xi \in \{-1, +1\}^d` evolves downhill on the energy
:math:`E = -\tfrac12 \boldsymbol\xi^\top \mathbf W \boldsymbol\xi + \boldsymbol\xi^\top \mathbf U`.
Where the local field :math:`h_i = \sum_{j} W_{ij}\xi_j - U_i` is exactly zero, the
spin keeps its value (a tie changes nothing, so the energy stays put). States are rows,
so the fields of a batch are ``xi @ W.T - U``: for any ``W``, spin ``i`` reads row ``i``
of ``W``, as in the book's equations (Hebbian weights are symmetric anyway).
"""

from __future__ import annotations

from typing import TypeAlias

import torch
from jaxtyping import Float, Int, Real
from torch import Tensor

from seqbook._checks import (
    check_choice,
    check_int,
    check_patterns,
    check_positive_int,
    check_real,
    check_same_dtype,
    check_spins,
)
from seqbook.hopfield.memory import PatternMemory, Retrieval

__all__ = [
    "ClassicalHopfield",
    "hebbian_weights",
    "classical_energy",
    "async_sweep",
    "async_relax",
    "sync_step",
]

MODES = ("async", "sync")  # one spin at a time, or all spins at once

# B spin states (..., B, d) of networks with weights (..., d, d) and thresholds (..., d)
States: TypeAlias = Float[Tensor, "... B d"]
Weights: TypeAlias = Float[Tensor, "... d d"]
Thresholds: TypeAlias = Float[Tensor, "... d"]
Energies: TypeAlias = Float[Tensor, "... B"]  # one per state
Order: TypeAlias = Int[Tensor, " n"]  # the spins to update, in turn
# stored patterns in {-1, +1}, one per row: (N, d), or (T, N, d) for T networks
SpinPatterns: TypeAlias = Float[Tensor, "N d"] | Float[Tensor, "T N d"]


def hebbian_weights(patterns: SpinPatterns) -> Weights:
    r"""Hebbian storage :math:`\mathbf W = \sum_s \mathbf x^s \mathbf x^{s\top}` with zero diagonal.

    Args:
        patterns: stored patterns in {-1, +1}, one per row.

    Shapes:
        patterns: ``(..., N, d)``.
        returns: weights ``(..., d, d)``.

    Example:
        >>> hebbian_weights(torch.tensor([[1., -1., 1.]]))
        tensor([[ 0., -1.,  1.],
                [-1.,  0., -1.],
                [ 1., -1.,  0.]])
    """
    x = check_patterns("patterns", patterns, binary=True, ndim=(2, 3))
    W = x.transpose(-1, -2) @ x  # (eq-hopfield-hebb)  sum_s x^s x^sT
    return W - torch.diag_embed(torch.diagonal(W, dim1=-2, dim2=-1))  # W_ii = 0


def classical_energy(xi: States, W: Weights, U: Thresholds) -> Energies:
    r"""Energy :math:`E = -\tfrac12 \boldsymbol\xi^\top \mathbf W \boldsymbol\xi
    + \boldsymbol\xi^\top \mathbf U`.

    Shapes:
        xi: ``(..., B, d)``.
        W: ``(..., d, d)``.
        U: ``(..., d)``.
        returns: ``(..., B)``.

    Example:
        >>> W = hebbian_weights(torch.tensor([[1., -1., 1.]]))
        >>> classical_energy(torch.tensor([[1., -1., 1.]]), W, torch.zeros(3))
        tensor([-3.])
    """
    check_spins("xi", xi)
    W_xi = xi @ W  # (..., B, d)  W xi, one row per state
    # (eq-hopfield-energy)
    return -0.5 * (W_xi * xi).sum(-1) + (xi * U.unsqueeze(-2)).sum(-1)


def _sign_keep_ties(h: Tensor, current: Tensor) -> Tensor:
    return torch.where(h > 0, 1.0, torch.where(h < 0, -1.0, current)).to(current.dtype)


def _check_order(order: Tensor, d: int) -> None:
    """A sweep's ``order``: spin indices in ``[0, d)`` (reads them: once per sweep)."""
    if order.numel() and not 0 <= int(order.min()) <= int(order.max()) < d:
        raise ValueError(f"order must hold spin indices in [0, d = {d}), got values from "
                         f"{int(order.min())} to {int(order.max())}")


def async_sweep(xi: States, W: Weights, U: Thresholds, order: Order) -> States:
    r"""One asynchronous sweep: update the spins one at a time, in ``order``.

    Spin :math:`i` becomes :math:`\operatorname{sgn}(\sum_j W_{ij}\xi_j - U_i)` using the
    *current* values of all other spins, so every single update can only lower the
    energy or leave it unchanged.

    Shapes:
        xi: ``(..., B, d)``.
        W: ``(..., d, d)``.
        U: ``(..., d)``.
        order: ``(k,)`` spin indices.
        returns: new states ``(..., B, d)``.

    Example:
        >>> W = hebbian_weights(torch.tensor([[1., -1., 1.]]))
        >>> async_sweep(torch.tensor([[1., 1., 1.]]), W, torch.zeros(3), torch.tensor([1, 0, 2]))
        tensor([[ 1., -1.,  1.]])
    """
    check_spins("xi", xi)
    _check_order(order, xi.shape[-1])
    xi = xi.clone()
    for i in order.tolist():
        # (..., B) row i of W
        h = (xi @ W[..., i, :].unsqueeze(-1)).squeeze(-1) - U[..., i : i + 1]
        xi[..., i] = _sign_keep_ties(h, xi[..., i])  # (eq-hopfield-rule)
    return xi


def sync_step(xi: States, W: Weights, U: Thresholds) -> States:
    r"""One synchronous step
    :math:`\boldsymbol\xi \leftarrow \operatorname{sgn}(\mathbf W\boldsymbol\xi - \mathbf U)`.

    Shapes:
        xi: ``(..., B, d)``.
        W: ``(..., d, d)``.
        U: ``(..., d)``.
        returns: ``(..., B, d)``.

    Example:
        >>> W = hebbian_weights(torch.tensor([[1., 1.]]))
        >>> sync_step(torch.tensor([[1., -1.]]), W, torch.zeros(2))     # both spins swap
        tensor([[-1.,  1.]])
    """
    check_spins("xi", xi)
    h = xi @ W.transpose(-1, -2) - U.unsqueeze(-2)  # (eq-hopfield-sync)
    return _sign_keep_ties(h, xi)  # (eq-hopfield-sync) a tie keeps the spin


def async_relax(
    xi: Float[Tensor, "T B d"],
    W: Float[Tensor, "T d d"],
    U: Float[Tensor, "T d"],
    generator: torch.Generator | None = None,
    max_flips: int | None = None,
) -> tuple[Float[Tensor, "T B d"], Int[Tensor, "T B"]]:
    r"""Random asynchronous dynamics run to a fixed point, one flip at a time.

    At every step each state flips one spin chosen uniformly among its *unstable*
    spins (those whose sign disagrees with their local field). This is the law of the
    textbook dynamics "pick a spin uniformly at random and update it" with the
    updates that change nothing skipped, so it reaches the same fixed points, but it
    costs :math:`O(d)` per flip (the local fields are updated, not recomputed) and
    stops exactly when no spin is unstable. The unstable spin is found by drawing up
    to eight spins uniformly and taking the first unstable one (rejection sampling,
    uniform among the unstable spins); only a state whose eight draws all miss is
    scanned in full, which also detects that it has settled. Settled states leave the
    batch, so a few slow states do not keep the others busy.

    Args:
        xi: start states of ``T`` networks, ``B`` each.
        W: the networks' weights (symmetric, e.g. from :func:`hebbian_weights`).
        U: the networks' thresholds.
        generator: random generator for the choice of the spin to flip.
        max_flips: stop after this many flips (default ``10 d``).

    Shapes:
        xi: ``(T, B, d)``.
        W: ``(T, d, d)``.
        U: ``(T, d)``.
        returns: final states ``(T, B, d)`` and numbers of flips ``(T, B)``.

    Example:
        >>> X = torch.tensor([[[1., -1., 1., -1., 1., -1.]]])         # one network, T = 1
        >>> start = torch.tensor([[[1., 1., 1., -1., 1., -1.]]])
        >>> final, flips = async_relax(start, hebbian_weights(X), torch.zeros(1, 6))
        >>> torch.equal(final, X), flips.tolist()
        (True, [[1]])
    """
    check_spins("xi", xi)
    if max_flips is not None:
        check_positive_int("max_flips", max_flips)
    if not torch.equal(W, W.transpose(-1, -2)):
        raise ValueError("W must be symmetric (as Hebbian weights are): energy descent needs it")
    max_flips = 10 * xi.shape[-1] if max_flips is None else max_flips
    T, B, d = xi.shape
    out = xi.clone().reshape(T * B, d)  # (T * B, d)
    flips = torch.zeros(T * B, dtype=torch.long, device=xi.device)
    trial = torch.arange(T, device=xi.device).repeat_interleave(B)  # (T * B,) network of each state
    ids = torch.arange(T * B, device=xi.device)  # (A,) the states still moving
    x = out.clone()  # (A, d)
    h = (xi @ W - U.unsqueeze(1)).reshape(T * B, d)  # (A, d) local fields (W symmetric)
    for _ in range(max_flips):
        A = ids.numel()
        if A == 0:
            break
        # (A, 8) candidate spins
        draws = torch.randint(0, d, (A, 8), generator=generator).to(x.device)
        unstable = h.gather(1, draws) * x.gather(1, draws) < 0  # (A, 8); a zero field is a tie
        # (A,) first hit
        i = draws.gather(1, unstable.to(torch.uint8).argmax(1, keepdim=True)).squeeze(1)
        moving = torch.ones(A, dtype=torch.bool, device=x.device)
        missed = (~unstable.any(1)).nonzero().squeeze(1)  # states to scan in full
        if missed.numel():
            all_unstable = h[missed] * x[missed] < 0  # (m, d)
            keys = torch.rand(all_unstable.shape, generator=generator).to(x.device)
            i[missed] = keys.mul_(all_unstable).argmax(-1)  # a uniform unstable spin
            moving[missed] = all_unstable.any(-1)  # none unstable: a fixed point
        rows = torch.arange(A, device=x.device)
        delta = -2.0 * x[rows, i] * moving  # (A,) the flip (none for settled states)
        x[rows, i] += delta  # (eq-hopfield-rule)
        h.addcmul_(delta.unsqueeze(-1), W[trial, i])  # (A, d) rank-one update of the fields
        flips[ids] += moving
        if not moving.all():  # write back the settled states, drop them
            settled = ~moving
            out[ids[settled]] = x[settled]
            x, h, ids, trial = x[moving], h[moving], ids[moving], trial[moving]
    out[ids] = x  # states stopped by max_flips
    return out.reshape(T, B, d), flips.reshape(T, B)


def _order(d: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    return torch.randperm(d, generator=generator).to(device)


class ClassicalHopfield(PatternMemory):
    r"""Binary Hopfield network with Hebbian weights and thresholds.

    .. math::

        W_{ij} = \sum_{s=1}^N x^s_i x^s_j \ (i \ne j), \quad W_{ii} = 0, \qquad
        \xi_i \leftarrow \operatorname{sgn}\Big(\sum_{j \ne i} W_{ij}\xi_j - U_i\Big)

    Args:
        patterns: the memories :math:`\mathbf x^s \in \{-1, +1\}^d`, one per row.
        threshold: :math:`\mathbf U`, a number (the same for every spin) or a tensor
            of shape ``(d,)``.

    Shapes:
        patterns: ``(N, d)``.
        xi: a state ``(d,)`` or states ``(..., d)``; energies are ``()`` or ``(...)``.

    Example:
        >>> net = ClassicalHopfield(torch.tensor([[1., 1., -1., -1.]]))
        >>> net.update(torch.tensor([1., -1., -1., -1.]), mode="sync")
        tensor([ 1.,  1., -1., -1.])
        >>> net.energy(torch.tensor([1., 1., -1., -1.]))
        tensor(-6.)
    """

    def __init__(
        self, patterns: Real[Tensor, "N d"], threshold: float | Float[Tensor, " d"] = 0.0
    ) -> None:
        self.patterns = check_patterns("patterns", patterns, binary=True)  # (N, d)
        self.W = hebbian_weights(self.patterns)  # (d, d)
        d = self.dim
        if isinstance(threshold, Tensor):
            U = check_same_dtype("threshold", threshold, self.patterns.dtype, of="the patterns")
        else:
            U = torch.full((d,), check_real("threshold", threshold), dtype=self.patterns.dtype)
        self.U = U.to(self.patterns.device)  # (d,)

    def local_field(self, xi: Real[Tensor, "*batch d"]) -> Float[Tensor, "*batch d"]:
        r"""The local fields :math:`h_i = \sum_j W_{ij}\xi_j - U_i = -\partial E / \partial \xi_i`.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., d)``.
        """
        xi = self._state(xi)
        return xi @ self.W - self.U  # (..., d)

    def energy(self, xi: Real[Tensor, "*batch d"]) -> Float[Tensor, "*batch"]:
        r"""Energy
        :math:`-\tfrac12 \boldsymbol\xi^\top\mathbf W\boldsymbol\xi + \boldsymbol\xi^\top\mathbf U`.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(...)``.
        """
        xi = self._state(xi)
        return classical_energy(xi.unsqueeze(-2), self.W, self.U).squeeze(-1)

    def update_neuron(
        self, xi: Real[Tensor, "*batch d"], i: int
    ) -> Float[Tensor, "*batch d"]:
        """Update spin ``i`` alone (of every state in the batch); return the new states.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., d)``.
        """
        xi = self._state(xi)
        check_int("i", i, min_value=0, max_value=self.dim - 1)
        order = torch.tensor([i])
        return async_sweep(xi.unsqueeze(-2), self.W, self.U, order).squeeze(-2)

    def update(
        self,
        xi: Real[Tensor, "*batch d"],
        mode: str = "async",
        steps: int = 1,
        generator: torch.Generator | None = None,
    ) -> Float[Tensor, "*batch d"]:
        """Run ``steps`` synchronous steps or asynchronous sweeps.

        An asynchronous sweep visits every spin once, in a fresh random order (drawn
        from ``generator``) that is shared by all states of the batch.

        Args:
            xi: state(s) in {-1, +1}.
            mode: ``"async"`` (one spin at a time) or ``"sync"`` (all spins at once).
            steps: number of sweeps / synchronous steps (>= 1).
            generator: random generator for the update order (async only).

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., d)``.
        """
        xi = self._state(xi)
        check_choice("mode", mode, MODES), check_positive_int("steps", steps)
        x = xi.unsqueeze(-2)  # (..., 1, d)
        for _ in range(steps):
            if mode == "sync":
                x = sync_step(x, self.W, self.U)
            else:
                x = async_sweep(x, self.W, self.U, _order(self.dim, generator, x.device))
        return x.squeeze(-2)

    def retrieve(
        self,
        xi: Real[Tensor, "*batch d"],
        max_sweeps: int = 100,
        mode: str = "async",
        generator: torch.Generator | None = None,
    ) -> Retrieval:
        """Update until every state is a fixed point (or ``max_sweeps`` is reached).

        A state is a fixed point when a whole sweep (or a synchronous step) leaves it
        unchanged. The trajectory holds the states and energies after every sweep.

        Shapes:
            xi: ``(..., d)``.
            returns: a ``Retrieval`` with states ``(S + 1, ..., d)``.

        Example:
            >>> net = ClassicalHopfield(torch.tensor([[1., -1., 1., -1., 1., -1.]]))
            >>> out = net.retrieve(torch.tensor([1., -1., 1., 1., 1., 1.]))
            >>> out.final.tolist(), bool(out.converged)
            ([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], True)
        """
        xi = self._state(xi)
        check_positive_int("max_sweeps", max_sweeps), check_choice("mode", mode, MODES)
        return self._run_to_fixed_point(
            xi,
            lambda state: self.update(state, mode=mode, generator=generator),
            max_sweeps,
            lambda new, old: (new == old).all(-1),  # a whole sweep changed nothing
        )

    def __repr__(self) -> str:
        return f"ClassicalHopfield(num_patterns={self.num_patterns}, dim={self.dim})"
