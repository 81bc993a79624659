"""A study's grid (`make study-<name>`): cells that differ from each other by recipe flags, each trained over seeds
from the same start on the same prompts with the comparison's budget, scored on the same held-out problems (greedy
accuracy and sampled pass@1 in the precision trained in, studies.scoring.evaluate), with the drift and the
checks each run measured on itself (held-out evaluation at its start and end); every cell against its group's reference
cell on the same problems under the same seeds (core.report.stats.crossed_difference). Writes summary.json,
settings.json (commit, code digest, CPU) and per_problem.jsonl (every score behind them, the comparison's format:
--report computes each difference again from it); the study writes its README from them.

A cell's flags are the recipe's own command-line flags, so a cell is a command a user can run:
`python -m recipes.grpo --config recipes/configs/tiny/grpo.yaml --beta 0.04`.
"""

import argparse
import json
import os
import platform
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from core.errors import one_line_errors
from core.evaluation.benchmarks import TASKS, load_task_data
from core.report.stats import crossed_difference, over_seeds
from core.runs.folder import library_versions
from core.runs.metrics import numbers_of, read_metrics
from core.runs.provenance import code_digest, commit, cpu
from studies.comparison.scores import NAME as SCORES
from studies.comparison.scores import read_scores, score_lines, write_scores
from studies.grid.rules import differences_from_scores, under_the_rules
from studies.runner import (
    PREFERENCE_METHODS,
    PROFILES,
    add_precision_argument,
    precision_flags,
    recipe_command,
    recipe_config,
    resolve_load_in_4bit,
    run,
    sample_pairs,
)
from studies.scoring import evaluate

# The runs' own held-out evaluation, at their start and end: the drift (KL from the start, entropy, length) and the
# checks (reward hacking, no held-out gain, held-out fell, length drift, drift from the start, entropy collapse) of
# every run.
DRIFT_PROBLEMS = 100


@dataclass(frozen=True)
class Cell:
    """One setting of the grid: `flags` on the `method`'s recipe; `against` names the cell it is compared with
    (None: it is a reference); `group` names the cells drawn and read together; `prompts` overrides the study's
    budget (None: the study's); `logged` names metrics.jsonl keys kept per run (mean over the run, and the means of
    its first and last quarter of logged steps: e.g. TRL's frac_reward_zero_std, completion lengths)."""

    name: str
    method: str = "grpo"
    flags: tuple[str, ...] = ()
    group: str = ""
    against: str | None = None
    prompts: int | None = None
    logged: tuple[str, ...] = ()
    rounds: int = 1  # preference methods: >1 re-samples pairs from the current adapter each round (iterative DPO)

    @property
    def reference(self) -> bool:
        return self.against is None


def check_grid(cells: list[Cell]) -> None:
    """One line for a grid that cannot be compared: repeated names, or a cell compared with one that is not in the
    grid (or with itself)."""
    names = [c.name for c in cells]
    if len(set(names)) != len(names):
        raise SystemExit(f"study grid: repeated cell names {sorted({n for n in names if names.count(n) > 1})}")
    for cell in cells:
        if not cell.reference and (cell.against not in names or cell.against == cell.name):
            raise SystemExit(
                f"study grid: cell {cell.name!r} is compared with {cell.against!r}, which is not another cell of "
                f"the grid ({names})"
            )


def quarters(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """The mean of `values`, of their first quarter and of their last quarter (at least one value each)."""
    if not values:
        return None, None, None
    n = max(1, len(values) // 4)
    return sum(values) / len(values), sum(values[:n]) / n, sum(values[-n:]) / n


def train(
    profile: str, cell: Cell, seed: int, prompts: int, out: Path, pairs: dict, drift_problems: int, precision=()
) -> dict:
    """One run of `cell` with `seed`, each recipe in its own process; its record from the run's summary.json and
    metrics. A preference cell with rounds > 1 trains round by round (`train_rounds`). `precision`: the flags that
    every recipe of the study gets (`precision_flags`), pair sampling included."""
    run_dir = out / f"{cell.name}-seed{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)  # this study's own folder from an earlier run
    drift = ("--heldout_task", PROFILES[profile]["task"], "--heldout_limit", str(drift_problems), *precision)
    prompts = cell.prompts or prompts
    print(f"[study] {cell.name} (seed {seed}) ...", flush=True)
    start = time.time()
    if cell.method in PREFERENCE_METHODS and cell.rounds > 1:
        run_dir, steps, extra = train_rounds(profile, cell, seed, prompts, out, pairs, drift, precision)
    else:
        pairs_file, extra = None, {}
        if cell.method in PREFERENCE_METHODS:
            pairs_file = offline_pairs(profile, seed, prompts, out, pairs, precision)
            extra = {"pairs": pairs[(seed, prompts)][1], "pairs_sampled_by": "the start model, once"}
        command, steps = recipe_command(
            profile, cell.method, run_dir, seed, prompts, pairs_file, flags=(*drift, *cell.flags)
        )
        run(command, out / f"{cell.name}-seed{seed}.log")
    summary = json.loads((run_dir / "summary.json").read_text())
    verdict = summary.get("verdict") or {}
    drift_numbers = verdict.get("drift") or {}
    rows = read_metrics(run_dir)
    logged = {key: quarters(numbers_of(rows, key)) for key in cell.logged}
    print(f"[study] {cell.name} (seed {seed}) done in {time.time() - start:.0f} s", flush=True)
    if cell.rounds > 1:  # the last round measured its start after the earlier rounds: only its end is the run's
        extra |= {k: [None, drift_numbers[k][1]] for k in ("entropy", "length", "clipped") if drift_numbers.get(k)}
    train_seconds = extra.pop("train_seconds", summary.get("train_seconds"))
    steps = extra.pop("steps", summary.get("steps", steps))
    return {
        "cell": cell.name,
        "seed": seed,
        "run_dir": str(run_dir),
        "steps": steps,
        "train_seconds": train_seconds,
        "seconds_per_step": train_seconds / steps if train_seconds and steps else None,
        "peak_memory_mb": summary.get("peak_memory_mb"),
        "kl": drift_numbers.get("kl"),
        "entropy": drift_numbers.get("entropy"),
        "length": drift_numbers.get("length"),
        "clipped": drift_numbers.get("clipped"),
        "checks": [c["name"] for c in verdict.get("checks") or []],
        "logged": logged,  # key -> [run mean, first quarter, last quarter]
        **extra,
    }


def offline_pairs(profile: str, seed: int, prompts: int, out: Path, pairs: dict, precision=()) -> Path:
    """The pairs sampled once from the start model on the first `prompts` prompts (shared by every offline cell of
    this seed); `pairs` maps (seed, prompts) -> (file, pairs in it)."""
    key = (seed, prompts)
    if key not in pairs:
        path = sample_pairs(profile, prompts, out, seed, flags=precision)
        pairs[key] = (path, sum(1 for _ in open(path)))
    return pairs[key][0]


def train_rounds(
    profile: str, cell: Cell, seed: int, prompts: int, out: Path, pairs: dict, drift, precision=()
) -> tuple:
    """Iterative (on-policy) preference training: in each of `cell.rounds` rounds, sample pairs from the current
    policy (the start model, then the last round's adapter) on the next prompts/rounds prompts, as many completions
    as the offline cells sampled in all, and train one epoch on at most the offline pairs/rounds of them, going on
    from the last round's adapter (TRL takes a frozen copy of it as the reference). The held-out evaluation runs in
    the last round: its KL is from the start model (the adapters off), its checks compare that round's start and
    end. Returns the last round's folder, the steps and the extra record."""
    per_round = prompts // cell.rounds
    offline_pairs(profile, seed, prompts, out, pairs, precision)
    budget = pairs[(seed, prompts)][1]
    cap = max(1, -(-budget // cell.rounds))  # the offline cells' pairs, shared out over the rounds
    adapter, steps, seconds, used = None, 0, 0.0, []
    for index in range(cell.rounds):
        round_dir = out / f"{cell.name}-seed{seed}" / f"round{index + 1}"
        name = f"{cell.name}-round{index + 1}-pairs"
        skip = index * per_round
        pairs_file = sample_pairs(profile, per_round, out, seed, adapter, skip=skip, name=name, flags=precision)
        kept = min(cap, sum(1 for _ in open(pairs_file)))
        flags = ("--max_train_samples", str(kept), *(("--init_adapter", str(adapter)) if adapter else ()))
        last = index == cell.rounds - 1
        flags += (*(drift if last else ("--heldout_limit", "0", *precision)), *cell.flags)
        command, _ = recipe_command(profile, cell.method, round_dir, seed, per_round, pairs_file, flags=flags)
        run(command, out / f"{cell.name}-seed{seed}-round{index + 1}.log")
        summary = json.loads((round_dir / "summary.json").read_text())
        steps += summary.get("steps") or 0
        seconds += summary.get("train_seconds") or 0.0
        used.append(kept)
        adapter = round_dir
    extra = {"train_seconds": seconds, "steps": steps, "pairs": sum(used), "pairs_per_round": used}
    return adapter, steps, extra | {"pairs_sampled_by": "the current policy, each round"}


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
    extra: dict | None = None,
    load_in_4bit: str | None = None,
):
    """Train every cell with seeds 0..seeds-1, score the base and every adapter on the profile's held-out problems
    (the first `eval_limit`, default the profile's), and write summary.json (with the study's `extra` keys) and
    settings.json under `out`; returns both. `load_in_4bit` ("true" or "false", as `--load_in_4bit` takes it):
    train, sample and score in 4-bit NF4 or full precision (default: the profile's configs)."""
    check_grid(cells)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    config = recipe_config(profile, "grpo")[1]
    task, temperature = PROFILES[profile]["task"], config["temperature"]
    in_4bit = resolve_load_in_4bit(profile, load_in_4bit)
    precision = precision_flags(in_4bit)
    rows = load_task_data(TASKS[task], None, eval_limit or PROFILES[profile]["eval_limit"])
    pairs, records = {}, []
    for seed in range(seeds):
        records += [train(profile, cell, seed, prompts, out, pairs, drift_problems, precision) for cell in cells]
    model_name = config["model_name_or_path"]
    base, _ = evaluate(model_name, None, task, rows, eval_k, temperature, load_in_4bit=in_4bit)
    scores = {}
    for record in records:
        run_dir = Path(record["run_dir"])
        metrics, samples = evaluate(model_name, run_dir, task, rows, eval_k, temperature, load_in_4bit=in_4bit)
        with open(out / f"eval_{record['cell']}-seed{record['seed']}.jsonl", "w") as fh:
            fh.writelines(json.dumps(sample) + "\n" for sample in samples)
        scores[(record["cell"], record["seed"])] = metrics
        record |= {
            "sampled_pass1": metrics["sampled"],
            "greedy_accuracy": metrics["greedy"],
            "clipped_share": metrics["clipped_share"],
            "completion_length": metrics["completion_length_mean"],
            "length_passed": metrics["length_passed"],
            "length_failed": metrics["length_failed"],
        }
        print(
            f"[study] {record['cell']}-seed{record['seed']}: greedy {metrics['greedy']:.3f}, sampled pass@1 "
            f"{metrics['sampled']:.3f}",
            flush=True,
        )
    # every score behind the study's numbers, in the comparison's format (the base scored once, as seed 0)
    write_scores(out, score_lines({("base", 0): base} | scores, eval_k))
    summary = {
        "study": study,
        "base": {"sampled_pass1": base["sampled"], "greedy_accuracy": base["greedy"]},
        "cells": [aggregate(cell, records, scores, seeds) for cell in cells],
        "runs": records,
    } | (extra or {})
    settings = {
        "study": study,
        "profile": profile,
        "task": task,
        "prompts": prompts,
        "seeds": seeds,
        "eval_n": len(rows),
        "eval_k": eval_k,
        "temperature": temperature,
        "load_in_4bit": in_4bit,
        "drift_problems": drift_problems,
        "cells": [asdict(c) for c in cells],
        "machine": platform.platform(),
        "commit": commit(),
        "code_digest": code_digest(),
        **cpu(),
        "cpus": os.cpu_count(),
        # a study may run beside another, each on fewer threads: its seconds compare within it, not across studies
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "versions": library_versions(),
        "seconds": round(time.time() - start, 1),
    }
    summary = under_the_rules(summary, settings)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    return summary, settings


def aggregate(cell: Cell, records: list[dict], scores: dict, seeds: int) -> dict:
    """A cell over its seeds: means with the seeds' 95% t-intervals, every check that fired in any seed, and the
    difference from the cell it is compared with, on the same problems under the same seeds."""
    own = [r for r in records if r["cell"] == cell.name]
    entry = {"cell": cell.name, "method": cell.method, "group": cell.group, "reference": cell.reference}
    entry["flags"] = list(cell.flags)
    for key in (
        "sampled_pass1",
        "greedy_accuracy",
        "kl",
        "seconds_per_step",
        "peak_memory_mb",
        "clipped_share",
        "length_passed",
        "length_failed",
        "pairs",
    ):
        values = [r[key] for r in own if r.get(key) is not None]
        stats = over_seeds(values) if values else {"mean": None, "sd": None, "ci95": None}
        entry[key], entry[f"{key}_ci95"] = stats["mean"], stats["ci95"]
    for key in ("entropy", "length"):  # [start, end] of each run: the mean end, and the start they share
        ends = [r[key][1] for r in own if r.get(key)]
        entry[f"{key}_end"] = sum(ends) / len(ends) if ends else None
        entry[f"{key}_start"] = own[0][key][0] if own and own[0].get(key) else None
    for key in cell.logged:  # the run's mean, and its first and last quarter, averaged over seeds
        for index, suffix in enumerate(("", "_first_quarter", "_last_quarter")):
            values = [
                r["logged"][key][index] for r in own if r["logged"].get(key) and r["logged"][key][index] is not None
            ]
            entry[key + suffix] = sum(values) / len(values) if values else None
    entry["checks"] = sorted({c for r in own for c in r["checks"]})
    if not cell.reference:
        for metric, key in (("sampled", "sampled_per_problem"), ("greedy", "greedy_per_problem")):
            difference = crossed_difference(
                [scores[(cell.name, s)][key] for s in range(seeds)],
                [scores[(cell.against, s)][key] for s in range(seeds)],
            )
            low, high = difference["ci95"]
            entry[f"{metric}_vs_reference"] = difference | {"excludes_zero": low > 0 or high < 0}
    entry["reference_cell"] = cell.against
    return entry


def study_arguments(doc: str, seeds: int = 3) -> argparse.ArgumentParser:
    """Every study's command line: the profile, seeds, the held-out budget, a subset of cells, the output folder,
    and --report (rewrite the README and plots from the JSON, without training)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny", choices=sorted(PROFILES))
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--prompts", type=int, help="training prompts per run (the study's)")
    parser.add_argument("--eval_k", type=int, help="samples per held-out problem (the profile's)")
    parser.add_argument("--eval_limit", type=int, help="held-out problems (the profile's)")
    parser.add_argument("--drift_problems", type=int, default=DRIFT_PROBLEMS, help="held-out problems each run scores")
    parser.add_argument("--cells", nargs="+", help="run only these cells (names as in the table)")
    parser.add_argument("--out", help="default results/studies/<study> (tiny), results/studies/<study>-<profile>")
    parser.add_argument("--report", action="store_true", help="rewrite README and plots from the JSON in --out")
    add_precision_argument(parser)
    return parser


def parse_study(parser: argparse.ArgumentParser, study: str, argv=None) -> tuple[argparse.Namespace, Path]:
    one_line_errors()
    args = parser.parse_args(argv)
    suffix = "" if args.profile.startswith("tiny") else f"-{args.profile}"
    return args, Path(args.out or f"results/studies/{study}{suffix}")


def select(cells: list[Cell], names: list[str] | None) -> list[Cell]:
    """The cells named on the command line (all without names) and the cells they are compared with, and theirs;
    one line for an unknown name."""
    if not names:
        return cells
    unknown = sorted(set(names) - {c.name for c in cells})
    if unknown:
        raise SystemExit(f"--cells: unknown {unknown}; known: {[c.name for c in cells]}")
    against = {c.name: c.against for c in cells}
    wanted = set()
    for name in names:
        while name and name not in wanted:
            wanted.add(name)
            name = against[name]
    return [c for c in cells if c.name in wanted]


def run_study(
    args: argparse.Namespace,
    out: Path,
    study: str,
    cells: list[Cell],
    prompts: int,
    profile: str | None = None,
    extra=None,
) -> tuple[dict, dict]:
    """A study's summary and settings: with --report the published JSON in `out`, otherwise the grid of the cells
    named on the command line (all without names) at its budgets; `extra()` gives the study's own summary keys."""
    if args.report:  # the published JSON under the rules, rewritten
        summary, settings = read_results(out)
        if (out / SCORES).is_file():  # each difference again from the scores (before they were kept: as stored)
            summary = summary | {"cells": differences_from_scores(summary["cells"], read_scores(out))}
        summary = under_the_rules(summary, settings)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return summary, settings
    profile = profile or args.profile
    return run_grid(
        study,
        profile,
        select(cells, args.cells),
        args.seeds,
        prompts,
        out,
        args.eval_k or PROFILES[profile]["eval_k"],
        args.eval_limit,
        args.drift_problems,
        extra() if extra else None,
        args.load_in_4bit,
    )


def publish(out: Path, text: str) -> None:
    """The study's README, written beside its JSON and printed."""
    (out / "README.md").write_text(text)
    print(text)


def read_results(out: Path) -> tuple[dict, dict]:
    """A published study's summary.json and settings.json (for --report)."""
    for name in ("summary.json", "settings.json"):
        if not (out / name).is_file():
            raise SystemExit(f"--report: no {out / name}; run the study first")
    return json.loads((out / "summary.json").read_text()), json.loads((out / "settings.json").read_text())
