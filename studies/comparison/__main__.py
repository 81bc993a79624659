"""The "7B on limited compute" comparison: GRPO, PPO, DPO, IPO and ORPO from the same start, on the same prompts,
with the same rewards; what each costs (memory, time) and buys (held-out accuracy), over several seeds.

Usage:
    make compare                       # = python -m studies.comparison --profile tiny --seeds 5 (2-core CPU, offline)
    make compare SEEDS=1               # one seed per method: a quick look
    make compare PROFILE=tiny-code     # the same on the tiny code world
    make sweep                         # = --sweep: each method's learning rate from a grid, chosen on validation
    python -m studies.comparison --profile tiny --report   # summary.md and plots again from summary.json, no training
    python -m studies.comparison --profile tiny --prompts 16 --eval_limit 20 --seeds 1 --out /tmp/compare-smoke

Matched budget: every method sees the same `--prompts` training prompts (the first N rows of the profile's
training set), each exactly once. GRPO samples k completions for each (its group is its baseline); PPO samples
one (its critic is its baseline); DPO, IPO and ORPO train one epoch on the pairs that `recipes.pairs` builds from k
samples of the same prompts by the starting model, scored with the same rewards (a prompt whose k samples all
score the same gives no pair). Each method trains in its own process with its profile's recipe config
(`recipes/configs/<profile>/<method>.yaml`); only the output folder, the prompt budget (as max_steps), the seed,
checkpointing and the logging interval are overridden, so `make grpo` and the comparison's GRPO are the same run.
The seed drives the LoRA initialisation, sampling (pairs included) and data order.

Precision: the profile's configs train in 4-bit NF4 + LoRA; `--load_in_4bit false` trains, samples pairs and
scores in full precision instead (the tests' small comparisons do: their subject is the pipeline, not the 4-bit path,
whose cost depends on the CPU; docs/test-suite.md). settings.json records which.

Evaluation (every adapter and the starting model, in the precision trained in, on the same held-out problems): greedy
accuracy, and sampled pass@1 at the training temperature from `--eval_k` samples per problem (the headline: what
the RL methods optimise, and with k samples per problem a much narrower interval than greedy accuracy). A seed's
models draw their samples under that seed, the base's again under each seed. Every number is computed from the
per-problem scores (per_problem.jsonl) by one rule (studies.comparison.inference): accuracies are shares over seeds
x problems with 95% intervals bounded to [0, 1]; every difference (each method against the base, every pair of
methods, both metrics) is the seeds x problems interval, and together they are one family, Holm-corrected at 5%: a
difference is claimed only where its adjusted p is below 0.05, and one that is not gives the smallest difference the
run could have detected (80% power).
Accuracy against compute: each run saves its adapter at every quarter of its budget; each checkpoint is scored on
the validation split (sampled pass@1) against the training seconds and samples it had used. At matched compute
(studies.comparison.matched): GRPO, PPO and DPO each read on the held-out problems at its last checkpoint within the
CPU seconds the cheapest of them spent on a whole run. Learning rates are chosen by `--sweep` on the validation
split, never on the held-out test.

Writes results/compare/<profile>/: per_problem.jsonl (method, seed, problem, greedy score, sampled passes),
summary.json ({"methods": one aggregate per method and `base`, "against_base" and "versus": the family's rows,
"runs": one record per (method, seed)}; `--report` computes it again from per_problem.jsonl), settings.json
(machine, CPU and its kernel flags, commit, code digest, versions, budget), summary.md, memory.png, accuracy.png,
rewards.png, compute.png, matched.json and matched_per_problem.jsonl; `--sweep` writes sweep.json and sweep.png.
Run folders and evaluation samples (eval_<method>-seed<k>.jsonl) stay beside them, unpublished. Last, it prints
itself against the table it replaced (studies.comparison.published): each method's difference and whether it lies
within the published interval.
"""

import argparse
import hashlib
import json
import os
import platform
import time
from pathlib import Path

from core.errors import one_line_errors
from core.evaluation.benchmarks import TASKS, load_task_data
from core.runs.folder import library_versions
from core.runs.provenance import REPO, code_digest, commit, cpu
from core.runs.timing import Elapsed
from studies.comparison import matched
from studies.comparison.published import against_published, read_published
from studies.comparison.readme import rewrite_readmes
from studies.comparison.report import plot, write_markdown
from studies.comparison.scores import NAME as SCORES
from studies.comparison.scores import read_scores, score_lines, write_scores
from studies.comparison.shared_runs import borrow, borrowed_note, same_settings, training_digest
from studies.comparison.summary import from_scores, same_machine, summarise, summary_again
from studies.comparison.sweep import EQUAL_KEYS, KEYS, chosen_settings, equal_budget, sweep, sweep_plan, table_seeds
from studies.memory.estimate import estimate_all
from studies.runner import (
    CHECKPOINTS,
    METHODS,
    PROFILES,
    add_precision_argument,
    precision_flags,
    recipe_config,
    resolve_load_in_4bit,
    steps_for,
    train_all,
)
from studies.scoring import Scoring, checkpoint_curves, evaluate, evaluate_all

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny", choices=sorted(PROFILES))
    parser.add_argument("--prompts", type=int, help="training prompts every method sees once (profile default)")
    parser.add_argument("--eval_limit", type=int, help="held-out (and validation) problems (default: the profile's)")
    parser.add_argument("--eval_k", type=int, help="samples per problem for sampled pass@1")
    parser.add_argument("--seeds", type=int, default=5, help="runs per method")
    parser.add_argument(
        "--tuned",
        action="store_true",
        help="train each method at the learning rate and keys --out's sweep.json chose (a same-completions table "
        "without one: --same_runs_from's), the shipped configs unchanged: a pre-registered table's tuning",
    )
    parser.add_argument(
        "--heldout",
        help="score on this file of held-out problems (the task's format) instead of the task's held-out split: "
        "problems no run scored before (results/compare/fresh/, results/compare/preregistration.json)",
    )
    parser.add_argument(
        "--first_seed",
        type=int,
        help="the table's first seed (default: the first after the seeds --out's sweep.json tuned on, 0 without one): "
        "a table's seeds never also tuned it",
    )
    parser.add_argument(
        "--budget",
        choices=sorted(BUDGETS),
        default="prompts",
        help="prompts: the same training prompts for every method; completions: the same sampled completions "
        "(PPO over k x the prompts); default out results/compare/<profile>[-completions]",
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--sweep", action="store_true", help="the learning-rate sweep on the validation split")
    parser.add_argument(
        "--learning_rates",
        type=float,
        nargs="+",
        help="the sweep's grid for every method (default: SWEEP_GRID; a profile with its own `sweep` settings, smol: "
        "its configs' former rates x 1/3, 1, 3)",
    )
    parser.add_argument("--validation_k", type=int, default=4, help="samples per validation problem")
    parser.add_argument("--sweep_seeds", type=int, help="seeds per sweep point (default 2; smol 1)")
    parser.add_argument(
        "--equal_budget",
        action="store_true",
        help="with --sweep: every method the same number of configurations: its learning-rate grid, then one key "
        "each (GRPO's beta included) at --key_points, no grid extended past an edge",
    )
    parser.add_argument(
        "--sweep_extend", type=int, help="times a grid may grow past a winning edge (default 2; smol 0)"
    )
    parser.add_argument(
        "--key_points",
        type=int,
        help="points of each method's own key at its chosen rate (0: none; default 3, smol 0)",
    )
    add_precision_argument(parser)
    parser.add_argument("--out", help="default results/compare/<profile>")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs that finished, the pairs they trained on and the evaluations already kept in --out; "
        "train and score only the rest (a rerun spread over sessions); with --sweep, keep the points sweep.json "
        "holds that were measured the same way",
    )
    parser.add_argument(
        "--same_runs_from",
        help="with --budget completions and --resume: the same-prompts comparison whose GRPO, DPO, IPO and ORPO runs "
        "this one takes instead of training them again, where it ran the same training code, prompts and evaluation "
        "(default results/compare/<profile>)",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="rewrite summary.md, the plots and the README's generated parts from the folder's summary.json and "
        "settings.json; trains nothing",
    )
    one_line_errors()
    args = parser.parse_args(argv)

    profile = PROFILES[args.profile]
    prompts = args.prompts or profile["prompts"]
    eval_k = args.eval_k or profile["eval_k"]
    limit = args.eval_limit or profile["eval_limit"]
    suffix = "-completions" if args.budget == "completions" else ""
    out = Path(args.out or f"results/compare/{args.profile}{suffix}")
    out.mkdir(parents=True, exist_ok=True)
    grpo_config = recipe_config(args.profile, "grpo")[1]  # also fails early on a profile without configs
    temperature = grpo_config["temperature"]
    in_4bit = resolve_load_in_4bit(args.profile, args.load_in_4bit)
    validation = profile["validation"]
    if (args.sweep or validation) and validation and not Path(validation).is_file():
        raise SystemExit(f"--profile {args.profile}: no validation split {validation} (make tiny builds it)")
    start = time.time()
    # a local model folder (the tiny worlds, smol) is estimated from its own config; the 7B from the shipped one
    local_model = Path(grpo_config["model_name_or_path"]).is_dir()
    estimate_model = grpo_config["model_name_or_path"] if local_model else profile["model_name"]

    if args.report:
        published = read_published(out)
        if published is None:
            raise SystemExit(f"--report: no summary.json and settings.json in {out} (make compare writes them)")
        summary, settings = published
        if "rule" in summary:  # every statistic again from per_problem.jsonl; the runs' measured costs as recorded
            summary = summary_again(summary, settings, out)
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        write_report(summary, settings, estimate_all(estimate_model, args.profile)[0], out)
        if "rule" in summary:
            print(f"[compare] rewrote {out}/summary.json, summary.md and the plots from {out}/{SCORES}")
        else:  # a table from before per-problem scores were kept
            print(f"[compare] rewrote {out}/summary.md and the plots from its summary.json")
        return summary

    if args.sweep:
        if not validation:
            raise SystemExit(f"--profile {args.profile} has no validation split to sweep on")
        grid, plan = sweep_plan(
            args.profile, args.methods, args.learning_rates, args.sweep_seeds, args.sweep_extend, args.key_points
        )
        keys = KEYS
        if args.equal_budget:
            plan |= {"extend": 0, "key_points": plan["key_points"] or 3}
            keys = EQUAL_KEYS
            configurations = equal_budget(grid, plan["key_points"])
            print(f"[sweep] an equal budget: {configurations} configurations a method, {plan['seeds']} seeds each")
        results = sweep(
            args.profile,
            prompts,
            out,
            args.methods,
            grid,
            validation,
            args.validation_k,
            limit,
            load_in_4bit=in_4bit,
            resume=args.resume,
            keys=keys,
            **plan,
        )
        for row in results:
            if row["chosen"] and row["method"] in args.methods:
                edge = " (at the grid's edge)" if row.get("at_edge") else ""
                print(
                    f"[sweep] {row['method']}: {row['key']} {row['value']:g}{edge} (validation sampled pass@1 "
                    f"{row['validation_sampled_pass1']:.3f} over {len(row['seeds'])} seeds)"
                )
        print(f"[sweep] wrote {out}/sweep.json, sweep.png in {time.time() - start:.0f} s")
        return results

    published = read_published(out)  # before this run replaces it: what it prints itself against at the end
    runs = {}
    checkpoints = profile.get("checkpoints", CHECKPOINTS) if validation else 0
    precision = precision_flags(in_4bit)
    k = grpo_config.get("num_generations", 8)
    prompts_for = {"ppo": prompts * k} if args.budget == "completions" else None
    if args.heldout and not Path(args.heldout).is_file():
        raise SystemExit(f"--heldout {args.heldout}: no such file")
    heldout_rows = load_task_data(TASKS[profile["task"]], args.heldout, limit)
    eval_n = len(heldout_rows)
    same = {
        "profile": args.profile,
        "prompts": prompts,
        "eval_k": eval_k,
        "eval_n": eval_n,
        "temperature": temperature,
        "load_in_4bit": in_4bit,
        "validation_k": args.validation_k,
        "training_digest": training_digest(),
        "heldout_sha256": hashlib.sha256(Path(args.heldout).read_bytes()).hexdigest() if args.heldout else None,
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
    elapsed = Elapsed(out, args.resume)
    for seed in seeds:
        runs |= train_all(
            args.profile,
            prompts,
            out,
            args.methods,
            seed,
            checkpoints=checkpoints,
            flags=precision,
            prompts_for=prompts_for,
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
    model_name = grpo_config["model_name_or_path"]
    scoring = Scoring(
        model_name, profile["task"], heldout_rows, eval_k, temperature, out, in_4bit, args.resume, args.heldout
    )
    evals = evaluate_all(runs, scoring)
    curves = base_validation = None
    if checkpoints:
        curves = checkpoint_curves(
            model_name,
            runs,
            profile["task"],
            validation,
            args.validation_k,
            temperature,
            limit,
            load_in_4bit=in_4bit,
            resume=args.resume,
        )
        rows = load_task_data(TASKS[profile["task"]], validation, limit)
        base_validation = evaluate(
            grpo_config["model_name_or_path"],
            None,
            profile["task"],
            rows,
            args.validation_k,
            temperature,
            greedy=False,
            load_in_4bit=in_4bit,
        )[0]["sampled"]

    estimates = estimate_all(estimate_model, args.profile)[0]
    write_scores(out, score_lines(evals, eval_k))
    records = summarise(runs, evals, estimates, curves)
    same_machine(records)
    if checkpoints:  # held-out accuracy at matched CPU seconds, from the checkpoints
        matched.score(runs, evals, scoring)
    summary = from_scores(records, read_scores(out), args.methods, base_validation, args.budget, out)
    measure = next((r["memory_measure"] for r in records if "memory_measure" in r), "n/a")
    settings = {
        **same,
        "budget": args.budget,
        "budget_means": BUDGETS[args.budget],
        "methods": args.methods,
        "task": profile["task"],
        "seeds": args.seeds,
        "first_seed": seeds[0],
        "validation": validation,
        "learning_rates": {m: recipe_config(args.profile, m)[1].get("learning_rate") for m in args.methods},
        "headline": "sampled pass@1",
        "memory_measure": measure,
        "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "commit": commit(),
        "code_digest": code_digest(),
        **cpu(),
        "cpus": os.cpu_count(),
        "versions": library_versions(),
        # wall seconds of every invocation that worked on this table (--resume adds them up), and of this one
        "seconds": round(elapsed.save(), 1),
        "seconds_this_invocation": round(time.time() - start, 1),
        "borrowed": borrowed_note(source, borrowed),
        "steps": {
            m: steps_for(m, recipe_config(args.profile, m)[1], (prompts_for or {}).get(m, prompts))
            for m in ("grpo", "ppo")
        },
    }
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


if __name__ == "__main__":
    main()
