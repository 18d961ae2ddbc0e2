"""Sequence to sequence: the encoder-decoder, Bahdanau's attention step, beam search."""

from __future__ import annotations

from diagrams import INK, Canvas, diagram

CONTEXT = "#c47a2c"  # the context vector's lines


@diagram("encoder_decoder", width=6.0, height=3.3)
def encoder_decoder(c: Canvas) -> None:
    """A bidirectional GRU encoder whose two ends make the one context c, read by
    every step of the decoder (eqs. eq-s2s-bidirectional to eq-s2s-output)."""
    source = ["thirty", "four", "<eos>"]
    target_in = ["<bos>", "vier", "und"]
    target_out = ["vier", "und", "dreißig"]
    xs = [0.55, 1.45, 2.35]
    for i, (x, word) in enumerate(zip(xs, source)):
        c.box(x, 0.35, word, "input", w=0.82, h=0.36)
        c.box(x, 1.15, rf"$\mathbf{{h}}_{i + 1}$", "state", w=0.62, h=0.42)
        c.arrow((x, 0.53), (x, 0.94))
    for x0, x1 in zip(xs, xs[1:]):  # both directions between neighbours
        c.arrow((x0 + 0.31, 1.22), (x1 - 0.31, 1.22))
        c.arrow((x1 - 0.31, 1.08), (x0 + 0.31, 1.08))
    c.frame(0.1, 0.75, 2.8, 1.55, "encoder (bidirectional GRU)")
    c.box(1.45, 2.45, r"$\mathbf{c} = [\overrightarrow{\mathbf{h}}_{T_x};"
          r" \overleftarrow{\mathbf{h}}_1]$", "attention", w=2.0, h=0.5)
    c.arrow((2.35, 1.55), (1.95, 2.2), curve=0.15)
    c.arrow((0.55, 1.55), (0.95, 2.2), curve=-0.15)
    c.text(1.45, 3.0, "one fixed context")
    xd = [3.55, 4.45, 5.35]
    for i, (x, word_in, word_out) in enumerate(zip(xd, target_in, target_out)):
        c.box(x, 0.35, word_in, "input", w=0.82, h=0.36)
        c.box(x, 1.15, rf"$\mathbf{{s}}_{i + 1}$", "state", w=0.62, h=0.42)
        c.box(x, 2.1, word_out, "output", w=0.82, h=0.36)
        c.arrow((x, 0.53), (x, 0.94))
        c.arrow((x + 0.12, 1.36), (x + 0.12, 1.92))
        c.arrow((x - 0.18, 1.65), (x - 0.18, 1.36), color=CONTEXT)
    c.line([2.45, 3.0, 3.0, 5.17], [2.45, 2.45, 1.65, 1.65], color=CONTEXT)
    for x0, x1 in zip(xd, xd[1:]):
        c.arrow((x0 + 0.31, 1.15), (x1 - 0.31, 1.15))
    c.text(4.45, 2.55, "decoder (GRU): c at every step")
    c.text(4.45, 2.95, r"$P(y_i \mid y_{<i}, \mathbf{x})$", size=11)


def _path(c: Canvas, xs: list[float], ys: list[float], *, color: str = INK,
          dashed: bool = False) -> None:
    """A polyline through (xs, ys) with an arrow head on its last segment."""
    if len(xs) > 2:
        c.line(xs[:-1], ys[:-1], color=color, dashed=dashed)
    c.arrow((xs[-2], ys[-2]), (xs[-1], ys[-1]), color=color, dashed=dashed)


@diagram("bahdanau_step", width=6.0, height=3.9)
def bahdanau_step(c: Canvas) -> None:
    """One step i of Bahdanau's decoder: the previous state s_{i-1} scores every
    annotation h_j (eq-s2s-energy), a softmax over j gives the weights alpha_ij
    (eq-s2s-attn-weights), the context c_i averages the annotations
    (eq-s2s-attn-context), and the new state s_i (eq-s2s-state) and c_i give the
    output distribution (eq-s2s-output)."""
    xs = [1.85, 2.85, 3.85]  # the columns j = 1, 2, 3 of the annotations
    y_bus, y_h, y_e, y_a, y_s, y_top = 0.3, 0.85, 1.62, 2.4, 3.05, 3.6
    # annotations: keys (up, to the scores) and values (down, to the context)
    for j, x in enumerate(xs, start=1):
        c.box(x, y_h, rf"$\mathbf{{h}}_{j}$", "state", w=0.62, h=0.42)
        c.box(x, y_e, rf"$e_{{i{j}}}$", "attention", w=0.62, h=0.42)
        c.arrow((x, y_h + 0.21), (x, y_e - 0.21))  # key
        c.line([x, x], [y_h - 0.21, y_bus], color=CONTEXT)  # value
        c.arrow((x, y_e + 0.21), (x, y_a - 0.21))
    c.text(0.75, y_h + 0.11, "annotations")
    c.text(0.75, y_h - 0.13, "keys, values")
    c.frame(1.46, y_e - 0.29, 4.24, y_e + 0.29)
    # the weights: one softmax over the row of scores
    c.box(2.85, y_a, "", "attention", w=2.9, h=0.42)
    for j, x in enumerate(xs, start=1):
        c.text(x, y_a, rf"$\alpha_{{i{j}}}$")
    for x in (2.35, 3.35):
        c.line([x, x], [y_a - 0.21, y_a + 0.21], color=CONTEXT, width=0.8)
    c.text(1.3, y_a, r"softmax$_j$", ha="right")
    # the context: the weights (from the left) average the values (from below)
    c.box(5.15, y_a, r"$\mathbf{c}_i = \sum_j \alpha_{ij}\mathbf{h}_j$",
          "attention", w=1.5, h=0.56)
    c.arrow((4.3, y_a), (4.4, y_a))
    c.line([xs[0], 5.72], [y_bus, y_bus], color=CONTEXT)
    c.arrow((5.72, y_bus), (5.72, y_a - 0.28), color=CONTEXT)
    c.text(4.8, y_bus + 0.16, "values", color=CONTEXT)
    c.text(4.98, y_e + 0.13, "additive score")
    c.text(4.98, y_e - 0.13, r"$a(\mathbf{s}_{i-1}, \mathbf{h}_j)$")
    # the query: the previous state, into every score
    c.box(0.55, y_top, r"$\mathbf{s}_{i-1}$", "state", w=0.7, h=0.44)
    _path(c, [0.55, 0.55, 1.46], [y_top - 0.22, y_e, y_e])
    c.text(0.62, 2.0, "query", ha="left")
    # the new state and the output
    c.box(3.6, y_top, r"$\mathbf{s}_i$", "state", w=0.62, h=0.44)
    c.arrow((0.9, y_top), (3.29, y_top))
    c.box(2.3, y_s, r"$y_{i-1}$", "input", w=0.7, h=0.36)
    c.arrow((2.65, y_s), (3.29, y_top - 0.12))
    c.arrow((4.6, y_a + 0.28), (3.8, y_top - 0.22))
    c.box(5.15, y_top, r"$P(y_i \mid y_{<i}, \mathbf{x})$", "output", w=1.45, h=0.44)
    c.arrow((3.91, y_top), (4.42, y_top))
    c.arrow((5.15, y_a + 0.28), (5.15, y_top - 0.22))


PRUNED = "#9a9a9a"  # pruned hypotheses: grey
BEST = "#3d8b37"  # the best hypothesis's path


@diagram("beam_search", width=6.0, height=3.9)
def beam_search(c: Canvas) -> None:
    """Beam search with k = 2 translating "thirty-four" (eq-dec-beam): at every step
    each kept prefix is extended, the two best of all extensions are kept (blue) and
    the rest pruned (grey); the numbers are log P(y_1, ..., y_t' | c). Greedy
    search would follow drei, und, vierzig; the beam overtakes it at step 3."""
    xs = {0: 0.4, 1: 1.55, 2: 2.85, 3: 4.15}  # the columns, by step t'
    w, h = 0.78, 0.56
    # (step, word, log P, kept, parent's key, own key, y)
    nodes = [
        (1, "drei", -0.8, True, "bos", "d", 2.55),
        (1, "vier", -0.9, True, "bos", "v", 1.25),
        (1, "dreißig", -2.5, False, "bos", "x1", 0.4),
        (2, "und", -1.2, True, "d", "du", 2.85),
        (2, "<eos>", -2.9, False, "d", "x2", 2.05),
        (2, "und", -1.3, True, "v", "vu", 1.35),
        (2, "<eos>", -3.2, False, "v", "x3", 0.55),
        (3, "vierzig", -2.5, True, "du", "duv", 3.2),
        (3, "dreißig", -3.4, False, "du", "x4", 2.5),
        (3, "dreißig", -1.5, True, "vu", "vud", 1.65),
        (3, "vierzig", -3.2, False, "vu", "x5", 0.95),
    ]
    where = {"bos": (xs[0], 1.25)}
    c.box(xs[0], 1.25, "<bos>", "input", w=0.7, h=0.4)
    best = {"v", "vu", "vud"}
    for step, word, log_p, kept, parent, key, y in nodes:
        where[key] = (xs[step], y)
        px, py = where[parent]
        pw = 0.7 if parent == "bos" else w
        start, end = (px + pw / 2, py), (xs[step] - w / 2, y)
        if key in best:
            c.arrow(start, end, color=BEST, width=2.2)
        elif kept:
            c.arrow(start, end)
        else:
            c.arrow(start, end, color=PRUNED, dashed=True)
        role = "output" if key == "vud" else "state" if kept else "plain"
        c.box(xs[step], y, "", role, w=w, h=h, dashed=not kept,
              edge="#333333" if kept else PRUNED)
        ink = "#333333" if kept else PRUNED
        c.text(xs[step], y + 0.12, word, color=ink)
        c.text(xs[step], y - 0.14, f"{log_p:.1f}".replace("-", "\u2212"), color=ink)
    for step in (1, 2, 3):
        c.text(xs[step], 3.68, rf"$t' = {step}$")
    c.text(0.05, 3.68, "source:", ha="left")
    c.text(0.05, 3.44, "thirty-four", ha="left")
    c.text(4.64, 3.32, "greedy's path:", ha="left")
    c.text(4.64, 3.08, "dreiundvierzig", ha="left")
    c.text(4.64, 1.77, "best:", ha="left", color=BEST, weight="bold")
    c.text(4.64, 1.53, "vierunddreißig", ha="left", color=BEST)
    c.text(4.64, 0.78, r"beam size $k = 2$", ha="left")
    c.text(4.64, 0.5, "in a box:", ha="left")
    c.text(4.64, 0.24, r"$\log P(\mathbf{y} \mid \mathbf{c})$", ha="left")
