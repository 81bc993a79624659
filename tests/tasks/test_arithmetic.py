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
    assert worked_answer(95, 8) == (
        "95+8. 5+8=13, write 3 carry 1. 9+0+1=10, write 0 carry 1. So the sum is 103.\n#### 103"
    )


def test_forgotten_carry_changes_the_sum_only_when_there_is_a_carry():
    assert worked_answer(95, 8, forget_carry=True) == (
        "95+8. 5+8=13, write 3 carry 1. 9+0=9, write 9 carry 0. So the sum is 93.\n#### 93"
    )
    assert worked_answer(12, 30, forget_carry=True) == worked_answer(12, 30)  # no carry, nothing to forget


def test_the_teacher_slips_at_its_rate_and_the_gold_answer_never_does():
    train, _ = generate(4000, 0, seed=0, slip_rate=0.5)
    carries = [r for r in train if r["a"] % 10 + r["b"] % 10 >= 10]
    slipped = [r for r in train if r["demonstration"] != r["answer"]]
    assert set(map(id, slipped)) <= set(map(id, carries))  # only carries can be forgotten
    assert 0.45 <= len(slipped) / len(carries) <= 0.55
    assert all(r["answer"].endswith(f"#### {r['a'] + r['b']}") for r in train)
    assert all(r["demonstration"] == r["answer"] for r in generate(200, 0, seed=0, slip_rate=0.0)[0])
