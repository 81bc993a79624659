"""This run against the published one: `make compare` reads the table it is about to replace (results/compare/
<profile>/) and prints, per method, this run's sampled pass@1 and greedy accuracy beside the published mean and
interval, the difference, and whether it lies within the published interval, with the CPUs both came from (the
tiny worlds train through CPU-dependent kernels: another CPU is expected to differ, within the intervals or not)."""

import json
from pathlib import Path

COMPARABLE = ("profile", "budget", "task", "prompts", "eval_n", "eval_k", "temperature", "load_in_4bit")
# Tables published before settings.json recorded a key ran as its default: the tiny configs' 4-bit NF4, same prompts.
UNRECORDED = {"load_in_4bit": True, "budget": "prompts"}


def read_published(out: Path) -> tuple[dict, dict] | None:
    """(summary, settings) of the table in `out`, read before this run overwrites it; None where there is none."""
    try:
        return json.loads((out / "summary.json").read_text()), json.loads((out / "settings.json").read_text())
    except (OSError, ValueError):
        return None


def _interval(aggregate: dict, metric: str) -> list[float] | None:
    seeds = aggregate.get(f"{metric}_ci95") or aggregate.get(f"{metric}_ci95_seeds")
    return seeds or (aggregate.get("accuracy_ci95") if metric == "sampled_pass1" else None)


def against_published(summary: dict, settings: dict, published: tuple[dict, dict] | None) -> list[str]:
    """The lines `make compare` prints under its table."""
    if published is None:
        return ["against the published table: none to compare with"]
    old_summary, old_settings = published
    old_settings = UNRECORDED | old_settings
    differing = [key for key in COMPARABLE if old_settings.get(key) != settings.get(key)]
    if differing:
        settings_differ = ", ".join(f"{k} {old_settings.get(k)} -> {settings.get(k)}" for k in differing)
        return [f"against the published table: not comparable, other settings ({settings_differ})"]
    where = f"commit {old_settings.get('commit') or 'unrecorded'}, {old_settings.get('cpu') or 'CPU unrecorded'}"
    flags = (old_settings.get("kernel_flags"), settings.get("kernel_flags"))
    if flags[0] is None:
        which = "the published CPU unrecorded: it may differ"
    elif flags[0] == flags[1] and old_settings.get("cpu") == settings.get("cpu"):
        which = "the same CPU"
    else:
        which = "another CPU, numbers may differ"
    lines = [
        f"against the published table ({where}; its kernel flags {flags[0]}, here {flags[1]}: {which})",
        "  method  metric           published [95%]            here     here - published  within",
    ]
    old = {a["method"]: a for a in old_summary["methods"]}
    for aggregate in summary["methods"]:
        before = old.get(aggregate["method"])
        if before is None:
            lines.append(f"  {aggregate['method']:<6}  not in the published table")
            continue
        for metric, name in (("sampled_pass1", "sampled pass@1"), ("greedy_accuracy", "greedy")):
            value, reference, interval = aggregate[metric], before[metric], _interval(before, metric)
            within = "n/a" if interval is None else ("yes" if interval[0] <= value <= interval[1] else "no")
            shown = "" if interval is None else f"[{interval[0]:.1%}, {interval[1]:.1%}]"
            lines.append(
                f"  {aggregate['method']:<6}  {name:<15}  {reference:6.1%} {shown:<19}  {value:6.1%}  "
                f"{(value - reference) * 100:+6.1f} points     {within}"
            )
    return lines
