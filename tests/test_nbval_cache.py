"""book/_ext/nbval_cache.py: what nbval executed is what the build finds in its cache."""

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import nbval_cache  # noqa: E402
from execution_cache import KEY_FIELD, dependency_key  # noqa: E402

CHAPTER = "sequences"


def fake_outputs(path: Path) -> dict[int, list]:
    """One split stream and one display per code cell, as nbval records them."""
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    return {
        i: [nbformat.v4.new_output("stream", name="stdout", text=f"cell {i} "),
            nbformat.v4.new_output("stream", name="stdout", text="done\n"),
            nbformat.v4.new_output("display_data", data={"text/plain": str(i)})]
        for i in range(len(code))
    }


def myst_notebook(stem: str):
    """The notebook myst-nb makes of book/<stem>.md (what the build looks up)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    path = ROOT / "book" / f"{stem}.md"
    text = path.read_text(encoding="utf-8")
    return create_nb_reader(str(path), MdParserConfig(), NbParserConfig(), text).read(text)


def test_a_complete_run_is_stored_where_the_build_finds_it(tmp_path):
    from jupyter_cache import get_cache

    twin = ROOT / "notebooks" / f"{CHAPTER}.ipynb"
    run = nbval_cache._Run()
    run.outputs, run.seconds = fake_outputs(twin), 12.5
    assert nbval_cache.store(twin, run, tmp_path / "cache")

    cache = get_cache(str(tmp_path / "cache"))
    record = cache.match_cache_notebook(myst_notebook(CHAPTER))  # raises if not found
    cells = [c.source for c in myst_notebook(CHAPTER).cells if c.cell_type == "code"]
    assert record.data[KEY_FIELD] == dependency_key(cells, ROOT)
    assert record.data["execution_seconds"] == 12.5
    assert record.uri == str(ROOT / "book" / f"{CHAPTER}.md")
    stored = cache.get_cache_bundle(record.pk).nb
    first = next(c for c in stored.cells if c.cell_type == "code")
    # nbval's two stream messages become one stream output, as in an executed notebook
    assert [o["output_type"] for o in first.outputs] == ["stream", "display_data"]
    assert first.outputs[0]["text"] == "cell 0 done\n"
    assert first.execution_count == 1


def test_a_run_with_a_missing_cell_is_not_stored(tmp_path):
    twin = ROOT / "notebooks" / f"{CHAPTER}.ipynb"
    outputs = fake_outputs(twin)
    outputs.pop(max(outputs))
    assert nbval_cache.executed_notebook(twin, outputs) is None
    run = nbval_cache._Run()
    run.outputs = outputs
    assert not nbval_cache.store(twin, run, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_notebook_without_a_chapter_is_not_stored(tmp_path):
    lonely = tmp_path / "lonely.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nbformat.write(notebook, lonely)
    run = nbval_cache._Run()
    run.outputs = {0: []}
    assert not nbval_cache.store(lonely, run, tmp_path / "cache")


def test_make_test_builds_from_what_nbval_executed():
    from test_makefile import make

    nbval = make("-n", "nbval", "NBVAL_CACHE=some/cache")
    assert "-p nbval_cache" in nbval and "--nbval-cache=some/cache" in nbval
    assert "--nbval-cache" not in make("-n", "nbval")  # a plain nbval run stores nothing
    # the strict build keeps the cache only when make test asks it to
    def removed(*args: str) -> str:
        return next(line for line in make("-n", "build-strict", *args).splitlines()
                    if line.startswith("rm -rf"))
    assert "_build/.jupyter_cache" in removed()
    assert "_build/.jupyter_cache" not in removed("REUSE_NBVAL=1")
