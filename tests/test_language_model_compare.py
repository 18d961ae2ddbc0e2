"""The matched-CPU comparison script and the table it wrote for the chapter."""

import json

import pytest

from seqbook.language_model import MixerLM, RecurrentLM, TransformerLM
from seqbook.language_model.compare import (
    LR_CONTROL,
    MODELS,
    RESULTS,
    STEPS_PER_UNIT,
    build_model,
    load_comparison,
    main,
    parse_args,
)


def count(model):
    return sum(p.numel() for p in model.parameters())


def test_build_model_is_seeded_and_sized_as_in_the_chapter():
    a, b = build_model("transformer", 98, seed=3), build_model("transformer", 98, seed=3)
    assert isinstance(a, TransformerLM)
    assert all((p == q).all() for p, q in zip(a.parameters(), b.parameters()))
    lstm = build_model("lstm", 98, seed=0)
    assert isinstance(lstm, RecurrentLM) and lstm.rnn.hidden_size == 128
    assert abs(count(a) / count(lstm) - 1) < 0.05
    for name in ("linear", "delta", "mamba", "mlstm"):  # matched parameters, within 10%
        model = build_model(name, 98, seed=0)
        assert isinstance(model, MixerLM) and model.mixer == name
        assert abs(count(model) / count(lstm) - 1) < 0.1, name


def test_the_committed_table_is_complete_and_consistent():
    results = load_comparison()
    recipe = results["recipe"]
    runs = results["runs"]
    seeds = sorted({r["seed"] for r in runs})
    budgets = sorted({r["budget"] for r in runs})
    assert len(seeds) >= 3 and budgets[0] == 1 and len(budgets) >= 3
    assert set(recipe["steps_per_unit"]) == {r["model"] for r in runs} == set(MODELS)
    for model, per_unit in recipe["steps_per_unit"].items():
        rows = [r for r in runs if r["model"] == model]
        assert len(rows) == len(seeds) * len(budgets)
        assert all(r["steps"] == r["budget"] * per_unit for r in rows)
        assert all(len(r["loss_by_position"]) == 32 for r in rows)
        assert all(1 < r["valid_ppl"] < results["bigram_ppl"] for r in rows)
    for model in MODELS:
        assert {r["params"] for r in runs if r["model"] == model} == {
            count(build_model(model, 98, 0))}
    assert all(r["train_ppl"] > 1 and r["lr"] == recipe["learning_rates"][r["model"]]
               for r in runs)
    tied, untied = (count(build_model(m, 98, 0)) for m in ("transformer_tied", "transformer"))
    assert untied - tied == 98 * 64


def test_the_learning_rate_control_covers_every_rate_seed_and_budget():
    results = load_comparison()
    control = results["lr_control"]
    seeds = {r["seed"] for r in results["runs"]}
    budgets = {r["budget"] for r in results["runs"]}
    for model, rates in LR_CONTROL.items():
        for lr in rates:
            rows = [r for r in control if r["model"] == model and r["lr"] == lr]
            assert {(r["seed"], r["budget"]) for r in rows} == {
                (s, b) for s in seeds for b in budgets}, (model, lr)
            assert all(r["steps"] == r["budget"] * STEPS_PER_UNIT[model] for r in rows)


@pytest.mark.slow
def test_the_script_runs_end_to_end(tmp_path):
    out = tmp_path / "table.json"
    results = main(["--smoke", "--threads", "1", "--out", str(out),
                    "--models", "lstm", "transformer", "mlstm"])
    assert json.loads(out.read_text()) == results == load_comparison(out)
    assert {r["model"] for r in results["runs"]} == {"lstm", "transformer", "mlstm"}
    assert results["recipe"]["transformer_steps_per_unit"] == 10
    assert results["recipe"]["steps_per_unit"]["mlstm"] == 10
    control = main(["--smoke", "--threads", "1", "--out", str(out), "--lr-control"])
    assert {(r["model"], r["lr"]) for r in control["lr_control"]} == {
        (m, lr) for m, rates in LR_CONTROL.items() for lr in rates}


def test_options_and_missing_table(tmp_path):
    args = parse_args([])
    assert args.seeds == [0, 1, 2] and args.units == [1, 2, 4] and args.out == RESULTS
    assert args.models == list(MODELS) and args.steps["lstm"] == 400
    assert parse_args(["--steps-per-unit", "mamba=7"]).steps["mamba"] == 7
    with pytest.raises(SystemExit):
        parse_args(["--steps-per-unit", "mamba=x"])
    with pytest.raises(FileNotFoundError, match="run python -m seqbook.language_model.compare"):
        load_comparison(tmp_path / "none.json")
