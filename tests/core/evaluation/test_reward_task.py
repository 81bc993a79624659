"""Your own task, end to end through make targets, with a reward module outside the checkout that reads its own
column: scored (make score), trained with (make grpo CONFIG=) with a quarter of the data held out and scored by the
run's rewards during training, evaluated (the summary's suggested make eval, which gives the run's own held-out
numbers), and two evaluations compared (make eval-compare). No project file is edited."""

import json
import shlex

import pytest
import yaml

from tests.conftest import REPO_ROOT, run_as_make

UNITS = ("apples", "books", "coins", "cards", "shells", "stamps", "pens", "marbles", "stickers", "beads")
USER_REWARDS = '''
from rewards.text import completion_text


def names_unit(completions, unit, **kwargs):
    """1.0 when the answer names the row's unit."""
    return [1.0 if u in completion_text(c) else 0.0 for c, u in zip(completions, unit)]
'''


def make(*args: str, env: dict) -> str:
    """What `make <args>` prints, as a user types it (`run_as_make`); it must succeed."""
    returncode, output = run_as_make(*args, env=env)
    assert returncode == 0, output[-5000:]
    return output


@pytest.mark.slow
def test_own_reward_own_column_scored_trained_and_evaluated(tiny_world, tmp_path):
    user = tmp_path / "mytask"
    user.mkdir()
    (user / "myrewards.py").write_text(USER_REWARDS)
    rows = [json.loads(line) for line in (tiny_world / "data" / "validation.jsonl").read_text().splitlines()][:24]
    data = user / "task.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "problem": r["question"],
                    "solution": r["answer"],
                    "answer": r["answer"],
                    "unit": next(u for u in UNITS if u in r["question"]),
                }
            )
            + "\n"
            for r in rows
        )
    )
    env = {"PYTHONPATH": str(user)}  # added to this process's

    # score: the user's reward beside a shipped one, on completions written by hand
    samples = user / "samples.jsonl"
    samples.write_text(
        json.dumps({"completion": f"{rows[0]['answer']} {UNITS[0]}", "answer": rows[0]["answer"], "unit": UNITS[0]})
        + "\n"
    )
    scored = make("score", f"FILE={samples}", "REWARDS=myrewards.names_unit,math_accuracy", env=env)
    assert "myrewards.names_unit: 1.0" in scored and "math_accuracy: 1.0" in scored

    # train: the shipped tiny config with the user's data, prompt column and weighted rewards
    config = yaml.safe_load((REPO_ROOT / "recipes/configs/tiny/grpo.yaml").read_text())
    run = tmp_path / "run"
    config |= {
        "dataset_name": str(data),
        "prompt_column": "problem",
        "output_dir": str(run),
        "max_steps": 2,
        "logging_steps": 1,
        "reward_funcs": ["math_accuracy", "myrewards.names_unit"],
        "reward_weights": [1.0, 0.5],
        "heldout_fraction": 0.25,
        "heldout_task": None,  # as the README says: the tiny config's held-out set gives way to the user's
        "task": None,  # and its task: the user's rows are asked through their own prompt column
    }
    own = user / "grpo.yaml"
    own.write_text(yaml.safe_dump(config))
    trained = make("grpo", f"CONFIG={own}", env=env)
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["rewards"]) == {"math_accuracy", "names_unit"}
    suggested = summary["next"][0]
    assert suggested in trained
    problems = run / "heldout" / "problems.jsonl"
    assert (
        f"DATA={problems} REWARDS=math_accuracy,myrewards.names_unit REWARD_WEIGHTS=1,0.5 PROMPT_COLUMN=problem"
        in suggested
    )
    # the held-out block, as for a built-in task: 6 of the 24 rows, never trained on, scored by the run's rewards
    held = summary["verdict"]["heldout"]
    assert held["n"] == 6 and held["steps"] == [0, 2]
    assert "held-out rewards:math_accuracy,myrewards.names_unit, 6 problems, greedy: " in trained
    assert "drift     KL from the start" in trained
    held_rows = [json.loads(line) for line in problems.read_text().splitlines()]
    assert len(held_rows) == 6 and all(
        r in [json.loads(line) for line in data.read_text().splitlines()] for r in held_rows
    )
    settings = json.loads((run / "heldout" / "settings.json").read_text())
    assert settings["origin"] == f"heldout_fraction 0.25 of {data}"

    # evaluate: exactly the suggested command (its 6 held-out problems), and the base model the same way; they
    # give the run's own held-out before -> after
    evaluated = make(*shlex.split(suggested)[1:], f"OUT={tmp_path / 'adapter'}", env=env)
    assert "rewards:math_accuracy,myrewards.names_unit: accuracy" in evaluated
    make(
        *[a for a in shlex.split(suggested)[1:] if not a.startswith("ADAPTER=")],
        f"OUT={tmp_path / 'base'}",
        env=env,
    )
    results = json.loads((tmp_path / "adapter" / "results.json").read_text())
    base = json.loads((tmp_path / "base" / "results.json").read_text())
    assert (base["accuracy"], results["accuracy"]) == (held["before"], held["after"])
    assert results["n"] == 6 and results["rewards"] == ["math_accuracy", "myrewards.names_unit"]
    assert results["pass_threshold"] == 1.5 and 0 <= results["accuracy"] <= 1
    assert set(results["reward_means"]) == {"math_accuracy", "myrewards.names_unit"}
    assert results["template"]["prompt_column"] == "problem"
    records = [json.loads(line) for line in (tmp_path / "adapter" / "samples.jsonl").read_text().splitlines()]
    for record in records:
        expected = record["rewards"]["math_accuracy"] + 0.5 * record["rewards"]["myrewards.names_unit"]
        assert record["weighted"] == pytest.approx(expected) and record["score"] == float(expected >= 1.5)
    means = results["reward_means"]["math_accuracy"]
    assert means["mean"] == pytest.approx(sum(r["rewards"]["math_accuracy"] for r in records) / len(records))

    compared = make(
        "eval-compare",
        f"A={tmp_path / 'base' / 'results.json'}",
        f"B={tmp_path / 'adapter' / 'results.json'}",
        env=env,
    )
    assert "flips on 6 shared problems" in compared
