"""What the classical, dense and modern memories share.

Each stores patterns as the rows of an ``(N, d)`` tensor, checks states against the
patterns' dimension, and retrieves by running its dynamics until the states stop
changing, recording the trajectory of states and energies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from jaxtyping import Bool, Float, Real
from torch import Tensor

from seqbook._checks import check_state

__all__ = ["PatternMemory", "Retrieval"]


@dataclass
class Retrieval:
    """What a memory's ``retrieve`` observed.

    ``states[k]`` and ``energies[k]`` are the states and energies after ``k`` sweeps
    or steps (``k = 0`` is the start); ``converged`` says which states reached a fixed
    point.
    """

    states: Float[Tensor, "steps *batch d"]  # (S + 1, ..., d)
    energies: Float[Tensor, " steps *batch"]  # (S + 1, ...): one per state of the trajectory
    converged: Bool[Tensor, "*batch"]  # (...,)

    @property
    def final(self) -> Tensor:
        """The last state, shape ``(..., d)``."""
        return self.states[-1]

    @property
    def sweeps(self) -> int:
        """Number of sweeps (or synchronous steps) that were run."""
        return self.states.shape[0] - 1


class PatternMemory:
    """Base of the memories: the stored patterns ``(N, d)`` and the retrieval loop."""

    patterns: Tensor  # (N, d), set by the subclass after checking it
    binary: bool = True  # states are spins in {-1, +1} (False: real vectors)

    @property
    def num_patterns(self) -> int:
        """Number ``N`` of stored patterns."""
        return self.patterns.shape[0]

    @property
    def dim(self) -> int:
        """Dimension ``d`` of a pattern (number of neurons)."""
        return self.patterns.shape[1]

    def energy(self, xi: Real[Tensor, "*batch d"]) -> Float[Tensor, "*batch"]:
        """The energy of the state(s) ``xi`` ``(..., d)``, shape ``(...)``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _state(self, xi: Tensor) -> Tensor:
        """``xi`` checked against the patterns (see ``check_state``): its last dimension
        is ``d``; spins of any real dtype become the patterns' dtype."""
        return check_state("xi", xi, self.dim, binary=self.binary, dtype=self.patterns.dtype)

    def _run_to_fixed_point(
        self,
        xi: Tensor,
        step: Callable[[Tensor], Tensor],
        max_steps: int,
        settled: Callable[[Tensor, Tensor], Tensor],
    ) -> Retrieval:
        """Apply ``step`` until ``settled(new, old)`` holds for every state."""
        states, energies = [xi], [self.energy(xi)]
        converged = torch.zeros(xi.shape[:-1], dtype=torch.bool, device=xi.device)
        for _ in range(max_steps):
            new = step(states[-1])
            converged = settled(new, states[-1])  # (...,)
            states.append(new)
            energies.append(self.energy(new))
            if converged.all():
                break
        return Retrieval(torch.stack(states), torch.stack(energies), converged)
