"""Sequence to sequence: the encoder-decoder, Bahdanau's attention step, beam search."""

from __future__ import annotations

from diagrams import Canvas, diagram

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
