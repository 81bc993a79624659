"""Code rewards: run the completion's program against the sample's tests in `rewards.sandbox`."""

import ast
import re

from rewards._text import completion_text
from rewards.sandbox import RunResult, default_sandbox

_FENCED = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


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


def run_tests(completions, tests, setup=None) -> list[RunResult]:
    """One sandbox run per completion, in parallel; see `rewards.sandbox` for what is isolated."""
    setups = setup if setup is not None else [""] * len(completions)
    jobs = [(extract_program(completion_text(c)), _as_test_list(t), s or "")
            for c, t, s in zip(completions, tests, setups, strict=True)]
    return default_sandbox().run_many(jobs)


def code_tests(completions, tests, setup=None, **kwargs) -> list[float]:
    """Fraction of `tests` passed (MBPP-style list of asserts), or 1.0/0.0 for one HumanEval-style test string.

    >>> code_tests(["```python\\ndef add(a, b):\\n    return a + b\\n```"], tests=[["assert add(1, 2) == 3",
    ...            "assert add(2, 2) == 5"]])
    [0.5]
    >>> code_tests(["import sys\\nsys.exit(0)"], tests=["def check(f):\\n    assert f(1) == 2\\ncheck(inc)"])
    [0.0]
    """
    return [result.fraction for result in run_tests(completions, tests, setup)]


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
