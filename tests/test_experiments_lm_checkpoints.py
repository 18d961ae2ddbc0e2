"""The language-model chapter's checkpoint: the script runs, and the committed file loads."""

import dataclasses

import pytest
import torch

from seqbook.experiments.lm_checkpoints import RECIPE, build_pair, load_lm_checkpoints, main
from seqbook.language_model import char_corpus
from seqbook.provenance import read_provenance


def test_a_smoke_run_writes_a_checkpoint_that_loads(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = main(["--smoke", "--out", str(tmp_path / "lm.pt")])
    corpus = char_corpus()
    V = corpus.vocab_size
    loaded = load_lm_checkpoints(corpus, out)
    assert loaded is not None
    models, training = loaded
    assert set(models) == set(training) == set(RECIPE)
    assert all(len(t["step_loss"]) == 20 for t in training.values())
    assert not any(m.training for m in models.values())
    fresh = build_pair(V)
    assert not torch.equal(fresh["LSTM"].readout.weight, models["LSTM"].readout.weight)
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_committed_checkpoint_holds_the_recipes_steps():
    loaded = load_lm_checkpoints(char_corpus())
    if loaded is None:
        pytest.skip("this Python's standard library is not the checkpoint's text")
    _, training = loaded
    assert {name: len(t["step_loss"]) for name, t in training.items()} == {
        name: steps for name, (steps, _) in RECIPE.items()}


def test_another_text_does_not_load(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = main(["--smoke", "--out", str(tmp_path / "lm.pt")])
    corpus = char_corpus()
    other = dataclasses.replace(corpus, train_text=corpus.train_text + " ")
    assert load_lm_checkpoints(other, out) is None


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "1")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "lm.pt")])
