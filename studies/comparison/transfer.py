"""Transfer: a table's final adapters and its starting model, greedy, on problems of another task that none of them
trained on (`--transfer TASK:FILE`; #66: the real model's table on 200 GSM8K train-split problems). Scored once per
model (greedy is the same under every seed), kept per problem in transfer_per_problem.jsonl; summary.json's
"transfer": each method's greedy share over seeds x problems and its seeds x problems difference from the base, one
Holm family of their own: a secondary question, never one of the table's primary claims."""

import json
from dataclasses import dataclass
from pathlib import Path

from core.evaluation.benchmarks import TASKS, load_task_data
from core.report.stats import crossed_difference, crossed_share, one_family
from studies.comparison.versus import adjusted, detectable, points
from tasks.shipped import sha256

SCORES = "transfer_per_problem.jsonl"


@dataclass(frozen=True)
class Transfer:
    """The transfer problems: `task`'s prompt and scoring (core.evaluation.benchmarks.TASKS) on the rows of `file`."""

    task: str
    file: str
    rows: list[dict]
    sha256: str

    def settings(self) -> dict:
        return {"task": self.task, "file": self.file, "sha256": self.sha256, "problems": len(self.rows)}


def plan(spec: str | None, limit: int | None = None) -> Transfer | None:
    """`--transfer TASK:FILE` (the first `limit` rows), checked before any run trains; one line naming the problem.

    >>> plan(None) is None
    True
    >>> plan("gsm8k")
    Traceback (most recent call last):
    SystemExit: --transfer gsm8k: want TASK:FILE (a task of core.evaluation.benchmarks and a JSONL of its problems)
    """
    if spec is None:
        return None
    task, _, file = spec.partition(":")
    if not file:
        raise SystemExit(
            f"--transfer {spec}: want TASK:FILE (a task of core.evaluation.benchmarks and a JSONL of its problems)"
        )
    if task not in TASKS:
        raise SystemExit(f"--transfer {spec}: no task {task!r} (one of {', '.join(sorted(TASKS))})")
    if not Path(file).is_file():
        raise SystemExit(f"--transfer {spec}: no such file {file}")
    rows = load_task_data(TASKS[task], file, limit)
    return Transfer(task, file, rows, sha256(Path(file)))


def score(runs: dict, transfer: Transfer, model_name: str, out: Path, load_in_4bit: bool, resume: bool) -> dict:
    """(method, seed) -> greedy score per transfer problem, the base's as ("base", seed) for every seed the runs
    have (scored once); each model's kept as transfer_<name>.json (read again with `resume` where it scored the same
    file), all of them written to transfer_per_problem.jsonl."""
    from core.evaluation.accuracy import evaluate_model, load_for_eval  # the models' stack, only where one is scored

    asked = {"task": transfer.task, "sha256": transfer.sha256, "n": len(transfer.rows)}

    def greedy(name: str, adapter: Path | None) -> list[float]:
        kept = out / f"transfer_{name}.json"
        before = json.loads(kept.read_text()) if resume and kept.is_file() else None
        if before and before["asked"] == asked:
            print(f"[compare] transfer {name}: scored before, kept ({kept})", flush=True)
            return before["greedy_per_problem"]
        model, tokenizer = load_for_eval(model_name, str(adapter) if adapter else None, load_in_4bit=load_in_4bit)
        metrics, records = evaluate_model(model, tokenizer, transfer.task, transfer.rows)
        scores = [r["score"] for r in records]
        kept.write_text(json.dumps({"asked": asked, "greedy": metrics["accuracy"], "greedy_per_problem": scores}))
        print(f"[compare] transfer {name}: greedy {metrics['accuracy']:.3f} on {transfer.task}", flush=True)
        return scores

    base = greedy("base", None)
    scores = {("base", seed): base for seed in sorted({seed for _, seed in runs})}
    scores |= {key: greedy(f"{key[0]}-seed{key[1]}", adapter) for key, adapter in runs.items()}
    lines = [
        {"method": method, "seed": seed, "problem": i, "greedy": value}
        for (method, seed), values in scores.items()
        for i, value in enumerate(values)
    ]
    (out / SCORES).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return scores


def read(out: Path) -> dict:
    """transfer_per_problem.jsonl: (method, seed) -> greedy scores in problem order."""
    scores = {}
    for line in (out / SCORES).read_text().splitlines():
        row = json.loads(line)
        scores.setdefault((row["method"], row["seed"]), []).append(row["greedy"])
    return scores


def summarise(scores: dict, methods: list[str], settings: dict) -> dict:
    """summary.json's "transfer": the base's and each method's greedy share over seeds x problems, and each method
    against the base (seeds x problems, the base's greedy repeated under every seed), one Holm family."""
    seeds = sorted(seed for method, seed in scores if method == "base")
    trained = [m for m in methods if all((m, s) in scores for s in seeds)]
    shares = {m: crossed_share([scores[(m, s)] for s in seeds]) for m in ["base", *trained]}
    rows = []
    for method in trained:
        difference = crossed_difference([scores[(method, s)] for s in seeds], [scores[("base", s)] for s in seeds])
        rows.append({"a": method, "b": "base", "metric": "greedy", **difference, "seeds": seeds})
    return {**settings, "shares": shares, "against_base": one_family(rows) if rows else []}


def section(transfer: dict) -> str:
    """The README part: each model's greedy accuracy on the transfer problems and each method against the base."""
    n_seeds = len(transfer["against_base"][0]["seeds"]) if transfer["against_base"] else 1
    lines = [
        f"Greedy accuracy on {transfer['problems']} problems of `{transfer['task']}` (`{transfer['file']}`), which no "
        f"model trained on: the base and each method's final adapters ({n_seeds} seeds), each method against the "
        "base over seeds x problems, Holm over these differences alone (secondary).",
        "",
        "| model | greedy | vs base | Holm p | claimed | detectable |",
        "|---|---|---|---|---|---|",
    ]
    base = transfer["shares"]["base"]
    lines.append(f"| base | {base['mean']:.1%} |  |  |  |  |")
    for row in transfer["against_base"]:
        share = transfer["shares"][row["a"]]
        seen = "" if row["detectable"] is None else detectable(row["detectable"])
        lines.append(
            f"| {row['a']} | {share['mean']:.1%} [{share['ci95'][0]:.1%}, {share['ci95'][1]:.1%}] "
            f"| {points(row['mean'], row['ci95'])} | {adjusted(row['p_holm'])} | {'yes' if row['claimed'] else 'no'} "
            f"| {seen} |"
        )
    return "\n".join(lines)
