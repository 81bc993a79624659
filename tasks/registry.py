"""Every task, defined once: where its problems come from, the prompt a problem is asked with (column, template,
system prompt), the columns it needs, how its tests are shown or held back, and the reward that verifies an answer.
The recipes train on it (a config names it: `task: tiny`), `make eval`, `make pairs` and the studies score it, so a
problem is asked the same way in training and in evaluation. Templates are explicit and recorded in results.json:
published numbers swing with the template."""

from dataclasses import dataclass, field

from tasks.smol import SYSTEM_PROMPT as SMOL_SYSTEM_PROMPT

# Doubled braces: templates go through str.format.
BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{{}}."


def prompt_text(row: dict, prompt_column: str, prompt_template: str | None = None) -> str:
    r"""The user message for a row: its `prompt_column`, or `prompt_template` filled from the row's columns (a list
    column as one item per line), e.g. MBPP's tests shown under the task.

    >>> prompt_text({"text": "Add one.", "test_list": ["assert f(1) == 2", "assert f(2) == 3"]}, "text",
    ...             "{text}\nTests:\n{test_list}")
    'Add one.\nTests:\nassert f(1) == 2\nassert f(2) == 3'
    """
    if not prompt_template:
        return row[prompt_column]
    return prompt_template.format(**{k: "\n".join(map(str, v)) if isinstance(v, list) else v for k, v in row.items()})


def prompt_messages(question: str, system_prompt: str | None) -> list[dict]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": question}]


@dataclass(frozen=True)
class Task:
    """One task. `prompt_column` holds a problem's text (what `exclude_problems` matches); `template` builds the user
    message from the row's columns; `shown_tests`: code rows with MBPP's
    `test_list` show the first N asserts (`{tests_shown}`) and are scored on the rest only."""

    name: str
    hub_id: str | None
    hub_config: str | None
    split: str
    columns: tuple[str, ...]  # required in the data
    prompt_column: str
    template: str  # "{prompt_column}": the column as it is
    system_prompt: str | None = None
    kind: str = "math"  # "math": math_accuracy against `gold`; "code": code_tests in the sandbox
    gold: str = "answer"
    shown_tests: int | None = None
    default_data: str | None = None
    max_new_tokens: int = 512
    notes: dict = field(default_factory=dict)

    @property
    def verifier(self) -> str:
        """The reward that scores this task's answers (in training and evaluation alike)."""
        return "math_accuracy" if self.kind == "math" else "code_tests"

    @property
    def prompt_settings(self) -> dict:
        """The recipe settings (`PromptArguments`) that ask this task's problems: a config naming the task gets
        these."""
        return {
            "prompt_column": self.prompt_column,
            "prompt_template": None if self.template == f"{{{self.prompt_column}}}" else self.template,
            "system_prompt": self.system_prompt,
            "shown_tests": self.shown_tests,
        }

    def messages(self, row: dict) -> list[dict]:
        """The chat messages a (prepared) row is asked with, in training and evaluation alike.

        >>> TASKS["gsm8k"].messages({"question": "2 + 2?"})[-1]["content"]
        '2 + 2?\\nPlease reason step by step, and put your final answer within \\\\boxed{}.'
        """
        return prompt_messages(prompt_text(row, self.prompt_column, self.template), self.system_prompt)


TASKS = {
    "gsm8k": Task(
        "gsm8k", "openai/gsm8k", "main", "test", ("question", "answer"), "question", "{question}\n" + BOXED_INSTRUCTION
    ),
    "math500": Task(
        "math500",
        "HuggingFaceH4/MATH-500",
        None,
        "test",
        ("problem", "answer"),
        "problem",
        "{problem}\n" + BOXED_INSTRUCTION,
        max_new_tokens=1024,
    ),
    "humaneval": Task(
        "humaneval",
        "openai/openai_humaneval",
        None,
        "test",
        ("prompt", "test", "entry_point"),
        "prompt",
        "Complete the following Python function. Return the whole function in one ```python block."
        "\n\n```python\n{prompt}```",
        kind="code",
    ),
    # MBPP as its paper has it: every test shown and scored (comparable with published numbers, winnable by
    # hard-coding what the prompt shows)
    "mbpp": Task(
        "mbpp",
        "google-research-datasets/mbpp",
        "full",
        "test",
        ("text", "test_list"),
        "text",
        "{text}\nYour code should pass these tests:\n{test_list}\nReturn the code in one ```python block.",
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
        "text",
        "{text}\nYour code should pass this test:\n{tests_shown}\nReturn the code in one ```python block.",
        kind="code",
        shown_tests=1,
    ),
    # The tiny worlds' held-out sets, prompted exactly as their models were trained (no instruction, no system
    # prompt); the code world's tests are hidden from the prompt, as in its training.
    "tiny": Task(
        "tiny",
        None,
        None,
        "test",
        ("question", "answer"),
        "question",
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
        "question",
        "{question}",
        default_data="artifacts/tiny-length/data/test.jsonl",
        max_new_tokens=96,
    ),
    # SmolLM2-135M-Instruct's task (make smol): word problems of one to three steps (held out in new words and
    # numbers), prompted through the model's own chat template with its own default system prompt stated, as trained.
    "smol": Task(
        "smol",
        None,
        None,
        "test",
        ("question", "answer"),
        "question",
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
        "text",
        "{text}",
        kind="code",
        default_data="artifacts/tiny-code/data/test.jsonl",
        max_new_tokens=64,
    ),
}
