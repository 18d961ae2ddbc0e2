"""Recurrent networks: truncated BPTT's windows, stacked and bidirectional layers."""

from __future__ import annotations

from matplotlib.patches import FancyArrowPatch

from diagrams import INK, Canvas, diagram

GRADIENT = "#b03a2e"  # back-propagated gradients and where they stop
HIGHLIGHT = "#2f6fb0"  # the connections of one highlighted state


def _under(c: Canvas, xs: list[float], ys: list[float]) -> None:
    """A white band under a line to be drawn next, so that a line already drawn
    across it shows a gap: it passes under."""
    c.line(xs, ys, color="white", width=6)
    c.ax.lines[-1].set_zorder(1)  # among the patches, in the order drawn


def _span(c: Canvas, x0: float, x1: float, y: float, label: str, *,
          below: bool = True) -> None:
    """A dimension line from x0 to x1 with end ticks, labelled below (or above)."""
    c.ax.add_patch(FancyArrowPatch((x0, y), (x1, y), arrowstyle="|-|,widthA=0.25,"
                                   "widthB=0.25", mutation_scale=11, color=INK,
                                   lw=1.0, shrinkA=0, shrinkB=0))
    c.text((x0 + x1) / 2, y - 0.17 if below else y + 0.17, label)


@diagram("tbptt_windows", width=6.0, height=4.45)
def tbptt_windows(c: Canvas) -> None:
    """TBPTT(k1, k2) with k1 = 2, k2 = 4: one forward pass over the stream, never cut;
    every k1 steps an update back-propagates the last k1 losses through a window of
    k2 steps that starts from the stored state (truncated_bptt in seqbook)."""
    k1, k2, last = 2, 4, 9
    step = 0.5
    x = [1.2 + step * t for t in range(last + 1)]  # step t's column
    y_chain = 3.62
    # the forward pass: one chain of states, handed on across all windows
    for t in range(last + 1):
        c.box(x[t], y_chain, rf"$\mathbf{{h}}_{{{t}}}$", "state", w=0.3, h=0.34)
    for t in range(last):
        c.arrow((x[t] + 0.15, y_chain), (x[t + 1] - 0.15, y_chain))
    c.arrow((x[last] + 0.15, y_chain), (5.97, y_chain))
    c.text(0.05, y_chain + 0.12, "forward,", ha="left")
    c.text(0.05, y_chain - 0.13, "never cut", ha="left")
    # the updates: one row each, the window's steps as cells
    c.text(0.05, 3.08, "update at", ha="left")
    rows = [(u, 2.68 - 0.6 * n) for n, u in enumerate(range(k1, last, k1))]
    for u, y in rows:
        start = max(0, u - k2)  # the window starts from the stored state h_start
        stop = x[start] + step / 2
        c.text(0.3, y, rf"$t = {u}$", ha="left")
        for t in range(start + 1, u + 1):
            loss = t > u - k1  # the k1 losses of this update
            c.box(x[t], y, rf"$\ell_{{{t}}}$" if loss else "",
                  "output" if loss else "plain", w=step - 0.04, h=0.28)
        c.text(stop - 0.36, y, rf"$\mathbf{{h}}_{{{start}}}$")  # stored, detached
        c.arrow((stop - 0.2, y), (stop + 0.02, y))
        c.line([stop, stop], [y + 0.18, y - 0.34], color=GRADIENT, width=2.6)
        c.arrow((x[u] + 0.1, y - 0.26), (stop + 0.03, y - 0.26), color=GRADIENT,
                dashed=True)
        c.ax.plot([x[u]], [y_chain + 0.3], marker="v", color=GRADIENT, ms=6)
    u, y = rows[-1]
    c.text(x[u - k2] + step / 2 - 0.1, y - 0.26, "the gradient stops",
           ha="right", color=GRADIENT)
    # k1 and k2
    _span(c, x[u - k2] + step / 2, x[u] + step / 2, y - 0.62,
          rf"$k_2 = {k2}$ steps back")
    _span(c, x[u - 2 * k1], x[u - k1], y_chain + 0.47,
          rf"an update every $k_1 = {k1}$ steps", below=False)


@diagram("stacked_rnn", width=5.4, height=3.7)
def stacked_rnn(c: Canvas) -> None:
    """A stack of L = 3 recurrent layers over T = 4 steps (eq-deep-layer): h_t^(l)
    reads h_t^(l-1) from below and h_{t-1}^(l) from the left; h_t^(0) = x_t."""
    xs = [1.05, 1.95, 2.85, 3.75]  # t = 1..4
    ys = [0.35, 1.15, 1.95, 2.75]  # x_t, then layers l = 1..3
    hi_t, hi_l = 3, 2  # the highlighted state h_3^(2)
    for t, x in enumerate(xs, start=1):
        c.box(x, ys[0], rf"$\mathbf{{x}}_{t}$", "input", w=0.58, h=0.38)
        for l in (1, 2, 3):
            hi = (t, l) == (hi_t, hi_l)
            c.box(x, ys[l], rf"$\mathbf{{h}}^{{({l})}}_{t}$", "state", w=0.58, h=0.42,
                  edge=HIGHLIGHT if hi else INK)
            below = ys[l - 1] + (0.19 if l == 1 else 0.21)
            c.arrow((x, below), (x, ys[l] - 0.21), color=HIGHLIGHT if hi else INK,
                    width=2.0 if hi else 1.2)
        c.arrow((x, ys[3] + 0.21), (x, 3.3))
    for l in (1, 2, 3):
        c.text(0.3, ys[l], rf"$\mathbf{{h}}^{{({l})}}_0$")
        c.arrow((0.5, ys[l]), (xs[0] - 0.29, ys[l]))
        for t in range(1, 4):
            hi = (t + 1, l) == (hi_t, hi_l)
            c.arrow((xs[t - 1] + 0.29, ys[l]), (xs[t] - 0.29, ys[l]),
                    color=HIGHLIGHT if hi else INK, width=2.0 if hi else 1.2)
        c.text(4.3, ys[l], rf"layer $l = {l}$", ha="left")
    c.text(4.3, ys[0], r"$\mathbf{h}^{(0)}_t = \mathbf{x}_t$", ha="left")
    c.text(2.4, 3.48, "to the readout: the top layer $L = 3$")


@diagram("bidirectional_rnn", width=5.8, height=3.6)
def bidirectional_rnn(c: Canvas) -> None:
    """A bidirectional layer over T = 4 steps: a forward chain (eq-birnn-forward), a
    backward chain with its own weights (eq-birnn-backward), and their concatenation
    h_t at every step (eq-birnn-concat)."""
    xs = [1.35, 2.38, 3.41, 4.44]  # t = 1..4
    y_x, y_f, y_b, y_h = 0.35, 1.2, 2.05, 2.95
    dx, w = 0.3, 0.56  # the chains' offsets from the column, their boxes' width
    # the lines that pass under a chain first, then the chains over them
    for x in xs:
        c.arrow((x + dx, y_x + 0.19), (x + dx, y_b - 0.22))  # x_t to the backward
        c.arrow((x - dx, y_f + 0.22), (x - dx, y_h - 0.21))  # forward to h_t
    for t, x in enumerate(xs, start=1):
        c.box(x, y_x, rf"$\mathbf{{x}}_{t}$", "input", w=0.6, h=0.38)
        c.box(x - dx, y_f, rf"$\overrightarrow{{\mathbf{{h}}}}_{t}$", "state", w=w,
              h=0.44)
        c.box(x + dx, y_b, rf"$\overleftarrow{{\mathbf{{h}}}}_{t}$", "state", w=w,
              h=0.44)
        c.box(x, y_h, rf"$\mathbf{{h}}_{t}$", "state", w=0.6, h=0.42)
        c.arrow((x - dx, y_x + 0.19), (x - dx, y_f - 0.22))
        c.arrow((x + dx, y_b + 0.22), (x + dx, y_h - 0.21))
    for x0, x1 in zip(xs, xs[1:]):
        _under(c, [x0 - dx + w / 2 + 0.05, x1 - dx - w / 2 - 0.05], [y_f, y_f])
        c.arrow((x0 - dx + w / 2, y_f), (x1 - dx - w / 2, y_f))
        _under(c, [x1 + dx - w / 2 - 0.05, x0 + dx + w / 2 + 0.05], [y_b, y_b])
        c.arrow((x1 + dx - w / 2, y_b), (x0 + dx + w / 2, y_b))
    c.text(0.32, y_f, r"$\overrightarrow{\mathbf{h}}_0$")
    c.arrow((0.5, y_f), (xs[0] - dx - w / 2, y_f))
    c.text(5.55, y_b, r"$\overleftarrow{\mathbf{h}}_5$")
    c.arrow((5.36, y_b), (xs[-1] + dx + w / 2, y_b))
    c.text(2.895, 3.38, r"$\mathbf{h}_t = [\overrightarrow{\mathbf{h}}_t;"
           r" \overleftarrow{\mathbf{h}}_t]$")
