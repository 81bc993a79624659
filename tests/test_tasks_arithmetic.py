from rewards.math import math_accuracy
from tasks.arithmetic import generate, worked_answer


def test_generator_is_deterministic_for_a_seed():
    assert generate(300, 50, seed=7) == generate(300, 50, seed=7)
    assert generate(300, 50, seed=7) != generate(300, 50, seed=8)


def test_train_and_held_out_do_not_overlap():
    train, test = generate(3000, 200, seed=0)
    assert len(train) == 3000 and len(test) == 200
    assert not {r["question"] for r in train} & {r["question"] for r in test}
    assert not {(r["a"], r["b"]) for r in train} & {(r["a"], r["b"]) for r in test}


def test_rows_are_in_gsm8k_format_and_their_answers_verify():
    train, _ = generate(50, 0, seed=3)
    for row in train:
        assert row["answer"].rsplit("\n", 1)[1] == f"#### {row['a'] + row['b']}"
    # The gold solution itself must score 1.0 under the project's verifier (the same one as GSM8K).
    assert math_accuracy([r["answer"] for r in train], answer=[r["answer"] for r in train]) == [1.0] * 50


def test_worked_answer_carries_digits():
    assert worked_answer(95, 8) == ("95+8. 5+8=13, write 3 carry 1. 9+0+1=10, write 0 carry 1. "
                                    "So the sum is 103.\n#### 103")
