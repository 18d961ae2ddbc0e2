r"""Dense associative memory (Krotov & Hopfield, 2016; Demircigil et al., 2017).

Shapes: ``N`` stored patterns, ``d`` spins, ``B`` states updated together (the pure
function also accepts a leading batch of independent memories).

The energy :math:`E(\boldsymbol\xi) = -\sum_{\mu=1}^N F(\mathbf x_\mu^\top \boldsymbol\xi)`
with a fast-growing :math:`F` (a polynomial :math:`u^n` or :math:`e^u`) makes the
minima around the stored patterns much sharper than the classical network's, whose
energy is the case :math:`F(u) = u^2/2` (up to a constant). The asynchronous update
sets spin :math:`l` to whichever sign gives the lower energy, all other spins fixed.

Everything is computed in float64: the overlaps are integers and the polynomial
energies reach :math:`N d^n`, beyond the integers float32 represents exactly. For
:math:`F = \exp` the update compares log-sum-exps, so it never overflows; the energy
itself overflows (to ``-inf``) once an overlap exceeds about 709, and
:meth:`~seqbook.hopfield.DenseAssociativeMemory.log_neg_energy` gives :math:`\log(-E)` instead.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import torch
from jaxtyping import Float, Float64, Real
from torch import Tensor

from seqbook._checks import (
    check_choice,
    check_int,
    check_patterns,
    check_positive_int,
    check_spins,
)
from seqbook.hopfield.classical import Order, States, _check_order, _order, _sign_keep_ties
from seqbook.hopfield.memory import PatternMemory, Retrieval

__all__ = ["DenseAssociativeMemory", "dense_async_sweep", "dense_energy"]

FUNCTIONS = ("poly", "exp")  # the interaction F: u^n or e^u
# the stored patterns x_mu in {-1, +1}, one per row (N, d), or (..., N, d) for several memories
StoredPatterns: TypeAlias = Float[Tensor, "... N d"]


def _F(z: Tensor, F: str, degree: int) -> Tensor:
    return torch.exp(z) if F == "exp" else z**degree


def _odd_part(a: Tensor, degree: int) -> Tensor:
    r""":math:`g(a) = \sum_{k \text{ odd}} 2\binom{n}{k} a^{n-k}`, so that
    :math:`(a + x)^n - (a - x)^n = x\,g(a)` for :math:`x = \pm 1`."""
    g = torch.zeros_like(a)
    for k in range(1, degree + 1, 2):
        g = g + 2 * math.comb(degree, k) * a ** (degree - k)
    return g


def _check_dense(
    xi: Tensor, patterns: Tensor, F: str, degree: int, order: Tensor | None = None
) -> None:
    """The arguments of the dense memory's functions: spins, F, degree (and order)."""
    check_spins("xi", xi)
    check_patterns("patterns", patterns, binary=True, ndim=(2, 3))
    check_choice("F", F, FUNCTIONS), check_int("degree", degree, min_value=2)
    if order is not None:
        _check_order(order, xi.shape[-1])


def dense_energy(
    xi: States, patterns: StoredPatterns, F: str = "poly", degree: int = 3
) -> Float64[Tensor, "... B"]:
    r"""Energy :math:`-\sum_\mu F(\mathbf x_\mu^\top\boldsymbol\xi)`, in float64.

    Shapes:
        xi: ``(..., B, d)``.
        patterns: ``(..., N, d)``.
        returns: ``(..., B)``.

    Example:
        >>> X = torch.tensor([[1., 1., -1.]])
        >>> dense_energy(torch.tensor([[1., 1., -1.]]), X, F="poly", degree=3)
        tensor([-27.], dtype=torch.float64)
    """
    _check_dense(xi, patterns, F, degree)
    overlaps = xi.double() @ patterns.double().transpose(-1, -2)  # (..., B, N)
    return -_F(overlaps, F, degree).sum(-1)  # (eq-hopfield-dam-energy)


def dense_async_sweep(
    xi: States, patterns: StoredPatterns, F: str, degree: int, order: Order
) -> States:
    r"""One asynchronous sweep of the dense memory, spins visited in ``order``.

    With :math:`a_\mu = \sum_{j \ne l} x_{\mu j}\xi_j` the overlap without spin
    :math:`l`, the new spin is

    .. math::

        \xi_l \leftarrow \operatorname{sgn}\Big[\sum_\mu F(a_\mu + x_{\mu l})
                                        - F(a_\mu - x_{\mu l})\Big],

    i.e. :math:`+1` exactly when :math:`E(\xi_l = +1) < E(\xi_l = -1)`; a tie keeps the
    spin. For :math:`F = \exp` the two sums are compared as log-sum-exps. The sweep
    runs in float64 (exact overlaps) and returns the states in their own dtype.

    Shapes:
        xi: ``(..., B, d)``.
        patterns: ``(..., N, d)``.
        order: ``(k,)`` spin indices.
        returns: ``(..., B, d)``.

    Example:
        >>> X = torch.tensor([[1., 1., -1., -1.], [1., -1., 1., -1.]])
        >>> dense_async_sweep(torch.tensor([[-1., 1., -1., -1.]]), X, "exp", 3, torch.arange(4))
        tensor([[ 1.,  1., -1., -1.]])
    """
    _check_dense(xi, patterns, F, degree, order)
    X, s = patterns.double(), xi.double().clone()  # the patterns x_mu as rows
    overlaps = s @ X.transpose(-1, -2)  # (..., B, N)
    for l in order.tolist():
        x_l = X[..., :, l].unsqueeze(-2)  # (..., 1, N)
        old = s[..., l]  # (..., B)
        a = overlaps - x_l * old.unsqueeze(-1)  # a_mu: overlap without spin l
        if F == "exp":  # lse(a + x) - lse(a - x): same sign, no overflow
            gain = torch.logsumexp(a + x_l, -1) - torch.logsumexp(a - x_l, -1)
        else:  # sum_mu F(a + x) - F(a - x) = sum_mu x g(a), x = +-1
            gain = (_odd_part(a, degree) * x_l).sum(-1)
        new = _sign_keep_ties(gain, old)  # (eq-hopfield-dam-rule)  (..., B)
        overlaps = overlaps + x_l * (new - old).unsqueeze(-1)
        s[..., l] = new
    return s.to(xi.dtype)


class DenseAssociativeMemory(PatternMemory):
    r"""Binary dense associative memory with polynomial or exponential interaction.

    .. math::

        E(\boldsymbol\xi) = -\sum_{\mu=1}^N F(\mathbf x_\mu^\top \boldsymbol\xi), \qquad
        F(u) = u^n \ (\texttt{F="poly"}) \quad\text{or}\quad F(u) = e^u \ (\texttt{F="exp"})

    Args:
        patterns: the memories :math:`\mathbf x_\mu \in \{-1, +1\}^d`, one per row.
        F: ``"poly"`` (Krotov & Hopfield) or ``"exp"`` (Demircigil et al.).
        degree: the polynomial's degree :math:`n \ge 2` (ignored for ``"exp"``).

    Shapes:
        patterns: ``(N, d)``.
        xi: a state ``(d,)`` or states ``(..., d)``; energies are ``()`` or ``(...)``.

    Example:
        >>> memory = DenseAssociativeMemory(torch.tensor([[1., 1., -1., -1.],
        ...                                               [1., -1., 1., -1.]]), F="exp")
        >>> memory.update(torch.tensor([-1., 1., -1., -1.]))
        tensor([ 1.,  1., -1., -1.])
    """

    def __init__(
        self, patterns: Real[Tensor, "N d"], F: str = "poly", degree: int = 3
    ) -> None:
        self.patterns = check_patterns("patterns", patterns, binary=True)  # (N, d)
        self.F = check_choice("F", F, FUNCTIONS)
        self.degree = check_int("degree", degree, min_value=2)

    def energy(self, xi: Real[Tensor, "*batch d"]) -> Float64[Tensor, "*batch"]:
        r"""Energy :math:`-\sum_\mu F(\mathbf x_\mu^\top\boldsymbol\xi)` in float64.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(...)``.
        """
        xi = self._state(xi)
        return dense_energy(xi.unsqueeze(-2), self.patterns, self.F, self.degree).squeeze(-1)

    def log_neg_energy(self, xi: Real[Tensor, "*batch d"]) -> Float64[Tensor, "*batch"]:
        r""":math:`\log(-E) = \log\sum_\mu e^{\mathbf x_\mu^\top\boldsymbol\xi}`, finite where
        :math:`E` overflows (``F="exp"``).

        :math:`-E` is positive, so the energy falls exactly when this rises.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(...)``, float64.

        Example:
            >>> memory = DenseAssociativeMemory(torch.ones(2, 1000), F="exp")
            >>> (memory.energy(torch.ones(1000)).item(),
            ...  round(memory.log_neg_energy(torch.ones(1000)).item(), 3))
            (-inf, 1000.693)
        """
        if self.F != "exp":
            raise ValueError(f"log_neg_energy needs F='exp' (-E can be <= 0), got F={self.F!r}")
        xi = self._state(xi)
        return torch.logsumexp(xi.double() @ self.patterns.double().T, dim=-1)  # (...)

    def update_neuron(
        self, xi: Real[Tensor, "*batch d"], l: int
    ) -> Float[Tensor, "*batch d"]:
        """Update spin ``l`` alone (of every state in the batch).

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., d)``.
        """
        xi = self._state(xi)
        check_int("l", l, min_value=0, max_value=self.dim - 1)
        order = torch.tensor([l])
        x = xi.unsqueeze(-2)  # (..., 1, d)
        return dense_async_sweep(x, self.patterns, self.F, self.degree, order).squeeze(-2)

    def update(
        self,
        xi: Real[Tensor, "*batch d"],
        steps: int = 1,
        generator: torch.Generator | None = None,
    ) -> Float[Tensor, "*batch d"]:
        """Run ``steps`` asynchronous sweeps, each in a fresh random order.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., d)``.
        """
        xi = self._state(xi)
        check_positive_int("steps", steps)
        x = xi.unsqueeze(-2)  # (..., 1, d)
        for _ in range(steps):
            order = _order(self.dim, generator, x.device)
            x = dense_async_sweep(x, self.patterns, self.F, self.degree, order)
        return x.squeeze(-2)

    def retrieve(
        self,
        xi: Real[Tensor, "*batch d"],
        max_sweeps: int = 100,
        generator: torch.Generator | None = None,
    ) -> Retrieval:
        """Sweep until every state is a fixed point (or ``max_sweeps`` is reached).

        Shapes:
            xi: ``(..., d)``.
            returns: a ``Retrieval`` with states ``(S + 1, ..., d)``.
        """
        xi = self._state(xi)
        check_positive_int("max_sweeps", max_sweeps)
        return self._run_to_fixed_point(
            xi,
            lambda state: self.update(state, generator=generator),
            max_sweeps,
            lambda new, old: (new == old).all(-1),  # a whole sweep changed nothing
        )

    def __repr__(self) -> str:
        kind = "exp" if self.F == "exp" else f"poly, degree={self.degree}"
        return f"DenseAssociativeMemory(num_patterns={self.num_patterns}, dim={self.dim}, F={kind})"
