"""seqbook.experiments.translation_study: the committed several-seed results."""

import json
import math

import pytest

from seqbook.experiments.translation_study import (
    BEAM_SIZES,
    LENGTH_PENALTIES,
    load_study,
    main,
    parse_args,
)

MODELS = ["plain", "bahdanau", "plain_long", "french", "transformer", "transformer_sharp"]


def test_the_committed_study_has_five_seeds_of_every_model():
    study = load_study()
    assert study["seeds"] == [0, 1, 2, 3, 4] and not study["smoke"]
    assert [run["seed"] for run in study["runs"]] == study["seeds"]
    for run in study["runs"]:
        for model in MODELS:
            assert 0 <= run[model]["bleu"] <= 1 and 0 <= run[model]["accuracy"] <= 1
        assert len(run["plain"]["by_length"]) == 5
        table = run["decoding"]
        assert len(table) == 1 + (len(BEAM_SIZES) - 1) * len(LENGTH_PENALTIES)
        assert all(0 <= v["bleu"] <= 1 for v in table.values())


def test_the_seeds_really_differ():
    runs = load_study()["runs"]
    assert len({run["bahdanau"]["epoch_loss"][0] for run in runs}) == len(runs)


def test_command_line_defaults():
    args = parse_args([])
    assert args.seeds == [0, 1, 2, 3, 4] and args.threads == 1 and not args.smoke
    with pytest.raises(SystemExit):
        parse_args(["--seeds", "zero"])


@pytest.mark.slow
def test_a_smoke_run_writes_a_readable_table(tmp_path):
    out = tmp_path / "study.json"
    study = main(["--smoke", "--seeds", "3", "--out", str(out)])
    written = json.loads(out.read_text())
    assert written["smoke"] and written["seeds"] == [3] == study["seeds"]
    run = written["runs"][0]
    assert set(MODELS) <= set(run)
    # no NaN in the file: JSON has none, they are written as null
    assert "NaN" not in out.read_text()
    assert run["bahdanau"]["unit_share"] is None or not math.isnan(run["bahdanau"]["unit_share"])


@pytest.mark.slow
def test_teacher_forcing_smoke_run_writes_a_readable_table(tmp_path):
    from seqbook.experiments.results import load_table
    from seqbook.experiments.teacher_forcing import TeacherForcingRecord
    from seqbook.experiments.teacher_forcing import main as teacher_forcing_main

    out = tmp_path / "teacher_forcing.csv"
    records = teacher_forcing_main(["--smoke", "--seeds", "0", "--out", str(out)])
    assert [r.model for r in records] == ["plain", "bahdanau"]
    read = load_table(out, TeacherForcingRecord)
    assert [r.model for r in read] == ["plain", "bahdanau"]
    for r in read:
        assert 0 <= r.free_running <= 1 and 0 <= r.teacher_forced <= 1
    from seqbook.experiments.teacher_forcing import LengthRecord
    by_length = load_table(tmp_path / "teacher_forcing_by_length.csv", LengthRecord)
    assert {r.model for r in by_length} == {"plain", "bahdanau"}
    assert all(0 <= r.independent <= 1 for r in by_length)


def test_the_committed_teacher_forcing_table_has_both_models_for_the_study_seeds():
    from seqbook.experiments.teacher_forcing import load_teacher_forcing_table

    table = load_teacher_forcing_table()
    study = load_study()
    assert sorted((r.model, r.seed) for r in table) == sorted(
        (m, s) for m in ("plain", "bahdanau") for s in study["seeds"])
    accuracy = {(m, run["seed"]): run[m]["accuracy"]
                for run in study["runs"] for m in ("plain", "bahdanau")}
    assert all(abs(r.exact_match - accuracy[r.model, r.seed]) < 1e-6 for r in table)


def test_the_committed_by_length_table_adds_up_to_the_teacher_forcing_table():
    from seqbook.experiments.teacher_forcing import (
        load_by_length_table,
        load_teacher_forcing_table,
    )
    from seqbook.experiments.translation import LENGTH_BINS

    rows = load_by_length_table()
    for r in load_teacher_forcing_table():
        bins = [b for b in rows if (b.model, b.seed) == (r.model, r.seed)]
        assert [(b.shortest, b.longest) for b in bins] == list(LENGTH_BINS)
        tokens = sum(b.tokens for b in bins)
        # the bins' tokens and numbers make up the whole test set's
        assert sum(b.teacher_forced * b.tokens for b in bins) / tokens == pytest.approx(
            r.teacher_forced, abs=1e-5)
        numbers = sum(b.numbers for b in bins)
        # greedy's exact match is the share with every teacher-forced token right
        assert sum(b.all_right * b.numbers for b in bins) / numbers == pytest.approx(
            r.exact_match, abs=3e-3)
