from rewards.code import code_format, code_tests, extract_program, run_tests

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
MBPP_TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(2, 2) == 5"]
HUMANEVAL_TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\ncheck(add)"


def test_mbpp_style_scores_the_fraction_passed():
    assert code_tests([ADD, "def add(a, b):\n    return abs(a) + b"], tests=[MBPP_TESTS, MBPP_TESTS]) == [2 / 3, 1 / 3]


def test_humaneval_style_is_all_or_nothing():
    wrong = "```python\ndef add(a, b):\n    return a + b if a else 1\n```"
    assert code_tests([ADD, wrong], tests=[HUMANEVAL_TEST, HUMANEVAL_TEST]) == [1.0, 0.0]


def test_setup_column_runs_before_the_program():
    program = "def norm(v):\n    return math.sqrt(sum(x * x for x in v))"
    assert code_tests([program], tests=[["assert norm([3, 4]) == 5"]], setup=["import math"]) == [1.0]
    assert code_tests([program], tests=[["assert norm([3, 4]) == 5"]]) == [0.0]


def test_unparseable_and_conversational_completions():
    assert code_tests(["def add(a, b) return"], tests=[MBPP_TESTS]) == [0.0]
    assert run_tests(["def add(a, b) return"], [MBPP_TESTS])[0].status == "syntax error"
    assert code_tests([[{"role": "assistant", "content": ADD}]], tests=[MBPP_TESTS[:1]]) == [1.0]


def test_extract_program_takes_the_last_fenced_block():
    text = "```python\nx = 1\n```\nbetter:\n```py\nx = 2\n```"
    assert extract_program(text) == "x = 2\n"


def test_code_format():
    assert code_format([ADD, "```python\ndef (:\n```", "plain", ADD + "\n" + ADD]) == [1.0, 0.0, 0.0, 0.0]


def test_a_batch_runs_in_parallel_and_in_order():
    programs = [f"def f():\n    return {i}" for i in range(24)]
    assert code_tests(programs, tests=[[f"assert f() == {i}"] for i in range(24)]) == [1.0] * 24


def test_a_fence_s_info_string_is_read_in_any_case_and_as_python3():
    from rewards.code import code_format, extract_program

    for fence in ("python", "Python", "PYTHON", "python3", "py", "py3", "Py3", ""):
        reply = f"Here:\n```{fence}\ndef f():\n    return 1\n```\nDone."
        assert extract_program(reply) == "def f():\n    return 1\n", fence
        assert code_format([reply]) == [1.0], fence
