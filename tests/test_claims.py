"""seqbook.claims: a claim raises in strict mode, shows a note in a reader's run, logs."""

import json
import math

import numpy as np
import pytest
import torch

from seqbook import claims
from seqbook.claims import ClaimError, claim, claims_mode


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv(claims.MODE_VARIABLE, "strict")


@pytest.fixture
def reader(monkeypatch):
    monkeypatch.setenv(claims.MODE_VARIABLE, "reader")


def test_the_mode_is_the_readers_unless_strict_is_asked_for(monkeypatch):
    monkeypatch.delenv(claims.MODE_VARIABLE, raising=False)
    assert claims_mode() == "reader"
    monkeypatch.setenv(claims.MODE_VARIABLE, "strict")
    assert claims_mode() == "strict"
    monkeypatch.setenv(claims.MODE_VARIABLE, "loose")
    with pytest.raises(ValueError, match="SEQBOOK_CLAIMS must be one of"):
        claims_mode()


def test_a_claim_that_holds_says_nothing(strict, capsys):
    claim("a small number is small", 0.1, below=1)
    claim("an interval", 0.5, above=0, below=1)
    claim("an exact count", 3, equals=3, identity=True)
    assert capsys.readouterr() == ("", "")


def test_a_failed_claim_names_claim_value_and_bound_in_strict_mode(strict):
    with pytest.raises(ClaimError, match=r"claim 'accuracy is high' does not hold here: "
                                         r"0\.52, expected > 0\.6"):
        claim("accuracy is high", 0.52, above=0.6)
    assert issubclass(ClaimError, AssertionError)  # what a failed check has always been


def test_a_failed_claim_shows_a_note_in_a_readers_run(reader, capsys):
    claim("accuracy is high", 0.52, above=0.6)  # does not raise
    note = capsys.readouterr().err
    assert "does not confirm a claim" in note and "accuracy is high" in note
    assert "0.52" in note and "> 0.6" in note and "goes on" in note


def test_the_note_cites_the_ledger_row_of_the_claim(monkeypatch):
    row = {"statement": "s", "held": 13, "runs": 14, "min": 0.7, "max": 0.9, "printed": 0.8}
    monkeypatch.setattr(claims, "_ledger", lambda: {"s": row})
    text = claims._note_text({"statement": "s", "value": 0.5, "binding": "> 0.6",
                              "identity": False})
    assert "held in 13 of 14 runs" in text and "0.7 to 0.9" in text
    identity = claims._note_text({"statement": "t", "value": 1e-6, "binding": "< 1e-12",
                                  "identity": True})
    assert "rounds differently" in identity


def test_the_committed_ledger_is_found_by_statement():
    ledger = claims._ledger()
    assert ledger, "seqbook/claims.json is missing or unreadable"
    row = next(iter(ledger.values()))
    assert {"chapter", "held", "runs", "min", "max", "printed"} <= set(row)


def test_arrays_report_their_worst_element(strict):
    with pytest.raises(ClaimError, match=r": 0\.9, expected < 0\.5"):
        claim("every seed is low", torch.tensor([0.1, 0.9, 0.3]), below=0.5)
    with pytest.raises(ClaimError, match=r": 2, expected > 2"):  # element-wise bounds
        claim("each beats its pair", np.array([3.0, 2.0]), above=np.array([1.0, 2.0]))
    with pytest.raises(ClaimError, match=r"nan"):  # a NaN never holds
        claim("finite", [0.0, math.nan], below=1)
    with pytest.raises(ClaimError):  # strict bounds are strict
        claim("strictly below", 1.0, below=1.0)
    claim("at most", 1.0, at_most=1.0)


def test_claims_are_logged_for_the_ledger(tmp_path, monkeypatch, reader):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.LOG_VARIABLE, str(log))
    claim("logged", [0.2, 0.4], below=0.5, quote="some words")
    claim("failed", True, equals=False, identity=True)
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["value"] == 0.4 and math.isclose(first["slack"], 0.1) and first["held"]
    assert first["quote"] == "some words" and first["bound"] == "< 0.5"
    assert not second["held"] and second["identity"] and second["slack"] == -1


@pytest.mark.parametrize("call, error, message", [
    (lambda: claim("", 1, below=2), ValueError, "statement must be a non-empty str"),
    (lambda: claim("no bound", 1), ValueError, "claim needs a bound"),
    (lambda: claim("x", 1, equals=1, below=2), ValueError, "equals cannot be combined"),
    (lambda: claim("x", "high", below=2), TypeError, "value must be a number"),
    (lambda: claim("x", 1, below="two"), TypeError, "below must be a number"),
    (lambda: claim("x", [1, 2, 3], below=[1, 2]), ValueError, "below must be a number or "
                                                              "broadcast"),
    (lambda: claim("x", [], below=1), ValueError, "at least one element"),
    (lambda: claim("x", 1, below=2, quote=""), ValueError, "quote must be"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_note_links_to_the_ledger_page_of_the_published_book():
    from book_files import config

    assert claims.LEDGER_PAGE == config()["html"]["baseurl"] + "book/claims.html"


# an early claim of a quick chapter: the run up to it costs a second or two
FORCED = 'errors["Euler"], above=0.05'
IMPOSSIBLE = FORCED.replace("0.05", "1e9")


@pytest.mark.slow
def test_a_strict_run_stops_on_a_claim_that_fails_and_a_readers_run_goes_on():
    """The ssm chapter's twin, with one claim's bound made impossible, in one kernel
    (each costs seconds to start): started in strict mode, as make test runs the book,
    the run stops on the claim and names it; switched to a reader's mode (the mode is
    read at every claim), the same cell shows the note and the run goes on past it."""
    import re

    import nbclient
    import nbformat

    from book_files import NOTEBOOKS, ROOT

    nb = nbformat.read(NOTEBOOKS / "ssm.ipynb", as_version=4)
    cells = [cell for cell in nb.cells if FORCED in cell.source]
    assert len(cells) == 1, "the forced claim is no longer in the chapter: pick another"
    forced = cells[0]
    forced.source = forced.source.replace(FORCED, IMPOSSIBLE)
    at = nb.cells.index(forced)
    after = next(i for i in range(at + 1, len(nb.cells)) if nb.cells[i].cell_type == "code")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    env = {claims.MODE_VARIABLE: "strict", "SEQBOOK_SEED_SHIFT": "0", "TQDM_DISABLE": "1"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        with client.setup_kernel():
            with pytest.raises(nbclient.exceptions.CellExecutionError) as stopped:
                for index in range(at + 1):
                    client.execute_cell(nb.cells[index], index)
            message = re.sub(r"\x1b\[[0-9;]*m", "", str(stopped.value))  # no colours
            assert re.search(r"ClaimError: claim 'Euler at a step of 0\.2 is off the "
                             r"oscillator by more than 0\.05' does not hold here: [0-9.]+, "
                             r"expected > 1e\+09", message), message[-500:]
            switch = nbformat.v4.new_code_cell(
                f"import os\nos.environ[{claims.MODE_VARIABLE!r}] = 'reader'")
            nb.cells.append(switch)  # (nbclient writes a cell's outputs by its index)
            client.execute_cell(switch, len(nb.cells) - 1)
            forced.outputs = []
            for index in range(at, after + 1):  # the claim's cell and the next one
                client.execute_cell(nb.cells[index], index)
    notes = [o["data"]["text/markdown"] for o in forced.outputs if "data" in o]
    assert any("does not confirm a claim" in note and "Euler at a step of 0.2" in note
               for note in notes), forced.outputs
    assert nb.cells[after].get("execution_count"), "the reader's run stopped at the claim"
