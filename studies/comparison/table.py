"""A comparison's table, run by `make compare` (studies.comparison's entry point): the command line resolved against
the profile (`Comparison`), the plan before any run trains (held-out problems, tuning, seeds, the runs a
same-completions table takes from its same-prompts one), the runs trained and scored, and the table written (summary,
settings, report, READMEs)."""

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.evaluation.benchmarks import TASKS, load_task_data
from core.runs.folder import library_versions
from core.runs.provenance import REPO, code_digest, commit, cpu
from core.runs.timing import Elapsed
from studies.comparison import matched, transfer
from studies.comparison.inference import primary_contrasts
from studies.comparison.published import against_published, read_published
from studies.comparison.readme import rewrite_readmes
from studies.comparison.report import plot, write_markdown
from studies.comparison.scores import read_scores, score_lines, write_scores
from studies.comparison.shared_runs import borrow, borrowed_note, same_settings, training_digest
from studies.comparison.summary import from_scores, same_machine, summarise
from studies.comparison.sweep import chosen_settings, table_seeds
from studies.memory.estimate import estimate_all
from studies.runner import (
    CHECKPOINTS,
    PROFILES,
    precision_flags,
    recipe_config,
    resolve_load_in_4bit,
    steps_for,
    train_all,
)
from studies.scoring import Scoring, checkpoint_curves, evaluate, evaluate_all
from tasks.shipped import sha256

# The published comparisons (a real model's table reads a tiny world's from here, wherever its own --out is)
PUBLISHED = REPO / "results" / "compare"

BUDGETS = {
    "prompts": "same prompts: every method sees the same training prompts once (GRPO samples k completions of each, "
    "PPO one, DPO/IPO/ORPO train on pairs from k samples of each)",
    "completions": "same completions: every method samples k x the prompts' completions (PPO over k x the prompts, "
    "one each; GRPO k of each prompt; DPO/IPO/ORPO pairs from k samples of each)",
}


def write_report(summary: dict, settings: dict, estimates: dict, out: Path) -> None:
    """summary.md (with the folder's sweep, if one was run), the plots and the generated parts of the folder's
    README (studies.comparison.readme), after a run or from its JSON (--report)."""
    sweep_path = out / "sweep.json"
    sweep_rows = json.loads(sweep_path.read_text()) if sweep_path.is_file() else None
    checked = PROFILES[settings["profile"]].get("checks")  # a real model's table says whether a tiny world's holds
    published = read_published(PUBLISHED / checked) if checked else None
    checks = (checked, published[0]) if published else None
    write_markdown(summary, settings, out / "summary.md", sweep_rows, checks)
    plot(summary, estimates, out)
    for readme in rewrite_readmes(out):
        print(f"[compare] {readme}: its generated parts rewritten from {out}")


@dataclass
class Comparison:
    """What every part of a comparison reads, resolved once from the command line and the profile."""

    args: argparse.Namespace
    profile: dict
    prompts: int
    eval_k: int
    limit: int | None
    out: Path
    grpo_config: dict
    in_4bit: bool
    validation: str | None
    estimate_model: str
    start: float = field(default_factory=time.time)

    @property
    def temperature(self) -> float:
        return self.grpo_config["temperature"]

    @property
    def model_name(self) -> str:
        return self.grpo_config["model_name_or_path"]


@dataclass
class TablePlan:
    """A table's runs before any trains: what it must share with another to take its runs (`same`), the tuning, the
    seeds, the runs borrowed, each method's prompts and the checkpoints a run saves."""

    same: dict
    tuned: dict | None
    seeds: list[int]
    source: Path
    borrowed: list[str]
    prompts_for: dict | None
    checkpoints: int
    heldout_rows: list[dict]
    primary: list[list[str]] = field(default_factory=list)
    primary_from: dict | None = None
    transferred: transfer.Transfer | None = None


def resolve(args) -> Comparison:
    profile = PROFILES[args.profile]
    suffix = "-completions" if args.budget == "completions" else ""
    out = Path(args.out or f"results/compare/{args.profile}{suffix}")
    out.mkdir(parents=True, exist_ok=True)
    grpo_config = recipe_config(args.profile, "grpo")[1]  # also fails early on a profile without configs
    validation = profile["validation"]
    if (args.sweep or validation) and validation and not Path(validation).is_file():
        raise SystemExit(f"--profile {args.profile}: no validation split {validation} (make tiny builds it)")
    # a local model folder (the tiny worlds, smol) is estimated from its own config; the 7B from the shipped one
    local_model = Path(grpo_config["model_name_or_path"]).is_dir()
    return Comparison(
        args,
        profile,
        args.prompts or profile["prompts"],
        args.eval_k or profile["eval_k"],
        args.eval_limit or profile["eval_limit"],
        out,
        grpo_config,
        resolve_load_in_4bit(args.profile, args.load_in_4bit),
        validation,
        grpo_config["model_name_or_path"] if local_model else profile["model_name"],
    )


def plan_table(run: Comparison) -> TablePlan:
    """The table's plan (`TablePlan`): its held-out problems, tuning and seeds (never the sweep's), and the runs a
    same-completions table takes from its same-prompts table where they ran the same way."""
    args, out = run.args, run.out
    k = run.grpo_config.get("num_generations", 8)
    prompts_for = {"ppo": run.prompts * k} if args.budget == "completions" else None
    if args.heldout and not Path(args.heldout).is_file():
        raise SystemExit(f"--heldout {args.heldout}: no such file")
    heldout_rows = load_task_data(TASKS[run.profile["task"]], args.heldout, run.limit)
    same = {
        "profile": args.profile,
        "prompts": run.prompts,
        "eval_k": run.eval_k,
        "eval_n": len(heldout_rows),
        "temperature": run.temperature,
        "load_in_4bit": run.in_4bit,
        "validation_k": args.validation_k,
        "training_digest": training_digest(),
        "heldout_sha256": sha256(Path(args.heldout)) if args.heldout else None,
    }
    borrowed = []
    source = Path(args.same_runs_from) if args.same_runs_from else PUBLISHED / args.profile
    # a same-completions table is tuned by its same-prompts table's sweep, unless it has one of its own
    tuned_from = source if prompts_for and not (out / "sweep.json").is_file() else out
    same["tuned"] = tuned = chosen_settings(tuned_from / "sweep.json", args.methods) if args.tuned else None
    # the sweeps that tuned it: its folder's; for a published table, the profile's published one (the configs' rates
    # came from it); for the same-completions budget, the same-prompts table's it borrows runs from
    tuned_by = [out / "sweep.json"]
    tuned_by += [PUBLISHED / args.profile / "sweep.json"] if out.resolve().is_relative_to(PUBLISHED.resolve()) else []
    shares = prompts_for and args.resume and source.resolve() != out.resolve() and same_settings(source, same)
    tuned_by += [source / "sweep.json"] if shares else []
    seeds = table_seeds(args.first_seed, args.seeds, tuned_by)
    if shares:
        # the methods whose budget is the same under both: the same-prompts comparison's runs, not trained again
        borrowed = borrow(source, out, [m for m in args.methods if m not in prompts_for], seeds, same)
        if borrowed:
            print(
                f"[compare] the same runs as {source} (same training code, prompts, evaluation): {', '.join(borrowed)}"
            )
    checkpoints = run.profile.get("checkpoints", CHECKPOINTS) if run.validation else 0
    primary, primary_from = read_primary(args.primary, args.methods)
    transferred = transfer.plan(args.transfer, args.transfer_limit)
    return TablePlan(
        same,
        tuned,
        seeds,
        source,
        borrowed,
        prompts_for,
        checkpoints,
        heldout_rows,
        primary,
        primary_from,
        transferred,
    )


def read_primary(path: str | None, methods: list[str]) -> tuple[list[list[str]], dict | None]:
    """`--primary`'s contrasts ([a, b, metric], as the table writes them) and where they came from (file, SHA-256),
    checked before any run trains; one line naming the file and what is wrong."""
    if path is None:
        return [], None
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"--primary {path}: no such file")
    try:
        named = json.loads(file.read_text())["primary_contrasts"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise SystemExit(
            f"--primary {path}: not a pre-registration with a `primary_contrasts` list ({error})"
        ) from None
    if not isinstance(named, list) or not named:
        raise SystemExit(f"--primary {path}: `primary_contrasts` must list at least one [a, b, metric]")
    try:
        contrasts = primary_contrasts(named, methods)
    except SystemExit as error:
        raise SystemExit(f"--primary {path}: {error}") from None
    return [list(c) for c in contrasts], {"file": path, "sha256": sha256(file)}


def train_table(run: Comparison, plan: TablePlan, elapsed: Elapsed) -> dict:
    """(method, seed) -> run folder: every method once per seed, at the tuned settings where the table is tuned."""
    args, tuned, runs = run.args, plan.tuned, {}
    for seed in plan.seeds:
        runs |= train_all(
            args.profile,
            run.prompts,
            run.out,
            args.methods,
            seed,
            checkpoints=plan.checkpoints,
            flags=precision_flags(run.in_4bit),
            prompts_for=plan.prompts_for,
            resume=args.resume,
            learning_rates={m: t["learning_rate"] for m, t in tuned.items()} if tuned else None,
            method_flags={
                m: [a for k, v in t.items() if k != "learning_rate" for a in (f"--{k}", str(v))]
                for m, t in tuned.items()
            }
            if tuned
            else None,
        )
        elapsed.save()
    return runs


def score_table(run: Comparison, plan: TablePlan, runs: dict):
    """(held-out evaluations, checkpoint curves, the base's validation pass@1, the scoring): every run and the base
    on the held-out problems, each checkpoint and the base on validation."""
    args, task = run.args, run.profile["task"]
    scoring = Scoring(
        run.model_name,
        task,
        plan.heldout_rows,
        run.eval_k,
        run.temperature,
        run.out,
        run.in_4bit,
        args.resume,
        args.heldout,
    )
    evals = evaluate_all(runs, scoring)
    if not plan.checkpoints:
        return evals, None, None, scoring
    curves = checkpoint_curves(
        run.model_name,
        runs,
        task,
        run.validation,
        args.validation_k,
        run.temperature,
        run.limit,
        load_in_4bit=run.in_4bit,
        resume=args.resume,
    )
    rows = load_task_data(TASKS[task], run.validation, run.limit)
    base_validation = evaluate(
        run.model_name, None, task, rows, args.validation_k, run.temperature, greedy=False, load_in_4bit=run.in_4bit
    )[0]["sampled"]
    return evals, curves, base_validation, scoring


def table_settings(run: Comparison, plan: TablePlan, records: list[dict], elapsed: Elapsed) -> dict:
    """settings.json: how the table ran (what it shares with another, budget, seeds, tuning) and where (machine,
    CPU and its kernel flags, commit, code digest, versions, seconds)."""
    args = run.args
    return {
        **plan.same,
        "budget": args.budget,
        "budget_means": BUDGETS[args.budget],
        "methods": args.methods,
        "task": run.profile["task"],
        "seeds": args.seeds,
        "first_seed": plan.seeds[0],
        "validation": run.validation,
        # the rates each method trained at: its config's, overridden by the sweep's where the table is tuned
        "learning_rates": {m: recipe_config(args.profile, m)[1].get("learning_rate") for m in args.methods}
        | {m: t["learning_rate"] for m, t in (plan.tuned or {}).items()},
        "headline": "sampled pass@1",
        "memory_measure": next((r["memory_measure"] for r in records if "memory_measure" in r), "n/a"),
        "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "commit": commit(),
        "code_digest": code_digest(),
        **cpu(),
        "cpus": os.cpu_count(),
        "versions": library_versions(),
        # wall seconds of every invocation that worked on this table (--resume adds them up), and of this one
        "seconds": round(elapsed.save(), 1),
        "seconds_this_invocation": round(time.time() - run.start, 1),
        "borrowed": borrowed_note(plan.source, plan.borrowed),
        **({"primary": plan.primary, "primary_from": plan.primary_from} if plan.primary else {}),
        **({"transfer": plan.transferred.settings()} if plan.transferred else {}),
        "steps": {
            m: steps_for(m, recipe_config(args.profile, m)[1], (plan.prompts_for or {}).get(m, run.prompts))
            for m in ("grpo", "ppo")
        },
    }


def run_table(run: Comparison) -> dict:
    """The table: trained, scored, summarised (matched compute included), written, and printed against the table it
    replaces."""
    out = run.out
    published = read_published(out)  # before this run replaces it: what it prints itself against at the end
    plan = plan_table(run)
    elapsed = Elapsed(out, run.args.resume)
    runs = train_table(run, plan, elapsed)
    evals, curves, base_validation, scoring = score_table(run, plan, runs)
    estimates = estimate_all(run.estimate_model, run.args.profile)[0]
    write_scores(out, score_lines(evals, run.eval_k))
    records = summarise(runs, evals, estimates, curves)
    same_machine(records)
    if plan.checkpoints:  # held-out accuracy at matched CPU seconds, from the checkpoints
        matched.score(runs, evals, scoring)
    if plan.transferred:
        transfer.score(runs, plan.transferred, run.model_name, out, run.in_4bit, run.args.resume)
    settings = table_settings(run, plan, records, elapsed)
    summary = from_scores(
        records,
        read_scores(out),
        run.args.methods,
        base_validation,
        run.args.budget,
        out,
        plan.primary,
        settings.get("transfer"),
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    write_report(summary, settings, estimates, out)
    print((out / "summary.md").read_text())
    print("\n".join(against_published(summary, settings, published)))
    print(
        f"[compare] wrote {out}/summary.json, summary.md, memory.png, accuracy.png, rewards.png, compute.png "
        f"in {settings['seconds']:.0f} s"
    )
    return summary
