"""Word problems in English for a real pretrained model (SmolLM2-135M-Instruct, `make smol`), built to measure
generalisation: the held-out problems share no sentence frame, name, object or number range with training.

Each row has GSM8K's columns: `question`, and `answer` with one worked line a step and `#### <number>`, so the
shipped `math_accuracy` checks them and `make eval` reads them as it reads GSM8K; and `kind` (the chain of steps,
e.g. `has>gets>gives`), `steps` (1 to 3) and `numbers` (every number the generator drew, in order).

A problem is a chain on one amount: a start (someone has some; bags of so many each; two people's together), then
steps (gets more, gives some away, doubles; sharing equally, last). One, two and three steps in fixed shares.

Two worlds of words and numbers, `TRAIN` and `HELD_OUT` (`Pool`): their own sentence frames for every step and
question (paraphrases), their own names and objects, and their own number ranges: amounts 2-12 against 13-40
(numbers training never states), box counts and sharers 2-4 against 5-6 (numbers training states only as amounts).
The training split is drawn from `TRAIN`; the validation and test splits from `HELD_OUT` (tuning sees problems like
the held-out ones, never the held-out ones). No (kind, numbers) pair is in two splits.

Why generated and not a subset of a public set: the model needs headroom both ways. SmolLM2-135M-Instruct answers
about one GSM8K problem in fifty (docs/smol.md), so nothing a short CPU run can do would show on GSM8K. Seeded and
licence-free.

>>> row = make_problem(random.Random(0), TRAIN, ("has", "gets"))
>>> row["answer"].rsplit("#### ", 1)[1] == str(row["value"]), row["kind"], row["steps"]
(True, 'has>gets', 1)
"""

import random
from dataclasses import dataclass

STARTS = ("has", "groups", "together")
STEPS = ("gets", "gives", "doubles", "shares")
# The chains, by how many arithmetic steps they take (a plain start is none; bags of so many, or two people's
# together, one). `shares` only ends a chain: its question asks for one share.
CHAINS = {
    1: [
        ("has", "gets"),
        ("has", "gives"),
        ("has", "doubles"),
        ("has", "shares"),
        ("groups",),
        ("together",),
    ],
    2: [
        ("has", "gets", "gives"),
        ("has", "gives", "gets"),
        ("has", "gets", "doubles"),
        ("has", "doubles", "gives"),
        ("groups", "gets"),
        ("groups", "gives"),
        ("together", "gives"),
        ("together", "shares"),
        ("has", "gets", "shares"),
    ],
    3: [
        ("has", "gets", "gives", "doubles"),
        ("has", "doubles", "gets", "gives"),
        ("groups", "gets", "gives"),
        ("groups", "gives", "doubles"),
        ("together", "gets", "gives"),
        ("has", "gets", "gives", "shares"),
        ("groups", "gets", "shares"),
    ],
}
# Shares of one-, two- and three-step problems in every split.
STEP_SHARES = {1: 0.4, 2: 0.4, 3: 0.2}


@dataclass(frozen=True)
class Pool:
    """The words and numbers one side draws from: frames per start, step and question (`str.format` with `name`,
    `other`, `things`, `a`, `b`), names, objects, amounts and factors (bags, sharers)."""

    starts: dict[str, tuple[str, ...]]
    steps: dict[str, tuple[str, ...]]
    questions: dict[str, tuple[str, ...]]
    names: tuple[str, ...]
    objects: tuple[str, ...]
    amounts: range
    factors: range


TRAIN = Pool(
    starts={
        "has": ("{name} has {a} {things}.", "{name} owns {a} {things}."),
        "groups": (
            "{name} has {a} bags with {b} {things} in each bag.",
            "{name} buys {a} packs of {things} with {b} {things} in every pack.",
        ),
        "together": ("{name} has {a} {things} and {other} has {b} {things}. {other} gives them all to {name}.",),
    },
    steps={
        "gets": ("{name} gets {b} more.", "Then {other} gives {name} {b} more {things}."),
        "gives": ("{name} gives {b} {things} to {other}.", "Then {name} loses {b} {things}."),
        "doubles": ("Then {name} doubles the {things}.", "{name} ends up with twice as many {things}."),
        "shares": ("{name} shares them equally among {b} friends.",),
    },
    questions={
        "amount": ("How many {things} does {name} have now?", "How many {things} does {name} have in all?"),
        "shares": ("How many {things} does each friend get?",),
    },
    names=(
        "Ava",
        "Ben",
        "Cara",
        "Dan",
        "Eli",
        "Fay",
        "Gus",
        "Ivy",
        "Jay",
        "Kim",
        "Leo",
        "Mia",
        "Noah",
        "Omar",
        "Rosa",
    ),
    objects=("apples", "books", "marbles", "stickers", "shells", "cards", "pencils", "cookies", "stamps", "coins"),
    amounts=range(2, 13),
    factors=range(2, 5),
)

HELD_OUT = Pool(
    starts={
        "has": ("{name} starts the day with {a} {things}.", "There are {a} {things} in {name}'s collection."),
        "groups": (
            "{name} fills {a} boxes, putting {b} {things} into each box.",
            "{name} lays out {a} rows of {things}, {b} in every row.",
        ),
        "together": ("{name} brings {a} {things} to the fair and {other} adds {b} more to the same pile.",),
    },
    steps={
        "gets": ("After that, {name} collects another {b}.", "A neighbour adds {b} {things} to {name}'s pile."),
        "gives": ("{name} hands {b} of them over to {other}.", "Later, {b} {things} go missing from the pile."),
        "doubles": ("Next, the number of {things} is doubled.", "The pile then grows to two times its size."),
        "shares": ("Finally, {name} splits the {things} evenly into {b} piles.",),
    },
    questions={
        "amount": ("What is the number of {things} at the end?", "How large is the pile of {things} at the end?"),
        "shares": ("How many {things} end up in each pile?",),
    },
    names=("Hana", "Pablo", "Zara", "Tariq", "Lena", "Felix", "Maya", "Oscar", "Nina", "Yusuf", "Greta", "Sami"),
    objects=(
        "oranges",
        "buttons",
        "beads",
        "crayons",
        "tickets",
        "walnuts",
        "postcards",
        "pebbles",
        "ribbons",
        "dice",
    ),
    amounts=range(13, 41),
    factors=range(5, 7),
)


def _amount_step(step: str, amount: int, pool: Pool, rng: random.Random) -> tuple[int | None, str, int] | None:
    """(drawn number, worked line, new amount) of one step on `amount`, None where the pool has no number for it
    (give away less than there is; share only what divides)."""
    if step == "gets":
        b = rng.choice(pool.amounts)
        return b, f"{amount} + {b} = {amount + b}", amount + b
    if step == "gives":
        fits = [b for b in pool.amounts if b < amount]
        if not fits:
            return None
        b = rng.choice(fits)
        return b, f"{amount} - {b} = {amount - b}", amount - b
    if step == "doubles":
        return None, f"2 x {amount} = {2 * amount}", 2 * amount
    fits = [b for b in pool.factors if amount % b == 0 and amount // b > 1]
    if not fits:
        return None
    b = rng.choice(fits)
    return b, f"{amount} / {b} = {amount // b}", amount // b


def make_problem(rng: random.Random, pool: Pool, chain: tuple[str, ...]) -> dict | None:
    """One problem of `chain` from `pool`'s words and numbers: {question, answer, kind, steps, numbers, value}; None
    where the numbers drawn leave a step nothing to do (a caller draws again)."""
    name, other = rng.sample(pool.names, 2)
    things = rng.choice(pool.objects)
    start, *rest = chain
    words = {"name": name, "other": other, "things": things}
    if start == "has":
        a = rng.choice(pool.amounts)
        numbers, lines, amount, sentence = [a], [], a, rng.choice(pool.starts["has"]).format(a=a, **words)
    elif start == "groups":
        a, b = rng.choice(pool.factors), rng.choice(pool.amounts)
        numbers, lines, amount = [a, b], [f"{a} x {b} = {a * b}"], a * b
        sentence = rng.choice(pool.starts["groups"]).format(a=a, b=b, **words)
    else:
        a, b = rng.choice(pool.amounts), rng.choice(pool.amounts)
        numbers, lines, amount = [a, b], [f"{a} + {b} = {a + b}"], a + b
        sentence = rng.choice(pool.starts["together"]).format(a=a, b=b, **words)
    sentences = [sentence]
    for step in rest:
        done = _amount_step(step, amount, pool, rng)
        if done is None:
            return None
        b, line, amount = done
        numbers += [b] if b is not None else []
        lines.append(line)
        sentences.append(rng.choice(pool.steps[step]).format(b=b, **words))
    ask = "shares" if chain[-1] == "shares" else "amount"
    sentences.append(rng.choice(pool.questions[ask]).format(**words))
    return {
        "question": " ".join(sentences),
        "answer": "\n".join(lines) + f"\n#### {amount}",
        "kind": ">".join(chain),
        "steps": len(lines),
        "numbers": numbers,
        "value": amount,
    }


def key(row: dict) -> tuple:
    """What makes two problems the same problem whatever their words: the chain and the numbers drawn."""
    return row["kind"], tuple(row["numbers"])


def generate_splits(seed: int, sizes: dict[str, int]) -> dict[str, list[dict]]:
    """{split: rows}: `train` from `TRAIN`, every other split from `HELD_OUT`; one, two and three steps in
    `STEP_SHARES`, the chains of each in turn; no question twice, and no (kind, numbers) pair in two splits (a pair an
    earlier split drew is drawn again).

    >>> splits = generate_splits(0, {"train": 60, "test": 12})
    >>> {key(q) for q in splits["train"]} & {key(q) for q in splits["test"]}
    set()
    """
    rng = random.Random(seed)
    owner, questions, splits = {}, set(), {}
    for split, size in sizes.items():
        pool = TRAIN if split == "train" else HELD_OUT
        counts = {steps: round(size * share) for steps, share in STEP_SHARES.items()}
        counts[1] += size - sum(counts.values())
        rows = []
        for steps, count in counts.items():
            made = 0
            while made < count:
                row = make_problem(rng, pool, CHAINS[steps][made % len(CHAINS[steps])])
                if row is None or row["question"] in questions or owner.get(key(row), split) != split:
                    continue
                owner[key(row)] = split
                questions.add(row["question"])
                rows.append({k: row[k] for k in ("question", "answer", "kind", "steps", "numbers")})
                made += 1
        splits[split] = rows
    return splits
