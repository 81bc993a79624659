"""A study's grid (`make study-<name>`): cells that differ from each other by recipe flags, each trained over seeds
from the same start on the same prompts with the comparison's budget, scored on the same held-out problems (greedy
accuracy and sampled pass@1, 4-bit as trained, studies.comparison.runs.evaluate), with the drift and the checks
each run measured on itself (held-out evaluation at its start and end); every cell against its group's reference
cell on the same problems under the same seeds (core.stats.crossed_difference). Writes summary.json and
settings.json (commit, code digest, CPU); the study writes its README from them.

A cell's flags are the recipe's own command-line flags, so a cell is a command a user can run:
`python -m recipes.grpo --config recipes/configs/tiny/grpo.yaml --beta 0.04`.
"""

import json
import os
import platform
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from core.metrics import numbers_of, read_metrics
from core.provenance import code_digest, commit, cpu
from core.run_dir import library_versions
from core.stats import crossed_difference, over_seeds
from core.tasks import TASKS, load_task_data
from studies.comparison.runs import (
    PREFERENCE_METHODS,
    PROFILES,
    evaluate,
    recipe_command,
    recipe_config,
    run,
    sample_pairs,
)
from studies.comparison.versus import points

# The runs' own held-out evaluation, at their start and end: the drift (KL from the start, entropy, length) and the
# checks (reward hacking, length drift, drift from the start, entropy collapse) of every run.
DRIFT_PROBLEMS = 100


@dataclass(frozen=True)
class Cell:
    """One setting of the grid: `flags` on the `method`'s recipe; `group` names the cells compared with each
    other, `reference` marks the one each is compared with; `prompts` overrides the study's budget (None: the
    study's); `logged` names metrics.jsonl keys averaged over the run (e.g. TRL's frac_reward_zero_std)."""

    name: str
    method: str = "grpo"
    flags: tuple[str, ...] = ()
    group: str = ""
    reference: bool = False
    prompts: int | None = None
    logged: tuple[str, ...] = ()


def check_grid(cells: list[Cell]) -> None:
    """One line for a grid that cannot be compared: repeated names, or a group without exactly one reference."""
    names = [c.name for c in cells]
    if len(set(names)) != len(names):
        raise SystemExit(f"study grid: repeated cell names {sorted({n for n in names if names.count(n) > 1})}")
    for group in dict.fromkeys(c.group for c in cells):
        references = [c.name for c in cells if c.group == group and c.reference]
        if len(references) != 1:
            raise SystemExit(f"study grid: group {group!r} needs exactly one reference cell, has {references}")


def train(profile: str, cell: Cell, seed: int, prompts: int, out: Path, pairs: dict, drift_problems: int) -> dict:
    """One run of `cell` with `seed` in its own process; its record from the run's summary.json and metrics."""
    run_dir = out / f"{cell.name}-seed{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)  # this study's own folder from an earlier run
    pairs_file = None
    if cell.method in PREFERENCE_METHODS:
        key = (seed, cell.prompts or prompts)
        if key not in pairs:
            pairs[key] = sample_pairs(profile, key[1], out, seed)
        pairs_file = pairs[key]
    drift = ("--heldout_task", PROFILES[profile]["task"], "--heldout_limit", str(drift_problems))
    command, steps = recipe_command(
        profile, cell.method, run_dir, seed, cell.prompts or prompts, pairs_file, flags=(*drift, *cell.flags)
    )
    print(f"[study] {cell.name} (seed {seed}) ...", flush=True)
    seconds = run(command, out / f"{cell.name}-seed{seed}.log")
    summary = json.loads((run_dir / "summary.json").read_text())
    verdict = summary.get("verdict") or {}
    drift_numbers = verdict.get("drift") or {}
    rows = read_metrics(run_dir)
    logged = {}
    for key in cell.logged:
        values = numbers_of(rows, key)
        logged[key] = sum(values) / len(values) if values else None
    print(f"[study] {cell.name} (seed {seed}) done in {seconds:.0f} s", flush=True)
    return {
        "cell": cell.name,
        "seed": seed,
        "run_dir": str(run_dir),
        "steps": summary.get("steps", steps),
        "train_seconds": summary.get("train_seconds"),
        "seconds_per_step": summary["train_seconds"] / summary["steps"] if summary.get("steps") else None,
        "peak_memory_mb": summary.get("peak_memory_mb"),
        "kl": drift_numbers.get("kl"),
        "entropy": drift_numbers.get("entropy"),
        "length": drift_numbers.get("length"),
        "clipped": drift_numbers.get("clipped"),
        "checks": [c["name"] for c in verdict.get("checks") or []],
        "logged": logged,
    }


def run_grid(
    study: str,
    profile: str,
    cells: list[Cell],
    seeds: int,
    prompts: int,
    out: Path,
    eval_k: int,
    eval_limit: int | None = None,
    drift_problems: int = DRIFT_PROBLEMS,
):
    """Train every cell with seeds 0..seeds-1, score the base and every adapter on the profile's held-out problems
    (the first `eval_limit`, default the profile's), and write summary.json and settings.json under `out`; returns
    both."""
    check_grid(cells)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    config = recipe_config(profile, "grpo")[1]
    task, temperature = PROFILES[profile]["task"], config["temperature"]
    rows = load_task_data(TASKS[task], None, eval_limit or PROFILES[profile]["eval_limit"])
    pairs, records = {}, []
    for seed in range(seeds):
        records += [train(profile, cell, seed, prompts, out, pairs, drift_problems) for cell in cells]
    base, _ = evaluate(config["model_name_or_path"], None, task, rows, eval_k, temperature)
    scores = {}
    for record in records:
        metrics, samples = evaluate(
            config["model_name_or_path"], Path(record["run_dir"]), task, rows, eval_k, temperature
        )
        with open(out / f"eval_{record['cell']}-seed{record['seed']}.jsonl", "w") as fh:
            fh.writelines(json.dumps(sample) + "\n" for sample in samples)
        scores[(record["cell"], record["seed"])] = metrics
        record |= {
            "sampled_pass1": metrics["sampled"],
            "greedy_accuracy": metrics["greedy"],
            "clipped_share": metrics["clipped_share"],
            "completion_length": metrics["completion_length_mean"],
        }
        print(
            f"[study] {record['cell']}-seed{record['seed']}: greedy {metrics['greedy']:.3f}, sampled pass@1 "
            f"{metrics['sampled']:.3f}",
            flush=True,
        )
    summary = {
        "study": study,
        "base": {"sampled_pass1": base["sampled"], "greedy_accuracy": base["greedy"]},
        "cells": [aggregate(cell, cells, records, scores, seeds) for cell in cells],
        "runs": records,
    }
    settings = {
        "study": study,
        "profile": profile,
        "task": task,
        "prompts": prompts,
        "seeds": seeds,
        "eval_n": len(rows),
        "eval_k": eval_k,
        "temperature": temperature,
        "drift_problems": drift_problems,
        "cells": [asdict(c) for c in cells],
        "machine": platform.platform(),
        "commit": commit(),
        "code_digest": code_digest(),
        **cpu(),
        "cpus": os.cpu_count(),
        "versions": library_versions(),
        "seconds": round(time.time() - start, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    return summary, settings


def aggregate(cell: Cell, cells: list[Cell], records: list[dict], scores: dict, seeds: int) -> dict:
    """A cell over its seeds: means with the seeds' 95% t-intervals, every check that fired in any seed, and the
    difference from its group's reference on the same problems under the same seeds."""
    own = [r for r in records if r["cell"] == cell.name]
    entry = {"cell": cell.name, "method": cell.method, "group": cell.group, "reference": cell.reference}
    entry["flags"] = list(cell.flags)
    for key in ("sampled_pass1", "greedy_accuracy", "kl", "seconds_per_step", "peak_memory_mb", "clipped_share"):
        values = [r[key] for r in own if r.get(key) is not None]
        stats = over_seeds(values) if values else {"mean": None, "sd": None, "ci95": None}
        entry[key], entry[f"{key}_ci95"] = stats["mean"], stats["ci95"]
    for key in ("entropy", "length"):  # [start, end] of each run: the mean end, and the start they share
        ends = [r[key][1] for r in own if r.get(key)]
        entry[f"{key}_end"] = sum(ends) / len(ends) if ends else None
        entry[f"{key}_start"] = own[0][key][0] if own and own[0].get(key) else None
    for key in cell.logged:
        values = [r["logged"][key] for r in own if r["logged"].get(key) is not None]
        entry[key] = sum(values) / len(values) if values else None
    entry["checks"] = sorted({c for r in own for c in r["checks"]})
    reference = next(c for c in cells if c.group == cell.group and c.reference)
    if not cell.reference:
        for metric, key in (("sampled", "sampled_per_problem"), ("greedy", "greedy_per_problem")):
            difference = crossed_difference(
                [scores[(cell.name, s)][key] for s in range(seeds)],
                [scores[(reference.name, s)][key] for s in range(seeds)],
            )
            low, high = difference["ci95"]
            entry[f"{metric}_vs_reference"] = difference | {"excludes_zero": low > 0 or high < 0}
    entry["reference_cell"] = reference.name
    return entry


def pct(value, ci=None) -> str:
    return "n/a" if value is None else f"{value:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")


def table(summary: dict, columns: tuple[tuple[str, str, str], ...] = ()) -> str:
    """The cells' table: held-out sampled pass@1 and greedy accuracy (mean over seeds [seeds' 95%]), each against
    the group's reference in points [seeds x problems 95%], KL from the start, s/step, checks fired; `columns`
    adds (header, key, format) columns."""
    head = "| cell | sampled pass@1 | vs reference | greedy | vs reference | KL from start | s/step |"
    head += "".join(f" {h} |" for h, _, _ in columns) + " checks fired |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    base = summary["base"]
    lines.append(
        f"| base | {pct(base['sampled_pass1'])} |  | {pct(base['greedy_accuracy'])} |  |  |  |"
        + " |" * len(columns)
        + "  |"
    )
    for c in summary["cells"]:
        vs = {m: c.get(f"{m}_vs_reference") for m in ("sampled", "greedy")}
        said = {m: "reference" if c["reference"] else points(v["mean"], v["ci95"]) for m, v in vs.items()}
        extra = "".join(f" {'n/a' if c.get(k) is None else format(c[k], f)} |" for _, k, f in columns)
        lines.append(
            f"| {c['cell']} | {pct(c['sampled_pass1'], c['sampled_pass1_ci95'])} | {said['sampled']} "
            f"| {pct(c['greedy_accuracy'], c['greedy_accuracy_ci95'])} | {said['greedy']} "
            f"| {'n/a' if c['kl'] is None else format(c['kl'], '.3f')} "
            f"| {'n/a' if c['seconds_per_step'] is None else format(c['seconds_per_step'], '.2f')} |{extra}"
            f" {', '.join(c['checks']) or 'none'} |"
        )
    return "\n".join(lines)


def against_reference(summary: dict, metric: str = "sampled") -> list[str]:
    """One sentence per cell that is not its group's reference: better, worse, or not told apart, in points with
    the seeds x problems interval; an order only where the interval excludes zero."""
    name = {"sampled": "sampled pass@1", "greedy": "greedy accuracy"}[metric]
    lines = []
    for c in summary["cells"]:
        row = c.get(f"{metric}_vs_reference")
        if row is None:
            continue
        interval = f"{points(row['mean'], row['ci95'])} points"
        if not row["excludes_zero"]:
            lines.append(f"{c['cell']} and {c['reference_cell']} are not told apart in {name}: {interval}.")
        else:
            verb = "beats" if row["mean"] > 0 else "falls below"
            lines.append(f"{c['cell']} {verb} {c['reference_cell']} in {name}: {interval}.")
    return lines


def plot_against_drift(summary: dict, path: Path) -> None:
    """Held-out sampled pass@1 (mean over seeds, seeds' 95%) against the KL from the start, one marker per cell,
    one line per group: what a coefficient buys in accuracy for what it allows in drift."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for index, group in enumerate(dict.fromkeys(c["group"] for c in summary["cells"])):
        own = [c for c in summary["cells"] if c["group"] == group and c["kl"] is not None]
        ax.errorbar(
            [c["kl"] for c in own],
            [c["sampled_pass1"] for c in own],
            yerr=[
                [c["sampled_pass1"] - (c["sampled_pass1_ci95"] or [c["sampled_pass1"]] * 2)[0] for c in own],
                [(c["sampled_pass1_ci95"] or [c["sampled_pass1"]] * 2)[1] - c["sampled_pass1"] for c in own],
            ],
            marker="o",
            capsize=3,
            color=f"C{index}",
            label=group,
        )
        for c in own:
            ax.annotate(c["cell"].split(" ", 1)[-1], (c["kl"], c["sampled_pass1"]), fontsize=7)
    ax.axhline(summary["base"]["sampled_pass1"], color="grey", linestyle=":", label="base")
    ax.set_xlabel("KL from the start (nats/token, held-out, end of run)")
    ax.set_ylabel("held-out sampled pass@1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
