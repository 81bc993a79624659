"""A task's rows and scores (`tasks.registry` defines each task once: its data, prompt and verifier): every task
loads from the hub by its usual id or from a local file in the same format (`--data`), and is scored with the
training verifiers.
"""

from core.inputs.data import load_data
from rewards.code import code_test_columns, hold_back_tests, program_for, run_row_tests
from rewards.math import check_answers
from tasks.registry import TASKS as TASKS  # re-exported: the evaluation's callers read the tasks from here
from tasks.registry import Task


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
    """The row as the task asks it: with `shown_tests`, the first asserts in `tests_shown` and only the rest scored."""
    return hold_back_tests(row, task.shown_tests) if task.shown_tests else row


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
