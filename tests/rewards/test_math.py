import json
import subprocess
import sys
import threading
import time

import pytest

from rewards.math import check_answers, extract_answer_span, math_accuracy, unparseable_golds
from studies.bench_rewards import answer_agreement
from tests.conftest import REPO_ROOT, entry_point_error

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
    (score, extracted, reason), (gold_score, _, gold_reason) = check_answers(
        ["no digits here", "#### 4"], ["5", "not given"]
    )
    assert (score, extracted, reason) == (0.0, None, "unparseable answer")
    assert (gold_score, gold_reason) == (None, "unparseable gold")


def test_answer_markers_take_priority_over_the_last_number():
    assert extract_answer_span("<answer>12</answer> and 99") == "12"
    assert math_accuracy(["<answer>12</answer> then 99"], answer=["12"]) == [1.0]


def test_works_from_worker_threads():
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(math_accuracy(["#### 9"], answer=["9"]))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [[1.0]] * 4


@pytest.mark.parametrize(
    "hostile",
    [
        "9**9**9**9",
        "1" * 1_000_000,
        "$" + "{" * 50_000 + "1" + "}" * 50_000 + "$",
        "\\boxed{" * 5000 + "1" + "}" * 5000,
        "2^{2^{2^{2^{2^{100}}}}}",
    ],
)
def test_hostile_input_is_bounded_and_scored_zero(hostile):
    start = time.monotonic()
    assert math_accuracy([hostile, "#### 3"], answer=["9", "3"]) == [0.0, 1.0]
    assert time.monotonic() - start < 15


def test_a_hostile_sample_does_not_stall_the_batch():
    start = time.monotonic()
    scores = math_accuracy(
        ["9**9**9**9"] + [f"#### {i}" for i in range(50)], answer=["1"] + [str(i) for i in range(50)]
    )
    assert scores == [0.0] + [1.0] * 50
    assert time.monotonic() - start < 15


# Competition-style gold answers as datasets give them (bare, no $...$), by kind: (gold, the same answer written
# differently -> 1.0, wrong / partial / one-term answers -> 0.0).
COMPETITION = {
    "expression": [
        (
            "p + q",
            ["\\boxed{q+p}", "<answer>p+q</answer>", "The answer is $q + p$."],
            ["\\boxed{p - q}", "\\boxed{p}", "\\boxed{q}"],
        ),
        ("5k-2", ["\\boxed{-2+5k}", "#### 5k - 2"], ["\\boxed{5k+2}", "\\boxed{5}", "\\boxed{5k}"]),
        ("-4y+9", ["$\\boxed{9 - 4y}$", "<answer>9-4y</answer>"], ["\\boxed{4y+9}", "\\boxed{9}"]),
        (
            "y^2+6y+9",
            ["\\boxed{(y+3)^2}", "\\boxed{y^{2} + 6 y + 9}"],
            ["\\boxed{y^2+6y}", "\\boxed{y^2}", "\\boxed{9}"],
        ),
        ("3s^4", ["\\boxed{3 s^{4}}"], ["\\boxed{3s^3}", "\\boxed{3}"]),
        ("2\\pi h^2", ["\\boxed{2 \\pi h^{2}}", "<answer>2\\pi h^{2}</answer>"], ["\\boxed{2\\pi h}", "\\boxed{2}"]),
        (
            "\\sqrt{3}/2",
            ["\\boxed{\\frac{\\sqrt{3}}{2}}", "\\boxed{\\frac{\\sqrt 3}{2}}"],
            ["\\boxed{\\sqrt{3}}", "\\boxed{2}"],
        ),
    ],
    "complex": [
        ("5 - 4i", ["\\boxed{-4i+5}", "The answer is $5-4i$"], ["\\boxed{5}", "\\boxed{5+4i}", "\\boxed{-4i}"]),
        ("2+11i", ["\\boxed{2 + 11 i}"], ["\\boxed{2}", "\\boxed{11}", "The answer is 2."]),
    ],
    "tuple_interval": [
        (
            "(7,-2)",
            ["\\boxed{\\left( 7, -2 \\right)}", "\\boxed{(7, -2)}", "\\boxed{7, -2}"],
            ["\\boxed{7}", "\\boxed{(-2,7)}", "\\boxed{-2}"],
        ),
        ("(3,1,8)", ["\\boxed{(3, 1, 8)}"], ["\\boxed{(3,1)}", "\\boxed{3}", "\\boxed{(3,1,9)}"]),
        (
            "(2,9]",
            ["\\boxed{\\left(2, 9\\right]}", "<answer>(2, 9]</answer>"],
            ["\\boxed{[2,9]}", "\\boxed{2}", "\\boxed{(2,9)}", "\\boxed{9}"],
        ),
    ],
    "solutions": [
        ("3,-7", ["\\boxed{-7, 3}", "\\boxed{3, -7}"], ["\\boxed{3}", "\\boxed{-7}", "\\boxed{3, 7}"]),
        ("2, 5, 10", ["\\boxed{10, 5, 2}", "<answer>2,5,10</answer>"], ["\\boxed{2, 5}", "\\boxed{10}"]),
    ],
    "equation": [
        (
            "y = 4x - 7",
            ["\\boxed{y=4x-7}", "\\boxed{y = -7 + 4x}"],
            ["\\boxed{y = 4x + 7}", "\\boxed{y = 4x}", "\\boxed{7}"],
        ),
    ],
    "money_and_numbers": [
        (
            "\\$15,\\!300",
            ["\\boxed{15300}", "\\boxed{\\$15,300}", "The answer is \\$15,300.", "#### 15,300"],
            ["\\boxed{15,200}", "\\boxed{15}", "\\boxed{300}"],
        ),
        (
            "\\$3.40",
            ["\\boxed{3.4}", "#### 3.40", "The answer is $3.40."],
            ["\\boxed{3.04}", "\\boxed{3}", "\\boxed{40}"],
        ),
        (
            "\\frac{3}{4}",
            ["\\boxed{0.75}", "\\boxed{\\dfrac{3}{4}}", "\\boxed{\\tfrac{3}{4}}", "<answer>3/4</answer>"],
            ["\\boxed{\\frac{4}{3}}", "\\boxed{3}"],
        ),
        (
            "6.2e-4",
            ["\\boxed{6.2 \\times 10^{-4}}", "\\boxed{0.00062}", "#### 6.2e-4"],
            ["\\boxed{6.2}", "\\boxed{6.2 \\times 10^{4}}"],
        ),
    ],
}


@pytest.mark.parametrize("kind", sorted(COMPETITION))
def test_competition_answers_right_when_right_and_zero_when_wrong_or_partial(kind):
    cases = [
        (completion, gold, expected)
        for gold, right, wrong in COMPETITION[kind]
        for completions, expected in ((right, 1.0), (wrong, 0.0))
        for completion in completions
    ]
    scores = math_accuracy([c for c, _, _ in cases], answer=[g for _, g, _ in cases])
    assert {(c, g): s for (c, g, _), s in zip(cases, scores, strict=True)} == {(c, g): e for c, g, e in cases}


def test_unparseable_gold_answers_are_found_not_guessed():
    # "not given" read in math mode would be n*o*t*g*i*v*e*n; "1 apple" as its first number would score "1".
    golds = ["#### 12", "not given", "\\frac{1}{2}", "", "3 apples and 2 pears"]
    assert unparseable_golds(golds) == [(1, "not given"), (3, ""), (4, "3 apples and 2 pears")]
    assert math_accuracy(["#### 3", "#### 1"], answer=["3 apples and 2 pears", "1+15i"]) == [None, 0.0]


@pytest.mark.slow
def test_answer_sets_every_stated_gold_right_every_other_answer_zero():
    """The math test sets' gold answers (tests/fixtures/math_gold_answers.jsonl), stated in each style the reward
    reads, against math-verify called directly in the same run; `make bench-rewards` prints the same counts."""
    # math-verify alone on the gold completions math_accuracy missed: none of them may be right by it (make
    # bench-rewards scores every completion both ways)
    report = answer_agreement(direct_all=False)
    for source, styles in report.items():
        for style, counts in styles.items():
            assert counts["direct_only"] == 0, (source, style, counts)
            assert counts["zero"] == counts["n_other"] > 0.9 * counts["n"], (source, style, counts)
    olympiad = report["olympiadbench"]
    assert olympiad["boxed"]["n"] == 675 and all(c["correct"] == 675 for c in olympiad.values())
    # the one Minerva gold ends its math mode in the middle ("... +$ $\\dot{x}_0 ..."): a data error
    assert all(
        report[source][style]["correct"] >= report[source][style]["n"] - (2 if source == "minerva_math" else 0)
        for source in report
        for style in report[source]
    )


def bad_gold_rows(tmp_path, completion_column: bool):
    rows = [
        {"question": "What is 2+3?", "answer": "#### 5"},
        {"question": "Name it.", "answer": "not given"},
        {"question": "What is 4+4?", "answer": "8"},
    ]
    path = tmp_path / "data.jsonl"
    path.write_text(
        "".join(json.dumps({**r, **({"completion": "#### 5"} if completion_column else {})}) + "\n" for r in rows)
    )
    return path


def test_make_score_reports_unparseable_golds(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "eval.score", str(bad_gold_rows(tmp_path, True)), "--rewards", "math_accuracy"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        "unparseable gold answers: 1 of 3 (math_accuracy scores them None, left out of its mean): [1] "
        "'not given'" in out
    )
    assert "math_accuracy: mean 0.500 over 2/3" in out


def test_recipes_report_unparseable_golds_before_loading_a_model(tiny_world, tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("another run's")  # refused after the data checks, before any model
    error = entry_point_error(
        "recipes.grpo",
        "--config",
        "recipes/configs/tiny/grpo.yaml",
        "--dataset_name",
        str(bad_gold_rows(tmp_path, False)),
        "--output_dir",
        str(tmp_path / "run"),
    )
    assert "already holds another run's files" in error
    assert (
        f"warning: 1 of 3 gold answers in {tmp_path / 'data.jsonl'} (column 'answer') cannot be parsed; "
        "math_accuracy scores their samples None (left out of the reward): row 1: 'not given'"
    ) in capsys.readouterr().out


@pytest.mark.parametrize(
    ("completion", "gold", "score"),
    [
        (r"The costs add up: \[ Total = 129 + 195 = 324 \]", "324", 1.0),
        (r"\[ \text{Total Cost} = \text{Base} + \text{Extra} = 129 + 195 = 324. \]", "324", 1.0),
        (r"So $a = 3 + 4 = 7$.", "7", 1.0),
        ("Total cost = 20 + 14 = 34 dollars", "34", 1.0),
        (r"\[ Total = 129 + 195 = 324 \text{ dollars} \]", "324", 1.0),
        (r"She pays $x = 2 \cdot \$5 = \$10$.", "10", 1.0),
        (r"\[ Total = 129 + 195 = 325 \]", "324", 0.0),  # the chain's end is what is compared
        (r"The line is $y = 2x + 1$.", "y = 2x + 1", 1.0),  # an equation gold still takes the whole equation
    ],
)
def test_an_equation_chain_answers_with_its_last_right_hand_side(completion, gold, score):
    assert math_accuracy([completion], answer=[gold]) == [score]


@pytest.mark.parametrize(
    "gold",
    [r"\boxed{42}", r"$\boxed{42}$", r"The answer is \boxed{42}", r"\(42\)", r"\[42\]", "The answer is 42.", "42"],
)
def test_every_gold_form_math_verify_reads_is_read(gold):
    assert unparseable_golds([gold]) == []
    assert math_accuracy([r"so $\boxed{42}$", "The answer is 41"], answer=[gold, gold]) == [1.0, 0.0]


@pytest.mark.parametrize("gold", [r"\(\frac12\)", r"\[\frac{1}{2}\]", r"\boxed{\frac{1}{2}}", r"$\frac12$"])
def test_a_delimited_fraction_gold_is_its_value(gold):
    assert math_accuracy([r"$\boxed{0.5}$", r"$\boxed{\frac{2}{4}}$", r"$\boxed{2}$"], answer=[gold] * 3) == [
        1.0,
        1.0,
        0.0,
    ]
