"""Recurrence: linear attention's matrix memory, the two views of a state-space model,
Mamba's selective scan, the mLSTM's gated matrix memory."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.patches import Circle, Rectangle

from diagrams import FONT, INK, ROLE, Canvas, diagram

CELL = 0.17  # inches: one entry of a drawn matrix or vector
GAP = 0.07  # inches: between a matrix memory and its normaliser row
GATE = "#b03a3a"  # gate lines and labels


DEEP = {  # the role colours' strong ends, for entries of size 1
    "input": "#a6a6a6",
    "state": "#6fa3d6",
    "attention": "#eea25c",
    "output": "#86c977",
    "plain": "#ffffff",
}


def _shade(role: str, t: float) -> tuple[float, ...]:
    """Between the role's colour (``t`` = 0) and its strong end (``t`` = 1)."""
    light, deep = np.array(to_rgb(ROLE[role])), np.array(to_rgb(DEEP[role]))
    return tuple(light + (deep - light) * float(np.clip(t, 0.0, 1.0)))


def _cells(c: Canvas, left: float, top: float, values: np.ndarray, role: str, *,
           split: bool = False, texts: dict[tuple[int, int], str] | None = None
           ) -> tuple[float, float, float, float]:
    """A matrix of cells with its top-left corner at (left, top), each shaded by its
    value in [0, 1]; ``split`` sets the last row apart (a normaliser below a memory).
    Returns (left, bottom, right, top)."""
    rows, cols = values.shape
    bottom = top
    for i in range(rows):
        y = top - (i + 1) * CELL - (GAP if split and i == rows - 1 else 0.0)
        bottom = y
        for j in range(cols):
            c.ax.add_patch(Rectangle((left + j * CELL, y), CELL, CELL,
                                     fc=_shade(role, values[i, j]), ec=INK, lw=0.7))
            if texts and (i, j) in texts:
                c.text(left + (j + 0.5) * CELL, y + CELL / 2, texts[(i, j)])
    return left, bottom, left + cols * CELL, top


def _memory(c: Canvas, left: float, top: float, values: np.ndarray, above: str,
            below: str) -> tuple[float, float, float, float]:
    """A matrix memory with its normaliser as a last row apart, named above and below.
    Returns (left, bottom, right, top)."""
    left, bottom, right, top = _cells(c, left, top, values, "state", split=True)
    c.text((left + right) / 2, top + 0.08, above, va="bottom")
    c.text((left + right) / 2, bottom - 0.08, below, va="top")
    return left, bottom, right, top


def _plus(c: Canvas, x: float, y: float, r: float = 0.13) -> None:
    """A sum node."""
    c.ax.add_patch(Circle((x, y), r, fc="white", ec=INK, lw=1.0, zorder=3))
    c.line([x - 0.6 * r, x + 0.6 * r], [y, y], width=1.0)
    c.line([x, x], [y - 0.6 * r, y + 0.6 * r], width=1.0)
    for line in c.ax.lines[-2:]:
        line.set_zorder(4)


def _node(c: Canvas, x: float, y: float, text: str, *, r: float = 0.13,
          role: str = "plain", size: float = FONT) -> None:
    """An operation node: a circle with its symbol."""
    c.ax.add_patch(Circle((x, y), r, fc=ROLE[role], ec=INK, lw=1.0, zorder=3))
    c.ax.text(x, y, text, ha="center", va="center", fontsize=size, color=INK, zorder=4)


def _memory_values(rng: np.random.Generator, d_v: int, d_k: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries to shade: an old memory with its normaliser row, a value (with the
    normaliser's 1 appended), a key's features, and the new memory."""
    old = rng.uniform(0.1, 0.8, size=(d_v + 1, d_k))
    value = np.append(rng.uniform(0.2, 1.0, size=d_v), 1.0)
    key = rng.uniform(0.2, 1.0, size=d_k)
    return old, value, key, old + np.outer(value, key)


@diagram("linear_attention_memory", width=6.0, height=3.3)
def linear_attention_memory(c: Canvas) -> None:
    """The recurrent form of linear attention (eqs. eq-linattn-state and
    eq-linattn-read): the state S_t, d_v x d_k, with the normaliser n_t^T drawn as a
    last row; each step adds the outer product v_t phi(k_t)^T (and phi(k_t) to n),
    and the read divides S_t phi(q_t) by n_t^T phi(q_t)."""
    d_v, d_k = 3, 4
    old, value, key, new = _memory_values(np.random.default_rng(3), d_v, d_k)
    scale = new.max()
    top = 2.62  # the memories' top edge
    # S_{t-1} and n_{t-1}
    left, bottom, right, _ = _memory(c, 0.35, top, old / scale, r"$\mathbf{S}_{t-1}$",
                                     r"$\mathbf{n}_{t-1}^\top$")
    mid = (top + bottom) / 2
    plus_x = 1.5
    _plus(c, plus_x, mid)
    c.arrow((right + 0.05, mid), (plus_x - 0.13, mid))
    # S_t and n_t
    left2, _, right2, _ = _memory(c, 1.95, top, new / scale, r"$\mathbf{S}_t$",
                                  r"$\mathbf{n}_t^\top$")
    c.arrow((plus_x + 0.13, mid), (left2 - 0.05, mid))
    # the write: the value (and a 1 for the normaliser) times the key's features
    w_top = 1.42
    w_left = plus_x - d_k * CELL / 2
    outer = np.outer(value, key)
    _, wb, wr, _ = _cells(c, w_left, w_top, outer / scale, "attention", split=True)
    shades = np.append(value[:d_v], 0.0)[:, None]  # the 1 left unshaded
    _cells(c, w_left - CELL - 0.12, w_top, shades, "input", split=True,
           texts={(d_v, 0): "1"})
    c.text(w_left - CELL - 0.2, w_top - d_v * CELL / 2, r"$\mathbf{v}_t$", ha="right")
    _cells(c, w_left, wb - 0.12, key[None, :], "input")
    c.text(wr + 0.08, wb - 0.12 - CELL / 2, r"$\phi(\mathbf{k}_t)^\top$", ha="left")
    c.arrow((plus_x, w_top + 0.05), (plus_x, mid - 0.13))
    c.text(2.7, 1.2, r"write: $\mathbf{S}_t = \mathbf{S}_{t-1} + "
           r"\mathbf{v}_t\,\phi(\mathbf{k}_t)^\top$", ha="left")
    c.text(2.7, 0.82, r"$\mathbf{n}_t = \mathbf{n}_{t-1} + \phi(\mathbf{k}_t)$",
           ha="left")
    c.text(2.7, 0.44, r"a fixed size: $d_v \times d_k + d_k$ numbers", ha="left")
    # the read: S_t phi(q_t) over n_t^T phi(q_t), then the division
    query = np.random.default_rng(5).uniform(0.2, 1.0, size=d_k)
    q_left = right2 + 0.2
    q_top = mid + d_k * CELL / 2
    _cells(c, q_left, q_top, query[:, None], "input")
    c.text(q_left + CELL / 2, top + 0.08, r"$\phi(\mathbf{q}_t)$", va="bottom")
    read = new @ query
    r_left = 4.05
    c.arrow((q_left + CELL + 0.06, mid), (r_left - 0.06, mid))
    _cells(c, r_left, top, (read / read.max())[:, None], "output", split=True)
    c.text(r_left + CELL / 2, top + 0.08, r"$\mathbf{S}_t\,\phi(\mathbf{q}_t)$",
           va="bottom")
    c.text(r_left + CELL / 2, bottom - 0.08,
           r"$\mathbf{n}_t^\top\phi(\mathbf{q}_t)$", va="top")
    numer = read[:d_v] / read[d_v]
    y_left = 5.25
    y_mid = top - d_v * CELL / 2
    _cells(c, y_left, top, (numer / numer.max())[:, None], "output")
    c.text(y_left + CELL + 0.1, y_mid, r"$\mathbf{y}_t$", ha="left")
    # numerator over the normaliser's entry
    div_x, r = 4.75, 0.13
    _node(c, div_x, y_mid, r"$\div$", r=r)
    c.arrow((r_left + CELL + 0.06, y_mid), (div_x - r, y_mid))
    den_y = bottom + CELL / 2
    c.line([r_left + CELL + 0.06, div_x], [den_y, den_y])
    c.arrow((div_x, den_y), (div_x, y_mid - r))
    c.arrow((div_x + r, y_mid), (y_left - 0.06, y_mid))
    c.text(3.05, 3.1, r"read: $\mathbf{y}_t = \mathbf{S}_t\,\phi(\mathbf{q}_t)\, /\, "
           r"\mathbf{n}_t^\top\phi(\mathbf{q}_t)$", ha="left")


@diagram("ssm_two_views", width=6.0, height=4.75)
def ssm_two_views(c: Canvas) -> None:
    """One discrete state-space system computed two ways (eqs. eq-ssm-recurrence and
    eq-ssm-kernel): the recurrence unrolled over four steps, and the output y_4 as
    the input convolved with the kernel K_k = C A^k B, the same number."""
    xs = [1.45, 2.5, 3.55, 4.6]
    # top: the recurrence, step by step
    row_x, row_h, row_y = 2.6, 3.38, 4.1
    c.box(0.45, row_h, r"$\mathbf{h}_0 = 0$", "state", w=0.7, h=0.42)
    for t, x in enumerate(xs, start=1):
        c.box(x, row_x, rf"$x_{t}$", "input", w=0.5, h=0.36)
        c.box(x, row_h, rf"$\mathbf{{h}}_{t}$", "state", w=0.5, h=0.42)
        c.box(x, row_y, rf"$y_{t}$", "output", w=0.5, h=0.36)
        c.arrow((x, row_x + 0.2), (x, row_h - 0.23))
        c.text(x + 0.08, (row_x + row_h) / 2, r"$\bar{\mathbf{B}}$", ha="left")
        c.arrow((x, row_h + 0.23), (x, row_y - 0.2))
        c.text(x + 0.08, (row_h + row_y) / 2, r"$\mathbf{C}$", ha="left")
    for x0, x1 in zip([0.45 + 0.37 - 0.27] + xs, xs):
        start, end = x0 + 0.27, x1 - 0.27
        c.arrow((start, row_h), (end, row_h))
        c.text((start + end) / 2, row_h + 0.06, r"$\bar{\mathbf{A}}$", va="bottom")
    c.frame(0.05, row_x - 0.32, 5.95, row_y + 0.3,
            r"recurrence: $\mathbf{h}_t = \bar{\mathbf{A}}\,\mathbf{h}_{t-1} + "
            r"\bar{\mathbf{B}}\,x_t$, $y_t = \mathbf{C}\,\mathbf{h}_t$, one step at a time")
    # bottom: y_4 as a convolution of x with the kernel, reversed under it
    row_in, row_k, bus = 1.55, 0.92, 0.38
    kernel = [r"$\mathbf{C}\,\bar{\mathbf{A}}{}^3\,\bar{\mathbf{B}}$",
              r"$\mathbf{C}\,\bar{\mathbf{A}}{}^2\,\bar{\mathbf{B}}$",
              r"$\mathbf{C}\,\bar{\mathbf{A}}\,\bar{\mathbf{B}}$",
              r"$\mathbf{C}\,\bar{\mathbf{B}}$"]
    for t, (x, k) in enumerate(zip(xs, kernel), start=1):
        c.box(x, row_in, rf"$x_{t}$", "input", w=0.5, h=0.36)
        c.text(x, (row_in + row_k) / 2 + 0.02, r"$\times$")
        c.box(x, row_k, k, "attention", w=0.92, h=0.42)
        c.text(x, row_k - 0.3, rf"$\bar{{K}}_{4 - t}$", va="top")
        c.line([x - 0.28, x - 0.28], [row_k - 0.21, bus])
    sum_x, out_x = 5.1, 5.6
    c.line([xs[0] - 0.28, sum_x - 0.13], [bus, bus])
    _node(c, sum_x, bus, r"$+$")
    c.line([sum_x + 0.13, out_x], [bus, bus])
    c.arrow((out_x, bus), (out_x, row_k - 0.18))
    c.box(out_x, row_k, r"$y_4$", "output", w=0.5, h=0.36)
    c.text(out_x, row_k + 0.25, "same", va="bottom")
    c.frame(0.05, 0.15, 5.95, row_in + 0.32,
            r"convolution: $y_4 = \bar{K}_0 x_4 + \bar{K}_1 x_3 + \bar{K}_2 x_2 + "
            r"\bar{K}_3 x_1$, $\bar{K}_k = \mathbf{C}\,\bar{\mathbf{A}}{}^k\,"
            r"\bar{\mathbf{B}}$")


@diagram("selective_scan", width=6.0, height=4.5)
def selective_scan(c: Canvas) -> None:
    """Mamba's selective scan for one channel (eq. eq-ssm-selective): at each step the
    input x_t selects Delta_t, B_t, C_t; they are discretised into e^{Delta_t A}
    and Delta_t B_t; the scan multiplies the state by the first and adds the second
    times x_t. S4D uses one A, B, C for every step instead."""
    cols = [1.6, 3.15, 4.7]  # each step's centre
    off = 0.37  # the decay's and the write's columns, either side of the centre
    row_x, row_sel, row_dis, row_h, row_y = 0.4, 1.15, 1.95, 2.8, 3.55
    c.text(0.1, row_sel, "select", ha="left")
    c.text(0.1, row_dis, "discretise", ha="left")
    h_prev = 0.5
    c.text(h_prev, row_h + 0.3, "scan", va="bottom")
    c.box(h_prev, row_h, r"$\mathbf{h}_0$", "state", w=0.5, h=0.42)
    for t, xc in enumerate(cols, start=1):
        c.box(xc, row_x, rf"$\mathbf{{x}}_{t}$", "input", w=0.5, h=0.36)
        c.arrow((xc, row_x + 0.18), (xc, row_sel - 0.2))
        c.box(xc, row_sel, rf"$\Delta_{t},\ \mathbf{{B}}_{t},\ \mathbf{{C}}_{t}$", "gate",
              w=1.25, h=0.4)
        c.arrow((xc, row_sel + 0.2), (xc, row_dis - 0.2))
        c.box(xc, row_dis, "", "plain", w=1.4, h=0.4)
        c.text(xc - off, row_dis, rf"$e^{{\Delta_{t}\mathbf{{A}}}}$")
        c.text(xc + off, row_dis, rf"$\Delta_{t}\mathbf{{B}}_{t}\,x_{t}$")
        # the scan: decay the old state, add the write
        _node(c, xc - off, row_h, r"$\odot$", role="gate", r=0.14)
        c.arrow((xc - off, row_dis + 0.2), (xc - off, row_h - 0.14))
        c.arrow((h_prev + 0.25, row_h), (xc - off - 0.14, row_h))
        c.box(xc + off, row_h, rf"$\mathbf{{h}}_{t}$", "state", w=0.5, h=0.42)
        c.arrow((xc - off + 0.14, row_h), (xc + off - 0.25, row_h))
        c.arrow((xc + off, row_dis + 0.2), (xc + off, row_h - 0.21))
        c.box(xc + off, row_y, rf"$y_{t}$", "output", w=0.5, h=0.36)
        c.arrow((xc + off, row_h + 0.21), (xc + off, row_y - 0.18))
        c.text(xc + off + 0.08, (row_h + row_y) / 2, rf"$\mathbf{{C}}_{t}^\top$",
               ha="left", color=GATE)
        h_prev = xc + off
    c.text(3.0, 4.28, r"Mamba: $\mathbf{h}_t = e^{\Delta_t\mathbf{A}} \odot \mathbf{h}_{t-1}"
           r" + \Delta_t\mathbf{B}_t\,x_t$, new at every step", va="center")
    c.text(3.0, 3.98, r"S4D: the same $\bar{\mathbf{A}}, \bar{\mathbf{B}}, \mathbf{C}$"
           r" at every step, whatever $\mathbf{x}_t$ is", va="center", color="#555555")


@diagram("mlstm_memory", width=6.0, height=3.95)
def mlstm_memory(c: Canvas) -> None:
    """The mLSTM's step (eqs. eq-mlstm-memory and eq-mlstm-read): the forget gate
    scales the memory C_{t-1} and its normaliser n_{t-1} (drawn as a last row), the
    input gate scales the write v_t k_t^T, the query reads C_t q_t over
    max(|n_t^T q_t|, 1); the output gate acts outside the cell."""
    d = 3
    old, value, key, _ = _memory_values(np.random.default_rng(7), d, d)
    f, i = 0.6, 0.8  # the gates' values, to shade the new memory
    new = f * old + i * np.outer(value, key)
    scale = max(old.max(), new.max())
    top = 3.2
    # C_{t-1}, n_{t-1}^T; the forget gate; the sum; C_t, n_t^T
    left, bottom, right, _ = _memory(c, 0.35, top, old / scale, r"$\mathbf{C}_{t-1}$",
                                     r"$\mathbf{n}_{t-1}^\top$")
    mid = (top + bottom) / 2
    f_x, plus_x, r = 1.2, 1.7, 0.16
    _node(c, f_x, mid, r"$f_t$", role="gate", r=r)
    c.arrow((right + 0.05, mid), (f_x - r, mid))
    _plus(c, plus_x, mid)
    c.arrow((f_x + r, mid), (plus_x - 0.13, mid))
    left2, _, right2, _ = _memory(c, 2.05, top, new / scale, r"$\mathbf{C}_t$",
                                  r"$\mathbf{n}_t^\top$")
    c.arrow((plus_x + 0.13, mid), (left2 - 0.05, mid))
    # the write v_t k_t^T (and k_t^T into n), through the input gate
    w_top = 1.55
    w_left = plus_x - d * CELL / 2
    _, wb, wr, _ = _cells(c, w_left, w_top, np.outer(value, key) / scale, "attention",
                          split=True)
    _cells(c, w_left - CELL - 0.12, w_top, np.append(value[:d], 0.0)[:, None], "input",
           split=True, texts={(d, 0): "1"})
    c.text(w_left - CELL - 0.2, w_top - d * CELL / 2, r"$\mathbf{v}_t$", ha="right")
    _cells(c, w_left, wb - 0.12, key[None, :], "input")
    c.text(wr + 0.08, wb - 0.12 - CELL / 2, r"$\mathbf{k}_t^\top$", ha="left")
    i_y = (w_top + mid - 0.13) / 2
    c.arrow((plus_x, w_top + 0.05), (plus_x, i_y - r))
    _node(c, plus_x, i_y, r"$i_t$", role="gate", r=r)
    c.arrow((plus_x, i_y + r), (plus_x, mid - 0.13))
    # the read: C_t q_t over max(|n_t^T q_t|, 1)
    query = np.random.default_rng(9).uniform(0.2, 1.0, size=d)
    q_left = right2 + 0.2
    _cells(c, q_left, mid + d * CELL / 2, query[:, None], "input")
    c.text(q_left + CELL / 2, top + 0.08, r"$\mathbf{q}_t$", va="bottom")
    read = new @ query
    r_left = 3.35
    c.arrow((q_left + CELL + 0.06, mid), (r_left - 0.06, mid))
    _cells(c, r_left, top, (read / read.max())[:, None], "output", split=True)
    c.text(r_left + CELL / 2, top + 0.08, r"$\mathbf{C}_t\,\mathbf{q}_t$", va="bottom")
    c.text(r_left + CELL / 2, bottom - 0.08, r"$\mathbf{n}_t^\top\mathbf{q}_t$",
           va="top")
    y_mid = top - d * CELL / 2
    div_x = 3.92
    _node(c, div_x, y_mid, r"$\div$", r=0.13)
    c.arrow((r_left + CELL + 0.06, y_mid), (div_x - 0.13, y_mid))
    den_y = bottom + CELL / 2
    c.line([r_left + CELL + 0.06, div_x], [den_y, den_y])
    c.arrow((div_x, den_y), (div_x, y_mid - 0.13))
    c.text(div_x + 0.08, den_y, r"$\max(|\cdot|, 1)$", ha="left")
    read_out = read[:d] / read[d]
    h_left = 4.45
    _cells(c, h_left, top, (read_out / read_out.max())[:, None], "output")
    c.text(h_left + CELL / 2, top + 0.08, r"$\tilde{\mathbf{h}}_t$", va="bottom")
    c.arrow((div_x + 0.13, y_mid), (h_left - 0.06, y_mid))
    c.frame(0.12, 0.15, 4.87, 3.6, "mLSTM cell")
    # the output gate, outside the cell
    o_x = 5.22
    _node(c, o_x, y_mid, r"$\mathbf{o}_t$", role="gate", r=r)
    c.arrow((h_left + CELL + 0.06, y_mid), (o_x - r, y_mid))
    out_left = 5.58
    _cells(c, out_left, top, (read_out / read_out.max())[:, None], "output")
    c.text(out_left + CELL / 2, top + 0.08, r"$\mathbf{h}_t$", va="bottom")
    c.arrow((o_x + r, y_mid), (out_left - 0.06, y_mid))
    # the equations and the gates
    tx, ty = 2.45, 1.5
    lines = [(r"$\mathbf{C}_t = f_t\,\mathbf{C}_{t-1} + i_t\,\mathbf{v}_t\mathbf{k}_t^\top$",
              INK),
             (r"$\mathbf{n}_t = f_t\,\mathbf{n}_{t-1} + i_t\,\mathbf{k}_t$", INK),
             (r"$i_t = \exp(\tilde{i}_t)$, $f_t = \sigma(\tilde{f}_t)$", GATE),
             (r"$\mathbf{C}_t, \mathbf{n}_t$ stored divided by $e^{m_t}$,", GATE),
             (r"$m_t = \max(\log f_t + m_{t-1},\ \tilde{i}_t)$", GATE)]
    for k, (line, colour) in enumerate(lines):
        c.text(tx, ty - 0.27 * k, line, ha="left", color=colour)
