import threading
import time

import pytest

from rewards.math import check_answers, extract_answer_span, math_accuracy

CASES = [  # completion, gold, expected
    ("The answer is 72.", "72", 1.0),
    ("so it costs -3.5 dollars", "-3.5", 1.0),
    ("#### 1234", "1,234", 1.0),
    ("We get $\\boxed{\\frac{28}{6}}$", "\\frac{14}{3}", 1.0),
    ("<think>...</think><answer>3\\sqrt{13}</answer>", "3\\sqrt{13}", 1.0),
    ("\\boxed{(3, \\frac{\\pi}{2})}", "\\left( 3, \\frac{\\pi}{2} \\right)", 1.0),
    ("first 5, then 7, finally 72", "Natalia sold 48+24 = 72 clips.\n#### 72", 1.0),
    ("The answer is 71.", "72", 0.0),
    ("\\boxed{\\frac{13}{3}}", "\\frac{14}{3}", 0.0),
    ("I do not know", "72", 0.0),
]


@pytest.mark.parametrize("completion,gold,expected", CASES)
def test_math_accuracy_plain(completion, gold, expected):
    assert math_accuracy([completion], answer=[gold]) == [expected]


def test_conversational_completions_score_like_plain_ones():
    conversational = [[{"role": "assistant", "content": c}] for c, _, _ in CASES]
    assert math_accuracy(conversational, answer=[g for _, g, _ in CASES]) == [e for _, _, e in CASES]


def test_reasons_and_unparseable_gold_is_none():
    (score, extracted, reason), (gold_score, _, gold_reason) = check_answers(["no digits here", "#### 4"],
                                                                            ["5", "not given"])
    assert (score, extracted, reason) == (0.0, None, "unparseable answer")
    assert (gold_score, gold_reason) == (None, "unparseable gold")


def test_answer_markers_take_priority_over_the_last_number():
    assert extract_answer_span("<answer>12</answer> and 99") == "12"
    assert math_accuracy(["<answer>12</answer> then 99"], answer=["12"]) == [1.0]


def test_works_from_worker_threads():
    results = []
    threads = [threading.Thread(target=lambda: results.append(math_accuracy(["#### 9"], answer=["9"])))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [[1.0]] * 4


@pytest.mark.parametrize("hostile", ["9**9**9**9", "1" * 1_000_000, "$" + "{" * 50_000 + "1" + "}" * 50_000 + "$",
                                     "\\boxed{" * 5000 + "1" + "}" * 5000, "2^{2^{2^{2^{2^{100}}}}}"])
def test_hostile_input_is_bounded_and_scored_zero(hostile):
    start = time.monotonic()
    assert math_accuracy([hostile, "#### 3"], answer=["9", "3"]) == [0.0, 1.0]
    assert time.monotonic() - start < 15


def test_a_hostile_sample_does_not_stall_the_batch():
    start = time.monotonic()
    scores = math_accuracy(["9**9**9**9"] + [f"#### {i}" for i in range(50)], answer=["1"] + [str(i) for i in
                                                                                          range(50)])
    assert scores == [0.0] + [1.0] * 50
    assert time.monotonic() - start < 15
