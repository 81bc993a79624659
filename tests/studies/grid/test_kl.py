"""`make study-kl` at a tiny budget through its real CLI: each cell trains with its coefficient, every run measures
its drift, the cells are compared with their group's reference, and the README is generated from the numbers."""

import json

import pytest
import yaml

from studies.grid.engine import Cell, check_grid, select
from studies.grid.kl.__main__ import answer, cells
from studies.grid.kl.__main__ import readme as kl_readme
from studies.grid.report import table
from tests.conftest import REPO_ROOT, run_main

SMALL = ("grpo beta=0", "grpo beta=0.04", "ppo kl_coef=0.05", "ppo kl_coef=0.2")


def test_the_grid_has_one_reference_per_group_and_says_which_is_wrong():
    grid = cells()
    check_grid(grid)
    assert {c.name for c in grid if c.reference} == {"grpo beta=0", "ppo kl_coef=0.05"}  # the shipped settings
    for shipped, key in (("grpo", "beta"), ("ppo", "kl_coef")):
        config = yaml.safe_load((REPO_ROOT / "recipes" / "configs" / "tiny" / f"{shipped}.yaml").read_text())
        reference = next(c for c in grid if c.group == shipped and c.reference)
        assert float(reference.flags[1]) == config[key]
    with pytest.raises(SystemExit, match="cell 'b' is compared with 'c', which is not another cell of the grid"):
        check_grid([Cell("a"), Cell("b", against="c")])
    with pytest.raises(SystemExit, match=r"repeated cell names \['a'\]"):
        check_grid([Cell("a"), Cell("a")])
    assert [c.name for c in select(grid, ["grpo beta=0.1"])] == ["grpo beta=0", "grpo beta=0.1"]  # with its reference
    with pytest.raises(SystemExit, match=r"--cells: unknown \['beta=9'\]"):
        select(grid, ["beta=9"])


@pytest.mark.slow
def test_a_tiny_study_trains_each_coefficient_and_generates_its_readme(tiny_world, tmp_path):
    out = tmp_path / "kl"
    command = ["--prompts", "16", "--eval_limit", "12", "--eval_k", "2"]
    command += ["--drift_problems", "12", "--seeds", "1", "--out", str(out), "--cells", *SMALL]
    command += ["--load_in_4bit", "false"]  # the grid, not the 4-bit path (docs/test-suite.md)
    run_main("studies.grid.kl", *command)
    summary = json.loads((out / "summary.json").read_text())
    settings = json.loads((out / "settings.json").read_text())
    assert [c["cell"] for c in summary["cells"]] == list(SMALL)
    assert settings["commit"] and len(settings["code_digest"]) == 64 and settings["eval_n"] == 12
    assert settings["load_in_4bit"] is False
    for record in summary["runs"]:  # the coefficient reached the trainer, and the run measured its drift
        config = yaml.safe_load((out / f"{record['cell']}-seed0" / "config.yaml").read_text())
        key, value = record["cell"].split(" ", 1)[1].split("=")
        assert config[key] == float(value) and config["load_in_4bit"] is False, record["cell"]
        assert record["kl"] is not None and record["kl"] >= 0 and len(record["entropy"]) == 2
        assert 0 <= record["sampled_pass1"] <= 1 and record["steps"] >= 1
    for cell in summary["cells"]:
        assert ("sampled_vs_reference" in cell) == (not cell["reference"]), cell["cell"]
        if not cell["reference"]:
            row = cell["sampled_vs_reference"]
            assert row["ci95"][0] <= row["mean"] <= row["ci95"][1] and row["problems"] == 12
    readme = (out / "README.md").read_text()
    assert table(summary) in readme and all(line in readme for line in answer(summary))
    assert readme == kl_readme(summary, settings)
    # every score behind it is published, and --report computes each difference again from them
    lines = [json.loads(line) for line in (out / "per_problem.jsonl").read_text().splitlines()]
    assert {(line["method"], line["seed"]) for line in lines} == {("base", 0)} | {(c, 0) for c in SMALL}
    assert len(lines) == 12 * (len(SMALL) + 1)
    run_main("studies.grid.kl", "--out", str(out), "--report")
    assert (out / "README.md").read_text() == readme
    assert json.loads((out / "summary.json").read_text()) == summary
    compared = next(c for c in summary["cells"] if not c["reference"])
    # one greedy score of the compared cell flipped: its greedy difference moves by 1/12 of the 12 problems
    line = next(line for line in lines if line["method"] == compared["cell"])
    moved, line["greedy"] = 1.0 - 2 * line["greedy"], 1.0 - line["greedy"]
    (out / "per_problem.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_main("studies.grid.kl", "--out", str(out), "--report")
    again = next(c for c in json.loads((out / "summary.json").read_text())["cells"] if c["cell"] == compared["cell"])
    assert again["greedy_vs_reference"]["mean"] == pytest.approx(compared["greedy_vs_reference"]["mean"] + moved / 12)
    assert (out / "kl.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
