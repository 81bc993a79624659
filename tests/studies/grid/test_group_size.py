"""`make study-k` at a tiny budget through its real CLI: k reaches the trainer with the prompts that keep the
completions equal, the noisy cells train on flipped rewards, the share of zero-spread groups is logged, and the
README is generated from the numbers."""

import json

import pytest
import yaml

from studies.grid.engine import check_grid
from studies.grid.group_size.__main__ import COLUMNS, answer, cells, memory_at_7b
from studies.grid.group_size.__main__ import readme as group_size_readme
from studies.grid.report import table
from tests.conftest import REPO_ROOT, run_main


def test_the_grid_keeps_completions_equal_and_compares_each_k_with_the_shipped_k():
    grid = cells(1024)
    check_grid(grid)
    equal = [c for c in grid if c.group.startswith("equal completions")]
    assert len(equal) == 8 and {c.prompts * int(c.flags[1]) for c in equal} == {1024}
    assert {c.against for c in equal if c.against} == {"k=8 noise=0", "k=8 noise=0.3"}
    prompts = [c for c in grid if c.group.startswith("equal prompts")]
    assert [int(c.flags[1]) for c in prompts] == [2, 4, 16] and {c.prompts for c in prompts} == {128}
    assert {c.against for c in prompts} == {"k=8 noise=0"}  # k=8 at 128 prompts is that run
    config = yaml.safe_load((REPO_ROOT / "recipes" / "configs" / "tiny" / "grpo.yaml").read_text())
    assert config["num_generations"] == 8  # the reference is the shipped k


def test_the_7b_memory_estimate_grows_with_k():
    memory = memory_at_7b()
    per_k = memory["one_group_per_micro_batch"]
    assert list(per_k) == ["2", "4", "8", "16"]
    assert all(a < b for a, b in zip(per_k.values(), list(per_k.values())[1:], strict=False))
    # as shipped, k leaves the micro-batch (and so the memory) as it is
    assert memory["shipped_micro_batch"] == 4 and per_k["4"] == memory["shipped"]


@pytest.mark.slow
def test_a_tiny_study_trains_each_k_and_generates_its_readme(tiny_world, tmp_path):
    out = tmp_path / "k"
    command = ["--completions", "64", "--eval_limit", "12"]
    command += ["--eval_k", "2", "--drift_problems", "12", "--seeds", "1", "--out", str(out)]
    command += ["--cells", "k=4 noise=0.3", "k=16 prompts=8", "--load_in_4bit", "false"]
    run_main("studies.grid.group_size", *command)
    summary = json.loads((out / "summary.json").read_text())
    settings = json.loads((out / "settings.json").read_text())
    names = ["k=8 noise=0", "k=4 noise=0.3", "k=8 noise=0.3", "k=16 prompts=8"]
    assert sorted(c["cell"] for c in summary["cells"]) == sorted(names)
    for record in summary["runs"]:  # k and the noise reached the trainer; the zero-spread share was logged
        config = yaml.safe_load((out / f"{record['cell']}-seed0" / "config.yaml").read_text())
        assert config["num_generations"] == int(record["cell"].split()[0][2:])
        assert config["reward_noise"] == (0.3 if "noise=0.3" in record["cell"] else 0.0)
        mean, first, last = record["logged"]["frac_reward_zero_std"]
        assert 0 <= mean <= 1 and 0 <= first <= 1 and 0 <= last <= 1
    steps = {r["cell"]: r["steps"] for r in summary["runs"]}
    assert steps["k=16 prompts=8"] == 2 * steps["k=8 noise=0"]  # equal prompts: twice the completions
    assert steps["k=4 noise=0.3"] == steps["k=8 noise=0.3"]  # equal completions: the same steps
    assert summary["memory_7b_gb"] == memory_at_7b()
    readme = (out / "README.md").read_text()
    assert readme == group_size_readme(summary, settings)
    assert table(summary, COLUMNS) in readme and all(line in readme for line in answer(summary))
    assert (out / "group-size.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
