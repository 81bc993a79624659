"""The real model's word problems (tasks/word_problems.py) measure generalisation: the held-out split shares no
sentence frame, name, object, number range or (kind, numbers) pair with training or validation; every answer is its
worked steps, which the shipped verifier reads."""

import random
import re
import string
from collections import Counter

import pytest

from rewards.math import math_accuracy
from tasks.word_problems import CHAINS, HELD_OUT, STEP_SHARES, TRAIN, generate_splits, key, make_problem

SIZES = {"train": 1200, "validation": 200, "test": 700}


@pytest.fixture(scope="module")
def splits():
    return generate_splits(0, SIZES)


def frames(pool) -> list[str]:
    return [f for group in (pool.starts, pool.steps, pool.questions) for fs in group.values() for f in fs]


def pattern(frame: str) -> re.Pattern:
    """A frame as a regular expression over questions: its words literal, each field any run of words."""
    parts = [(text, field) for text, field, _, _ in string.Formatter().parse(frame)]
    return re.compile("".join(re.escape(text) + (r"[\w' ]+?" if field else "") for text, field in parts))


def words(question: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]+", question))


def numbers_in(question: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", question)]


def test_no_held_out_problem_is_a_training_problem_in_other_words(splits):
    seen = {key(row) for row in splits["train"] + splits["validation"]}
    test = {key(row) for row in splits["test"]}
    assert not seen & test
    assert len(splits["test"]) >= 500 and len(test) >= 500  # distinct problems, not one problem in many words
    questions = [{row["question"] for row in rows} for rows in splits.values()]
    assert sum(map(len, questions)) == sum(SIZES.values())  # no question twice, in a split or across


def test_held_out_questions_use_no_training_frame_name_object_or_number(splits):
    train_frames = [pattern(f) for f in frames(TRAIN)]
    held_frames = [pattern(f) for f in frames(HELD_OUT)]
    assert not set(frames(TRAIN)) & set(frames(HELD_OUT))
    train_words = set(TRAIN.names) | set(TRAIN.objects)
    held_words = set(HELD_OUT.names) | set(HELD_OUT.objects)
    assert not train_words & held_words
    for split, rows in splits.items():
        held = split == "test"
        mine, theirs = (held_frames, train_frames) if held else (train_frames, held_frames)
        own_words, other_words = (held_words, train_words) if held else (train_words, held_words)
        pool = HELD_OUT if held else TRAIN
        for row in rows:
            question = row["question"]
            assert not any(p.search(question) for p in theirs), (split, question)
            assert sum(bool(p.search(question)) for p in mine) >= 2, (split, question)  # a start and a question
            assert words(question) & own_words and not words(question) & other_words, (split, question)
            assert sorted(numbers_in(question)) == sorted(row["numbers"])  # it states the numbers drawn, no other
            assert set(row["numbers"]) <= set(pool.amounts) | set(pool.factors)
            assert any(n in pool.amounts for n in row["numbers"])
    # quantities held out are quantities training never names; box and sharer counts held out, none training uses
    assert not set(HELD_OUT.amounts) & set(TRAIN.amounts)
    assert not set(HELD_OUT.factors) & set(TRAIN.factors)


def test_every_split_holds_one_to_three_steps_in_its_shares_and_every_chain(splits):
    for split, rows in splits.items():
        steps = Counter(row["steps"] for row in rows)
        assert {n: steps[n] / len(rows) for n in STEP_SHARES} == pytest.approx(STEP_SHARES, abs=0.01), split
        assert {row["kind"] for row in rows} == {">".join(c) for chains in CHAINS.values() for c in chains}


def test_every_answer_is_its_worked_steps_and_the_verifier_reads_it(splits):
    for rows in splits.values():
        golds = [row["answer"] for row in rows]
        assert math_accuracy(golds, golds) == [1.0] * len(rows)
        for row in rows:
            *lines, final = row["answer"].split("\n")
            assert len(lines) == row["steps"]
            value = None
            for line in lines:  # each step's arithmetic is right and starts from the last step's result
                left, result = line.split(" = ")
                a, op, b = left.split(" ")
                assert value is None or value in (int(a), int(b))
                value = {"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b), "/": int(a) // int(b)}[op]
                assert op != "/" or int(a) % int(b) == 0
                assert value == int(result) and value > 0
            assert final == f"#### {value}"
            # the last worked line alone states the answer, as a model's steps would
            assert math_accuracy([lines[-1]], [row["answer"]]) == [1.0]


def test_a_chain_the_numbers_leave_nothing_to_do_is_drawn_again():
    pool = TRAIN.__class__(**{**TRAIN.__dict__, "amounts": range(2, 3)})  # "gives" needs less than there is
    assert make_problem(random.Random(0), pool, ("has", "gives")) is None
    row = make_problem(random.Random(0), HELD_OUT, ("groups", "gets", "shares"))
    assert row is None or int(row["answer"].rsplit("#### ", 1)[1]) * row["numbers"][-1] > 0
