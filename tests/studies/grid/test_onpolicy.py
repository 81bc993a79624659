"""`make study-onpolicy` at a tiny budget through its real CLI: the offline cell trains on pairs sampled once from
the start model, the on-policy cell samples each round's pairs with the last round's adapter on and goes on
training it, within the offline cell's pairs, and the README is generated from the numbers."""

import json

import pytest
import yaml

from studies.grid.engine import check_grid, select
from studies.grid.onpolicy.__main__ import answer, cells
from studies.grid.onpolicy.__main__ import readme as onpolicy_readme
from tests.conftest import run_main


def test_each_on_policy_cell_is_compared_with_its_offline_one_and_grpo_with_on_policy_dpo():
    grid = cells(4)
    check_grid(grid)
    against = {c.name: c.against for c in grid}
    assert against == {
        "dpo offline": None,
        "dpo on-policy R=4": "dpo offline",
        "ipo offline": None,
        "ipo on-policy R=4": "ipo offline",
        "grpo": "dpo on-policy R=4",
    }
    assert [c.rounds for c in grid] == [1, 4, 1, 4, 1]


def test_one_round_is_refused_in_one_line_before_anything_trains(tmp_path):
    from studies.grid.onpolicy.__main__ import main

    with pytest.raises(SystemExit, match="--rounds 1: on-policy needs at least 2 rounds"):
        main(["--rounds", "1", "--out", str(tmp_path / "onpolicy")])
    assert not (tmp_path / "onpolicy").exists()


@pytest.mark.slow
def test_a_tiny_study_trains_offline_and_in_rounds_and_generates_its_readme(tiny_world, tmp_path):
    out = tmp_path / "onpolicy"
    command = ["--prompts", "16", "--rounds", "2", "--eval_limit", "12"]
    command += ["--eval_k", "2", "--drift_problems", "12", "--seeds", "1", "--out", str(out)]
    command += ["--cells", "dpo on-policy R=2", "--load_in_4bit", "false"]
    run_main("studies.grid.onpolicy", *command)
    summary = json.loads((out / "summary.json").read_text())
    settings = json.loads((out / "settings.json").read_text())
    assert [c["cell"] for c in summary["cells"]] == ["dpo offline", "dpo on-policy R=2"]
    offline, rounds = summary["runs"]
    assert offline["pairs"] == sum(1 for _ in open(out / "pairs-seed0.jsonl"))
    assert len(rounds["pairs_per_round"]) == 2 and rounds["pairs"] <= offline["pairs"] + 1
    run = out / "dpo on-policy R=2-seed0"
    first_config = yaml.safe_load((run / "round1" / "config.yaml").read_text())
    second_config = yaml.safe_load((run / "round2" / "config.yaml").read_text())
    assert first_config.get("init_adapter") is None and second_config["init_adapter"] == str(run / "round1")
    # every round in the precision asked for, and the settings say so
    assert first_config["load_in_4bit"] is second_config["load_in_4bit"] is settings["load_in_4bit"] is False
    # round 2 sampled with round 1's adapter on, from the prompts after round 1's
    log = (out / "dpo on-policy R=2-round2-pairs-seed0.log").read_text()
    assert f"from 8 prompts after the first 8, sampled with the adapter {run / 'round1'} on" in log, log[-1500:]
    assert rounds["run_dir"] == str(run / "round2") and rounds["kl"] is not None
    readme = (out / "README.md").read_text()
    assert readme == onpolicy_readme(summary, settings) and all(line in readme for line in answer(summary))


def test_choosing_grpo_brings_the_cells_it_is_compared_with():
    assert [c.name for c in select(cells(2), ["grpo"])] == ["dpo offline", "dpo on-policy R=2", "grpo"]
