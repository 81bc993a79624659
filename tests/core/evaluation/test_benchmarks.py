import pytest

from core.evaluation.benchmarks import TASKS, load_task_data, score
from rewards.code import code_test_columns, program_for
from tests.conftest import FIXTURES

FIXTURE_FILES = {
    "gsm8k": "gsm8k_sample.jsonl",
    "math500": "math500_sample.jsonl",
    "humaneval": "humaneval_sample.jsonl",
    "mbpp": "mbpp_sample.jsonl",
}


@pytest.mark.parametrize("task,count", [("gsm8k", 20), ("math500", 10), ("humaneval", 3), ("mbpp", 3)])
def test_loaders_read_the_real_format_and_build_explicit_prompts(task, count):
    rows = load_task_data(TASKS[task], str(FIXTURES / FIXTURE_FILES[task]))
    assert len(rows) == count
    message = TASKS[task].messages(rows[0])[-1]
    assert message["role"] == "user"
    assert not any(f"{{{column}}}" in message["content"] for column in rows[0])  # every placeholder filled
    if task in ("gsm8k", "math500"):
        assert "\\boxed{}" in message["content"]
    if task == "mbpp":
        assert rows[0]["test_list"][0] in message["content"]
    if task == "humaneval":
        assert rows[0]["prompt"] in message["content"]


def test_limit_and_missing_columns():
    assert len(load_task_data(TASKS["gsm8k"], str(FIXTURES / "gsm8k_sample.jsonl"), limit=5)) == 5
    with pytest.raises(ValueError, match=r"missing column\(s\) \['problem'\]"):
        load_task_data(TASKS["math500"], str(FIXTURES / "gsm8k_sample.jsonl"))


def test_math_tasks_score_known_right_and_wrong():
    gsm = load_task_data(TASKS["gsm8k"], str(FIXTURES / "gsm8k_sample.jsonl"), limit=2)
    right = [f"... so the answer is \\boxed{{{row['answer'].rsplit('####', 1)[1].strip()}}}" for row in gsm]
    assert [s for s, _, _ in score(TASKS["gsm8k"], gsm, right)] == [1.0, 1.0]
    assert [s for s, _, _ in score(TASKS["gsm8k"], gsm, ["\\boxed{0.5}", "no idea"])] == [0.0, 0.0]

    math = load_task_data(TASKS["math500"], str(FIXTURES / "math500_sample.jsonl"))
    right = [f"Thus $\\boxed{{{row['answer']}}}$." for row in math]
    assert [s for s, _, _ in score(TASKS["math500"], math, right)] == [1.0] * len(math)
    shifted = right[1:] + right[:1]
    assert sum(s for s, _, _ in score(TASKS["math500"], math, shifted)) == 0.0
    verdict = score(TASKS["math500"], math[-2:], ["$\\boxed{(3, \\pi/2)}$", "x = 14/3"])
    assert [s for s, _, _ in verdict] == [1.0, 1.0]


def test_humaneval_canonical_solutions_pass_and_mismatched_ones_fail():
    rows = load_task_data(TASKS["humaneval"], str(FIXTURES / "humaneval_sample.jsonl"))
    body_only = [row["canonical_solution"] for row in rows]
    whole = [f"```python\n{row['prompt']}{row['canonical_solution']}```" for row in rows]
    mismatched = body_only[1:] + body_only[:1]
    assert [s for s, _, _ in score(TASKS["humaneval"], rows, body_only)] == [1.0, 1.0, 1.0]
    assert [s for s, _, _ in score(TASKS["humaneval"], rows, whole)] == [1.0, 1.0, 1.0]
    assert [s for s, _, _ in score(TASKS["humaneval"], rows, mismatched)] == [0.0, 0.0, 0.0]
    assert program_for(body_only[0], code_test_columns(rows[0])["code_prefix"]).startswith("def add(")


def test_mbpp_reference_code_passes_with_its_setup_and_mismatched_code_fails():
    rows = load_task_data(TASKS["mbpp"], str(FIXTURES / "mbpp_sample.jsonl"))
    code = [f"```python\n{row['code']}\n```" for row in rows]
    verdicts = score(TASKS["mbpp"], rows, code)
    assert [s for s, _, _ in verdicts] == [1.0, 1.0, 1.0], verdicts
    assert [s for s, _, _ in score(TASKS["mbpp"], rows, code[1:] + code[:1])] == [0.0, 0.0, 0.0]


def test_mbpp_hidden_shows_one_assert_and_scores_the_two_held_back():
    published = load_task_data(TASKS["mbpp"], str(FIXTURES / "mbpp_sample.jsonl"))
    rows = load_task_data(TASKS["mbpp-hidden"], str(FIXTURES / "mbpp_sample.jsonl"))
    for row, full in zip(rows, published, strict=True):
        prompt = TASKS["mbpp-hidden"].messages(row)[-1]["content"]
        assert full["test_list"][0] in prompt and not any(test in prompt for test in full["test_list"][1:])
        assert row["test_list"] == full["test_list"][1:]
    code = [f"```python\n{row['code']}\n```" for row in rows]
    verdicts = score(TASKS["mbpp-hidden"], rows, code)
    held_back = [len(full["test_list"]) - 1 for full in published]
    assert [(s, reason.split(",")[0]) for s, _, reason in verdicts] == [(1.0, f"{n}/{n} tests") for n in held_back]


def test_tiny_code_task_scores_reference_code_right_and_other_problems_code_wrong(tiny_code_world):
    rows = load_task_data(TASKS["tiny-code"], None, limit=20)
    assert TASKS["tiny-code"].messages(rows[0])[-1]["content"] == rows[0]["text"]  # the tests stay hidden
    reference = [f"```python\n{row['code']}\n```" for row in rows]
    assert [s for s, _, _ in score(TASKS["tiny-code"], rows, reference)] == [1.0] * 20
    shifted = reference[1:] + reference[:1]
    mismatched = [
        s
        for (s, _, _), a, b in zip(score(TASKS["tiny-code"], rows, shifted), rows, rows[1:] + rows[:1], strict=True)
        if a["code"] != b["code"]
    ]
    assert mismatched and set(mismatched) == {0.0}
