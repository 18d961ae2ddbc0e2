import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from seqbook.plot import _ink_on, heatmap, plot_history
from seqbook.train import History


def test_heatmap_draws_labels_and_annotations():
    ax = heatmap(torch.tensor([[0.1, 0.9], [0.5, 0.5]]), xticklabels=["a", "b"],
                 yticklabels=["x", "y"], annotate=True, title="t")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert sorted(t.get_text() for t in ax.texts) == ["0.10", "0.50", "0.50", "0.90"]
    assert ax.get_title() == "t"
    plt.close("all")


def test_heatmap_bad_input():
    with pytest.raises(ValueError, match="^matrix must be 2-D"):
        heatmap(np.zeros(3))
    with pytest.raises(TypeError, match=r"^matrix must be .*Shaped\[Tensor, 'rows cols'\]"):
        heatmap(torch.zeros(3))
    with pytest.raises(ValueError, match="^xticklabels must have 3 entries"):
        heatmap(np.zeros((2, 3)), xticklabels=["a"])
    with pytest.raises(TypeError, match="^ax must be"):
        heatmap(np.zeros((2, 3)), ax="left")
    with pytest.raises(TypeError, match="^annotate must be bool"):
        heatmap(np.zeros((2, 3)), annotate=1)
    plt.close("all")


def test_heatmap_draws_what_the_chapters_pass():
    # tensors of every dtype, arrays and nested lists
    for matrix in (torch.rand(2, 3), torch.ones(2, 3, dtype=torch.bool),
                   torch.arange(6).view(2, 3), np.eye(2), [[1, 2], [3, 4]]):
        heatmap(matrix, annotate=True, fmt="")
    plt.close("all")


def test_plot_history_with_metrics():
    history = History(step_loss=[3, 2, 2, 1], grad_norm=[1] * 4, epoch_loss=[2.5, 1.5],
                      metrics={"accuracy": [0.4, 0.8]})
    ax = plot_history(history, metrics=["accuracy"])
    assert len(ax.lines) == 2 and ax.get_legend() is not None
    with pytest.raises(ValueError, match="metrics"):
        plot_history(history, metrics=["bleu"])
    with pytest.raises(TypeError, match="^history must be .*History"):
        plot_history({"loss": [1]})
    # beartype checks one item of a list, drawn at random, and jaxtyping's message may
    # then fail to say which argument it was (it re-checks with another draw); the
    # message names the argument somewhere, and the body checks every item
    with pytest.raises(TypeError, match="metrics"):
        plot_history(history, metrics=["accuracy", 1])
    with pytest.raises(TypeError, match="^metrics must be a list of metric names"):
        plot_history(history, metrics="accuracy")
    plt.close("all")


def test_heatmap_keeps_integer_matrices_for_integer_formats():
    ax = heatmap(torch.tensor([[1, 20], [3, 4]]), annotate=True, fmt="d")
    assert [t.get_text() for t in ax.texts] == ["1", "20", "3", "4"]
    with pytest.raises(ValueError, match="fmt must be a format spec"):
        heatmap(torch.rand(2, 2), annotate=True, fmt="d")
    with pytest.raises(TypeError, match="^matrix must be a 2-D array of numbers"):
        heatmap([["a", "b"]])


@pytest.mark.parametrize("cmap, ink_of_low, ink_of_high", [
    ("Blues", "black", "white"),      # pale to dark
    ("viridis", "white", "black"),    # dark to pale
    ("Greys_r", "white", "black"),
])
def test_annotations_are_dark_on_pale_cells_and_light_on_dark_ones(cmap, ink_of_low, ink_of_high):
    ax = heatmap(torch.tensor([[0.0, 1.0]]), annotate=True, cmap=cmap)
    low, high = ax.texts
    assert (low.get_color(), high.get_color()) == (ink_of_low, ink_of_high)
    plt.close(ax.figure)


def test_positions_without_labels_are_ticked_with_whole_numbers():
    ax = heatmap(torch.rand(3, 6))
    ax.figure.canvas.draw()
    for ticks in (ax.get_xticks(), ax.get_yticks()):
        inside = [t for t in ticks if -0.5 <= t <= 5.5]
        assert inside and all(float(t).is_integer() for t in inside), ticks
    plt.close(ax.figure)


def _relative_luminance(rgb) -> float:
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _colour_maps_of_annotated_heatmaps() -> set[str]:
    """The colour maps of every annotated heatmap the chapters draw (heatmap's default
    where a call names none)."""
    import inspect
    import re
    from pathlib import Path

    default = inspect.signature(heatmap).parameters["cmap"].default
    found = set()
    for chapter in (Path(__file__).parents[1] / "book").glob("*.md"):
        for call in re.findall(r"heatmap\((?:[^()]|\([^()]*\))*\)", chapter.read_text()):
            if "annotate=True" in call:
                named = re.search(r'cmap="(\w+)"', call)
                found.add(named.group(1) if named else default)
    return found


def test_annotations_meet_wcag_aa_contrast_on_every_cell_of_the_books_heatmaps():
    """Contrast (L1 + 0.05) / (L2 + 0.05) of ink and cell at least 4.5:1 (WCAG 2 AA),
    over the whole range of each colour map an annotated heatmap of the book uses."""
    import matplotlib

    maps = _colour_maps_of_annotated_heatmaps() | {"Blues", "viridis", "magma", "Greys"}
    assert len(maps) >= 4
    for name in sorted(maps):
        cmap = matplotlib.colormaps[name]
        for value in np.linspace(0, 1, 257):
            cell = cmap(value)
            ink = matplotlib.colors.to_rgb(_ink_on(cell))
            light, dark = sorted((_relative_luminance(cell), _relative_luminance(ink)),
                                 reverse=True)
            assert (light + 0.05) / (dark + 0.05) >= 4.5, (name, value)
