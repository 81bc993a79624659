"""Held-out accuracy at matched compute: GRPO, PPO and DPO each read at the checkpoint where it had spent no more CPU
seconds than the cheapest of the three spent on its whole run, so that one method's longer run does not pass for a
better method.

Compute is CPU seconds (user + system, both cores, the sandbox's programs included): of training, as each checkpoint
recorded it (checkpoints.jsonl), plus, for DPO, the sampling of its pairs before training (as recipes.pairs counted
it; neither counts its process's imports and model load). The budget is the most
any seed of the cheapest method (by that measure) spent on its whole run, so all its seeds end within it; each
other method's seed is read at its last checkpoint within the budget (its runs save one at every quarter), or as
the starting model where even its first checkpoint came later (it had nothing trained to show by then). Every
chosen checkpoint is scored on the same held-out problems as the table, greedy and sampled under its seed, and the
differences (each against the base, each pair) are the table's seeds x problems intervals in a Holm family of their
own: a descriptive part, not among the pre-registered contrasts.

Writes matched.json (the budget and each run's checkpoint) and matched_per_problem.jsonl (the chosen models'
per-problem scores, per_problem.jsonl's format) beside the table; summary.json's "matched" is computed from them."""

import json
from pathlib import Path

import yaml

from core.inputs.data import pairs_cost
from core.runs.folder import read_jsonl
from studies.comparison.inference import infer
from studies.comparison.scores import read_scores, score_lines, write_scores
from studies.comparison.versus import markdown
from studies.runner import PREFERENCE_METHODS
from studies.scoring import Scoring

MATCHED = ("grpo", "ppo", "dpo")
CHOICES = "matched.json"
SCORES = "matched_per_problem.jsonl"


def spent(run_dir: Path, method: str) -> list[dict]:
    """The run's checkpoints in order: {"step", "cpu_seconds" (training, plus DPO's pair sampling), "checkpoint"};
    the last is the finished run (its adapter in the run folder). Empty for a run whose checkpoints recorded no CPU
    seconds (older runs)."""
    pairs = 0.0
    if method in PREFERENCE_METHODS:  # its compute began with sampling its pairs
        dataset = yaml.safe_load((run_dir / "config.yaml").read_text())["dataset_name"]
        sampled = json.loads(pairs_cost(Path(dataset)).read_text())
        pairs = sampled.get("sampling_cpu_seconds", sampled["cpu_seconds"])  # as the table's cpu_seconds counts it
    saved = read_jsonl(run_dir / "checkpoints.jsonl")
    if not saved or any("cpu_seconds" not in row for row in saved):
        return []
    cost = json.loads((run_dir / "cost.json").read_text())
    points = [
        {"step": row["step"], "cpu_seconds": pairs + row["cpu_seconds"], "checkpoint": f"checkpoint-{row['step']}"}
        for row in saved
        if row["step"] < cost["train_steps"]
    ]
    # the finished run: its own adapter and its whole training's CPU seconds
    points.append(
        {"step": cost["train_steps"], "cpu_seconds": pairs + cost["cpu_seconds_training"], "checkpoint": "."}
    )
    return points


def budget(points: dict) -> tuple[float, str]:
    """(CPU seconds, method): the most any seed of the cheapest method spent on its whole run.

    >>> runs = {("grpo", 0): [{"cpu_seconds": 90.0}], ("grpo", 1): [{"cpu_seconds": 110.0}],
    ...         ("dpo", 0): [{"cpu_seconds": 100.0}], ("dpo", 1): [{"cpu_seconds": 105.0}]}
    >>> budget(runs)
    (105.0, 'dpo')
    """
    most = {}
    for (method, _), run in points.items():
        most[method] = max(most.get(method, 0.0), run[-1]["cpu_seconds"])
    method = min(most, key=most.get)
    return most[method], method


def choose(run: list[dict], limit: float) -> dict | None:
    """The last point of `run` within `limit` CPU seconds, or None where even the first came later.

    >>> run = [{"step": 5, "cpu_seconds": 30.0}, {"step": 10, "cpu_seconds": 61.0}, {"step": 20, "cpu_seconds": 120.0}]
    >>> choose(run, 60.0)["step"], choose(run, 120.0)["step"], choose(run, 20.0)
    (5, 20, None)
    """
    within = [point for point in run if point["cpu_seconds"] <= limit]
    return within[-1] if within else None


def choices(runs: dict) -> dict | None:
    """matched.json's content for `runs` ((method, seed) -> run folder), or None where fewer than two of MATCHED
    ran or a run's checkpoints recorded no CPU seconds."""
    points = {key: spent(run_dir, key[0]) for key, run_dir in runs.items() if key[0] in MATCHED}
    if len({method for method, _ in points}) < 2 or not all(points.values()):
        return None
    limit, cheapest = budget(points)
    chosen = []
    for (method, seed), run in sorted(points.items()):
        point = choose(run, limit)
        chosen.append(
            {
                "method": method,
                "seed": seed,
                "step": point["step"] if point else 0,
                "of_steps": run[-1]["step"],
                "cpu_seconds": point["cpu_seconds"] if point else None,
                "run_cpu_seconds": run[-1]["cpu_seconds"],
                # "." the run's own final adapter, None the starting model (nothing trained within the budget)
                "checkpoint": point["checkpoint"] if point else None,
            }
        )
    return {"cpu_seconds": limit, "cheapest": cheapest, "runs": chosen}


def adapter_of(row: dict, runs: dict) -> Path | None:
    if row["checkpoint"] is None:
        return None
    run_dir = runs[(row["method"], row["seed"])]
    return run_dir if row["checkpoint"] == "." else run_dir / row["checkpoint"]


def write(out: Path, chosen: dict, evals: dict, k: int) -> None:
    """matched.json and matched_per_problem.jsonl, from `chosen` and the chosen models' evaluations."""
    (out / CHOICES).write_text(json.dumps(chosen, indent=2) + "\n")
    write_scores(out, score_lines(evals, k), SCORES)


def read(out: Path, base_scores: dict) -> dict | None:
    """summary.json's "matched": the budget, each run's checkpoint and the family's statistics, from the folder's
    matched.json and matched_per_problem.jsonl with the table's base scores; None where the table has none."""
    if not (out / CHOICES).is_file():
        return None
    chosen = json.loads((out / CHOICES).read_text())
    scores = read_scores(out, SCORES) | {key: value for key, value in base_scores.items() if key[0] == "base"}
    methods = [m for m in MATCHED if any(r["method"] == m for r in chosen["runs"])]
    return {**chosen, "family": "of its own (Holm within), descriptive: not pre-registered", **infer(scores, methods)}


def evaluate_chosen(chosen: dict, runs: dict, evals: dict, scoring: Scoring) -> dict:
    """(method, seed) -> the chosen model's held-out evaluation: a finished run's and the starting model's are the
    table's own (`evals`), a checkpoint's is scored here as `scoring` says (greedy, and sampled under its seed) and
    kept as eval_matched_<method>-seed<k>.json (with `resume`, read again where it scored the same checkpoint)."""
    results = {}
    for row in chosen["runs"]:
        key = (row["method"], row["seed"])
        if row["checkpoint"] in (None, "."):
            results[key] = evals[("base", row["seed"]) if row["checkpoint"] is None else key]
            continue
        name, step = f"matched_{row['method']}-seed{row['seed']}", {"step": row["step"]}
        results[key] = scoring.kept(name, step, with_records=False)
        if results[key]:
            continue
        results[key] = scoring.score(name, adapter_of(row, runs), row["seed"], also=step, with_records=False)[0]
        print(
            f"[compare] {row['method']}-seed{row['seed']} at step {row['step']} of {row['of_steps']} "
            f"({row['cpu_seconds']:.0f} CPU s): greedy {results[key]['greedy']:.3f}, "
            f"sampled pass@1 {results[key]['sampled']:.3f}",
            flush=True,
        )
    return results


def section(at_budget: dict) -> str:
    """The README's and summary.md's part at matched compute, from summary.json's "matched".

    >>> share = {"sampled": {"mean": 0.5, "ci95": [0.4, 0.6]}, "greedy": {"mean": 0.4, "ci95": [0.3, 0.5]}}
    >>> runs = [{"method": "grpo", "seed": 2, "step": 30, "of_steps": 40, "cpu_seconds": 98.0, "checkpoint": "c"},
    ...         {"method": "dpo", "seed": 2, "step": 40, "of_steps": 40, "cpu_seconds": 99.5, "checkpoint": "."},
    ...         {"method": "ppo", "seed": 2, "step": 0, "of_steps": 40, "cpu_seconds": None, "checkpoint": None}]
    >>> at = {"cpu_seconds": 99.5, "cheapest": "dpo", "runs": runs, "against_base": [], "versus": [],
    ...       "shares": {"base": share, "grpo": share, "dpo": share, "ppo": share}}
    >>> print(section(at))  # doctest: +NORMALIZE_WHITESPACE
    ## At matched compute
    <BLANKLINE>
    Held-out accuracy of GRPO, PPO and DPO at 100 CPU seconds, the most any seed of dpo spent on its whole run (DPO's
    pair sampling counted): each seed read at its last checkpoint within it (a checkpoint every quarter of a run), the
    starting model where none was; seeds x problems, 95% intervals.
    <BLANKLINE>
    | method | step of its run, per seed | CPU seconds, mean | sampled pass@1 | greedy accuracy |
    |---|---|---|---|---|
    | base | | 0 | 50.0% [40.0%, 60.0%] | 40.0% [30.0%, 50.0%] |
    | grpo | 30/40 | 98 | 50.0% [40.0%, 60.0%] | 40.0% [30.0%, 50.0%] |
    | ppo | none in budget | 0 | 50.0% [40.0%, 60.0%] | 40.0% [30.0%, 50.0%] |
    | dpo | 40/40 | 100 | 50.0% [40.0%, 60.0%] | 40.0% [30.0%, 50.0%] |
    """
    runs = at_budget["runs"]

    def share(method: str, metric: str) -> str:
        entry = at_budget["shares"][method][metric]
        low, high = entry["ci95"]
        return f"{entry['mean']:.1%} [{low:.1%}, {high:.1%}]"

    lines = [
        "## At matched compute",
        "",
        f"Held-out accuracy of GRPO, PPO and DPO at {at_budget['cpu_seconds']:.0f} CPU seconds, the most any seed of "
        f"{at_budget['cheapest']} spent on its whole run (DPO's pair sampling counted): each seed read at its last "
        "checkpoint within it (a checkpoint every quarter of a run), the starting model where none was; seeds x "
        "problems, 95% intervals.",
        "",
        "| method | step of its run, per seed | CPU seconds, mean | sampled pass@1 | greedy accuracy |",
        "|---|---|---|---|---|",
        f"| base | | 0 | {share('base', 'sampled')} | {share('base', 'greedy')} |",
    ]
    for method in MATCHED:
        own = [r for r in runs if r["method"] == method]
        if not own:
            continue
        steps = ", ".join(f"{r['step']}/{r['of_steps']}" if r["checkpoint"] else "none in budget" for r in own)
        seconds = sum(r["cpu_seconds"] or 0.0 for r in own) / len(own)
        lines.append(
            f"| {method} | {steps} | {seconds:.0f} | {share(method, 'sampled')} | {share(method, 'greedy')} |"
        )
    family = "this part's own family (each against the base and each pair, both metrics; not pre-registered)"
    for title, rows in (
        ("### Against the base", at_budget["against_base"]),
        ("### Method against method", at_budget["versus"]),
    ):
        if rows:
            lines += ["", *markdown(rows, title, family)]
    return "\n".join(lines)


def score(runs: dict, evals: dict, scoring: Scoring) -> dict | None:
    """A table's rows at matched compute: the checkpoints chosen, scored and written beside it (`write`); None,
    and nothing written, where `choices` finds none."""
    chosen = choices(runs)
    if chosen:
        write(scoring.out, chosen, evaluate_chosen(chosen, runs, evals, scoring), scoring.k)
    return chosen
