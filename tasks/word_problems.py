"""Word problems in English for a real pretrained model (SmolLM2-135M-Instruct, `make smol`), built to measure
generalisation: the held-out problems share no sentence frame, name, object or number range with training.

Each row has GSM8K's columns: `question`, and `answer` with one worked line a step and `#### <number>`, so the
shipped `math_accuracy` checks them and `make eval` reads them as it reads GSM8K; and `kind` (the chain of steps,
e.g. `has>gets>gives`), `steps` (1 to 3) and `numbers` (every number the generator drew, in order).

A problem is a chain on one amount: a start (someone has some; boxes of so many each; two people's together), then
steps (gets more, gives some away, doubles; sharing equally, last). One, two and three steps in fixed shares.

Two worlds of words and numbers, `TRAIN` and `HELD_OUT` (`Pool`): their own sentence frames for every start, step and
question (paraphrases: present tense against past), their own names and objects, and their own numbers: quantities
13-25 against 2-12, box and sharer counts 4-5 against 2-3. The training and validation splits come from `TRAIN`,
the test split (the held-out set) from `HELD_OUT`, so no held-out problem is a training problem in other words. The
held-out side takes the small numbers because the model computes with them: SmolLM2-135M-Instruct answered 10% of
one-step problems with quantities 13-40 (docs/smol.md).

Why generated and not a subset of a public set: the model needs headroom both ways. SmolLM2-135M-Instruct answers
about one GSM8K problem in fifty (docs/smol.md), so nothing a short CPU run can do would show on GSM8K. Seeded and
licence-free.

>>> row = make_problem(random.Random(0), TRAIN, ("has", "gets"))
>>> row["answer"].rsplit("#### ", 1)[1] == str(row["value"]), row["kind"], row["steps"]
(True, 'has>gets', 1)
"""

import random
from dataclasses import dataclass

# The chains, by how many arithmetic steps they take (a plain start is none; bags of so many, or two people's
# together, one). `shares` only ends a chain: its question asks for one share.
CHAINS = {
    1: [("has", "gets"), ("has", "gives"), ("groups",), ("together",)],
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
STEP_SHARES = {1: 0.7, 2: 0.2, 3: 0.1}
MAX_MISSES = 10_000
# Draws a split spends looking for a problem it does not hold yet before it takes one again in other words.
PREFER_NEW = 200


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
    names=tuple("Ava Ben Cara Dan Eli Fay Gus Ivy Jay Kim Leo Mia Noah Omar Rosa".split()),
    objects=tuple("apples books marbles stickers shells cards pencils cookies stamps coins".split()),
    amounts=range(13, 26),
    factors=range(4, 6),
)

HELD_OUT = Pool(
    starts={
        "has": ("{name} had {a} {things}.", "{name} started with {a} {things}."),
        "groups": (
            "{name} filled {a} boxes with {b} {things} in each box.",
            "{name} made {a} piles of {things}, {b} in every pile.",
        ),
        "together": ("{name} had {a} {things}, and {other} had {b} {things}. {other} gave all of them to {name}.",),
    },
    steps={
        "gets": ("Then {name} found {b} more {things}.", "Later, {other} handed {name} {b} {things}."),
        "gives": ("Then {name} gave away {b} {things}.", "Later, {name} lost {b} of them."),
        "doubles": ("After that, {name} had twice as many {things} as before.",),
        "shares": ("{name} divided the {things} equally into {b} bags.",),
    },
    questions={
        "amount": ("How many {things} does {name} have at the end?", "How many {things} did {name} end up with?"),
        "shares": ("How many {things} went into each bag?",),
    },
    names=tuple("Hana Pablo Zara Tariq Lena Felix Maya Oscar Nina Yusuf Greta Sami".split()),
    objects=tuple("oranges buttons beads crayons tickets walnuts postcards pebbles ribbons dice".split()),
    amounts=range(2, 13),
    factors=range(2, 4),
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
    """{split: rows}: `test` from `HELD_OUT`, every other split from `TRAIN`; one, two and three steps in
    `STEP_SHARES`, the chains of each in turn; no question twice, and in a split no (kind, numbers) pair twice where
    the pool has others (`PREFER_NEW`). The pools' numbers are disjoint, so no (kind, numbers) pair of the test split
    is in another; `validation` is the training world's (tuning measures what training does; the held-out problems
    stay unseen by both).

    >>> splits = generate_splits(0, {"train": 60, "validation": 12, "test": 12})
    >>> {key(q) for q in splits["train"] + splits["validation"]} & {key(q) for q in splits["test"]}
    set()
    """
    rng = random.Random(seed)
    questions, splits = set(), {}
    for split, size in sizes.items():
        pool = HELD_OUT if split == "test" else TRAIN
        counts = {steps: round(size * share) for steps, share in STEP_SHARES.items()}
        counts[1] += size - sum(counts.values())
        rows, drawn = [], set()
        for steps, count in counts.items():
            made, misses = 0, 0
            while made < count:
                chain = CHAINS[steps][made % len(CHAINS[steps])]
                row = make_problem(rng, pool, chain)
                # a problem the split already holds in other words is drawn again while the pool has others
                again = row is not None and key(row) in drawn and misses < PREFER_NEW
                if row is None or row["question"] in questions or again:
                    misses += 1
                    if misses > MAX_MISSES:  # the pool's words and numbers hold no new problem of the chain
                        raise ValueError(f"split {split!r}: no new {'>'.join(chain)} problem in {MAX_MISSES} draws")
                    continue
                drawn.add(key(row))
                questions.add(row["question"])
                rows.append({k: row[k] for k in ("question", "answer", "kind", "steps", "numbers")})
                made, misses = made + 1, 0
        rng.shuffle(rows)  # the first n of a split (a run's held-out limit) hold every kind in its share
        splits[split] = rows
    return splits
