"""Score a JSONL of completions with chosen rewards and say why each got its score.

Usage:
    make score FILE=completions.jsonl REWARDS=math_accuracy,format
    python -m eval.score completions.jsonl --rewards math_accuracy,format

FILE may be .gz/.bz2/.xz compressed. Each line holds a `completion` (string or message list) plus the dataset
columns the rewards need (`answer` for math, `tests`/`setup` for code). This is how to debug a reward on real model
output before a run.
"""

import argparse
import json
from collections import Counter
from pathlib import Path

from core.errors import UserError, one_line_errors
from core.inputs.data import check_data_file, is_missing
from rewards import call_reward, get_reward_funcs, required_columns
from rewards.code import extract_program, require_code_tests, run_row_tests
from rewards.math import check_answers
from rewards.text import completion_text


def explain(name: str, rows: list[dict]) -> list[tuple[float | None, str]]:
    """(score, why) per row; math and code rewards report the extracted answer/program and the verdict."""
    completions = [r["completion"] for r in rows]
    if name == "math_accuracy":
        return [
            (score, f"{reason}: extracted {extracted!r}")
            for score, extracted, reason in check_answers(completions, [r["answer"] for r in rows])
        ]
    if name == "code_tests":
        results = run_row_tests(completions, rows)
        return [
            (
                res.fraction,
                f"{res.passed}/{res.total} tests, {res.status}; program starts "
                f"{extract_program(completion_text(c))[:60]!r}"
                + (f"; stderr {res.stderr[-200:]!r}" if res.stderr else ""),
            )
            for res, c in zip(results, completions, strict=True)
        ]
    (func,) = get_reward_funcs([name])
    columns = {k: [r.get(k) for r in rows] for k in rows[0] if k != "completion"}
    labels = [f"{i} of the file" for i in range(1, len(rows) + 1)]
    return [(score, "") for score in call_reward(func, completions, row_labels=labels, **columns)]


def read_rows(path: str) -> list[dict]:
    """The rows of a JSON-lines file (or a .json array of objects) as distributed, compressed or not, checked as
    training's data is (`core.inputs.data.check_data_file`: UTF-8, JSON, not empty; one line naming the line
    otherwise)."""
    import fsspec

    if not Path(path).is_file():
        raise UserError(f"no file {path}")
    check_data_file(Path(path))
    with fsspec.open(path, "rt", compression="infer") as fh:
        text = fh.read()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # JSON lines
    if isinstance(whole, list) and all(isinstance(row, dict) for row in whole):
        return whole
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_rows(path: str, names: list[str]) -> list[dict]:
    rows = read_rows(path)
    for i, row in enumerate(rows, 1):
        needed = ["completion", *required_columns(names)]
        missing = [c for c in needed if c not in row]
        if missing:
            raise UserError(f"{path}, row {i}: missing key(s) {missing}; has {sorted(row)}")
        empty = [c for c in needed if is_missing(row[c])]
        if empty:
            raise UserError(f"{path}, row {i}: no value for {empty} (null or empty)")
        if not isinstance(row["completion"], str | list):
            raise UserError(
                f"{path}, row {i}: completion is a {type(row['completion']).__name__}, not text or a list of messages"
            )
        if "code_tests" in names:
            try:
                require_code_tests(row, f"{path}, row {i}")
            except ValueError as error:
                raise UserError(str(error)) from error
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rewards", required=True, help="comma-separated reward names or dotted paths")
    one_line_errors()
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.rewards.split(",") if n.strip()]
    try:
        get_reward_funcs(names)  # unknown names fail here, before any work
    except ValueError as error:
        raise UserError(str(error)) from error
    rows = load_rows(args.file, names)
    verdicts = {name: explain(name, rows) for name in names}
    for i, row in enumerate(rows):
        print(f"[{i}] {completion_text(row['completion'])[:80]!r}")
        for name in names:
            score, why = verdicts[name][i]
            print(f"    {name}: {score}" + (f"  ({why})" if why else ""))
    if "math_accuracy" in verdicts:
        unparseable = [i for i, (_, why) in enumerate(verdicts["math_accuracy"]) if why.startswith("unparseable gold")]
        if unparseable:
            examples = ", ".join(f"[{i}] {str(rows[i]['answer'])[:60]!r}" for i in unparseable[:5])
            print(
                f"\nunparseable gold answers: {len(unparseable)} of {len(rows)} (math_accuracy scores them None, "
                f"left out of its mean): {examples}" + (", ..." if len(unparseable) > 5 else "")
            )
    print("\ndistribution:")
    for name in names:
        scores = [s for s, _ in verdicts[name]]
        valid = [s for s in scores if s is not None]
        mean = sum(valid) / len(valid) if valid else float("nan")
        counts = Counter(round(s, 3) if s is not None else None for s in scores)
        print(
            f"  {name}: mean {mean:.3f} over {len(valid)}/{len(scores)}; "
            + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
        )


if __name__ == "__main__":
    main()
