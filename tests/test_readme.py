"""The README's commands and its "Write your own reward" example work as written."""

import doctest
import importlib.util
import json
import os
import re
import subprocess
import sys

import yaml

from rewards import get_reward_funcs, required_columns
from tasks.registry import TASKS
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_the_two_commands_are_at_the_top_and_exist_in_the_makefile():
    first_block = code_blocks("bash")[0]
    assert "make grpo" in first_block and "make test" in first_block
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^grpo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO_ROOT / ".ci" / "run").read_text()


def test_write_your_own_reward_example(tmp_path):
    source = next(block for block in code_blocks("python") if "# myrewards.py" in block)
    source = "\n".join(line[3:] if line.startswith("   ") else line for line in source.splitlines())
    (tmp_path / "myrewards.py").write_text(source)
    spec = importlib.util.spec_from_file_location("myrewards", tmp_path / "myrewards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert doctest.testmod(module).failed == 0

    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps(row) + "\n"
            for row in [
                {"completion": "12+30. So the sum is 42.\n#### 42 coins", "answer": "#### 42", "unit": "coins"},
                {"completion": "#### 41", "answer": "#### 42", "unit": "coins"},
            ]
        )
    )
    # From the user's own folder, with only that folder on the path: the installed project supplies the rest.
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "eval.score", str(samples), "--rewards", "myrewards.mentions_unit,math_accuracy"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "myrewards.mentions_unit: 1.0" in out and "math_accuracy: 0.0  (wrong: extracted '41')" in out
    assert "math_accuracy: mean 0.500 over 2/2" in out

    snippet = yaml.safe_load(next(block for block in code_blocks("yaml") if "myrewards" in block))
    sys.path.insert(0, str(tmp_path))
    try:
        assert [f.__name__ for f in get_reward_funcs(snippet["reward_funcs"])] == ["math_accuracy", "mentions_unit"]
        assert required_columns(snippet["reward_funcs"]) == ["answer", "unit"]  # the reward's own column
    finally:
        sys.path.remove(str(tmp_path))


# Each row of the README's "When things go wrong" table (by the start of its first cell) and the tests that hold it.
FAILURE_ROWS = {
    "`output_dir` holds another run's files": ["recipes/test_faults.py::test_another_runs_folder_is_refused"],
    "two runs at once": ["recipes/test_faults.py::test_two_runs_at_once_into_one_folder_the_second_is_refused"],
    "killed (SIGKILL) after a logged step": ["recipes/test_faults.py::test_kill_after_a_logged_step_then_resume"],
    "killed in the middle of a save": ["recipes/test_faults.py::test_a_kill_in_the_middle_of_a_save"],
    "a checkpoint's `trainer_state.json` unreadable": ["recipes/test_faults.py::test_an_unreadable_latest_checkpoint"],
    "Ctrl-C (or SIGTERM)": [
        "recipes/test_faults.py::test_ctrl_c_saves_a_checkpoint",
        "recipes/test_grpo.py::test_sigterm",
    ],
    "checkpoint rotation": ["recipes/test_faults.py::test_another_runs_folder_is_refused_or_reused"],
    "data: a malformed line": ["core/inputs/test_data.py::test_load_data_names_the_file_and_the_line"],
    "data: a missing, null or empty prompt": ["core/inputs/test_data.py::test_a_null_gold_is_never_scored_correct"],
    "data: prompts longer than": [
        "core/inputs/test_data.py::test_long_prompts_are_refused_with_their_rows_or_cut_to_fit"
    ],
    "settings: learning rate <= 0": [
        "core/inputs/test_config.py::test_bad_settings_are_one_line_before_any_model_loads"
    ],
    "a reward that raises": [
        "rewards/test_reward_calls.py::test_broken_rewards_are_named_with_the_row",
        "recipes/test_grpo.py::test_a_broken_reward_ends_training_in_one_line_naming_it",
    ],
    "a reward returns `inf` or `nan`": [
        "recipes/test_bad_numbers.py::test_a_non_finite_reward_ends_the_run",
        "rewards/test_time_limit.py::test_a_non_finite_score_names",
    ],
    "training diverges": [
        "recipes/test_bad_numbers.py::test_a_diverging_run_stops_at_that_step_in_one_line_and_saves_nothing_non_finite"
    ],
    "a reward call never returns": [
        "recipes/test_bad_numbers.py::test_a_reward_past_its_time_limit_stops_the_run",
        "rewards/test_time_limit.py::test_a_reward_that_never_returns_is_stopped",
    ],
    "SIGTERM or Ctrl-C while a step is stuck": ["recipes/test_bad_numbers.py::test_sigterm_while_a_reward_hangs"],
    "settings that cannot train": ["recipes/test_bad_numbers.py::test_settings_that_cannot_train_are_refused"],
    "the disk fills": [
        "recipes/test_bad_numbers.py::test_a_full_disk_during_a_checkpoint_keeps_the_earlier_ones",
        "core/runs/test_storage.py::test_a_kill_in_the_middle_of_a_write",
        "core/runs/test_storage.py::test_a_write_to_a_full_filesystem",
    ],
    "`make pairs` finds no pair": [
        "recipes/test_pairs.py::test_no_pair_is_an_error_with_its_causes_and_no_file",
        "core/inputs/test_data.py::test_dpo_and_orpo_refuse_a_pairs_file_without_pairs",
    ],
    "a refusal under `LAUNCH=`": [
        "recipes/test_distributed.py::test_fsdp_on_cpu_is_refused_in_one_line",
        "recipes/test_distributed.py::test_a_crash_in_a_rank_still_shows_its_traceback",
    ],
}


def test_every_row_of_the_failure_table_is_held_by_a_test_that_exists():
    section = README.split("## When things go wrong", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")][1:]
    assert rows and all(any(row.startswith(start) for start in FAILURE_ROWS) for row in rows), rows
    assert all(any(row.startswith(start) for row in rows) for start in FAILURE_ROWS)  # no mapping without its row
    for tests in FAILURE_ROWS.values():
        for test in tests:
            path, name = test.split("::")
            source = (REPO_ROOT / "tests" / path).read_text()
            assert re.search(rf"^def {re.escape(name)}", source, re.MULTILINE), test


def test_the_real_model_s_first_run_quotes_its_published_run():
    """The README's `make grpo PROFILE=smol` numbers are the published run's (results/smol/grpo/, its summary.json,
    with the commit and CPU it ran on), printed as the summary prints them."""
    run = REPO_ROOT / "results" / "smol" / "grpo"
    summary = json.loads((run / "summary.json").read_text())
    machine = json.loads((run / "versions.json").read_text())
    held = summary["verdict"]["heldout"]
    low, high = held["paired"]["ci95"]
    line = (
        f"held-out smol, {held['n']} problems, greedy: {held['before']:.1%} -> {held['after']:.1%} "
        f"({held['paired']['mean']:+.1%} [{low:+.1%}, {high:+.1%}], paired)"
    )
    assert line in README
    assert f"{summary['steps']} steps in {summary['wall_seconds']:.0f} s" in README
    assert machine["cpu"] in README and machine["commit"]  # its config is the shipped one: the test below


FIRST_RUNS = REPO_ROOT / "results" / "first-run" / "runs.json"


def first_run_sentence(runs: list[dict]) -> str:
    """Which CPU classes print the README's first-run block and which print other numbers, from the recorded runs:
    the classes of the first record's numbers print the block.

    >>> runs = [{"class": c, "reward": r, "heldout": h} for c, r, h in (("A", "1 -> 2", "x"), ("B", "1 -> 3", "y"))]
    >>> first_run_sentence(runs)
    'A prints the block below; B printed reward 1 -> 3, held-out y'
    """

    def names(classes: list[str]) -> str:
        return classes[0] if len(classes) == 1 else ", ".join(classes[:-1]) + " and " + classes[-1]

    groups: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        groups.setdefault((run["reward"], run["heldout"]), []).append(run["class"])
    (_, block), *others = groups.items()
    said = f"{names(block)} {'prints' if len(block) == 1 else 'print'} the block below"
    for (reward, heldout), classes in others:
        said += f"; {names(classes)} printed reward {reward}, held-out {heldout}"
    return said


def test_the_first_run_says_which_cpu_classes_print_which_numbers():
    """The README's first-run block is what `make grpo`'s recorded runs printed on each CPU class (results/first-run/
    runs.json, each with its source; the same file records `make test`'s one-thread runs, and tests/recipes/
    test_heldout.py holds the shared shipped run to the record of the machine's class and threads), and the sentence
    before it names every class with the numbers it printed."""
    recorded = json.loads(FIRST_RUNS.read_text())
    # what a user's CPU prints: `make grpo`'s runs on real CPUs (an emulation's record serves the tests that match it)
    runs = [r for r in recorded if r["command"].startswith("make grpo") and not r["emulated"]]
    assert {r["command"] for r in recorded} <= {"make grpo", "make grpo CPU=avx2", "make test", "make test CPU=avx2"}
    assert len({(r["reward"], r["heldout"]) for r in runs}) > 1  # the classes differ: the README must say how
    flat = " ".join(README.split())
    assert first_run_sentence(runs) in flat
    assert "(one run: its interval is over problems, not seeds)" in flat  # the block's interval, said for what it is
    block = README[README.index("GRPO finished: 40 steps") :].split("```")[0]
    assert f"  reward {runs[0]['reward']} (mean of" in block
    assert f"greedy: {runs[0]['heldout']} (steps 0 -> 40)" in block
    for run in recorded:  # where a run's flags are recorded, so are its threads (the digits depend on both)
        assert run["source"] and (run["kernel_flags"] is None) == (run["threads"] is None), run["class"]
        assert run["emulated"] == ("avx2" if "CPU=avx2" in run["command"] else None), run["class"]


SMOL_METHODS = ("grpo", "ppo", "dpo", "ipo", "orpo")


def smol_row(method: str) -> str:
    """docs/smol.md's row for the published `make <method> PROFILE=smol` run, from its summary.json and cost.json."""
    run = REPO_ROOT / "results" / "smol" / method
    summary = json.loads((run / "summary.json").read_text())
    cost = json.loads((run / "cost.json").read_text())
    held, drift = summary["verdict"]["heldout"], summary["verdict"]["drift"]
    low, high = held["paired"]["ci95"]
    checks = ", ".join(c["name"] for c in summary["verdict"]["checks"]) or "none"
    return (
        f"| {method.upper()} | {summary['steps']} | {held['before']:.1%} -> {held['after']:.1%} "
        f"({held['paired']['mean']:+.1%} [{low:+.1%}, {high:+.1%}]) | {drift['kl']:.3f} | "
        f"{drift['length'][0]:.1f} -> {drift['length'][1]:.1f} | {cost['peak_memory_mb'] / 1000:.1f} GB | "
        f"{summary['wall_seconds']:,.0f} s ({summary['train_seconds']:,.0f} s) | {checks} |"
    )


def published_smol_methods() -> list[str]:
    return [m for m in SMOL_METHODS if (REPO_ROOT / "results" / "smol" / m / "summary.json").is_file()]


def test_docs_smol_table_is_the_published_runs_of_the_shipped_configs():
    """Every method's published real-model run (results/smol/<method>/) is a row of docs/smol.md, printed from its
    own records, and ran the shipped config: every setting the trainer resolved, and the held-out set it scored."""
    docs = (REPO_ROOT / "docs" / "smol.md").read_text()
    methods = published_smol_methods()
    assert "grpo" in methods and len(methods) >= 4
    for method in methods:
        assert smol_row(method) in docs, method
        run = REPO_ROOT / "results" / "smol" / method
        config = yaml.safe_load((run / "config.yaml").read_text())
        shipped = yaml.safe_load((REPO_ROOT / "recipes" / "configs" / "smol" / f"{method}.yaml").read_text())
        heldout = json.loads((run / "heldout" / "settings.json").read_text())
        assert (heldout["task"], heldout["n"]) == (shipped.pop("heldout_task"), shipped.pop("heldout_limit"))
        if method in ("dpo", "ipo", "orpo"):
            shipped.pop("dataset_name")  # the pairs make pairs wrote: a path, resolved the same
        if "task" in shipped:  # the config names its task: the run asked its problems as the task does
            settings = TASKS[shipped.pop("task")].prompt_settings
            assert {k: config.get(k) for k in settings} == settings, method
        kept_elsewhere = {"report_to", "save_total_limit"}  # resolved into other forms (the run's rotation, [])
        assert {k: v for k, v in shipped.items() if k not in kept_elsewhere} == {
            k: config[k] for k in shipped if k not in kept_elsewhere
        }, method
        machine = json.loads((run / "versions.json").read_text())
        assert machine["cpu"] and machine["commit"] and machine["kernel_flags"]


def smol_intervals_sentence() -> str:
    """docs/smol.md's reading of the table: which paired intervals lie above zero, which include it, which below."""
    groups = {"above zero": [], "not told apart from no change": [], "below zero": []}
    for method in published_smol_methods():
        summary = json.loads((REPO_ROOT / "results" / "smol" / method / "summary.json").read_text())
        low, high = summary["verdict"]["heldout"]["paired"]["ci95"]
        key = "above zero" if low > 0 else "below zero" if high < 0 else "not told apart from no change"
        groups[key].append(method.upper())
    parts = [f"{key}: {', '.join(names)}" for key, names in groups.items() if names]
    configs = [(REPO_ROOT / "results" / "smol" / m / "config.yaml").read_text() for m in published_smol_methods()]
    seeds = {re.search(r"^seed: (\d+)$", text, re.MULTILINE).group(1) for text in configs}
    one = f"one run each (seed {seeds.pop()})" if len(seeds) == 1 else "one run each"
    return f"Held-out change, {one}, paired 95% interval over the problems only: " + "; ".join(parts) + "."


def test_docs_smol_reading_is_the_published_numbers():
    assert smol_intervals_sentence() in " ".join((REPO_ROOT / "docs" / "smol.md").read_text().split())
