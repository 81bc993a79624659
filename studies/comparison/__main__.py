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
methods, both metrics) is the seeds x problems interval, and together they are one family, Holm-corrected at 5% (with
`--primary`, a pre-registration's contrasts one family and the rest another): a difference is claimed only where its
adjusted p is below 0.05, and one that is not gives the smallest difference the run could have detected (80% power).
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
import json
import time

from core.errors import one_line_errors
from studies.comparison.published import read_published
from studies.comparison.scores import NAME as SCORES
from studies.comparison.summary import summary_again
from studies.comparison.sweep import EQUAL_KEYS, KEYS, equal_budget, sweep, sweep_plan
from studies.comparison.table import BUDGETS, Comparison, resolve, run_table, write_report
from studies.memory.estimate import estimate_all
from studies.runner import (
    METHODS,
    PROFILES,
    add_precision_argument,
)


def arguments() -> argparse.ArgumentParser:
    """The comparison's command line (the module's docstring is its help)."""
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
        "--primary",
        help="a pre-registration (JSON) whose `primary_contrasts` ([a, b, metric], committed before the runs) form "
        "a Holm family of their own; every other difference is secondary",
    )
    parser.add_argument(
        "--transfer",
        help="TASK:FILE: also score every final adapter and the base, greedy, on these problems of another task that "
        "no run trains on (the smol table: gsm8k:artifacts/smol/data/gsm8k-train-sample.jsonl)",
    )
    parser.add_argument("--transfer_limit", type=int, help="the first N transfer problems (default: all)")
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
    return parser


def report(run: Comparison) -> dict:
    """`--report`: summary.json (from per_problem.jsonl), summary.md, the plots and the READMEs again; trains
    nothing."""
    out = run.out
    published = read_published(out)
    if published is None:
        raise SystemExit(f"--report: no summary.json and settings.json in {out} (make compare writes them)")
    summary, settings = published
    if "rule" in summary:  # every statistic again from per_problem.jsonl; the runs' measured costs as recorded
        summary = summary_again(summary, settings, out)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_report(summary, settings, estimate_all(run.estimate_model, run.args.profile)[0], out)
    if "rule" in summary:
        print(f"[compare] rewrote {out}/summary.json, summary.md and the plots from {out}/{SCORES}")
    else:  # a table from before per-problem scores were kept
        print(f"[compare] rewrote {out}/summary.md and the plots from its summary.json")
    return summary


def run_sweep(run: Comparison) -> list[dict]:
    """`--sweep`: each method's learning rate (and key) chosen on the validation split; sweep.json, sweep.png."""
    args = run.args
    if not run.validation:
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
        run.prompts,
        run.out,
        args.methods,
        grid,
        run.validation,
        args.validation_k,
        run.limit,
        load_in_4bit=run.in_4bit,
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
    print(f"[sweep] wrote {run.out}/sweep.json, sweep.png in {time.time() - run.start:.0f} s")
    return results


def main(argv=None):
    one_line_errors()
    run = resolve(arguments().parse_args(argv))
    if run.args.report:
        return report(run)
    if run.args.sweep:
        return run_sweep(run)
    return run_table(run)


if __name__ == "__main__":
    main()
