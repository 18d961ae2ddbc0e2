"""The seq2seq chapter's French checkpoint: the script runs, the file loads, and the
live first steps are the training's."""

import torch

from seqbook.experiments.french_translator import (
    CONFIG,
    first_steps,
    french_task,
    load_french_translator,
    main,
)
from seqbook.provenance import read_provenance
from seqbook.seq2seq import TranslatorConfig


def test_a_smoke_run_writes_a_checkpoint_whose_first_steps_rerun(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    torch.set_num_threads(1)
    out = main(["--smoke", "--out", str(tmp_path / "fr.pt")])
    task = french_task(num_train=64, max_number=999, num_eval=8)
    model, training = load_french_translator(task, out)
    assert not model.training
    assert len(training["step_loss"]) == 1 and len(training["epoch_loss"]) == 1
    assert training["cpu_seconds"] > 0
    config = TranslatorConfig(attention=True, epochs=1, hidden_size=8, embed_size=8)
    assert first_steps(task, config, 1) == training["step_loss"][:1]
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_committed_checkpoint_is_the_chapters_recipe():
    model, training = load_french_translator(french_task())
    assert model.uses_attention
    steps_per_epoch = -(-3000 // CONFIG.batch_size)
    assert len(training["step_loss"]) == CONFIG.epochs * steps_per_epoch
