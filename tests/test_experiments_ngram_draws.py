"""The n-gram table of the sequences chapter: letter models over many draws of the data."""

from dataclasses import replace

import pytest

from seqbook.data import surnames
from seqbook.experiments.ngram_draws import (
    KS,
    ORDERS,
    SEEDS,
    NgramDrawRecord,
    load_ngram_draw_table,
    main,
    ngram_draw,
)
from seqbook.experiments.results import load_table
from seqbook.provenance import read_provenance


def test_the_committed_table_has_every_order_of_every_draw():
    rows = load_ngram_draw_table()
    assert sorted((row.seed, row.order) for row in rows) == sorted(
        (seed, n) for seed in SEEDS for n in ORDERS)
    assert all(row.k in KS for row in rows)
    assert all(1 < row.train_perplexity < row.vocab_size for row in rows)
    assert all(0 <= row.new_context_share <= 1 for row in rows)


def test_a_draw_is_repeatable_and_the_unigram_sees_every_context():
    data = surnames(["German", "Finnish"], per_language=40, seed=2)
    first = ngram_draw(data, seed=2, orders=[1, 3])
    again = ngram_draw(data, seed=2, orders=[1, 3])
    assert [replace(row, seconds=0.0) for row in first] == [
        replace(row, seconds=0.0) for row in again]
    unigram, trigram = first
    assert (unigram.seed, unigram.order, trigram.order) == (2, 1, 3)
    # the unigram's context is the empty one: it occurs before every training token
    assert unigram.new_context_share == 0
    assert unigram.median_context_count == unigram.train_tokens
    assert trigram.train_perplexity < unigram.train_perplexity


def test_a_draw_refuses_bad_orders():
    data = surnames(["German"], per_language=20)
    with pytest.raises(ValueError, match="orders"):
        ngram_draw(data, orders=[])
    with pytest.raises(TypeError, match="orders"):
        ngram_draw(data, orders=[1.5])


def test_a_smoke_run_writes_a_readable_table_with_its_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "ngram_draws.csv"
    records = main(["--smoke", "--seeds", "4", "--out", str(out)])
    assert [(row.seed, row.order) for row in records] == [(4, 1), (4, 2)]
    written = load_table(out, NgramDrawRecord)  # floats to 6 significant digits
    assert [(row.seed, row.order, row.k) for row in written] == [
        (r.seed, r.order, r.k) for r in records]
    assert [row.test_perplexity for row in written] == pytest.approx(
        [row.test_perplexity for row in records], rel=1e-5)
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "1")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
