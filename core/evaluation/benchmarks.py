"""Evaluation tasks: where the data comes from, the exact prompt template, and the verifier (from `rewards/`).

Every task loads from the hub by its usual id or from a local file in the same format (`--data`). Templates are
explicit and recorded in results.json: published numbers swing with the template.
"""

from dataclasses import dataclass, field

from core.inputs.data import load_data
from rewards.code import code_test_columns, hold_back_tests, program_for, run_row_tests
from rewards.math import check_answers
from tasks.smol import SYSTEM_PROMPT as SMOL_SYSTEM_PROMPT

# Doubled braces: templates go through str.format.
BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{{}}."


@dataclass(frozen=True)
class Task:
    name: str
    hub_id: str | None
    hub_config: str | None
    split: str
    columns: tuple[str, ...]  # required in the data
    template: str  # the user message; {column} placeholders
    system_prompt: str | None = None
    kind: str = "math"  # "math": math_accuracy against `gold`; "code": code_tests in the sandbox
    gold: str = "answer"
    default_data: str | None = None
    max_new_tokens: int = 512
    notes: dict = field(default_factory=dict)

    @property
    def verifier(self) -> str:
        """The reward that scores this task's answers (in training and evaluation alike)."""
        return "math_accuracy" if self.kind == "math" else "code_tests"

    def messages(self, row: dict) -> list[dict]:
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return messages + [{"role": "user", "content": self.template.format(**row)}]


TASKS = {
    "gsm8k": Task("gsm8k", "openai/gsm8k", "main", "test", ("question", "answer"), "{question}\n" + BOXED_INSTRUCTION),
    "math500": Task(
        "math500",
        "HuggingFaceH4/MATH-500",
        None,
        "test",
        ("problem", "answer"),
        "{problem}\n" + BOXED_INSTRUCTION,
        max_new_tokens=1024,
    ),
    "humaneval": Task(
        "humaneval",
        "openai/openai_humaneval",
        None,
        "test",
        ("prompt", "test", "entry_point"),
        "Complete the following Python function. Return the whole function in one ```python block."
        "\n\n```python\n{prompt}```",
        kind="code",
    ),
    "mbpp": Task(
        "mbpp",
        "google-research-datasets/mbpp",
        "full",
        "test",
        ("text", "test_list"),
        "{text}\nYour code should pass these tests:\n{tests_shown}\nReturn the code in one ```python block.",
        kind="code",
    ),
    # MBPP as the 7b-code recipes train on it (the bigcode evaluation harness's convention): the prompt shows the first
    # assert, the held-back two score the answer, so a program that hard-codes what it was shown cannot pass.
    "mbpp-hidden": Task(
        "mbpp-hidden",
        "google-research-datasets/mbpp",
        "full",
        "test",
        ("text", "test_list"),
        "{text}\nYour code should pass this test:\n{tests_shown}\nReturn the code in one ```python block.",
        kind="code",
    ),
    # The tiny worlds' held-out sets, prompted exactly as their models were trained (no instruction, no system
    # prompt); the code world's tests are hidden from the prompt, as in its training.
    "tiny": Task(
        "tiny",
        None,
        None,
        "test",
        ("question", "answer"),
        "{question}",
        default_data="artifacts/tiny/data/test.jsonl",
        max_new_tokens=96,
    ),
    # The length world (studies/grid/length): the math world's problems and verifier; its model can answer without the
    # columns, so length is the policy's choice.
    "tiny-length": Task(
        "tiny-length",
        None,
        None,
        "test",
        ("question", "answer"),
        "{question}",
        default_data="artifacts/tiny-length/data/test.jsonl",
        max_new_tokens=96,
    ),
    # SmolLM2-135M-Instruct's task (make smol): one-step word problems, prompted through the model's own chat
    # template with its own default system prompt stated, as its recipes train.
    "smol": Task(
        "smol",
        None,
        None,
        "test",
        ("question", "answer"),
        "{question}",
        system_prompt=SMOL_SYSTEM_PROMPT,
        default_data="artifacts/smol/data/test.jsonl",
        max_new_tokens=128,
    ),
    "tiny-code": Task(
        "tiny-code",
        None,
        None,
        "test",
        ("text", "test_list"),
        "{text}",
        kind="code",
        default_data="artifacts/tiny-code/data/test.jsonl",
        max_new_tokens=64,
    ),
}


def load_task_data(task: Task, data: str | None = None, limit: int | None = None, drop_incomplete: bool = False):
    """Rows of the task from `data` (a local file in the task's format) or from the hub, checked as training's data
    is (`core.inputs.data.load_data`)."""
    source = data or task.default_data
    if source:
        rows = load_data(source, required_columns=task.columns, drop_incomplete=drop_incomplete)
    elif task.hub_id:
        rows = load_data(
            task.hub_id, task.split, task.hub_config, required_columns=task.columns, drop_incomplete=drop_incomplete
        )
    else:
        raise ValueError(f"task {task.name} needs --data (a local file)")
    if limit:
        rows = rows.select(range(min(limit, len(rows))))
    return [prepare_row(task, dict(row)) for row in rows]


def prepare_row(task: Task, row: dict) -> dict:
    """Adds the fields the template needs, in the task's own terms."""
    if task.name == "mbpp":
        row["tests_shown"] = "\n".join(row["test_list"])
    if task.name == "mbpp-hidden":
        row = hold_back_tests(row, 1)
    return row


def score(task: Task, rows: list[dict], completions: list[str]) -> list[tuple[float, str | None, str]]:
    """(score, extracted answer or program, reason) per completion, with the training verifiers."""
    if task.kind == "math":
        return [
            (s or 0.0, extracted, reason)
            for s, extracted, reason in check_answers(completions, [row[task.gold] for row in rows])
        ]
    results = run_row_tests(completions, rows)  # the same adapter as the recipes' (MBPP, HumanEval, tests)
    programs = [
        program_for(c, code_test_columns(row)["code_prefix"]) for c, row in zip(completions, rows, strict=True)
    ]
    # A problem is solved only when every test passes (as in the HumanEval/MBPP papers).
    return [
        (float(r.total > 0 and r.passed == r.total), program[:2000], f"{r.passed}/{r.total} tests, {r.status}")
        for r, program in zip(results, programs, strict=True)
    ]
