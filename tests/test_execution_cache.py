"""The dependency keys of tools/execution_cache.py: which chapters an edit makes outdated."""

from pathlib import Path

import pytest

from tools import execution_cache as ec

HEADER = ("---\njupytext:\n  formats: md:myst\n"
          "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n")


def chapter(imports: str) -> str:
    cell = f"```{{code-cell}} ipython3\n%matplotlib inline\n{imports}\n```\n"
    return HEADER + "# A chapter\n\n" + cell


@pytest.fixture
def book(tmp_path: Path) -> Path:
    files = {
        "requirements.txt": "torch==2.13.0\n",
        "seqbook/__init__.py": "",
        "seqbook/a.py": "from .b import f\n",
        "seqbook/b.py": "def f():\n    import seqbook.deep.inner\n",
        "seqbook/c.py": "import torch\n",
        "seqbook/deep/__init__.py": "from . import inner\n",
        "seqbook/deep/inner.py": "",
        "seqbook/deep/checkpoints/weights.pt": "0",
        "seqbook/unused.py": "",
        "book/uses_a.md": chapter("from seqbook.a import f"),
        "book/uses_c.md": chapter("import seqbook.c as c"),
        "book/uses_deep.md": chapter("from seqbook import deep"),
        "book/prose.md": "# Not a notebook\n\n```python\nimport seqbook.c\n```\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def keys(root: Path) -> dict[str, str]:
    return {path.stem: ec.dependency_key(path, root) for path in ec.chapters(root)}


def test_chapters_are_the_notebook_pages(book):
    assert [path.stem for path in ec.chapters(book)] == ["uses_a", "uses_c", "uses_deep"]


def test_dependencies_are_the_import_closure(book):
    names = {stem: sorted(str(p.relative_to(book)) for p in ec.dependency_files(path, book))
             for stem, path in ((p.stem, p) for p in ec.chapters(book))}
    assert names["uses_c"] == ["requirements.txt", "seqbook/__init__.py", "seqbook/c.py"]
    assert names["uses_a"] == [  # through a relative import, and an import inside a function
        "requirements.txt", "seqbook/__init__.py", "seqbook/a.py", "seqbook/b.py",
        "seqbook/deep/__init__.py", "seqbook/deep/checkpoints/weights.pt",
        "seqbook/deep/inner.py"]


@pytest.mark.parametrize("edited, outdated", [
    ("seqbook/b.py", {"uses_a"}),
    ("seqbook/c.py", {"uses_c"}),
    ("seqbook/deep/inner.py", {"uses_a", "uses_deep"}),
    ("seqbook/deep/checkpoints/weights.pt", {"uses_a", "uses_deep"}),
    ("seqbook/unused.py", set()),
    ("book/prose.md", set()),
    ("seqbook/__init__.py", {"uses_a", "uses_c", "uses_deep"}),
    ("requirements.txt", {"uses_a", "uses_c", "uses_deep"}),
])
def test_an_edit_changes_exactly_the_keys_of_the_chapters_that_import_it(book, edited, outdated):
    before = keys(book)
    with (book / edited).open("a") as file:
        file.write("\n# edited\n")
    after = keys(book)
    assert {stem for stem in before if before[stem] != after[stem]} == outdated


def test_every_chapter_of_the_book_has_a_key():
    chapters = ec.chapters()
    assert len(chapters) >= 10
    for path in chapters:
        files = ec.dependency_files(path)
        assert ec.ROOT / "requirements.txt" in files
        assert ec.ROOT / "seqbook" / "__init__.py" in files, f"{path.stem} imports no seqbook"


def test_nbval_takes_the_longest_chapters_first():
    names = [chapter.stem for chapter in ec.chapters()]
    seconds = {name: float(i) for i, name in enumerate(names)}  # the last is the longest
    del seconds[names[0]]  # a chapter with no time: first, it may be the longest
    order = ec.longest_first("notebooks", seconds)
    assert order[0] == f"notebooks/{names[0]}.ipynb"
    assert order[1:] == [f"notebooks/{name}.ipynb" for name in reversed(names[1:])]
    assert ec.longest_first("notebooks", {}) == ["notebooks"]  # no cache: the folder
