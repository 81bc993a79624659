"""Synthetic arithmetic word problems in GSM8K's column format.

Each row has `question` and `answer`, where `answer` shows the column-wise working and ends in `#### <number>`,
exactly like GSM8K, so the same rewards (`rewards.math.math_accuracy`) and the same eval code serve both.
Answers carry their steps because a tiny model can learn worked steps in minutes but not direct answers
(see docs/tiny-worlds.md: 13.5% for direct answers vs. 98% with worked steps after the same SFT budget).

Training rows also carry a `demonstration`: the worked answer a fallible teacher wrote, which with probability
`slip_rate` forgets to add the carry (a classic human slip), so its final number is wrong. The SFT warm start
imitates the teacher and so learns the slip as part of its own distribution, as models learn the mistakes in
human-written data; the `answer` column (what rewards and eval check) is always right. That is the gap between
imitation and optimising for correctness that the RL methods are compared on.

With `direct_rate` (the length world, `studies/grid/length`), the teacher writes that share of its demonstrations as a
direct answer, `47+38=85.` with no columns: always right, but a tiny model cannot learn to add without the steps
(13.5%), so the warm start's short answers are mostly wrong and its long ones mostly right. A policy can then
choose its length, one token after the operands, and what training does to length is seen by correctness.

>>> row = make_problem(random.Random(0))
>>> row["answer"].rsplit("#### ", 1)[1] == str(row["a"] + row["b"])
True
"""

import random

NAMES = [
    "Ana",
    "Ben",
    "Cai",
    "Dev",
    "Eva",
    "Finn",
    "Gia",
    "Hal",
    "Ivy",
    "Jon",
    "Kim",
    "Leo",
    "Mia",
    "Ned",
    "Oli",
    "Pam",
]
OBJECTS = ["apples", "books", "coins", "cards", "shells", "stamps", "pens", "marbles", "stickers", "beads"]
TEMPLATES = [
    "{name} has {a} {obj}. {name} gets {b} more. How many {obj} does {name} have now?",
    "{name} collected {a} {obj} on Monday and {b} {obj} on Tuesday. How many {obj} in total?",
    "A box holds {a} {obj} and another box holds {b} {obj}. How many {obj} are there altogether?",
    "{name} bought {a} {obj}, then found {b} {obj}. How many {obj} does {name} have?",
]


def worked_answer(a: int, b: int, forget_carry: bool = False) -> str:
    """Column addition, least significant digit first, one step per column, then `#### sum`. With `forget_carry`
    every carry is announced but not added into the next column, and the sum follows from the slip.

    >>> worked_answer(47, 38)
    '47+38. 7+8=15, write 5 carry 1. 4+3+1=8, write 8 carry 0. So the sum is 85.\\n#### 85'
    >>> worked_answer(47, 38, forget_carry=True)
    '47+38. 7+8=15, write 5 carry 1. 4+3=7, write 7 carry 0. So the sum is 75.\\n#### 75'
    """
    steps, digits, carry = [], [], 0
    da, db = str(a)[::-1], str(b)[::-1]
    for i in range(max(len(da), len(db))):
        x = int(da[i]) if i < len(da) else 0
        y = int(db[i]) if i < len(db) else 0
        added = 0 if forget_carry else carry
        total = x + y + added
        expr = f"{x}+{y}" + (f"+{added}" if added else "")
        carry = total // 10
        digits.append(total % 10)
        steps.append(f"{expr}={total}, write {total % 10} carry {carry}.")
    if carry:  # the last carry is written down, not added: nothing to forget
        digits.append(carry)
    result = int("".join(map(str, reversed(digits))))
    # Restating the operands first puts every digit the columns need right next to them.
    return f"{a}+{b}. " + " ".join(steps) + f" So the sum is {result}.\n#### {result}"


def direct_answer(a: int, b: int) -> str:
    """The sum without its columns.

    >>> direct_answer(47, 38)
    '47+38=85.\\n#### 85'
    """
    return f"{a}+{b}={a + b}.\n#### {a + b}"


def make_problem(rng: random.Random, max_digits: int = 2, slip_rate: float = 0.0, direct_rate: float = 0.0) -> dict:
    a = rng.randint(10, 10**max_digits - 1)
    b = rng.randint(10, 10**max_digits - 1)
    template = rng.choice(TEMPLATES)
    question = template.format(name=rng.choice(NAMES), obj=rng.choice(OBJECTS), a=a, b=b)
    slip = rng.random() < slip_rate
    # drawn only for the length world, so the other worlds' random streams (and their data) stay as they were
    direct = direct_rate > 0 and rng.random() < direct_rate
    return {
        "question": question,
        "answer": worked_answer(a, b),
        "demonstration": direct_answer(a, b) if direct else worked_answer(a, b, slip),
        "a": a,
        "b": b,
    }


def generate_splits(
    n_train: int,
    n_validation: int,
    n_test: int,
    seed: int = 0,
    max_digits: int = 2,
    slip_rate: float = 0.0,
    direct_rate: float = 0.0,
) -> tuple[list[dict], list[dict], list[dict]]:
    """Deterministic train / validation / held-out splits, no (a, b) pair shared between any two, so neither
    held-out nor validation accuracy is memorisation. Validation is drawn after train and test, so adding it leaves
    those two as they were.

    >>> train, validation, test = generate_splits(50, 10, 10, seed=1)
    >>> pairs = [{(r["a"], r["b"]) for r in rows} for rows in (train, validation, test)]
    >>> len(train), len(validation), len(test), not (pairs[0] & pairs[1] or pairs[0] & pairs[2] or pairs[1] & pairs[2])
    (50, 10, 10, True)
    """
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    rows: list[dict] = []
    while len(rows) < n_train + n_test + n_validation:
        row = make_problem(rng, max_digits, slip_rate, direct_rate)
        if (row["a"], row["b"]) not in seen:
            seen.add((row["a"], row["b"]))
            rows.append(row)
    return rows[n_test : n_test + n_train], rows[n_test + n_train :], rows[:n_test]


def generate(
    n_train: int, n_test: int, seed: int = 0, max_digits: int = 2, slip_rate: float = 0.0
) -> tuple[list[dict], list[dict]]:
    """Deterministic train/held-out split with no shared (a, b) pair, so held-out accuracy is not memorisation.

    >>> train, test = generate(50, 10, seed=1)
    >>> len(train), len(test), not {(r["a"], r["b"]) for r in train} & {(r["a"], r["b"]) for r in test}
    (50, 10, True)
    """
    train, _, test = generate_splits(n_train, 0, n_test, seed, max_digits, slip_rate)
    return train, test
