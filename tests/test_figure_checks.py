"""The book kernels' figure check (book/_ext/figure_checks.py): faults it must report,
figures it must pass, and its wiring into the kernel profile the Makefile selects."""

import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from figure_checks import figure_problems  # noqa: E402


def _problems(draw) -> list[str]:
    fig, ax = plt.subplots(figsize=(4, 3))
    try:
        draw(ax)
        fig.canvas.draw()
        return figure_problems(fig)
    finally:
        plt.close(fig)


def test_fractional_ticks_on_an_axis_that_counts_are_reported():
    def draw(ax):
        ax.plot([0, 1, 2], [1, 3, 2])  # ticked at 0.0, 0.25, ...
        ax.set_xlabel("time step $t$")

    (problem,) = _problems(draw)
    assert "counts" in problem and "'time step $t$'" in problem


@pytest.mark.parametrize("label", ["step size $\\eta$", "time (s)", "loss", "temperature T",
                                   "load N / d", "$t / T$"])
def test_continuous_axes_may_have_fractional_ticks(label):
    def draw(ax):
        ax.plot([0, 1, 2, 3, 4], [1, 3, 2, 4, 5])
        ax.set_xlabel(label)

    assert _problems(draw) == []


def test_integer_ticks_on_a_counted_axis_pass():
    def draw(ax):
        ax.plot(range(40), range(40))
        ax.set_xlabel("position")
        ax.set_ylabel("epoch")

    assert _problems(draw) == []


def test_overlapping_tick_labels_are_reported():
    def draw(ax):
        ax.bar([f"a long category name {i}" for i in range(8)], range(8))

    problems = _problems(draw)
    assert problems and "overlap" in problems[0]


def test_the_book_kernels_load_the_check_and_report_on_stderr(monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("IPYTHONDIR", str(ROOT / "book" / "_ipython"))
    cells = ["import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
             "ax.plot([0, 1, 2, 3, 4], [0, 1, 0, 1, 0])\nax.set_xlabel('layer')",
             "fig, ax = plt.subplots()\nax.plot(range(12), range(12))\nax.set_xlabel('layer')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    stderr = ["".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
              for cell in nb.cells]
    assert "the x axis counts ('layer')" in stderr[0]
    assert stderr[1] == ""
    # the figure is still shown, after the check (the inline backend flushes it later)
    assert any(o["output_type"] == "display_data" for o in nb.cells[0].outputs)


def test_a_run_that_does_not_draw_figures_closes_them_undrawn(monkeypatch):
    """make test's nbval run (SEQBOOK_DRAW_FIGURES=0) runs the plotting code, but its
    kernels show no image: each figure is closed without being drawn."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("IPYTHONDIR", str(ROOT / "book" / "_ipython"))
    monkeypatch.setenv("SEQBOOK_DRAW_FIGURES", "0")
    cells = ["import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1])",
             "print(plt.get_fignums())"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    formats = {key for o in nb.cells[0].outputs for key in o.get("data", {})}
    assert formats and not {f for f in formats if f.startswith("image/")}, formats
    assert nb.cells[1].outputs[0]["text"].strip() == "[]"  # closed, as when drawn
