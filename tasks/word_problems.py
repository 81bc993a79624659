"""One-step word problems in English for a real pretrained model (SmolLM2-135M-Instruct, `make smol`).

Each row has GSM8K's columns: `question`, and `answer` with one worked line and `#### <number>`, so the shipped
`math_accuracy` checks them and `make eval` reads them as it reads GSM8K. Six kinds of step (gets more, gives away,
groups of, shares equally, twice as many, together), small whole numbers, names and objects drawn from short lists.

Why generated and not a subset of a public set: the model needs headroom both ways. SmolLM2-135M-Instruct answers
about one GSM8K problem in fifty (docs/smol.md), so nothing a short CPU run can do would show on GSM8K; on these
problems its greedy accuracy sits between 20% and 70%, the range where training can be seen to help or hurt. Seeded,
licence-free, and the splits cannot overlap (a question appears in one split only).

>>> row = make_problem(random.Random(0))
>>> row["answer"].rsplit("#### ", 1)[1] == str(row["value"])
True
"""

import random

NAMES = ["Ava", "Ben", "Cara", "Dan", "Eli", "Fay", "Gus", "Ivy", "Jay", "Kim", "Leo", "Mia", "Noah", "Omar", "Rosa"]
OBJECTS = ["apples", "books", "marbles", "stickers", "shells", "cards", "pencils", "cookies", "stamps", "coins"]
KINDS = ("gets", "gives", "groups", "shares", "twice", "together")


def make_problem(rng: random.Random, kind: str | None = None) -> dict:
    """A problem of one `kind` (drawn when None): {question, answer, kind, value}."""
    kind = kind or rng.choice(KINDS)
    name, other = rng.sample(NAMES, 2)
    things = rng.choice(OBJECTS)
    if kind == "gets":
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        question = f"{name} has {a} {things}. {name} gets {b} more. How many {things} does {name} have now?"
        step, value = f"{a} + {b} = {a + b}", a + b
    elif kind == "gives":
        a = rng.randint(4, 12)
        b = rng.randint(2, a - 1)
        question = (
            f"{name} had {a} {things}. {name} gave {b} {things} to {other}. How many {things} does {name} have now?"
        )
        step, value = f"{a} - {b} = {a - b}", a - b
    elif kind == "groups":
        a, b = rng.randint(2, 6), rng.randint(2, 6)
        question = f"{name} has {a} bags with {b} {things} in each bag. How many {things} does {name} have in all?"
        step, value = f"{a} x {b} = {a * b}", a * b
    elif kind == "shares":
        b, each = rng.randint(2, 4), rng.randint(2, 6)
        question = (
            f"{name} shares {b * each} {things} equally among {b} friends. How many {things} does each friend get?"
        )
        step, value = f"{b * each} / {b} = {each}", each
    elif kind == "twice":
        a = rng.randint(2, 12)
        question = (
            f"{name} has {a} {things}. {other} has twice as many {things} as {name}. "
            f"How many {things} does {other} have?"
        )
        step, value = f"2 x {a} = {2 * a}", 2 * a
    elif kind == "together":
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        question = f"{name} has {a} {things} and {other} has {b} {things}. How many {things} do they have together?"
        step, value = f"{a} + {b} = {a + b}", a + b
    else:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return {"question": question, "answer": f"{step}\n#### {value}", "kind": kind, "value": value}


def generate_splits(seed: int, sizes: dict[str, int]) -> dict[str, list[dict]]:
    """Disjoint splits, {split: rows}: a question drawn twice goes to the first split that drew it, the kinds in
    turn so each split holds them in equal shares.

    >>> splits = generate_splits(0, {"train": 60, "test": 12})
    >>> {q["question"] for q in splits["train"]} & {q["question"] for q in splits["test"]}
    set()
    """
    rng = random.Random(seed)
    seen, splits = set(), {}
    for split, size in sizes.items():
        rows = []
        while len(rows) < size:
            row = make_problem(rng, KINDS[len(rows) % len(KINDS)])
            if row["question"] not in seen:
                seen.add(row["question"])
                rows.append({"question": row["question"], "answer": row["answer"], "kind": row["kind"]})
        splits[split] = rows
    return splits
