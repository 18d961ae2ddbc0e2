"""What the classical, dense and modern memories share.

Each stores patterns as the rows of an ``(N, d)`` tensor, checks states against the
patterns' dimension, and retrieves by running its dynamics until the states stop
changing, recording the trajectory of states and energies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import torch

from seqbook._checks import check_beta, check_patterns, check_state
from seqbook._contracts import Check, Dims, Shaped

__all__ = ["PatternMemory", "Retrieval"]

Beta = Annotated[float, Check(check_beta)]  # an inverse temperature: finite and > 0


class _Patterns(Dims):
    """Stored patterns ``(N, d)`` or ``(..., N, d)`` whose ``N`` and ``d`` are sizes of the
    call (``num_queries: IntIn(1, "N")``, ``values: Shaped("N d_v")``)."""

    def __init__(self, *, binary: bool, ndim: int | tuple[int, ...], **options: Any) -> None:
        super().__init__("N d" if ndim == 2 else "... N d", **options)
        self.binary, self.ndim = binary, ndim

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        value = check_patterns(name, value, binary=self.binary, ndim=self.ndim)
        return super().check_in(name, value, call, bound)


def Patterns(
    *, binary: bool, ndim: int | tuple[int, ...] = 2, min_size: dict[str, int] | None = None
) -> Any:
    """Stored patterns, one per row (see ``check_patterns``): spins in {-1, +1} if
    ``binary``, else finite reals; integer tensors become floating. Their dimensions are
    ``N d`` (``... N d`` for more ranks than 2); ``min_size`` as in ``Shaped``."""
    return Annotated[torch.Tensor, _Patterns(binary=binary, ndim=ndim, min_size=min_size)]


@dataclass
class Retrieval:
    """What a memory's ``retrieve`` observed.

    ``states[k]`` and ``energies[k]`` are the states and energies after ``k`` sweeps
    or steps (``k = 0`` is the start); ``converged`` says which states reached a fixed
    point.
    """

    states: Shaped("*trajectory d")  # (S + 1, ..., d)
    energies: Shaped("*trajectory")  # (S + 1, ...): one per state of the trajectory
    converged: torch.Tensor  # (...,) bool

    def __post_init__(self) -> None:
        expected = tuple(self.states.shape[1:-1])
        if tuple(self.converged.shape) != expected:
            raise ValueError(f"converged must have shape {expected}, "
                             f"got {tuple(self.converged.shape)}")

    @property
    def final(self) -> torch.Tensor:
        """The last state, shape ``(..., d)``."""
        return self.states[-1]

    @property
    def sweeps(self) -> int:
        """Number of sweeps (or synchronous steps) that were run."""
        return self.states.shape[0] - 1


class PatternMemory:
    """Base of the memories: the stored patterns ``(N, d)`` and the retrieval loop."""

    patterns: torch.Tensor  # (N, d), set by the subclass after checking it
    binary: bool = True  # states are spins in {-1, +1} (False: real vectors)

    @property
    def num_patterns(self) -> int:
        """Number ``N`` of stored patterns."""
        return self.patterns.shape[0]

    @property
    def dim(self) -> int:
        """Dimension ``d`` of a pattern (number of neurons)."""
        return self.patterns.shape[1]

    def energy(self, xi: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def _state(self, xi: Any) -> torch.Tensor:
        return check_state("xi", xi, self.dim, binary=self.binary, dtype=self.patterns.dtype)

    def _run_to_fixed_point(
        self,
        xi: torch.Tensor,
        step: Callable[[torch.Tensor], torch.Tensor],
        max_steps: int,
        settled: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
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
