import numpy as np
import pytest
import torch

from seqbook.notebook import _plain, glue, value_range


def test_glue_shows_the_value_only_when_asked_where_myst_nb_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "myst_nb", None)  # as in Colab
    glue("a_number", np.float64(3.5))
    assert capsys.readouterr().out == ""
    glue("a_number", np.float64(3.5), display=True)
    assert capsys.readouterr().out.strip() == "3.5"  # shown as a plain number


def test_numbers_are_glued_as_plain_python_numbers():
    assert type(_plain(np.float64(0.5))) is float
    assert type(_plain(torch.tensor(3))) is int
    assert _plain("text") == "text"


def test_a_range_prints_one_number_when_both_ends_print_alike():
    assert value_range(np.float64(0.991), torch.tensor(0.994), ".2f") == "0.99"
    assert value_range(0.912, 0.987, ".2f") == "0.91-0.99"
    assert value_range(1, 1) == "1"
    assert value_range(1_200, 35_000, ",.0f", sep=" to ") == "1,200 to 35,000"


@pytest.mark.parametrize("kwargs, message", [
    ({"spec": 2}, "^spec must be str"), ({"sep": None}, "^sep must be str")])
def test_a_range_refuses_a_spec_or_separator_that_is_not_a_str(kwargs, message):
    with pytest.raises(TypeError, match=message):
        value_range(0.1, 0.2, **kwargs)


def test_a_range_refuses_a_spec_that_does_not_fit_the_value():
    with pytest.raises(ValueError):
        value_range("low", "high", ".2f")


@pytest.mark.parametrize("name", ["", "has space", "dots.are.bad"])
def test_glue_rejects_bad_names(name):
    with pytest.raises(ValueError, match="^name must be"):
        glue(name, 1)


def test_glue_rejects_a_name_that_is_not_a_str():
    with pytest.raises(TypeError, match="^name must be str"):
        glue(3, 1)


# --- show_source: the package's own code on the page --------------------------------

import inspect  # noqa: E402

from seqbook.energy_transformer import EnergyAttention, EnergyLayerNorm  # noqa: E402
from seqbook.energy_transformer.attention import (  # noqa: E402
    EnergyAttention as AttentionFromModule,
)
from seqbook.notebook import SNIPPET_CLASS, SourceSnippet, show_source  # noqa: E402


def test_show_source_shows_the_running_code_without_its_docstring():
    snippet = show_source(EnergyAttention.forward)
    assert isinstance(snippet, SourceSnippet)
    assert snippet.code.startswith("def forward(self, g: Tokens) -> Tokens:")
    assert '"""' not in snippet.code and "The update" not in snippet.code
    # the shown lines are the file's lines
    source = inspect.getsource(inspect.unwrap(AttentionFromModule.forward))
    for line in snippet.code.splitlines():
        assert line.strip() in source


def test_show_source_reads_past_the_type_checking_wrapper():
    # the public methods are wrapped by seqbook._typecheck; the page shows the method
    wrapped = EnergyAttention.forward
    assert getattr(wrapped, "__wrapped_by_typecheck__", False)
    snippet = show_source(wrapped)
    assert "wrapper" not in snippet.code and "self.scores(g)" in snippet.code
    _, first = inspect.getsourcelines(inspect.unwrap(wrapped))
    assert snippet.first_line == first


def test_show_source_keeps_the_docstring_when_asked():
    assert "minus the gradient of the energy" in show_source(
        EnergyAttention.forward, docstring=True).code


def test_show_source_collects_the_equation_labels_the_lines_cite():
    snippet = show_source(EnergyAttention.scores)
    assert snippet.labels == ("eq-et-keys",)
    from seqbook.energy_transformer import MaskedEnergyTransformer

    decode = show_source(MaskedEnergyTransformer.decode)
    assert decode.labels == ("eq-et-layernorm", "eq-et-decode")
    markdown = decode._repr_markdown_()
    assert "{eq}`eq-et-layernorm`" in markdown and "{eq}`eq-et-decode`" in markdown
    assert "(eq-et-decode)" in decode._repr_html_()


def test_show_source_part_of_a_function():
    snippet = show_source(EnergyAttention.scores, start="K = torch.einsum", stop="S = self.beta")
    lines = snippet.code.splitlines()
    assert lines[0].startswith("K = torch.einsum") and lines[-1].startswith("S = self.beta")
    assert len(lines) == 3
    assert snippet.labels == ("eq-et-keys",)
    assert snippet.last_line - snippet.first_line == 2


def test_show_source_looks_for_stop_after_the_start_line():
    # the start line itself contains "torch.einsum": stop must not end the snippet there
    snippet = show_source(EnergyAttention.scores, start="K = torch.einsum",
                          stop="torch.einsum")
    lines = snippet.code.splitlines()
    assert len(lines) == 2 and lines[-1].startswith("Q = torch.einsum")


def test_show_source_names_and_links_the_public_object():
    snippet = show_source(EnergyAttention.forward)
    assert snippet.qualname == "seqbook.energy_transformer.EnergyAttention.forward"
    assert snippet.path == "seqbook/energy_transformer/attention.py"
    assert snippet.api_target == "seqbook.energy_transformer.EnergyAttention.forward"
    assert ("{py:obj}`seqbook.energy_transformer.EnergyAttention.forward "
            "<seqbook.energy_transformer.EnergyAttention.forward>`") in snippet._repr_markdown_()
    # a private helper links to its public owner
    from seqbook.notebook import _public_name

    assert show_source(_public_name).api_target == "seqbook.notebook"


def test_show_source_renders_for_the_book_and_for_colab():
    snippet = show_source(EnergyAttention.scores)
    markdown = snippet._repr_markdown_()
    assert markdown.startswith("````{container} " + SNIPPET_CLASS)
    assert "```python\n" in markdown and markdown.rstrip().endswith("````")
    html = snippet._repr_html_()
    assert html.startswith(f'<div class="{SNIPPET_CLASS}">') and "attention.py" in html
    assert repr(snippet).startswith("# seqbook.energy_transformer.EnergyAttention.scores")


def test_show_source_shows_a_property_and_a_class():
    assert "self.log_gamma.exp()" in show_source(EnergyLayerNorm.gamma).code
    assert show_source(EnergyLayerNorm).code.startswith("class EnergyLayerNorm(nn.Module):")


def test_show_source_bad_input():
    with pytest.raises(ValueError, match="obj must be defined in the seqbook package"):
        show_source(torch.nn.GRU.forward)
    with pytest.raises(TypeError, match="obj must be a function"):
        show_source(EnergyLayerNorm(2))
    with pytest.raises(ValueError, match="start='no such line'"):
        show_source(EnergyAttention.forward, start="no such line")
    with pytest.raises(ValueError, match="stop="):
        show_source(EnergyAttention.scores, start="return K, Q", stop="(eq-et-keys)")
    with pytest.raises(TypeError, match="^start must be str"):
        show_source(EnergyAttention.forward, start=3)
    with pytest.raises(TypeError, match="^docstring must be bool"):
        show_source(EnergyAttention.forward, docstring="yes")
