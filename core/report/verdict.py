"""The run's verdict, from its metrics.jsonl and held-out records: held-out accuracy before -> after (paired, the
same problems), the training signal as a least-squares trend with its interval (not two noisy points), the drift
from the start, and the checks: each a named warning with its evidence and likely fix, silent where it does not
apply. The thresholds and why: docs/recipes.md ("Did training really improve?")."""

import json
from pathlib import Path

from core.evaluation.benchmarks import TASKS
from core.report.stats import paired_difference, t95
from core.runs.metrics import is_number

# Completions' mean length changed by more than this share of its start, or more than CLIPPED of them hit the budget.
LENGTH_CHANGE = 0.5
CLIPPED = 0.05
# Mean per-token KL from the start model, in nats: the shipped tiny runs stay below 0.01; 0.1 per token is ~50 nats
# over a 500-token completion, far past where RLHF practice (InstructGPT's KL penalty) holds a policy.
KL_LIMIT = 0.1
# Entropy below this share of its start: the policy's outputs are converging to one answer.
ENTROPY_FLOOR = 0.25
# Methods whose training signal is a task reward (DPO and ORPO log an implicit pair margin).
TASK_REWARD_METHODS = {"grpo", "ppo"}


def trend(curve: list[tuple[int, float]]) -> dict | None:
    """Least-squares change of the signal over the logged steps, with its 95% interval (t, n - 2 df).

    >>> t = trend([(1, 0.1), (2, 0.2), (3, 0.29), (4, 0.41)])
    >>> round(t["change"], 3), t["n"], t["ci95"][0] > 0
    (0.306, 4, True)
    """
    n = len(curve)
    if n < 3:
        return None
    xs, ys = [float(s) for s, _ in curve], [float(v) for _, v in curve]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    residual = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True))
    stderr = (residual / (n - 2) / sxx) ** 0.5
    span = xs[-1] - xs[0]
    half = t95(n - 2) * stderr * span
    return {"change": slope * span, "ci95": [slope * span - half, slope * span + half], "n": n}


def rose(signal: dict | None) -> bool:
    """A trend whose whole 95% interval is above zero."""
    return bool(signal) and signal["ci95"][0] > 0


def reward_trends(rows: list[dict]) -> dict[str, dict | None]:
    """Each reward's own trend, where the trainer logs them apart (GRPO: `rewards/<name>/mean`)."""
    keys = dict.fromkeys(k for row in rows for k in row if k.startswith("rewards/") and k.endswith("/mean"))
    return {
        key.removeprefix("rewards/").removesuffix("/mean"): trend(
            [(row["step"], row[key]) for row in rows if is_number(row.get(key))]
        )
        for key in keys
    }


def scorers(out: Path) -> set[str]:
    """The rewards that score the run's held-out problems: its own task's rewards, or the built-in task's verifier
    (empty without held-out settings)."""
    path = out / "heldout" / "settings.json"
    settings = json.loads(path.read_text()) if path.is_file() else {}
    if settings.get("rewards"):
        return set(settings["rewards"])
    task = TASKS.get(settings.get("task"))
    return {task.verifier} if task else set()


def _records(out: Path, step: int) -> dict[int, float]:
    path = out / "heldout" / f"step-{step}.jsonl"
    if not path.is_file():
        return {}
    return {row["index"]: row["score"] for row in map(json.loads, path.read_text().splitlines())}


def _sampled(out: Path, step: int) -> tuple[dict[int, float], int]:
    """({problem: mean score of its samples}, samples per problem) of an evaluation with heldout_k > 1."""
    path = out / "heldout" / f"step-{step}-sampled.jsonl"
    scores: dict[int, list[float]] = {}
    for row in map(json.loads, path.read_text().splitlines()) if path.is_file() else ():
        scores.setdefault(row["index"], []).append(row["score"])
    return {i: sum(s) / len(s) for i, s in scores.items()}, max(map(len, scores.values()), default=0)


def _paired(before: dict[int, float], after: dict[int, float]) -> tuple[int, dict | None]:
    """(problems in both, paired difference over them; None where they share none)."""
    shared = sorted(set(before) & set(after))
    return len(shared), paired_difference([before[i] for i in shared], [after[i] for i in shared]) if shared else None


def _sampled_change(out: Path, first: dict, last: dict) -> dict | None:
    """Sampled pass@1 before -> after, paired over the same problems (None without heldout_k samples)."""
    if not (is_number(first.get("heldout/pass@1")) and is_number(last.get("heldout/pass@1"))):
        return None
    (before, k), (after, _) = _sampled(out, first["step"]), _sampled(out, last["step"])
    return {
        "before": first["heldout/pass@1"],
        "after": last["heldout/pass@1"],
        "k": k,
        "paired": _paired(before, after)[1],
    }


def verdict(out: Path, rows: list[dict], method: str, signal_key: str, reward_names=None) -> dict:
    """{heldout, trend, drift, checks} of a run folder (heldout None without held-out evaluations); `reward_names`:
    the rewards it trained on (default: those it logged apart)."""
    curve = [(row["step"], row[signal_key]) for row in rows if is_number(row.get(signal_key))]
    signal = trend(curve)
    evals = [row for row in rows if is_number(row.get("heldout/accuracy"))]
    result = {"trend": signal and {"key": signal_key, **signal}, "heldout": None, "drift": None, "checks": []}
    if not evals:
        return result
    first, last = evals[0], evals[-1]
    n, paired = _paired(_records(out, first["step"]), _records(out, last["step"]))
    result["heldout"] = {
        "steps": [first["step"], last["step"]],
        "before": first["heldout/accuracy"],
        "after": last["heldout/accuracy"],
        "n": n,
        "paired": paired,
        "curve": [[row["step"], row["heldout/accuracy"]] for row in evals],
        "sampled": _sampled_change(out, first, last),
    }
    drift = {
        key: [first.get(f"heldout/{key}"), last.get(f"heldout/{key}")] for key in ("length", "clipped", "entropy")
    }
    drift["kl"] = last.get("heldout/kl")
    result["drift"] = drift
    rewards = reward_trends(rows)
    trained = len(evals) > 1 and last["step"] > first["step"]
    result["checks"] = checks(
        method, signal, paired, drift, trained, rewards, list(reward_names or rewards), scorers(out)
    )
    return result


def checks(
    method: str,
    signal: dict | None,
    paired: dict | None,
    drift: dict,
    trained: bool,
    rewards: dict | None = None,
    reward_names=(),
    scored_by=frozenset(),
) -> list[dict]:
    """The named warnings. `rewards`: each reward's own trend; `reward_names`: the rewards trained on; `scored_by`:
    the rewards that score the held-out problems."""
    found = []
    if not trained:
        return found
    held_out = (
        f"held-out accuracy {paired['mean']:+.1%} [{paired['ci95'][0]:+.1%}, {paired['ci95'][1]:+.1%}]"
        if paired
        else "held-out accuracy not compared"
    )
    if method in TASK_REWARD_METHODS and rose(signal) and paired and paired["ci95"][0] <= 0:
        risen = [name for name, own in (rewards or {}).items() if rose(own)]
        rising = (
            f"the training reward rose {signal['change']:+.3f} [{signal['ci95'][0]:+.3f}, {signal['ci95'][1]:+.3f}]"
        )
        # a reward named by its module path (`my_rewards.fn`) is logged by its function's name
        scorer_names = {name.rsplit(".", 1)[-1] for name in scored_by}
        others = [name for name in (risen or reward_names) if name.rsplit(".", 1)[-1] not in scorer_names]
        if scored_by and reward_names and not others:
            # the reward that rose is the one the held-out problems are scored by: it cannot pay for anything else
            found.append(
                {
                    "name": "no held-out gain",
                    "evidence": f"{rising} with {', '.join(risen or reward_names)}, the verifier that scores the "
                    f"held-out problems, while {held_out}",
                    "fix": "the gain stayed on the training prompts: train on more prompts (or fewer passes over "
                    "them), or score more held-out problems (heldout_limit) to tell a small gain from none",
                }
            )
        else:
            which = f"; rose: {', '.join(risen)}" if risen else f"; trained on {', '.join(reward_names)}"
            named = f"{which}; held-out scored by {', '.join(sorted(scored_by))}" if scored_by and others else ""
            found.append(
                {
                    "name": "reward hacking",
                    "evidence": f"{rising}{named} while {held_out}",
                    "fix": "the reward pays for something other than the task: score real output with make score, "
                    "then fix or reweight the reward (or add math_accuracy / code_tests to it)",
                }
            )
    if paired and paired["ci95"][1] < 0:
        found.append(
            {
                "name": "held-out fell",
                "evidence": f"{held_out}: below zero across its 95% interval",
                "fix": "training made the model worse on problems it did not see: lower the learning rate or train "
                "fewer steps, hold the policy near its start (beta > 0 for GRPO and DPO, kl_coef for PPO), and "
                "check the reward on real output with make score",
            }
        )
    (length_start, length_end), (_, clipped_end) = drift["length"], drift["clipped"]
    if length_start and length_end is not None:
        change = length_end / length_start - 1
        if abs(change) > LENGTH_CHANGE or (clipped_end or 0) > CLIPPED:
            found.append(
                {
                    "name": "length drift",
                    "evidence": f"held-out completions {length_start:.0f} -> {length_end:.0f} tokens ({change:+.0%}), "
                    f"{clipped_end:.0%} cut at the budget, while {held_out}",
                    "fix": "a length-sensitive reward or loss (length, cosine_length, DPO's length bias): weigh it "
                    "down, or use a length-normalised loss (loss_type dr_grpo); raise the budget if answers are cut",
                }
            )
    kl = drift["kl"]
    if kl is not None and kl > KL_LIMIT:
        found.append(
            {
                "name": "drift from the start",
                "evidence": f"mean per-token KL from the start model {kl:.3f} nats (limit {KL_LIMIT}), {held_out}",
                "fix": "lower the learning rate, or hold the policy near its start with beta > 0 (GRPO) / "
                "kl_coef (PPO)",
            }
        )
    entropy_start, entropy_end = drift["entropy"]
    if entropy_start and entropy_end is not None and entropy_end < ENTROPY_FLOOR * entropy_start:
        found.append(
            {
                "name": "entropy collapse",
                "evidence": f"token entropy {entropy_start:.3f} -> {entropy_end:.3f} nats (below {ENTROPY_FLOOR:.0%} "
                f"of its start), {held_out}",
                "fix": "outputs are converging to one answer: raise the sampling temperature, lower the learning "
                "rate, or add a KL term (beta > 0)",
            }
        )
    return found


def _difference(paired: dict | None) -> str:
    """' (+d [lo, hi], paired)' of a paired difference, '' without one."""
    if not paired:
        return ""
    return f" ({paired['mean']:+.1%} [{paired['ci95'][0]:+.1%}, {paired['ci95'][1]:+.1%}], paired)"


def describe(result: dict, task: str | None) -> str:
    """The verdict's lines for the printed summary (empty without held-out evaluations and trend)."""
    lines = []
    held = result["heldout"]
    if held:
        lines.append(
            f"held-out {task}, {held['n']} problems, greedy: {held['before']:.1%} -> {held['after']:.1%}"
            + _difference(held["paired"])
            + f" (steps {held['steps'][0]} -> {held['steps'][1]})"
        )
        sampled = held.get("sampled")
        if sampled:
            lines.append(
                f"          sampled pass@1 (k={sampled['k']}): {sampled['before']:.1%} -> {sampled['after']:.1%}"
                + _difference(sampled["paired"])
            )
        drift = result["drift"]
        lines.append(
            f"drift     KL from the start {drift['kl']:.3f} nats/token; entropy {drift['entropy'][0]:.3f} -> "
            f"{drift['entropy'][1]:.3f}; length {drift['length'][0]:.1f} -> {drift['length'][1]:.1f} tokens; "
            f"clipped {drift['clipped'][0]:.0%} -> {drift['clipped'][1]:.0%}"
        )
    signal = result["trend"]
    if signal:
        lines.append(
            f"trend     {signal['key']} {signal['change']:+.3f} over the run [{signal['ci95'][0]:+.3f}, "
            f"{signal['ci95'][1]:+.3f}] (least-squares over {signal['n']} logged steps)"
        )
    lines += [f"warning: {c['name']}: {c['evidence']}; {c['fix']}" for c in result["checks"]]
    return "".join(f"  {line}\n" for line in lines)
