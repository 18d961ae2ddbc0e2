"""The trained networks the LSTM and GRU chapters load: the script runs, the file loads."""

import dataclasses

import pytest

from seqbook.experiments import load_value_stream_table
from seqbook.experiments.trained_weights import (
    GRU_LM_SEEDS,
    STREAM_SEED_0,
    load_gru_lms,
    load_value_stream_models,
    main,
    stream_errors,
)
from seqbook.language_model import char_corpus
from seqbook.provenance import read_provenance


def test_a_smoke_run_writes_weights_that_load(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = main(["--smoke", "--out", str(tmp_path / "weights.pt")])
    streams = load_value_stream_models(out)
    assert sorted(streams) == sorted(spec.label for spec in STREAM_SEED_0)
    corpus = char_corpus()
    lms = load_gru_lms(corpus, out)
    assert lms is not None and sorted(lms) == list(GRU_LM_SEEDS)
    assert not any(m.training for m in [*streams.values(), *lms.values()])
    other = dataclasses.replace(corpus, train_text=corpus.train_text + " ")
    assert load_gru_lms(other, out) is None
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "1")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "weights.pt")])


def test_the_committed_value_stream_weights_give_the_tables_seed_0(monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    rows = {row.label: row for row in load_value_stream_table() if row.seed == 0}
    for label, model in load_value_stream_models().items():
        errors = stream_errors(model)
        assert errors.rmse_long == pytest.approx(rows[label].rmse_long, rel=1e-4)
        assert errors.rmse_episodes == pytest.approx(rows[label].rmse_episodes, rel=1e-4)
