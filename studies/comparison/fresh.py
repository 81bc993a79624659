"""Held-out problems no run has scored, for the reruns that #64's pre-registration names
(results/compare/preregistration.json): drawn from the tiny worlds' own generators, disjoint from every split the
world was built, tuned and evaluated with, written in the world's held-out format with their SHA-256.

    python -m studies.comparison.fresh --world tiny --out results/compare/fresh/tiny.jsonl
    python -m studies.comparison.fresh --world tiny-code --out results/compare/fresh/tiny-code.jsonl

- The math world (tasks/arithmetic.py): sums whose (a, b) pair is in none of its train, validation and held-out
  splits (4,400 of the 8,100 two-digit pairs), phrased by its own templates.
- The code world (tasks/code.py): every (family, constants) pair of its grid is already in train, validation or
  held-out, so the fresh functions take constants just past the grid (`FRESH_RANGES`): the same families, templates
  and test inputs, new functions. An extrapolation in the constants the prompts name; their form is unchanged."""

import argparse
import hashlib
import itertools
import json
import random
from pathlib import Path

from tasks import arithmetic, code

SEED = 64  # the number: not a seed any world, sweep or table drew with
PROBLEMS = 200  # as many as the held-out split each table scored
# Per family, constants just past the ranges the code world's grid took (tasks/code.py FAMILIES).
FRESH_RANGES = {
    "affine": (range(10, 13), range(20, 26)),
    "two_args": (range(10, 13), range(10, 13)),
    "compare": (range(10, 13), range(20, 26)),
    "repeat": (range(8, 10),),
    "list_sum": (range(30, 40),),
}


def used_sums(data: Path) -> set[tuple[int, int]]:
    """The (a, b) pairs of every split of a math world (each answer opens with `a+b.`)."""
    pairs = set()
    for split in ("train", "validation", "test"):
        for line in (data / f"{split}.jsonl").read_text().splitlines():
            a, b = json.loads(line)["answer"].split(".", 1)[0].split("+")
            pairs.add((int(a), int(b)))
    return pairs


def fresh_sums(data: Path, n: int = PROBLEMS, seed: int = SEED) -> list[dict]:
    """`n` sums in the math world's held-out format, none of whose (a, b) pairs any split of the world holds.

    >>> import tempfile
    >>> data = Path(tempfile.mkdtemp())
    >>> for split in ("train", "validation", "test"):
    ...     _ = (data / f"{split}.jsonl").write_text(json.dumps({"answer": "12+34. ..."}) + "\\n")
    >>> rows = fresh_sums(data, n=3)
    >>> len(rows), sorted(rows[0]), any(r["answer"].startswith("12+34.") for r in rows)
    (3, ['answer', 'question'], False)
    """
    used, rng, rows = used_sums(data), random.Random(seed), []
    while len(rows) < n:
        row = arithmetic.make_problem(rng)
        if (row["a"], row["b"]) not in used:
            used.add((row["a"], row["b"]))
            rows.append({"question": row["question"], "answer": row["answer"]})
    return rows


def fresh_functions(n: int = PROBLEMS, seed: int = SEED) -> list[dict]:
    """`n` function-writing problems in the code world's held-out format, on constants past its grid, every fresh
    (family, constants) pair used before any is used twice.

    >>> rows = fresh_functions(n=2)
    >>> sorted(rows[0]), all(code.run(r["code"], r["test_list"]) for r in rows)
    (['code', 'task_id', 'test_list', 'test_setup_code', 'text'], True)
    """
    rng = random.Random(seed)
    pairs = [(family, c) for family, ranges in FRESH_RANGES.items() for c in itertools.product(*ranges)]
    rng.shuffle(pairs)
    rows = []
    for i in range(n):
        row = code.make_problem(rng, *pairs[i % len(pairs)])
        keep = {key: row[key] for key in ("text", "code", "test_list", "test_setup_code")}
        rows.append({"task_id": f"tiny-code/fresh/{i}", **keep})
    return rows


def write(rows: list[dict], out: Path) -> str:
    """The rows as JSONL at `out`; returns the file's SHA-256."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    out.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", choices=("tiny", "tiny-code"), required=True)
    parser.add_argument("--data", help="the world's data folder (default artifacts/<world>/data)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.world == "tiny":
        rows = fresh_sums(Path(args.data or "artifacts/tiny/data"))
    else:
        rows = fresh_functions()
    digest = write(rows, Path(args.out))
    print(f"{args.out}: {len(rows)} problems, sha256 {digest}")
    return digest


if __name__ == "__main__":
    main()
