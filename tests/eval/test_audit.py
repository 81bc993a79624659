"""`make audit`: the verdict of finished runs, from a run's own held-out records or measured afterwards with the
scoring `make eval` uses, one run or several side by side."""

import json

import pytest

import recipes.grpo as grpo
from core.errors import UserError
from eval.audit import main as audit_main
from eval.run import main as eval_main
from tests.recipes.helpers import run_recipe

pytestmark = pytest.mark.slow  # a short training and three evaluations, beside the session's shipped GRPO run

CONFIG = "recipes/configs/tiny/grpo.yaml"
TWO_STEPS = ["--max_steps", "2", "--logging_steps", "1", "--per_device_train_batch_size", "8"]


@pytest.fixture(scope="module")
def runs(tiny_world, shipped_grpo, tmp_path_factory):
    """Two finished GRPO runs: one of two steps trained without held-out evaluation, and `make grpo` as shipped
    (held-out on 200 problems: its own records)."""
    root = tmp_path_factory.mktemp("audit")
    run_recipe(grpo, CONFIG, *TWO_STEPS, "--output_dir", str(root / "off"))
    return root / "off", shipped_grpo


def test_a_run_trained_without_held_out_is_measured_as_make_eval_measures_it(runs, tiny_world, tmp_path, capsys):
    off, _ = runs
    assert not (off / "heldout").exists()
    [result] = audit_main([str(off), "--limit", "20"])
    printed = capsys.readouterr().out
    held = result["verdict"]["heldout"]
    assert result["source"] == "measured now" and result["settings"]["four_bit"] is True
    base = eval_main(
        [
            "--model",
            str(tiny_world / "model"),
            "--task",
            "tiny",
            "--limit",
            "20",
            "--load_in_4bit",
            "--out",
            str(tmp_path / "base"),
        ]
    )
    adapter = eval_main(
        [
            "--model",
            str(tiny_world / "model"),
            "--adapter",
            str(off),
            "--task",
            "tiny",
            "--limit",
            "20",
            "--load_in_4bit",
            "--out",
            str(tmp_path / "adapter"),
        ]
    )
    assert (held["before"], held["after"], held["n"]) == (base["accuracy"], adapter["accuracy"], 20)
    assert held["steps"] == [0, 2] and result["verdict"]["drift"]["kl"] >= 0
    assert result["verdict"]["trend"] is None or result["verdict"]["trend"]["key"] == "reward"
    assert f"held-out tiny, 20 problems, greedy: {held['before']:.1%} -> {held['after']:.1%}" in printed
    assert "held-out measured now, 4-bit as trained" in printed
    assert json.loads((off / "audit" / "verdict.json").read_text()) == result["verdict"]
    assert not (off / "heldout").exists()  # the run's own files untouched


def test_a_run_with_its_own_held_out_records_gets_its_summary_s_verdict(runs, capsys):
    _, on = runs
    before = {p.name: p.read_bytes() for p in on.rglob("*") if p.is_file()}
    [result] = audit_main([str(on)])
    summary = json.loads((on / "summary.json").read_text())["verdict"]
    assert result["source"] == "the run's own"
    assert result["verdict"] == {k: v for k, v in summary.items() if k != "settings"}
    assert {p.name: p.read_bytes() for p in on.rglob("*") if p.is_file()} == before  # nothing written
    assert "held-out the run's own" in capsys.readouterr().out


def test_several_runs_side_by_side_and_a_bad_folder_refused_before_loading(runs, tmp_path, capsys):
    off, on = runs
    with pytest.raises(UserError, match=rf"{tmp_path}: no summary.json; a finished run's folder is needed"):
        audit_main([str(on), str(tmp_path)])
    assert capsys.readouterr().out == ""  # refused before any run was judged
    results = audit_main([str(off), str(on), "--limit", "20"])
    table = capsys.readouterr().out.split("| run | method |")[1]
    for result, steps, n in zip(results, (2, 40), (20, 200), strict=True):  # the shipped run's own: 200 problems
        held = result["verdict"]["heldout"]
        assert f"| {result['run']} | GRPO | {steps} | {held['before']:.1%} -> {held['after']:.1%} (n={n}) |" in table
