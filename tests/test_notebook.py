import numpy as np
import pytest
import torch

from seqbook.notebook import _plain, glue


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


@pytest.mark.parametrize("name", ["", "has space", "dots.are.bad", 3])
def test_glue_rejects_bad_names(name):
    with pytest.raises(ValueError, match="name"):
        glue(name, 1)


# --- show_source: the package's own code on the page --------------------------------

from seqbook.notebook import SNIPPET_CLASS, SourceSnippet, show_source  # noqa: E402
from seqbook.recurrent import GRU  # noqa: E402
from seqbook.recurrent.gru import GRU as GRUFromModule  # noqa: E402


def test_show_source_shows_the_running_code_without_its_docstring():
    snippet = show_source(GRU.cell)
    assert isinstance(snippet, SourceSnippet)
    # the signature, on one line or broken inside its brackets
    assert snippet.code.startswith("def cell(") and "self, x_t" in snippet.code
    assert '"""' not in snippet.code and "Example:" not in snippet.code
    # the shown lines are the file's lines
    import inspect

    source = inspect.getsource(GRUFromModule.cell)
    for line in snippet.code.splitlines():
        assert line.strip() in source


def test_show_source_keeps_the_docstring_when_asked():
    assert "One time step" in show_source(GRU.cell, docstring=True).code


def test_show_source_collects_the_equation_labels_the_lines_cite():
    snippet = show_source(GRU._step)
    assert snippet.labels == ("eq-gru-z", "eq-gru-r", "eq-gru-n", "eq-gru-h")
    markdown = snippet._repr_markdown_()
    assert "{eq}`eq-gru-z`" in markdown and "{eq}`eq-gru-h`" in markdown
    assert "(eq-gru-z)" in snippet._repr_html_()


def test_show_source_part_of_a_function():
    snippet = show_source(GRU._step, start="z = torch.sigmoid", stop="(eq-gru-n)")
    lines = snippet.code.splitlines()
    assert lines[0].startswith("z = torch.sigmoid") and lines[-1].endswith("(eq-gru-n)")
    assert len(lines) == 3
    assert snippet.labels == ("eq-gru-z", "eq-gru-r", "eq-gru-n")
    assert snippet.last_line - snippet.first_line == 2


def test_show_source_looks_for_stop_after_the_start_line():
    # the start line itself contains "torch.sigmoid": stop must not end the snippet there
    snippet = show_source(GRU._step, start="z = torch.sigmoid", stop="torch.sigmoid")
    lines = snippet.code.splitlines()
    assert len(lines) == 2 and lines[-1].startswith("r = torch.sigmoid")


def test_show_source_names_and_links_the_public_object():
    snippet = show_source(GRU.cell)
    assert snippet.qualname == "seqbook.recurrent.GRU.cell"
    assert snippet.path == "seqbook/recurrent/gru.py"
    assert snippet.api_target == "seqbook.recurrent.GRU.cell"
    assert "{py:obj}`seqbook.recurrent.GRU.cell <seqbook.recurrent.GRU.cell>`" in (
        snippet._repr_markdown_()
    )
    # a private helper links to its public owner
    assert show_source(GRU._step).api_target == "seqbook.recurrent.GRU"


def test_show_source_renders_for_the_book_and_for_colab():
    snippet = show_source(GRU._step)
    markdown = snippet._repr_markdown_()
    assert markdown.startswith("````{container} " + SNIPPET_CLASS)
    assert "```python\n" in markdown and markdown.rstrip().endswith("````")
    html = snippet._repr_html_()
    assert html.startswith(f'<div class="{SNIPPET_CLASS}">') and "gru.py" in html
    assert repr(snippet).startswith("# seqbook.recurrent.GRU._step")


def test_show_source_bad_input():
    with pytest.raises(ValueError, match="obj must be defined in the seqbook package"):
        show_source(torch.nn.GRU.forward)
    with pytest.raises(TypeError, match="obj must be a function"):
        show_source(GRU(2, 3))
    with pytest.raises(ValueError, match="start='no such line'"):
        show_source(GRU.cell, start="no such line")
    with pytest.raises(ValueError, match="stop="):
        show_source(GRU._step, start="(eq-gru-h)", stop="(eq-gru-z)")
    with pytest.raises(TypeError, match="start must be a str"):
        show_source(GRU.cell, start=3)
