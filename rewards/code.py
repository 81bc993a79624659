"""Code rewards: run the completion's program against the sample's tests in `rewards.sandbox`."""

import ast
import re

from rewards.declare import prepares, sandboxed
from rewards.sandbox import RunResult, default_sandbox
from rewards.text import completion_text

# A fence's info string in any case, `python3` / `py3` too (what chat models write: ```Python, ```python3).
_FENCED = re.compile(r"```(?i:python3?|py3?)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_program(text: str) -> str:
    """The last fenced ```python block, else the whole text.

    >>> extract_program("Here:\\n```python\\ndef f():\\n    return 1\\n```\\nDone.")
    'def f():\\n    return 1\\n'
    >>> extract_program("x = 1")
    'x = 1'
    """
    blocks = _FENCED.findall(text)
    return blocks[-1] if blocks else text


def _as_test_list(tests) -> list[str]:
    # MBPP: a list of assertion strings, each scored on its own. HumanEval: one string of test code, all or nothing.
    return [tests] if isinstance(tests, str) else [str(t) for t in tests]


# The code datasets' own columns, as the hub and their repositories distribute them; `code_test_columns` maps each
# to the `tests` / `setup` / `code_prefix` columns code_tests reads: the one place recipes, pairs and eval meet them.
TEST_COLUMN_STYLES = {
    "tests": ("tests",),  # this project's own: a list of asserts or one test-code string (+ optional `setup`)
    "mbpp": ("test_list",),  # MBPP: asserts, optional test_setup_code
    "humaneval": ("test", "entry_point"),  # HumanEval: check(candidate) code, the function's name, its `prompt`
}


def hold_back_tests(row: dict, shown: int = 1) -> dict:
    """An MBPP row with its first `shown` asserts for the prompt (`tests_shown`, one per line) and only the rest left
    in `test_list` to score: the bigcode evaluation harness's convention, so that hard-coding what the prompt shows
    cannot pass (MBPP's paper shows all three tests and scores the same three).

    >>> row = hold_back_tests({"test_list": ["assert f(1) == 2", "assert f(2) == 3", "assert f(0) == 1"]})
    >>> row["tests_shown"], row["test_list"]
    ('assert f(1) == 2', ['assert f(2) == 3', 'assert f(0) == 1'])
    """
    tests = list(row["test_list"])
    if len(tests) <= shown:
        raise ValueError(
            f"a row with {len(tests)} test(s) in test_list has none left to score after showing {shown}: "
            f"{str(row.get('text') or row.get('task_id') or tests)[:80]!r}"
        )
    return {**row, "tests_shown": "\n".join(tests[:shown]), "test_list": tests[shown:]}


def showing(shown: int):
    """The data step that holds back all but the first `shown` tests of every row (`hold_back_tests`; a recipe's
    `shown_tests`): ValueError naming the source and the setting where a row has too few.

    >>> from datasets import Dataset
    >>> rows = Dataset.from_list([{"test_list": ["assert f(1) == 2", "assert f(2) == 3"]}])
    >>> showing(1)(rows, "mbpp.jsonl")[0]["test_list"]
    ['assert f(2) == 3']
    """

    def held_back(dataset, source: str):
        try:
            return dataset.map(lambda row: hold_back_tests(row, shown))
        except ValueError as error:
            raise ValueError(f"{source}: {error}; lower shown_tests ({shown})") from None

    return held_back


def code_test_style(columns) -> str | None:
    """Which code-test format a dataset's columns are in, or None.

    >>> code_test_style(["text", "test_list", "test_setup_code"]), code_test_style(["prompt", "test", "entry_point"])
    ('mbpp', 'humaneval')
    """
    return next((style for style, needed in TEST_COLUMN_STYLES.items() if set(needed) <= set(columns)), None)


def code_test_columns(row: dict) -> dict:
    r"""`tests`, `setup` and `code_prefix` for one row in any of TEST_COLUMN_STYLES (used with `Dataset.map`).

    >>> code_test_columns({"test": "def check(candidate):\n    assert candidate(1) == 2\n", "entry_point": "inc",
    ...               "prompt": "def inc(x):\n"})["tests"]
    'def check(candidate):\n    assert candidate(1) == 2\n\ncheck(inc)\n'
    """
    style = require_code_tests(row, "row")
    if style == "tests":
        return {"tests": row["tests"], "setup": row.get("setup") or "", "code_prefix": row.get("code_prefix") or ""}
    if style == "mbpp":
        return {"tests": list(row["test_list"]), "setup": row.get("test_setup_code") or "", "code_prefix": ""}
    # humaneval: completions may restate the whole function or give only its body after the signature in `prompt`
    return {
        "tests": row["test"] + f"\ncheck({row['entry_point']})\n",
        "setup": "",
        "code_prefix": row.get("prompt") if isinstance(row.get("prompt"), str) else "",
    }


def require_code_tests(columns, source: str) -> str:
    """The dataset's code-test format; ValueError naming the columns it has and the formats code_tests reads."""
    style = code_test_style(columns)
    if style is None:
        raise ValueError(
            f"dataset {source} has no code tests for code_tests: it has columns {sorted(columns)}; "
            "expected " + " or ".join(" + ".join(c) for c in TEST_COLUMN_STYLES.values())
        )
    return style


def program_for(completion, code_prefix: str = "") -> str:
    r"""The program to run: the completion's code (its last fenced block, if it has one) after `code_prefix`, as
    HumanEval's own harness runs it (`prompt + completion`): a completion that restates the function simply
    redefines it, and still sees the prompt's imports and helpers. The one difference by design: the harness runs a
    chat model's fenced reply as it is (a syntax error); here the fenced block is taken.

    >>> prompt = "from typing import List\ndef f(x: List[int]):\n    'Doc.'\n"
    >>> print(program_for("def f(x: List[int]):\n    return x\n", prompt))
    from typing import List
    def f(x: List[int]):
        'Doc.'
    def f(x: List[int]):
        return x
    <BLANKLINE>
    """
    return code_prefix + extract_program(completion_text(completion))


def run_row_tests(completions, rows: list[dict]) -> list[RunResult]:
    """`run_tests` for rows in any of TEST_COLUMN_STYLES, each mapped through `code_test_columns`."""
    columns = [code_test_columns(row) for row in rows]
    return run_tests(completions, *([c[key] for c in columns] for key in ("tests", "setup", "code_prefix")))


def run_tests(completions, tests, setup=None, code_prefix=None) -> list[RunResult]:
    """One sandbox run per completion, in parallel; see `rewards.sandbox` for what is isolated."""
    setups = setup if setup is not None else [""] * len(completions)
    prefixes = code_prefix if code_prefix is not None else [""] * len(completions)
    jobs = [
        (program_for(c, p or ""), _as_test_list(t), s or "")
        for c, t, s, p in zip(completions, tests, setups, prefixes, strict=True)
    ]
    return default_sandbox().run_many(jobs)


def with_test_columns(dataset, source: str):
    """code_tests' data step (`@prepares`): the dataset's own test columns (this project's `tests`, MBPP's
    `test_list`, HumanEval's `test` + `entry_point` + `prompt`) mapped to `tests` / `setup` / `code_prefix`, before
    `prompt` is rebuilt as chat messages; ValueError (`require_code_tests`) where it has none of them."""
    require_code_tests(dataset.column_names, source)
    return dataset.map(code_test_columns)


@sandboxed
@prepares(with_test_columns)
def code_tests(completions, tests=None, setup=None, code_prefix=None, **columns) -> list[float]:
    r"""Fraction of `tests` passed (MBPP-style list of asserts), or 1.0/0.0 for one HumanEval-style test string.
    Datasets in MBPP's (`test_list`, `test_setup_code`) or HumanEval's (`test`, `entry_point`, `prompt`) columns
    work as they are (see `code_test_columns`).

    >>> code_tests(["```python\ndef add(a, b):\n    return a + b\n```"], tests=[["assert add(1, 2) == 3",
    ...            "assert add(2, 2) == 5"]])
    [0.5]
    >>> code_tests(["import sys\nsys.exit(0)"], tests=["def check(f):\n    assert f(1) == 2\ncheck(inc)"])
    [0.0]
    >>> code_tests(["def f(x):\n    return x * 3"], test_list=[["assert f(2) == 6"]], test_setup_code=[""])
    [1.0]
    """
    if tests is None:
        rows = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
        return [result.fraction for result in run_row_tests(completions, rows)]
    return [result.fraction for result in run_tests(completions, tests, setup, code_prefix)]


def code_format(completions, **kwargs) -> list[float]:
    """1.0 if the completion has exactly one fenced Python block and it parses, else 0.0.

    >>> code_format(["```python\\nx = 1\\n```", "```python\\nx = (\\n```", "no code",
    ...              "```python\\na=1\\n```\\n```python\\nb=2\\n```"])
    [1.0, 0.0, 0.0, 0.0]
    """
    scores = []
    for completion in completions:
        blocks = _FENCED.findall(completion_text(completion))
        if len(blocks) != 1:
            scores.append(0.0)
            continue
        try:
            ast.parse(blocks[0])
            scores.append(1.0)
        except (SyntaxError, ValueError):
            scores.append(0.0)
    return scores
