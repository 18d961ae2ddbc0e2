"""The surname RNN's marker ablation: the table of the RNN chapter."""

import math

import pytest
import torch

from seqbook.experiments.results import load_table
from seqbook.experiments.surname_markers import (
    MARKERS,
    SEEDS,
    SurnameMarkerRecord,
    SurnameRNN,
    cut,
    late_valid_gain,
    load_surname_marker_table,
    main,
    marked_accuracy,
    marked_names,
    split_accuracy,
    surname_data,
    train_surname_classifier,
)
from seqbook.provenance import read_provenance


@pytest.fixture(scope="module")
def data():
    return surname_data()


def test_a_forward_hook_on_every_submodule_fires_on_a_call_of_the_network():
    net = SurnameRNN(10, 4, 3)
    fired = set()
    for name, module in net.named_modules():
        module.register_forward_hook(lambda m, args, out, name=name: fired.add(name))
    net(torch.zeros(2, 5, 10), torch.tensor([5, 2]))
    assert fired == {name for name, _ in net.named_modules()}


def test_the_network_refuses_inputs_of_another_vocabulary():
    net = SurnameRNN(10, 4, 3)
    with pytest.raises(TypeError, match="^x must be"):
        net(torch.zeros(2, 5, 9))
    with pytest.raises(ValueError, match="vocab_size must be >= 1"):
        SurnameRNN(0, 4, 3)


def test_the_committed_table_has_every_seed_and_the_marked_names(data):
    rows = load_surname_marker_table()
    assert [row.seed for row in rows] == list(SEEDS)
    assert all(row.epochs == 12 for row in rows)
    assert {(row.suffix_names, row.prefix_names) for row in rows} == {
        (len(marked_names(data, "suffix")), len(marked_names(data, "prefix")))}


def test_the_committed_table_records_a_late_gain_of_whole_validation_names(data):
    # a difference of two accuracies over the validation names: a whole number of names
    n_valid = len(data.names.valid)
    for row in load_surname_marker_table():
        assert -1 <= row.late_valid_gain <= 1
        assert row.late_valid_gain * n_valid == pytest.approx(
            round(row.late_valid_gain * n_valid), abs=1e-3)


def test_the_late_gain_is_the_best_of_the_last_four_epochs_minus_the_best_before():
    assert late_valid_gain([0.25, 0.5, 0.625, 0.5, 0.75, 0.5, 0.5, 0.5]) == 0.125
    assert late_valid_gain([0.75, 0.5, 0.5, 0.5, 0.5]) == -0.25
    assert late_valid_gain([0.5, 0.25, 0.75], late=2) == 0.25
    assert math.isnan(late_valid_gain([0.5, 0.75, 0.5, 0.5]))


def test_the_training_history_holds_a_validation_accuracy_per_epoch(data):
    net, history = train_surname_classifier(2, data, epochs=2, with_history=True)
    curve = history.metrics["valid accuracy"]
    assert len(curve) == 2
    # the kept weights are those of the best epoch
    assert max(curve) == pytest.approx(split_accuracy(net, data, data.names.valid))


def test_marked_names_carry_their_locale_s_marker_and_cuts_remove_as_many_letters(data):
    for where in ("suffix", "prefix"):
        names = marked_names(data, where)
        assert names and all(MARKERS[s.language][0] == where for s in names)
        for s in names:
            marker, control = (cut(s.name, s.language, v) for v in ("marker", "control"))
            assert len(marker) == len(control) < len(s.name)
            if where == "suffix":
                assert s.name.startswith(marker) and s.name.endswith(control)
            else:
                assert s.name.endswith(marker) and s.name.startswith(control)


def test_a_short_training_is_repeatable(data):
    first = train_surname_classifier(3, data, epochs=1)
    again = train_surname_classifier(3, data, epochs=1)
    assert marked_accuracy(first, data, "suffix", "intact") == marked_accuracy(
        again, data, "suffix", "intact")


def test_a_smoke_run_writes_a_readable_table_with_its_provenance(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQBOOK_SEED_SHIFT", raising=False)
    out = tmp_path / "surname_markers.csv"
    records = main(["--smoke", "--seeds", "1", "--out", str(out)])
    assert [(row.seed, row.epochs) for row in records] == [(1, 1)]
    written = load_table(out, SurnameMarkerRecord)
    assert written[0].suffix_marker == pytest.approx(records[0].suffix_marker, rel=1e-5)
    assert math.isnan(written[0].late_valid_gain)  # one epoch: nothing before the last 4
    assert read_provenance(out)[-1]["command"].endswith("--out " + str(out))


def test_the_script_refuses_a_seed_shift(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBOOK_SEED_SHIFT", "3")
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(tmp_path / "table.csv")])
