"""One record per run and one aggregate per method: what each run cost (from its cost.json, metrics.jsonl and
resolved config), and its accuracy with intervals and its difference from the base (from the per-problem scores)."""

import json
from pathlib import Path

import yaml

from core.inputs.data import pairs_cost
from core.report.stats import over_seeds
from core.runs.metrics import REWARD_KEYS, first_last, reward_curve
from studies.comparison import matched, transfer
from studies.comparison.inference import difference, infer
from studies.comparison.inference import shares as infer_shares
from studies.comparison.scores import read_scores
from studies.costs import HOLDS, samples_trained
from studies.runner import PREFERENCE_METHODS, SCRIPT, completions_generated

CLIPPED_FLAG = 0.05  # a method whose held-out completions hit the length limit more often than this is flagged


def summarise(runs: dict, evals: dict, estimates: dict | None, curves: dict | None = None) -> list:
    """One record per run (and per seed's base draw) of what was measured: completion lengths, the share cut at the
    length limit and, for a trained run, its costs and training curves. The statistics come from the per-problem
    scores (`with_statistics`)."""
    records = []
    for key in [k for k in evals if k[0] == "base"] + list(runs):
        e, (method, seed) = evals[key], key
        record = {
            "method": method,
            "seed": seed,
            "completion_length_mean": e["completion_length_mean"],
            "completion_length_base": evals[("base", seed)]["completion_length_mean"],
            "clipped_share": e["clipped_share"],
        }
        if method == "base":
            record |= dict.fromkeys(MEASURED_ONLY_WHEN_TRAINED)
            records.append(record)
            continue
        cost = json.loads((runs[key] / "cost.json").read_text())
        curve = reward_curve(runs[key], REWARD_KEYS[method])
        first, last = first_last(curve)
        steps = cost["train_steps"]
        samples = samples_trained(method, runs[key], steps)
        logged_clipped = [v for _, v in reward_curve(runs[key], "completions/clipped_ratio")]
        config = yaml.safe_load((runs[key] / "config.yaml").read_text())
        versions = json.loads((runs[key] / "versions.json").read_text())
        pairs = (
            json.loads(pairs_cost(Path(config["dataset_name"])).read_text()) if method in PREFERENCE_METHODS else None
        )
        training_cpu = cost.get("cpu_seconds_training")
        # the pairs' sampling's own CPU seconds (as training's: no imports, no model load), else its whole process's
        pair_cpu = pairs.get("sampling_cpu_seconds", pairs["cpu_seconds"]) if pairs else None
        record |= {
            # where it ran: a rerun spread over sessions must not mix CPU classes in one table (`same_machine`)
            "commit": versions.get("commit"),
            "cpu": versions.get("cpu"),
            "kernel_flags": versions.get("kernel_flags"),
            # compute, the same measures for every method: completions sampled (DPO/IPO/ORPO: for their pairs,
            # before training) and trained on (a pair is two), CPU seconds of training plus the pairs' sampling
            "completions_generated": completions_generated(method, config, steps),
            "completions_trained": 2 * samples if method in PREFERENCE_METHODS else samples,
            # completion tokens (core.runs.tokens): generated (DPO/IPO/ORPO: the pairs' sampling), trained on with
            # every pass counted; None for a run recorded before tokens were counted
            "tokens_generated": tokens_generated(method, cost, pairs),
            "tokens_trained": (cost.get("tokens") or {}).get("trained"),
            "cpu_seconds_training": training_cpu,
            "pair_sampling_cpu_seconds": pair_cpu,
            "pair_sampling_seconds": pairs["wall_seconds"] if pairs else None,
            "cpu_seconds": None if training_cpu is None else training_cpu + (pair_cpu or 0.0),
            "peak_memory_mb": cost["peak_memory_mb"],
            "memory_measure": cost["measure"],
            "runtime_memory_mb": cost.get("rss_before_model_mb"),
            "train_seconds": cost["train_seconds"],
            "train_steps": steps,
            "seconds_per_step": cost["train_seconds"] / max(1, steps),
            "samples_per_second": samples / cost["train_seconds"],
            "samples": samples,
            "models_in_memory": cost["models_in_memory"],
            "holds": HOLDS[method],
            "trainable_params": cost["trainable_params"],
            **reward_cost(cost),
            "reward_key": REWARD_KEYS[method],
            "reward_first": first,
            "reward_last": last,
            "reward_curve": curve,
            "training_clipped_share": sum(logged_clipped) / len(logged_clipped) if logged_clipped else None,
            "compute_curve": (curves or {}).get(key, []),
        }
        if estimates:
            record["estimated_gb"] = estimates[SCRIPT.get(method, method)]["total_gb"]
        records.append(record)
    return records


def tokens_generated(method: str, cost: dict, pairs: dict | None) -> int | None:
    if method in PREFERENCE_METHODS:
        return pairs.get("tokens_generated")
    return (cost.get("tokens") or {}).get("generated")


def same_machine(records: list[dict]) -> None:
    """One line, and no table, when the runs of a comparison come from more than one CPU class (their kernels take
    other paths: their numbers differ by more than seeds)."""
    classes = {}
    for record in records:
        if record.get("kernel_flags") is not None:
            flags = (record.get("cpu"), tuple(record["kernel_flags"]))
            classes.setdefault(flags, []).append(f"{record['method']}-seed{record['seed']}")
    if len(classes) > 1:
        said = "; ".join(f"{cpu} {list(flags)}: {', '.join(runs)}" for (cpu, flags), runs in classes.items())
        raise SystemExit(f"the runs come from more than one CPU class, which one table must not mix: {said}")


MEASURED_ONLY_WHEN_TRAINED = (
    "completions_generated",
    "completions_trained",
    "tokens_generated",
    "tokens_trained",
    "cpu_seconds",
    "peak_memory_mb",
    "train_seconds",
    "seconds_per_step",
    "samples_per_second",
    "train_steps",
    "models_in_memory",
    "trainable_params",
    "reward_first",
    "reward_last",
    "reward_seconds",
    "reward_share",
    "sandbox_programs_per_second",
)


# The run record's keys `with_statistics` computes from the scores (the rest was measured while it ran).
FROM_SCORES = (
    "accuracy",
    "accuracy_ci95",
    "headline_metric",
    "greedy_accuracy",
    "greedy_ci95",
    "sampled_pass1",
    "sampled_pass1_ci95",
    "greedy_vs_base",
    "greedy_vs_base_ci95",
    "sampled_vs_base",
    "sampled_vs_base_ci95",
    "beats_base",
    "flag_reward_up_accuracy_not",
    "flag_clipped",
)


def with_statistics(records: list[dict], scores: dict) -> list[dict]:
    """Each record with its run's accuracies (one seed: shares over its problems, bounded intervals) and its paired
    difference from the base drawn under the same seed, computed from the per-problem scores alone; the flags that
    read them. What the scores give is replaced, so `--report` recomputes it from per_problem.jsonl."""
    updated = []
    for record in records:
        key = (record["method"], record["seed"])
        one = {key: scores[key], ("base", key[1]): scores[("base", key[1])]}
        shares = infer_shares(one, record["method"])
        record = record | {
            "accuracy": shares["sampled"]["mean"],
            "accuracy_ci95": shares["sampled"]["ci95"],
            "headline_metric": "sampled",
            "greedy_accuracy": shares["greedy"]["mean"],
            "greedy_ci95": shares["greedy"]["ci95"],
            "sampled_pass1": shares["sampled"]["mean"],
            "sampled_pass1_ci95": shares["sampled"]["ci95"],
        }
        if record["method"] != "base":
            for metric in ("greedy", "sampled"):
                diff = difference(one, record["method"], "base", metric)
                record[f"{metric}_vs_base"], record[f"{metric}_vs_base_ci95"] = diff["mean"], diff["ci95"]
            low = record["sampled_vs_base_ci95"][0]
            record["beats_base"] = low > 0
            # Reward hacking or overfitting shows up exactly here: the training reward rose, held-out accuracy did not.
            first, last = record.get("reward_first"), record.get("reward_last")
            record["flag_reward_up_accuracy_not"] = first is not None and last > first and low <= 0
            record["flag_clipped"] = record["clipped_share"] > CLIPPED_FLAG
        updated.append(record)
    return updated


def aggregate(records: list[dict], inference: dict) -> list[dict]:
    """Per method, over its seeds: sampled pass@1 and greedy accuracy (shares over seeds x problems, intervals bounded
    to [0, 1]), the seeds' standard deviation, the difference from the base with its Holm-corrected claim
    (studies.comparison.inference), means of the costs; the seeds' records stay in `runs`."""
    aggregates = []
    against_base = {(r["a"], r["metric"]): r for r in inference["against_base"]}
    for method in dict.fromkeys(r["method"] for r in records):
        runs = [r for r in records if r["method"] == method]
        entry = {"method": method, "seeds": [r["seed"] for r in runs], "n_seeds": len(runs)}
        for metric, key in (("sampled", "sampled_pass1"), ("greedy", "greedy_accuracy")):
            share = inference["shares"][method][metric]
            spread = over_seeds([r[key] for r in runs])
            entry |= {key: share["mean"], f"{key}_sd": spread["sd"], f"{key}_ci95": share["ci95"]}
            row = against_base.get((method, metric))
            if row:
                entry |= {
                    f"{metric}_vs_base": row["mean"],
                    f"{metric}_vs_base_ci95": row["ci95"],
                    f"{metric}_vs_base_p_holm": row["p_holm"],
                    f"{metric}_vs_base_claimed": row["claimed"],
                    f"{metric}_vs_base_detectable": row["detectable"],
                    f"{metric}_vs_base_crossed_only": row.get("crossed_only", False),
                }
        clipped = over_seeds([r["clipped_share"] for r in runs])
        entry |= {"clipped_share": clipped["mean"], "clipped_share_sd": clipped["sd"]}
        entry["accuracy"], entry["accuracy_ci95"] = entry["sampled_pass1"], entry["sampled_pass1_ci95"]
        for key in (
            "peak_memory_mb",
            "train_seconds",
            "seconds_per_step",
            "samples_per_second",
            "reward_seconds",
            "reward_share",
            "sandbox_programs_per_second",
            "completion_length_mean",
            "estimated_gb",
            "training_clipped_share",
            "completions_generated",
            "completions_trained",
            "tokens_generated",
            "tokens_trained",
            "cpu_seconds",
            "pair_sampling_cpu_seconds",
        ):
            values = [r[key] for r in runs if r.get(key) is not None]
            entry[key] = sum(values) / len(values) if values else None
        for key in (
            "models_in_memory",
            "trainable_params",
            "train_steps",
            "samples",
            "holds",
            "reward_key",
            "completion_length_base",
            "runtime_memory_mb",
            "memory_measure",
        ):
            entry[key] = runs[0].get(key)
        if method != "base":
            entry["beats_base"] = entry["sampled_vs_base_claimed"] and entry["sampled_vs_base"] > 0
            entry["flag_clipped"] = entry["clipped_share"] > CLIPPED_FLAG
        aggregates.append(entry)
    return aggregates


def reward_cost(cost: dict) -> dict:
    """Time training spent in reward calls (GRPO and PPO score in-process; DPO/ORPO's pairs were scored before) and
    the sandbox's programs per second during training, from the run's cost.json."""
    spent = cost.get("reward_time", {})
    seconds = sum(r["seconds"] for r in spent.values())
    code = spent.get("code_tests")
    return {
        "reward_seconds": seconds,
        "reward_share": seconds / cost["train_seconds"],
        "reward_time": spent,
        "sandbox_programs_per_second": code["completions"] / code["seconds"] if code and code["seconds"] else None,
    }


def from_scores(
    records: list[dict],
    scores: dict,
    methods: list[str],
    base_validation: float | None,
    budget: str = "prompts",
    out: Path | None = None,
    primary: list | tuple = (),
    transferred: dict | None = None,
) -> dict:
    """summary.json's content: the runs' measured records and every statistic, computed from the per-problem scores
    (the same function after a run and for --report); with `out`, the rows at matched compute its files hold; with
    `primary`, the pre-registered contrasts Holm-corrected as a family of their own (studies.comparison.inference);
    with `transferred` (settings.json's "transfer"), the scores on the transfer problems `out` holds."""
    inference = infer(scores, methods, primary)
    records = with_statistics(records, scores)
    summary = {
        "budget": budget,
        "rule": inference["rule"],
        "family_size": inference["family_size"],
        **({"families": inference["families"]} if "families" in inference else {}),
        "methods": aggregate(records, inference),
        "against_base": inference["against_base"],
        "versus": inference["versus"],
        "runs": records,
        "base_validation_sampled_pass1": base_validation,
    }
    at_budget = matched.read(out, scores) if out else None
    summary |= {"matched": at_budget} if at_budget else {}
    if transferred and out:
        if not (out / transfer.SCORES).is_file():
            raise SystemExit(f"{out / transfer.SCORES}: missing, and settings.json says the table scored transfer")
        summary["transfer"] = transfer.summarise(transfer.read(out), methods, transferred)
    return summary


def summary_again(summary: dict, settings: dict, out: Path) -> dict:
    """A published summary.json computed again (--report): every statistic from `out`'s per-problem scores, the
    runs' measured costs as recorded."""
    measured = [{k: v for k, v in r.items() if k not in FROM_SCORES} for r in summary["runs"]]
    return from_scores(
        measured,
        read_scores(out),
        settings["methods"],
        summary["base_validation_sampled_pass1"],
        summary["budget"],
        out,
        settings.get("primary", ()),
        settings.get("transfer"),
    )
