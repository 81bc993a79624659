"""`make study-length` at a tiny budget through its real CLI, on the shipped length world: each loss type reaches
the trainer, the lengths of passed and failed completions are logged over training and measured held out, and the
README is generated from the numbers."""

import json
import random

import pytest
import yaml

from studies.grid.engine import check_grid
from studies.grid.length.__main__ import FAILED, PASSED, answer, cells
from studies.grid.length.__main__ import readme as length_readme
from tasks.arithmetic import make_problem
from tests.conftest import run_main


def test_the_grid_is_trl_s_four_normalisations_against_its_default():
    grid = cells()
    check_grid(grid)
    assert [c.flags[1] for c in grid] == ["grpo", "bnpo", "dr_grpo", "dapo"]
    assert [c.name for c in grid if c.reference] == ["loss_type=dapo"]
    from dataclasses import fields

    from trl import GRPOConfig

    assert {f.name: f.default for f in fields(GRPOConfig)}["loss_type"] == "dapo"  # the reference is TRL's default


def test_the_length_world_s_teacher_answers_short_or_long_and_the_gold_is_always_worked():
    rng = random.Random(0)
    rows = [make_problem(rng, slip_rate=0.5, direct_rate=0.5) for _ in range(400)]
    direct = [r for r in rows if "write" not in r["demonstration"]]
    assert 150 < len(direct) < 250  # about half
    assert all(r["demonstration"] == f"{r['a']}+{r['b']}={r['a'] + r['b']}.\n#### {r['a'] + r['b']}" for r in direct)
    assert all("write" in r["answer"] for r in rows)  # rewards and eval check the worked, right answer


def test_the_shipped_length_world_s_model_answers_both_ways(tiny_length_world):
    """The start model chooses its length: sampled, it writes both direct (short, mostly wrong) and worked answers."""
    from core.evaluation.accuracy import evaluate_model, load_for_eval
    from core.evaluation.benchmarks import TASKS, load_task_data

    world = json.loads((tiny_length_world / "world.json").read_text())
    assert world["settings"]["direct_rate"] == 0.5 and world["settings"]["world"] == "length"
    model, tokenizer = load_for_eval(str(tiny_length_world / "model"), None, load_in_4bit=True)
    rows = load_task_data(TASKS["tiny-length"], None, 24)
    _, records = evaluate_model(model, tokenizer, "tiny-length", rows, k=4, temperature=0.7)
    worked = [r for r in records if "write" in r["completion"]]
    direct = [r for r in records if "write" not in r["completion"]]
    assert worked and direct
    length = {name: sum(len(r["completion"]) for r in rs) / len(rs) for name, rs in (("w", worked), ("d", direct))}
    assert length["d"] < length["w"] / 2


@pytest.mark.slow
def test_a_tiny_study_trains_each_loss_type_and_generates_its_readme(tiny_length_world, tmp_path):
    out = tmp_path / "length"
    command = ["--prompts", "16", "--eval_limit", "12", "--eval_k", "2"]
    command += ["--drift_problems", "12", "--seeds", "1", "--out", str(out), "--cells", "loss_type=grpo"]
    command += ["--load_in_4bit", "false"]
    run_main("studies.grid.length", *command)
    summary = json.loads((out / "summary.json").read_text())
    settings = json.loads((out / "settings.json").read_text())
    assert settings["profile"] == "tiny-length" and settings["task"] == "tiny-length"
    assert [c["cell"] for c in summary["cells"]] == ["loss_type=grpo", "loss_type=dapo"]
    for record in summary["runs"]:
        config = yaml.safe_load((out / f"{record['cell']}-seed0" / "config.yaml").read_text())
        assert config["loss_type"] == record["cell"].split("=")[1]
        assert config["model_name_or_path"].endswith("tiny-length/model")
        logged = [record["logged"][key][0] for key in (PASSED, FAILED)]
        assert any(v is not None for v in logged), record["logged"]  # lengths by verdict reached metrics.jsonl
        assert all(v is None or 1 <= v <= 64 for v in logged)
    readme = (out / "README.md").read_text()
    assert readme == length_readme(summary, settings) and all(line in readme for line in answer(summary))
    assert (out / "length.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
