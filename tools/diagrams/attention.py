"""Attention: pooling as a soft lookup, multi-head attention, padding and causal masks."""

from __future__ import annotations

from matplotlib.patches import FancyArrowPatch, Rectangle

from diagrams import FONT, INK, ROLE, Canvas, diagram

BAR = "#e8a25f"  # the softmax weights' bars
BLOCKED = "#707070"  # the text of a mask's blocked cells
HATCH = "#d4d4d4"  # their hatching


def _bridge(c: Canvas, x: float, y0: float, y1: float, over: float) -> None:
    """An arrow up from (x, y0) to (x, y1) that hops over the lines it crosses below
    ``over``: a white halo under it, all drawn above the lines."""
    c.ax.plot([x, x], [y0 + 0.07, over], color="white", lw=5.0, zorder=3)
    c.ax.add_patch(FancyArrowPatch((x, y0), (x, y1), arrowstyle="-|>",
                                   mutation_scale=11, color=INK, lw=1.2, shrinkA=0,
                                   shrinkB=0, zorder=4))
    c.ax.plot([x], [y0], "o", ms=3.5, color=INK, zorder=4)


@diagram("soft_lookup", width=6.0, height=4.9)
def soft_lookup(c: Canvas) -> None:
    """Attention pooling (eq-attn-pooling): a query scored against every key, a
    softmax turning the scores into weights, the values summed with those weights;
    the hard lookup of a database is the case of one weight 1."""
    xs = [1.45, 2.45, 3.45, 4.45]
    soft = [0.62, 0.22, 0.11, 0.05]  # softmax weights, summing to 1
    hard = 0  # the key a hard lookup would match
    y_q, y_k, y_a, y_soft, y_v = 4.6, 3.95, 3.2, 2.55, 0.95
    base, full = 1.38, 0.72  # inches: the bars' baseline, the height of weight 1
    for y, label in [(y_q, "query"), (y_k, "keys"), (y_a, "scores"),
                     (base + 0.3, "weights"), (y_v, "values")]:
        c.text(0.1, y, label, ha="left")
    # the query, on a line that reaches every score
    c.box(1.05, y_q, r"$\mathbf{q}$", "input", w=0.45, h=0.4)
    c.line([1.28, xs[-1] + 0.25], [y_q, y_q])
    for i, x in enumerate(xs):
        c.box(x - 0.12, y_k, rf"$\mathbf{{k}}_{i + 1}$", "state", w=0.48, h=0.4)
        c.arrow((x - 0.12, y_k - 0.2), (x - 0.12, y_a + 0.21))
        c.arrow((x + 0.25, y_q), (x + 0.25, y_a + 0.21))
        c.box(x, y_a, rf"$a(\mathbf{{q}}, \mathbf{{k}}_{i + 1})$", "attention",
              w=0.9, h=0.4)
        c.arrow((x, y_a - 0.2), (x, y_soft + 0.19))
        c.arrow((x, y_soft - 0.19), (x, base + full + 0.03))
    # the softmax over all m scores
    c.box((xs[0] + xs[-1]) / 2, y_soft, r"softmax over $i = 1, \dots, m$",
          "attention", w=xs[-1] - xs[0] + 0.9, h=0.36)
    # the weights as bars; the hard lookup as a dashed outline of height 1
    for i, (x, w) in enumerate(zip(xs, soft)):
        c.ax.add_patch(Rectangle((x - 0.2, base), 0.4, w * full, fc=BAR, ec=INK,
                                 lw=0.8))
        c.text(x, base + w * full + 0.04, rf"$\alpha_{i + 1}$", va="bottom")
        if i == hard:
            c.ax.add_patch(Rectangle((x - 0.2, base), 0.4, full, fc="none", ec=INK,
                                     lw=1.0, ls="--"))
    c.line([xs[0] - 0.45, xs[-1] + 0.45], [base, base], width=0.8)
    # the values, each under its weight, summed into the output
    bus = y_v - 0.36
    for i, x in enumerate(xs):
        c.box(x, y_v, rf"$\mathbf{{v}}_{i + 1}$", "state", w=0.48, h=0.4)
        c.line([x, x], [y_v - 0.2, bus])
    c.line([xs[0], 5.4], [bus, bus])
    c.arrow((5.4, bus), (5.4, y_v - 0.22))
    c.box(5.4, y_v, r"$\sum_i \alpha_i \mathbf{v}_i$", "output", w=0.9, h=0.44)
    c.text(5.4, y_v + 0.3, "output", va="bottom")
    # legend: soft and hard weights
    c.ax.add_patch(Rectangle((0.15, 0.12), 0.3, 0.2, fc=BAR, ec=INK, lw=0.8))
    c.text(0.55, 0.22, "soft lookup: weights sum to 1", ha="left")
    c.ax.add_patch(Rectangle((3.3, 0.12), 0.3, 0.2, fc="none", ec=INK, lw=1.0,
                             ls="--"))
    c.text(3.7, 0.22, "hard lookup: one weight 1", ha="left")


@diagram("multi_head", width=6.0, height=4.75)
def multi_head(c: Canvas) -> None:
    """Multi-head attention (eqs. eq-attn-head and eq-attn-multihead): h heads, each
    projecting Q, K, V with its own matrices and running scaled dot-product attention
    (eq-attn-sdpa); their outputs concatenated and projected by W^O."""
    heads = [(1.45, "1"), (4.55, "h")]  # the centres of the columns drawn, their index
    dx = 0.62  # between a head's three projections
    y_in = {"Q": 1.03, "K": 0.66, "V": 0.29}  # the inputs' lines, Q on top
    y_w, y_att, y_cat, y_o = 1.75, 2.7, 3.6, 4.35
    # the inputs: one line each, from its box to the last head
    for name, y in y_in.items():
        c.box(0.3, y, rf"$\mathbf{{{name}}}$", "input", w=0.36, h=0.27)
        c.line([0.5, heads[-1][0] + dx], [y, y])
    for x, i in heads:
        for offset, name in zip((-dx, 0.0, dx), "QKV"):
            xw = x + offset
            # up from the input's line to its projection, over the lines between
            _bridge(c, xw, y_in[name], y_w - 0.2, y_in["Q"] + 0.07)
            c.box(xw, y_w, rf"$\mathbf{{W}}_{i}^{name}$", "plain", w=0.52, h=0.4)
            c.arrow((xw, y_w + 0.2), (x + offset * 0.55, y_att - 0.3))
        c.box(x, y_att, "scaled dot-product\nattention", "attention", w=1.8, h=0.6)
        c.arrow((x, y_att + 0.3), (x, y_cat - 0.2))
        c.text(x + 0.08, (y_att + y_cat) / 2 + 0.03, rf"$\mathrm{{head}}_{i}$",
               ha="left")
        c.frame(x - 1.0, y_w - 0.33, x + 1.0, y_att + 0.38)
    c.text(3.0, (y_w + y_att) / 2 + 0.25, r"$\cdots$", size=16)
    c.text(3.0, (y_w + y_att) / 2 - 0.05, "$h$ heads", va="top")
    c.text(3.0, (y_w + y_att) / 2 - 0.3, "in parallel", va="top")
    c.box(3.0, y_cat, r"$\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)$",
          "plain", w=5.0, h=0.4)
    c.arrow((3.0, y_cat + 0.2), (3.0, y_o - 0.2))
    c.box(3.0, y_o, r"$\mathbf{W}^O$", "plain", w=0.6, h=0.4)
    c.arrow((3.3, y_o), (3.85, y_o))
    c.box(4.85, y_o, r"$\mathrm{MultiHead}(\mathbf{Q}, \mathbf{K}, \mathbf{V})$",
          "output", w=1.95, h=0.44)


def _mask_grid(c: Canvas, left: float, top: float, keep: list[list[bool]],
               cell: float, title: str) -> None:
    """A boolean mask as a grid: query rows i downwards, key columns j rightwards,
    1 on the allowed cells, 0 on the blocked (hatched) ones, indices from 1."""
    n_q, n_k = len(keep), len(keep[0])
    for i in range(n_q):
        for j in range(n_k):
            x, y = left + j * cell, top - (i + 1) * cell
            allowed = keep[i][j]
            c.ax.add_patch(Rectangle(
                (x, y), cell, cell, fc=ROLE["attention"] if allowed else "white",
                ec="#b0b0b0", lw=0.6, hatch=None if allowed else "///",
                hatchcolor=HATCH))
            c.text(x + cell / 2, y + cell / 2, "1" if allowed else "0",
                   color=INK if allowed else BLOCKED)
    c.ax.add_patch(Rectangle((left, top - n_q * cell), n_k * cell, n_q * cell,
                             fc="none", ec=INK, lw=1.0))
    for j in range(n_k):
        c.text(left + (j + 0.5) * cell, top + 0.04, str(j + 1), va="bottom")
    for i in range(n_q):
        c.text(left - 0.06, top - (i + 0.5) * cell, str(i + 1), ha="right")
    c.text(left + n_k * cell / 2, top + 0.3, title, va="bottom")


@diagram("masks", width=6.0, height=3.45)
def masks(c: Canvas) -> None:
    """The keep masks m_ij of eq-attn-masked-softmax, True (1) where query i may
    attend to key j: padding for a batch of lengths 6 and 4, and the causal mask."""
    T, lengths, cell = 6, (6, 4), 0.235
    top = 2.65
    lefts = [0.62, 2.5, 4.4]
    for left, length in zip(lefts, lengths):
        keep = [[j < length for j in range(T)] for _ in range(T)]
        _mask_grid(c, left, top, keep, cell, f"length {length}")
    _mask_grid(c, lefts[2], top, [[j <= i for j in range(T)] for i in range(T)],
               cell, r"$j \leq i$")
    width = T * cell
    c.text((lefts[0] + lefts[1] + width) / 2, top + 0.62,
           "padding: a batch of two", va="bottom", weight="bold")
    c.text(lefts[2] + width / 2, top + 0.62, "causal", va="bottom", weight="bold")
    c.text(lefts[0] - 0.06, top + 0.04, "key $j$", ha="right", va="bottom")
    c.ax.text(0.18, top - width / 2, "query $i$", rotation=90, ha="center",
              va="center", fontsize=FONT, color=INK)
    c.text(lefts[1] + 5 * cell, top - width - 0.04, "padding", va="top")
    # the polarity
    y = top - width - 0.5
    c.ax.add_patch(Rectangle((0.2, y - 0.1), 0.2, 0.2, fc=ROLE["attention"],
                             ec="#b0b0b0", lw=0.6))
    c.text(0.5, y, "1 (True): query $i$ may attend to key $j$", ha="left")
    y -= 0.36
    c.ax.add_patch(Rectangle((0.2, y - 0.1), 0.2, 0.2, fc="white", ec="#b0b0b0",
                             lw=0.6, hatch="///", hatchcolor=HATCH))
    c.text(0.5, y, "0 (False): blocked, the weight $\\alpha_{ij}$ is exactly 0",
           ha="left")
