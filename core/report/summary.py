"""The end of every recipe: summary.json, the run's plot, and a short printed summary with the next commands."""

import json
import shlex
import time
from pathlib import Path

import yaml

from core.evaluation.benchmarks import TASKS
from core.inputs.distributed import describe, engine_record
from core.report.plots import plot_runs
from core.report.verdict import describe as describe_verdict
from core.report.verdict import verdict
from core.runs.metrics import REWARD_KEYS, first_last, is_number, numbers_of, read_metrics
from core.runs.storage import write_text_whole, writing

# When the recipe's imports were done: wall_seconds in the summary counts from here.
PROCESS_START = time.time()


CONFIGS = Path(__file__).resolve().parents[2] / "recipes" / "configs"
# The `make eval` task that measures what each shipped profile trains, and the reward that task scores with.
PROFILE_TASKS = {
    "tiny": "tiny",
    "tiny-code": "tiny-code",
    "tiny-length": "tiny-length",
    "smol": "smol",
    "7b": "gsm8k",
    "7b-code": "mbpp-hidden",
    "7b-math": "math500",
}
# What to check when training had no signal.
NO_SIGNAL_CAUSES = (
    "likely causes: the reward gives every completion the same score (check it on real output with make score), "
    "the data lacks what the reward reads, the model never writes what the reward looks for (log_completions: true "
    "prints what it writes), completions cut at max_completion_length, or a learning rate of 0"
)


def eval_task_for(profile: str, reward_names=()) -> str:
    """The built-in `make eval` task that measures what a run of a shipped profile trained for."""
    if profile in PROFILE_TASKS:
        return PROFILE_TASKS[profile]
    return "mbpp" if "code_tests" in reward_names or "code" in profile else "gsm8k"


def eval_command(
    model_name: str, out: Path, profile: str, method: str, script_args=None, weights=None, heldout=None, four_bit=False
) -> str:
    """`make eval` for what the run trained on: the profile's built-in task when the run trained on the profile's
    own data with the task's verifier among shipped rewards; otherwise the run's own data, prompt and rewards.
    After a held-out evaluation of that task during training (`heldout`: its settings), the same problems and the
    same 4-bit base, so that it gives the run's own held-out numbers."""
    names = list(getattr(script_args, "reward_funcs", None) or [])
    task = eval_task_for(profile, names)
    base = f"make eval MODEL={model_name} ADAPTER={out}"
    shipped = CONFIGS / profile / f"{method}.yaml"
    shipped_data = yaml.safe_load(shipped.read_text()).get("dataset_name") if shipped.is_file() else None
    dataset = getattr(script_args, "dataset_name", None)
    own = heldout if heldout and heldout["task"].startswith("rewards:") else None  # the rows held out, scored alike
    built_in = not names or (
        TASKS[task].verifier in names and all("." not in n for n in names) and dataset == shipped_data
    )
    if built_in and not own:
        if heldout and heldout["task"] == task:  # the problems and the base the run's held-out numbers came from
            data = f" DATA={shlex.quote(heldout['data'])}" if heldout.get("data") else ""
            return f"{base} TASK={task}{data} LIMIT={heldout['n']}" + (" ARGS=--load_in_4bit" if four_bit else "")
        return f"{base} TASK={task}"
    parts = [base, f"DATA={shlex.quote(own['data'] if own else dataset)}", f"REWARDS={','.join(names)}"]
    if weights and any(w != 1.0 for w in weights):
        parts.append("REWARD_WEIGHTS=" + ",".join(f"{w:g}" for w in weights))
    for variable, field in (
        ("PROMPT_COLUMN", "prompt_column"),
        ("PROMPT_TEMPLATE", "prompt_template"),
        ("SYSTEM_PROMPT", "system_prompt"),
    ):
        value = getattr(script_args, field, None)
        if value and not (field == "prompt_column" and value == "question"):
            parts.append(f"{variable}={shlex.quote(value)}")
    if own:
        flags = " ".join(["--load_in_4bit"] * four_bit + [f"--max_new_tokens {own['max_new_tokens']}"])
        parts += [f"LIMIT={own['n']}", f'ARGS="{flags}"']
    return " ".join(parts)


def no_signal(rows: list[dict], method: str) -> list[str]:
    """Why a run learned nothing, from its metrics.jsonl: rewards without spread inside GRPO's groups for most of
    the run, a reward that never changed, or gradients that were zero at every step. Empty when it had a signal."""
    reasons = []
    zero_std = numbers_of(rows, "frac_reward_zero_std")
    if zero_std and sum(zero_std) / len(zero_std) >= 0.9:
        reasons.append(
            f"in {sum(zero_std) / len(zero_std):.0%} of GRPO's groups every completion scored the same "
            "(frac_reward_zero_std), so their advantages were zero"
        )
    key = REWARD_KEYS[method]
    values = numbers_of(rows, key)
    spread = numbers_of(rows, "reward_std")
    if method in ("grpo", "ppo") and len(values) > 1 and len(set(values)) == 1 and not any(spread):
        reasons.append(f"every logged {key} was {values[0]:g}: the reward was a constant")
    grads = numbers_of(rows, "grad_norm")
    if grads and not any(grads):
        reasons.append(f"grad_norm was 0 at all {len(grads)} logged steps: the adapter did not change")
    return reasons


def zero_spread(rows: list[dict]) -> dict | None:
    """GRPO's share of groups whose completions all scored the same (TRL's `frac_reward_zero_std`: their advantage
    is zero, nothing is learned from them): the mean over the run and the first and last fifth; None where not
    logged (the other methods).

    >>> zero_spread([{"step": s, "frac_reward_zero_std": v} for s, v in enumerate([0.8, 0.6, 0.7, 0.5, 0.4], 1)])
    {'mean': 0.6, 'first': 0.8, 'last': 0.4}
    """
    curve = [(row["step"], row["frac_reward_zero_std"]) for row in rows if is_number(row.get("frac_reward_zero_std"))]
    if not curve:
        return None
    first, last = first_last(curve)
    return {"mean": round(sum(v for _, v in curve) / len(curve), 6), "first": first, "last": last}


def reward_curves(rows: list[dict]) -> dict[str, tuple[float | None, float | None]]:
    """Each reward's own first -> last mean (GRPO logs `rewards/<name>/mean`), beside the weighted total."""
    names = dict.fromkeys(k.split("/")[1] for r in rows for k in r if k.startswith("rewards/") and k.endswith("/mean"))
    return {
        name: first_last([(r["step"], r[f"rewards/{name}/mean"]) for r in rows if f"rewards/{name}/mean" in r])
        for name in names
    }


def finish_run(trainer, method: str, model_name: str, script_args, reward_weights=None) -> dict:
    """The run's plot, summary.json, and a short summary with the next commands (rank 0), in the trainer's output_dir,
    for the recipe's arguments (`script_args`: its profile, data, rewards) and `reward_weights`: the training signal
    and each reward's first -> last, a warning when training had no signal, and the `make eval` that measures what the
    run trained for. A distributed launch also gets one line per rank, so it shows that every rank got to the end."""
    state = trainer.accelerator.state
    engine = engine_record(state)
    if state.num_processes > 1:
        print(f"[rank {state.process_index}/{state.num_processes}, backend {engine['backend']}] finished")
    if not trainer.is_world_process_zero():
        return {}
    out, profile = Path(trainer.args.output_dir), script_args.profile
    cost_path = out / "cost.json"
    cost = json.loads(cost_path.read_text()) if cost_path.is_file() else {}
    key = REWARD_KEYS[method]
    rows = read_metrics(out)
    curve = [(row["step"], row[key]) for row in rows if is_number(row.get(key))]
    first, last = first_last(curve)
    per_reward = reward_curves(rows)
    reasons = no_signal(rows, method)
    judged = verdict(out, rows, method, key, getattr(script_args, "reward_funcs", None))
    heldout_path = out / "heldout" / "settings.json"
    heldout = json.loads(heldout_path.read_text()) if heldout_path.is_file() else None
    four_bit = bool(getattr(getattr(trainer.model, "policy", trainer.model), "is_loaded_in_4bit", False))
    with writing("metrics.png", out):
        plot = plot_runs([out], out / "metrics.png")
    summary = {
        "method": method,
        "steps": trainer.state.global_step,
        "wall_seconds": round(time.time() - PROCESS_START, 1),
        "train_seconds": cost.get("train_seconds"),
        "signal": key,
        "signal_first": first,
        "signal_last": last,
        "rewards": {name: {"first": f, "last": la} for name, (f, la) in per_reward.items()},
        "no_signal": {"flag": bool(reasons), "reasons": reasons},
        "zero_spread_groups": zero_spread(rows),
        "verdict": judged | {"settings": heldout},
        "time_split": cost.get("time_split"),
        "peak_memory_mb": cost.get("peak_memory_mb"),
        "memory_measure": cost.get("measure"),
        "distributed": engine,
        "adapter": str(out),
        "plot": str(plot) if plot else None,
        "next": [
            eval_command(model_name, out, profile, method, script_args, reward_weights, heldout, four_bit),
            f"make plot RUN={out}",
        ],
    }
    write_text_whole(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    signal = (
        f"{key} {first:.3f} -> {last:.3f} (mean of the first and last fifth of {len(curve)} logged steps)"
        if first is not None
        else f"{key}: not logged as a number"
    )
    if len(per_reward) > 1 or (per_reward and key != "reward"):
        signal += "".join(
            f"\n    {name} {f:.3f} -> {la:.3f}" if f is not None else f"\n    {name}: not logged as a number"
            for name, (f, la) in per_reward.items()
        )
    spread = summary["zero_spread_groups"]
    if spread:
        signal += (
            f"\n  groups   {spread['mean']:.0%} with no reward spread (frac_reward_zero_std; first -> last fifth "
            f"{spread['first']:.0%} -> {spread['last']:.0%}): zero advantage, nothing learned from them"
        )
    peak = summary["peak_memory_mb"]
    memory = f"{peak:,.0f} MB ({summary['memory_measure']})" if isinstance(peak, int | float) else "not measured"
    warning = (
        "  warning: no training signal: " + "; ".join(reasons) + ".\n    " + NO_SIGNAL_CAUSES + ".\n"
        if reasons
        else ""
    )
    judgement = describe_verdict(judged, heldout and heldout["task"])
    split = cost.get("time_split")
    if split and summary["train_seconds"]:
        share = {phase: seconds / summary["train_seconds"] for phase, seconds in split.items()}
        names = {"forward_backward": "forward/backward + optimizer", "heldout": "held-out"}
        judgement += (
            "  time     "
            + ", ".join(f"{names.get(phase, phase)} {split[phase]:.1f} s ({share[phase]:.0%})" for phase in split)
            + "\n"
        )
    command = summary["next"][0]
    if "TASK=" in command or "/heldout/problems.jsonl" in command:
        label = "held-out accuracy" + (" (the same problems)" if "LIMIT=" in command else "")
    else:  # the run's own data, nothing held out of it: say so rather than call it held-out
        label = "accuracy on the training data: no held-out set (heldout_fraction: 0.1 holds one out)"
    print(
        f"\n{method.upper()} finished: {summary['steps']} steps in {summary['wall_seconds']:.0f} s "
        f"({summary['train_seconds'] or 0:.0f} s training)\n"
        f"  {signal}\n{judgement}{warning}  peak memory {memory}\n"
        f"  engine   {describe(summary['distributed'])}\n"
        f"  adapter  {out}\n"
        + (f"  plot     {plot}\n" if plot else "")
        + f"next:\n  {command}   # {label}\n"
        + f"  {summary['next'][1]}   # redraw the plot\n"
    )
    return summary
