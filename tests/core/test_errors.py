"""Bad input ends every make target with one line naming the problem, never a traceback."""

import subprocess

import pytest

from tests.conftest import REPO_ROOT, last_line, run_as_make

CASES = {  # the case: the command a user types, the last line it must end with
    "missing-config": (
        ["make", "grpo", "CONFIG=nope.yaml"],
        "error: config file nope.yaml does not exist; the shipped ones: recipes/configs/7b/dpo.yaml",
    ),
    "missing-data": (
        ["make", "dpo", "CONFIG=recipes/configs/tiny/dpo.yaml", "ARGS=--dataset_name missing/pairs.jsonl"],
        "error: dataset file missing/pairs.jsonl does not exist",
    ),
    "eval-missing-data": (["make", "eval", "DATA=missing.jsonl"], "error: dataset file missing.jsonl does not exist"),
    "unknown-task": (
        ["make", "eval", "TASK=nope"],
        "error: argument --task: invalid choice: 'nope' (choose from 'gsm8k', ",
    ),
    "score-missing-file": (
        ["make", "score", "FILE=missing.jsonl", "REWARDS=math_accuracy"],
        "error: no file missing.jsonl",
    ),
    "score-unknown-reward": (
        ["make", "score", "FILE=tests/fixtures/gsm8k_sample.jsonl", "REWARDS=math_acuracy"],
        "error: unknown reward 'math_acuracy'; known: math_accuracy, format,",
    ),
    "recipe-unknown-reward": (
        ["make", "grpo", "ARGS=--reward_funcs math_acuracy"],
        "unknown reward 'math_acuracy'; known: math_accuracy,",
    ),
    "unknown-flag": (
        ["make", "grpo", "ARGS=--learnin_rate 1e-4"],
        "error in recipes/configs/tiny/grpo.yaml: unknown flag '--learnin_rate' (did you mean --learning_rate?)",
    ),
    "unknown-yaml-key": (
        ["make", "grpo", "CONFIG=tests/fixtures/typo_grpo.yaml"],
        "error in tests/fixtures/typo_grpo.yaml: unknown key 'learnin_rate' (did you mean learning_rate?)",
    ),
    "eval-rewards-missing-column": (
        ["make", "eval", "DATA=tests/fixtures/gsm8k_sample.jsonl", "REWARDS=math_accuracy", "PROMPT_COLUMN=problem"],
        "error: dataset tests/fixtures/gsm8k_sample.jsonl is missing column(s) ['problem']",
    ),
    "eval-rewards-no-data": (
        ["make", "eval", "REWARDS=math_accuracy"],
        "error: --rewards scores your own task: give its data with --data",
    ),
}


@pytest.fixture(scope="module")
def ended(tiny_world, tiny_pairs) -> dict[str, tuple[int, str]]:
    """(exit status, output) of each make command line as a user types it (`run_as_make`: the command make runs,
    forked from a process that imported the libraries; a new interpreter spends ~7 s a case importing them, 11 cases
    a minute on two cores). `test_make_itself_ends_with_the_same_line` runs one through make itself."""
    return {case: run_as_make(*command[1:], timeout=300) for case, (command, _) in CASES.items()}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_one_line_error_without_traceback(case, ended):
    message, (returncode, output) = CASES[case][1], ended[case]
    assert returncode != 0
    assert "Traceback" not in output
    assert message in last_line(output), output[-2000:]


@pytest.mark.slow
def test_make_itself_ends_with_the_same_line(ended):
    result = subprocess.run(CASES["unknown-flag"][0], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "Traceback" not in result.stderr + result.stdout
    assert last_line(result.stderr) == last_line(ended["unknown-flag"][1])


def test_make_score_reads_compressed_files(tmp_path):
    import bz2
    import gzip

    rows = b'{"completion": "#### 4", "answer": "#### 4"}\n{"completion": "#### 5", "answer": "#### 4"}\n'
    for name, data in (("s.jsonl.gz", gzip.compress(rows)), ("s.jsonl.bz2", bz2.compress(rows))):
        (tmp_path / name).write_bytes(data)
        result = subprocess.run(
            ["make", "score", f"FILE={tmp_path / name}", "REWARDS=math_accuracy"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert "math_accuracy: mean 0.500 over 2/2" in result.stdout
