"""Synthetic function-writing problems in MBPP's column format, for the tiny code world.

Each row has MBPP's columns: `task_id`, `text` ("Write a function `f(x)` that returns x times 3 plus 2."), `code`
(the reference solution), `test_list` (three asserts on inputs the text does not show) and `test_setup_code`
(empty), so `rewards.code.code_tests` and `make eval TASK=mbpp`-style scoring serve both. Five families: arithmetic
on one argument, on two arguments, a comparison, a string and a list operation, each with its own constants.
Train, validation and held-out rows never share a (family, constants) pair.

Training rows also carry a `demonstration`: the answer a fallible teacher wrote, one fenced ```python block, which
with probability `slip_rate` holds the family's plausible slip (a wrong operator, an off-by-one constant, `>=` for
`>`), each caught by at least one test. The SFT warm start imitates the teacher, slips included; the tests
(what rewards and eval check) are always those of the right function.

>>> row = make_problem(random.Random(0), "affine", (3, 2))
>>> row["text"], row["code"]
('Write a function `f(x)` that returns x times 3 plus 2.', 'def f(x):\\n    return x * 3 + 2')
>>> run(row["code"], row["test_list"]), run(slipped_code("affine", (3, 2)), row["test_list"])
(True, False)
"""

import random

# family -> (text template, code template, slipped code template, constant ranges, test input generator)
FAMILIES = {
    "affine": (
        "Write a function `f(x)` that returns x times {0} plus {1}.",
        "def f(x):\n    return x * {0} + {1}",
        "def f(x):\n    return x * {0} - {1}",
        (range(2, 10), range(1, 20)),
    ),
    "two_args": (
        "Write a function `f(a, b)` that returns a times {0} plus b times {1}.",
        "def f(a, b):\n    return a * {0} + b * {1}",
        "def f(a, b):\n    return a * {0} - b * {1}",
        (range(2, 10), range(2, 10)),
    ),
    "compare": (
        "Write a function `f(x)` that returns {0} if x is greater than {1}, otherwise x.",
        "def f(x):\n    if x > {1}:\n        return {0}\n    return x",
        "def f(x):\n    if x >= {1}:\n        return {0}\n    return x",
        (range(0, 10), range(1, 20)),
    ),
    "repeat": (
        "Write a function `f(s)` that returns the string s repeated {0} times.",
        "def f(s):\n    return s * {0}",
        "def f(s):\n    return s * {0} + s",
        (range(2, 8),),
    ),
    "list_sum": (
        "Write a function `f(xs)` that returns the sum of the list xs plus {0}.",
        "def f(xs):\n    return sum(xs) + {0}",
        "def f(xs):\n    return sum(xs) + {0} + 1",
        (range(1, 30),),
    ),
}


def run(code: str, tests: list[str]) -> bool:
    """Whether `code` passes every test, run here: only for the generator's own, trusted reference code."""
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - trusted: the generator's own templates
    try:
        for test in tests:
            exec(test, dict(namespace))  # noqa: S102
    except AssertionError:
        return False
    return True


def slipped_code(family: str, constants: tuple[int, ...]) -> str:
    return FAMILIES[family][2].format(*constants)


def _inputs(family: str, constants: tuple[int, ...], rng: random.Random) -> list:
    if family == "two_args":
        return [(rng.randint(-9, 20), rng.randint(1, 20)) for _ in range(3)]
    if family == "compare":  # the boundary itself catches >= for >
        return [(constants[1],), (constants[1] + rng.randint(1, 9),), (constants[1] - rng.randint(1, 9),)]
    if family == "repeat":
        return [(rng.choice(["ab", "xyz", "q", "hi!"]),) for _ in range(3)]
    if family == "list_sum":
        return [([rng.randint(0, 9) for _ in range(rng.randint(1, 4))],) for _ in range(3)]
    return [(rng.randint(-5, 30),) for _ in range(3)]


def make_problem(rng: random.Random, family: str, constants: tuple[int, ...], slip_rate: float = 0.0) -> dict:
    text, code, _, _ = FAMILIES[family]
    code = code.format(*constants)
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - trusted: the generator's own template
    tests = [
        f"assert f({', '.join(map(repr, args))}) == {namespace['f'](*args)!r}"
        for args in _inputs(family, constants, rng)
    ]
    slipped = rng.random() < slip_rate
    demonstration = slipped_code(family, constants) if slipped else code
    return {
        "text": text.format(*constants),
        "code": code,
        "test_list": tests,
        "test_setup_code": "",
        "family": family,
        "constants": list(constants),
        "slipped": slipped,
        "demonstration": f"```python\n{demonstration}\n```",
    }


def all_pairs() -> list[tuple[str, tuple[int, ...]]]:
    import itertools

    # "returns 5 if x > 5, otherwise x" is the same function with >= : no slip to catch
    return [
        (family, constants)
        for family, spec in FAMILIES.items()
        for constants in itertools.product(*spec[3])
        if not (family == "compare" and constants[0] == constants[1])
    ]


def generate(
    n_train: int, n_validation: int, n_test: int, seed: int = 0, slip_rate: float = 0.0
) -> tuple[list[dict], list[dict], list[dict]]:
    """Train / validation / held-out rows; the splits share no (family, constants) pair. Validation and held-out
    rows carry the right code as their demonstration (they are never imitated)."""
    rng = random.Random(seed)
    pairs = all_pairs()
    rng.shuffle(pairs)
    n_pairs = len(pairs)
    held_out, validation, train = (pairs[: n_pairs // 6], pairs[n_pairs // 6 : n_pairs // 3], pairs[n_pairs // 3 :])

    def rows(pool, n, slips):
        out = [make_problem(rng, *pool[i % len(pool)], slip_rate=slips) for i in range(n)]
        rng.shuffle(out)
        return out

    train_rows = rows(train, n_train, slip_rate)
    validation_rows = rows(validation, n_validation, 0.0)
    test_rows = rows(held_out, n_test, 0.0)
    for split, split_rows in (("train", train_rows), ("validation", validation_rows), ("test", test_rows)):
        for i, row in enumerate(split_rows):
            row["task_id"] = f"tiny-code/{split}/{i}"
    return train_rows, validation_rows, test_rows
