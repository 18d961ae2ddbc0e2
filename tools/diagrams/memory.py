"""Memory: the Hopfield energy landscape, the modern Hopfield update as attention,
self-attention as an attractor network of vector spins, the Energy Transformer block."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from diagrams import INK, ROLE, Canvas, diagram

CURVE = "#4a7fb5"  # the energy curve
STEP = "#c0392b"  # the state's single-spin steps
FAINT = "#9a9a9a"  # couplings in the background


def _wells(s: np.ndarray, wells: list[tuple[float, float, float]]) -> np.ndarray:
    """A sum of Gaussian wells (centre, depth, width) on a gentle bowl."""
    e = 0.02 * (s - 3.0) ** 2
    for centre, depth, width in wells:
        e = e - depth * np.exp(-((s - centre) ** 2) / (2 * width**2))
    return e


@diagram("hopfield_landscape", width=6.0, height=3.2)
def hopfield_landscape(c: Canvas) -> None:
    """A schematic energy E(xi) over the states: deep minima at the stored patterns,
    a shallower spurious mixture, and a cue descending by single-spin flips
    (eqs. eq-hopfield-rule and eq-hopfield-energy)."""
    wells = [(1.05, 1.15, 0.36), (2.45, 0.55, 0.26), (3.7, 1.25, 0.38),
             (5.05, 1.05, 0.34)]
    floor, base = 0.55, 2.45  # the state axis; the curve far from every well
    s = np.linspace(0.35, 5.75, 1081)
    e = base + _wells(s, wells)
    ax = c.ax
    # basins of attraction, split at the ridges: stored patterns blue, spurious grey
    ridges = [s[k] for k in range(1, len(s) - 1) if e[k - 1] < e[k] > e[k + 1]]
    cuts = [s[0], *ridges, s[-1]]
    fills = [ROLE["state"], ROLE["input"], ROLE["state"], ROLE["state"]]
    for (a, b), colour in zip(zip(cuts, cuts[1:]), fills):
        inside = (s >= a) & (s <= b)
        ax.fill_between(s[inside], e[inside], floor, color=colour, lw=0)
    for ridge in ridges:
        c.line([ridge, ridge], [floor, base + _wells(np.array([ridge]), wells)[0]],
               color="#ffffff", width=1.5)
    ax.plot(s, e, color=CURVE, lw=2.0, solid_capstyle="round")
    # axes
    c.arrow((0.3, floor), (0.3, 3.1), width=1.0)
    c.text(0.42, 3.08, r"energy $E(\boldsymbol{\xi})$", ha="left", va="top")
    c.text(5.85, 3.08, "schematic", ha="right", va="top", color="#777777")
    c.line([0.3, 5.85], [floor, floor], width=1.0)
    c.text(3.05, 0.28, r"state $\boldsymbol{\xi} \in \{-1, +1\}^d$, its $2^d$ values drawn "
           "on one axis")
    # minima and their labels
    for (centre, _, _), label in zip(wells, [
            r"$\mathbf{x}^1$", None, r"$\mathbf{x}^2$", r"$\mathbf{x}^3$"]):
        if label:
            c.text(centre, 0.78, label)
    c.text(2.45, 1.2, "spurious")
    c.text(2.45, 0.9, r"$\mathrm{sgn}(\mathbf{x}^1\!+\!\mathbf{x}^2\!+\!\mathbf{x}^3)$")
    # the cue: single-spin flips down into the basin of x^2
    steps = np.array([4.28, 4.14, 4.0, 3.86, 3.74])
    heights = base + _wells(steps, wells)
    ax.plot(steps, heights + 0.08, "o", color=STEP, ms=5, zorder=5)
    c.arrow((4.42, heights[0] + 0.25), (3.82, heights[-1] + 0.3), color=STEP,
            curve=0.3)
    c.text(4.05, 2.78, r"cue $\boldsymbol{\xi}$: every spin flip", ha="left",
           color=STEP)
    c.text(4.05, 2.5, r"lowers $E$ by $2|h_i|$", ha="left", color=STEP)


def _bars(c: Canvas, x: float, y: float, weights: list[float], *, width: float = 0.12,
          gap: float = 0.05, height: float = 0.5, colour: str = "#e08a3c") -> None:
    """Small vertical bars (a distribution) with their bottom-left corner at (x, y)."""
    for k, w in enumerate(weights):
        left = x + k * (width + gap)
        c.ax.add_patch(FancyBboxPatch((left, y), width, height * w,
                                      boxstyle="square,pad=0", fc=colour, ec="none"))
    c.line([x - 0.03, x + len(weights) * (width + gap) - gap + 0.03], [y, y],
           width=0.8)


@diagram("modern_hopfield_update", width=6.0, height=3.9)
def modern_hopfield_update(c: Canvas) -> None:
    """The modern Hopfield update xi_new = X softmax(beta X^T xi) read as attention
    (eq-hopfield-mhn-update; eqs. eq-hopfield-q to eq-hopfield-layer)."""
    y = 2.3  # the row of the update
    c.box(0.45, y, r"$\boldsymbol{\xi}$", "state", w=0.6, h=0.5)
    c.text(0.45, y + 0.4, "state", va="bottom")
    c.text(0.45, y - 0.4, "query", va="top", weight="bold")
    c.box(1.7, y, r"$\beta\,\mathbf{X}^\top\boldsymbol{\xi}$", "attention",
          w=1.05, h=0.5)
    c.box(3.0, y, "softmax", "attention", w=0.95, h=0.5)
    c.box(4.35, y, r"$\mathbf{X}\,\mathbf{p}$", "attention", w=0.75, h=0.5)
    c.box(5.5, y, r"$\boldsymbol{\xi}^{\mathrm{new}}$", "output", w=0.75, h=0.5)
    c.arrow((0.75, y), (1.17, y))
    c.arrow((2.23, y), (2.52, y))
    c.arrow((3.48, y), (3.97, y))
    c.arrow((4.73, y), (5.12, y))
    c.text(3.73, y + 0.1, r"$\mathbf{p}$", va="bottom")
    c.text(1.7, y - 0.36, "scores", va="top")
    c.text(4.35, y - 0.36, "weighted sum", va="top")
    # beta, the inverse temperature, scales the scores
    c.box(1.7, 3.35, r"$\beta$", "plain", w=0.45, h=0.4)
    c.arrow((1.7, 3.13), (1.7, y + 0.27))
    c.text(1.1, 3.35, "inverse\ntemperature", ha="right", size=11)
    # what beta does to p
    for x0, weights, label in [
            (2.35, [0.42, 0.3, 0.36, 0.26], "small $\\beta$:\nnear uniform"),
            (4.12, [0.08, 0.96, 0.1, 0.04], "large $\\beta$:\none pattern")]:
        _bars(c, x0, 2.95, weights, width=0.1, gap=0.04, height=0.6)
        c.text(x0 + 0.62, 3.22, label, ha="left")
    # the stored patterns: keys (the scores) and values (the sum)
    xs = [2.35, 2.8, 3.25, 3.7]
    labels = [r"$\mathbf{x}_1$", r"$\mathbf{x}_2$", r"$\cdots$", r"$\mathbf{x}_N$"]
    for x, label in zip(xs, labels):
        if label == r"$\cdots$":
            c.text(x, 1.0, label)
        else:
            c.box(x, 1.0, label, "state", w=0.4, h=0.5)
    c.frame(2.05, 0.67, 4.0, 1.33, "")
    c.text(1.9, 1.0, r"stored patterns $\mathbf{X}$", ha="right")
    c.arrow((2.05, 1.15), (1.7, y - 0.6), curve=-0.25)
    c.arrow((4.0, 1.15), (4.35, y - 0.6), curve=0.25)
    c.text(2.1, 1.6, "keys", weight="bold", ha="left")
    c.text(3.95, 1.6, "values", weight="bold", ha="right")
    # the same step in a layer (eq-hopfield-layer)
    c.text(3.0, 0.25, r"in a layer: $\mathbf{Q} = \mathbf{R}\mathbf{W}_Q$, "
           r"$\mathbf{K} = \mathbf{Y}\mathbf{W}_K$, "
           r"$\mathbf{V} = \mathbf{K}\mathbf{W}_V$, $\beta = 1/\sqrt{d_k}$")


def _spin(c: Canvas, x: float, y: float, angle: float | None, *, r: float = 0.22,
          fill: str = ROLE["state"], dashed: bool = False, edge: str = INK,
          lw: float = 1.0) -> None:
    """A vector spin: a disc with a unit arrow at ``angle`` degrees (None: no arrow)."""
    c.ax.add_patch(Circle((x, y), r, fc=fill, ec=edge, lw=lw,
                          ls="--" if dashed else "-", zorder=3))
    if angle is not None:
        dx, dy = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        c.ax.add_patch(FancyArrowPatch(
            (x - 0.75 * r * dx, y - 0.75 * r * dy), (x + 0.8 * r * dx, y + 0.8 * r * dy),
            arrowstyle="-|>", mutation_scale=8, color=INK, lw=1.2, shrinkA=0, shrinkB=0,
            zorder=4))


@diagram("attractor_network", width=6.0, height=4.0)
def attractor_network(c: Canvas) -> None:
    """Patches of a digit as unit spins x_i coupled pairwise by matrices J_ij; spin i
    turns towards the attention-weighted field of the others, a masked token is not
    attended to (eqs. eq-attr-embed to eq-attr-normalize)."""
    # the digit: 4 x 4 patches, ink from 0 (paper) to 1
    ink = [[0.0, 0.1, 0.2, 0.0],
           [0.1, 0.9, 0.8, 0.0],
           [0.0, 0.2, 0.9, 0.1],
           [0.0, 0.6, None, 0.0]]  # None: a masked patch
    cell, left, top = 0.36, 0.15, 3.35
    for row, values in enumerate(ink):
        for col, p in enumerate(values):
            x0, y0 = left + col * cell, top - (row + 1) * cell
            if p is None:
                c.ax.add_patch(FancyBboxPatch((x0, y0), cell, cell,
                               boxstyle="square,pad=0", fc=ROLE["gate"], ec=INK,
                               lw=0.8, ls="--", hatch="///"))
            else:
                shade = 1 - 0.85 * p
                c.ax.add_patch(FancyBboxPatch((x0, y0), cell, cell,
                               boxstyle="square,pad=0", fc=(shade, shade, shade),
                               ec="#aaaaaa", lw=0.6))
    c.text(left + 2 * cell, top + 0.12, "a digit's patches", va="bottom")
    c.text(left + 2 * cell, top - 4 * cell - 0.12, "one token masked", va="top")
    # the window of 3 x 3 patches drawn as spins on the right
    c.ax.add_patch(FancyBboxPatch((left + cell, top - 4 * cell), 3 * cell, 3 * cell,
                   boxstyle="square,pad=0", fc="none", ec="#e08a3c", lw=1.6))
    c.arrow((1.72, 2.45), (2.35, 2.45))
    c.text(2.03, 2.6, r"$\mathbf{x}_i = F\mathbf{s}_i/\sqrt{a}$", va="bottom")
    # the spins: paper points up, ink right (the quarter circle of eq-attr-pixel-spin)
    gx, gy = [2.9, 3.95, 5.0], [3.3, 2.45, 1.6]
    i_pos = (gx[1], gy[1])
    spins = [(gx[col], gy[row], ink[row + 1][col + 1])
             for row in range(3) for col in range(3)]
    ring = [0, 1, 2, 5, 8, 7, 6, 3]  # the outer spins, in order around i
    for a, b in zip(ring, ring[1:] + ring[:1]):  # every pair is coupled: a few of them
        (xa, ya, _), (xb, yb, _) = spins[a], spins[b]
        c.line([xa, xb], [ya, yb], color="#c8c8c8", width=1.0)
    for x, y, p in spins:
        if (x, y) == i_pos:
            continue
        dx, dy = i_pos[0] - x, i_pos[1] - y
        norm = math.hypot(dx, dy)
        start = (x + 0.25 * dx / norm, y + 0.25 * dy / norm)
        end = (i_pos[0] - 0.27 * dx / norm, i_pos[1] - 0.27 * dy / norm)
        if p is None:
            _spin(c, x, y, None, fill=ROLE["gate"], dashed=True)
            c.line([start[0], end[0]], [start[1], end[1]], color=FAINT, dashed=True)
            continue
        _spin(c, x, y, 90 - 90 * p)
        c.arrow(start, end, color="#e08a3c", width=0.6 + 2.2 * p)  # width: alpha
    _spin(c, *i_pos, 90 - 90 * ink[2][2], fill=ROLE["state"], lw=2.0)
    c.text(i_pos[0] + 0.27, i_pos[1] - 0.27, r"$\mathbf{x}_i$", ha="left", va="top")
    c.text(3.52, 3.03, r"$J_{ij}$", ha="left")
    c.text(3.95, 1.2, "masked: not attended in the first step", va="center")
    c.text(3.95, 3.82, r"arrow width: $\alpha_{i \leftarrow j}$", va="top")
    # the update of spin i
    c.box(3.0, 0.55, "", "attention", w=5.7, h=0.8)
    c.text(3.0, 0.74, r"$\mathbf{h}_i = \sum_{j \neq i} \alpha_{i \leftarrow j}\,"
           r"J_{ij}\mathbf{x}_j$,   $\alpha_{i \leftarrow j} \propto "
           r"\exp(\lambda\,\mathbf{x}_i^\top J_{ij}\mathbf{x}_j)$")
    c.text(3.0, 0.35, r"every $i$ at once:  $\mathbf{x}_i \leftarrow "
           r"(\mathbf{h}_i + \gamma\,\mathbf{x}_i) / "
           r"\Vert \mathbf{h}_i + \gamma\,\mathbf{x}_i \Vert$")


@diagram("energy_transformer_block", width=6.0, height=3.6)
def energy_transformer_block(c: Canvas) -> None:
    """The Energy Transformer block: tokens x_A, their energy layer norm g_A, two
    energies summed, and the step x_A <- x_A - alpha dE/dg_A repeated T times
    (eqs. eq-et-layernorm, eq-et-energy and eq-et-step)."""
    y = 2.2  # the middle row
    c.box(0.5, y, r"$\mathbf{x}_A^{(t)}$", "input", w=0.72, h=0.55)
    c.text(0.5, y + 0.4, "tokens", va="bottom")
    c.box(1.72, y, "energy\nlayer norm\n" r"$\mathbf{g}_A = \partial L / \partial \mathbf{x}_A$",
          "plain", w=1.3, h=0.95)
    c.arrow((0.86, y), (1.07, y))
    c.box(3.45, y + 0.8, "energy attention\n" r"$E^{\mathrm{ATT}}(\mathbf{g})$" "\n"
          r"$H$ heads: $W^Q_h$, $W^K_h$", "attention", w=1.6, h=0.85)
    c.box(3.45, y - 0.8, "Hopfield network\n" r"$E^{\mathrm{HN}}(\mathbf{g})$" "\n"
          r"$M$ memories $\boldsymbol{\xi}_\mu$", "state", w=1.6, h=0.85)
    c.arrow((2.37, y + 0.2), (2.65, y + 0.6))
    c.arrow((2.37, y - 0.2), (2.65, y - 0.6))
    c.ax.add_patch(Circle((4.7, y), 0.2, fc="#ffffff", ec=INK, lw=1.0))
    c.text(4.7, y, "+")
    c.arrow((4.25, y + 0.6), (4.56, y + 0.15))
    c.arrow((4.25, y - 0.6), (4.56, y - 0.15))
    c.text(5.15, y + 0.07, r"$E$", va="bottom")
    # the step, and the loop back to the tokens
    c.line([4.9, 5.55, 5.55], [y, y, 0.9])
    c.arrow((5.55, 0.9), (5.55, 0.65))
    c.text(5.47, 1.35, r"$\partial E / \partial \mathbf{g}_A$", ha="right")
    c.box(3.7, 0.4, r"$\mathbf{x}_A^{(t+1)} = \mathbf{x}_A^{(t)} - \alpha\,"
          r"\partial E / \partial \mathbf{g}_A$", "input", w=3.7, h=0.5)
    c.line([1.85, 0.5, 0.5], [0.4, 0.4, 1.5])
    c.arrow((0.5, 1.5), (0.5, y - 0.28))
    c.text(0.62, 1.05, r"$T$ times", ha="left")
