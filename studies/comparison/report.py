"""The comparison's report: summary.md and its plots (memory.png, accuracy.png, rewards.png, compute.png)."""

import json
import statistics
from pathlib import Path

from core.report.plots import rolling_mean
from studies.comparison.matched import section as matched_section
from studies.comparison.transfer import section as transfer_section
from studies.comparison.versus import family_words, markdown, primary_section, what_holds
from studies.comparison.worlds import transfer_table
from studies.runner import SCRIPT


def pct(value, ci=None) -> str:
    return "n/a" if value is None else f"{value:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")


def diff(value, ci) -> str:
    return "" if value is None else f"{value:+.1%}" + (f" [{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else "")


def interval(entry: dict, key: str, run: dict | None = None, run_key: str | None = None) -> list[float] | None:
    """A method's interval: the seeds x problems one (`key`), else as tables published before the Holm rule stored
    it (the seeds' t-interval, `<key>_seeds`), else its single run's (`run_key`)."""
    found = entry.get(key) or entry.get(f"{key}_seeds")
    return found or (run.get(run_key or key) if run else None)


def num(value, fmt) -> str:
    return "n/a" if value is None else format(value, fmt)


def headline_table(summary: dict) -> str:
    """The table the READMEs publish (tests hold each to its summary.json): per method the mean over seeds of
    sampled pass@1 and greedy accuracy with the seeds' 95% interval (the base: its own), the paired difference
    from the base, seconds per step and peak memory; with a code reward, the reward's time and the sandbox's rate."""
    code = any(a.get("sandbox_programs_per_second") for a in summary["methods"])
    compute = "rule" in summary  # tables since the Holm rule also say what each method spent
    tokens = compute and any(a.get("tokens_generated") for a in summary["methods"])  # none in runs before counting
    columns = ["method", "sampled pass@1", "vs base", "greedy", "vs base", "s/step", "peak MB"]
    columns += ["completions sampled", "CPU s"] if compute else []
    columns += ["tokens sampled", "tokens trained"] if tokens else []
    columns += ["reward s (share of training)", "sandbox programs/s"] if code else []
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for a in summary["methods"]:
        run = next(r for r in summary["runs"] if r["method"] == a["method"])
        base = a["method"] == "base"  # one model, evaluated once: no cost, no difference
        sampled_ci = interval(a, "sampled_pass1_ci95", run)
        row = (
            f"| {a['method']} | {pct(a['sampled_pass1'], sampled_ci)} "
            f"| {diff(a.get('sampled_vs_base'), interval(a, 'sampled_vs_base_ci95'))} "
            f"| {pct(a['greedy_accuracy'], interval(a, 'greedy_accuracy_ci95', run, 'greedy_ci95'))} "
            f"| {diff(a.get('greedy_vs_base'), interval(a, 'greedy_vs_base_ci95'))} "
            f"| {'' if base else num(a['seconds_per_step'], '.2f')} "
            f"| {'' if base else num(a['peak_memory_mb'], '.0f')} |"
        )
        if compute:
            row += f" {'' if base else num(a['completions_generated'], ',.0f')} "
            row += f"| {'' if base else num(a['cpu_seconds'], ',.0f')} |"
        if tokens:
            row += f" {'' if base else num(a.get('tokens_generated'), ',.0f')} "
            row += f"| {'' if base else num(a.get('tokens_trained'), ',.0f')} |"
        if code:
            reward = f"{a['reward_seconds']:.1f} ({a['reward_share']:.0%})" if a["reward_seconds"] is not None else ""
            rate = num(a["sandbox_programs_per_second"], ".0f") if a["sandbox_programs_per_second"] else ""
            row += f" {reward} | {rate} |"
        lines.append(row)
    return "\n".join(lines)


def seeds_table(summary: dict) -> str:
    """Seed by seed: each run's held-out sampled pass@1 and greedy accuracy, the median over its seeds, and how many
    runs ended below the base of their own seed (its samples are drawn again under each seed), so that one collapsed
    seed is seen and not averaged away.

    >>> runs = [{"method": m, "seed": s, "sampled_pass1": v, "greedy_accuracy": g}
    ...         for m, s, v, g in (("base", 0, .5, .4), ("base", 1, .6, .4), ("grpo", 0, .7, .3), ("grpo", 1, .9, .8))]
    >>> print(seeds_table({"runs": runs}))
    ## Seed by seed
    <BLANKLINE>
    Held-out sampled pass@1 / greedy accuracy of each run, the median over seeds, the runs below their seed's base.
    <BLANKLINE>
    | method | seed 0 | seed 1 | median | below the base: sampled, greedy |
    |---|---|---|---|---|
    | base | 50.0% / 40.0% | 60.0% / 40.0% | 55.0% / 40.0% |  |
    | grpo | 70.0% / 30.0% | 90.0% / 80.0% | 80.0% / 55.0% | 0 of 2, 1 of 2 |
    """
    seeds = sorted({r["seed"] for r in summary["runs"]})
    methods = list(dict.fromkeys(r["method"] for r in summary["runs"]))
    runs = {(r["method"], r["seed"]): r for r in summary["runs"]}
    keys = ("sampled_pass1", "greedy_accuracy")

    def pair(values: tuple[float, float]) -> str:
        return f"{values[0]:.1%} / {values[1]:.1%}"

    lines = [
        "## Seed by seed",
        "",
        "Held-out sampled pass@1 / greedy accuracy of each run, the median over seeds, the runs below their seed's "
        "base.",
        "",
        "| method | " + " | ".join(f"seed {s}" for s in seeds) + " | median | below the base: sampled, greedy |",
        "|---|" + "---|" * (len(seeds) + 2),
    ]
    for method in methods:
        own = [runs[method, s] for s in seeds if (method, s) in runs]
        cells = [pair(tuple(runs[method, s][k] for k in keys)) if (method, s) in runs else "" for s in seeds]
        median = pair(tuple(statistics.median(r[k] for r in own) for k in keys))
        below = ""
        if method != "base":
            counts = [sum(r[k] < runs["base", r["seed"]][k] for r in own) for k in keys]
            below = ", ".join(f"{n} of {len(own)}" for n in counts)
        lines.append(f"| {method} | " + " | ".join(cells) + f" | {median} | {below} |")
    return "\n".join(lines)


def compute_lines(summary: dict) -> list[str]:
    """Accuracy against compute in words (compute.png's numbers): per method, validation sampled pass@1 at its
    first and last checkpoint, as the range over seeds, with the training seconds and samples used by then (means
    over seeds). Samples are completions for GRPO and PPO, pairs for the preference methods."""
    lines = []
    for entry in summary["methods"]:
        curves = [
            r["compute_curve"] for r in summary["runs"] if r["method"] == entry["method"] and r.get("compute_curve")
        ]
        if entry["method"] == "base" or not curves:
            continue
        said = []
        for points in ([c[0] for c in curves], [c[-1] for c in curves]):
            low, high = (f(p["validation_sampled_pass1"] for p in points) for f in (min, max))
            span = f"{low:.0%}" if f"{low:.0%}" == f"{high:.0%}" else f"{low:.0%}-{high:.0%}"
            seconds = sum(p["train_seconds"] for p in points) / len(points)
            if "completions_generated" in points[0]:
                sampled = sum(p["completions_generated"] for p in points) / len(points)
                said.append(f"{span} after {seconds:.0f} s ({sampled:,.0f} completions sampled)")
                continue
            samples = sum(p["samples"] for p in points) / len(points)
            said.append(f"{span} after {seconds:.0f} s ({samples:,.0f} samples)")
        lines.append(f"- {entry['method'].upper()}: " + " -> ".join(said))
    base = summary.get("base_validation_sampled_pass1")
    if lines and base is not None:
        lines.insert(0, f"Validation sampled pass@1 (base {base:.1%}), range over seeds, first -> last checkpoint:")
    return lines


def provenance(summary: dict, settings: dict) -> str:
    """Where and in how long a table was measured, from its settings.json (a README holds it to the file).

    >>> settings = {"commit": "0123456789abcdef", "cpus": 2, "cpu": "AMD EPYC", "kernel_flags": ["avx2"],
    ...             "seconds": 2500.4}
    >>> print(provenance({"runs": [{"method": "base"}, {"method": "grpo"}]}, settings))
    **Measured at commit 0123456 on a 2-core AMD EPYC (`avx2`)**, 2,500 s for 1 trainings and their evaluations.
    >>> provenance({"runs": []}, settings | {"commit": "0123456789abcdef+changes"}).split(" on ")[0]
    '**Measured at commit 0123456 with uncommitted changes'
    """
    trained = sum(r["method"] != "base" for r in summary["runs"])
    borrowed = len(settings["borrowed"]["runs"]) if settings.get("borrowed") else 0
    took = f", {borrowed} of them taken from {settings['borrowed']['from']}" if borrowed else ""
    # a tree that differed from its commit is said so: the commit alone would name code that did not run
    changed = " with uncommitted changes" if settings["commit"].endswith("+changes") else ""
    return (
        f"**Measured at commit {settings['commit'][:7]}{changed} on a {settings['cpus']}-core {settings['cpu']} "
        f"(`{' '.join(settings['kernel_flags'])}`)**, {settings['seconds']:,.0f} s for {trained} trainings{took} and "
        "their evaluations."
    )


def methods_table(summary: dict, settings: dict) -> list[str]:
    """summary.md's title, what the table measures, and one row per method."""
    family = family_words(summary, "the comparison's family") if "rule" in summary else None
    n_seeds = max(a["n_seeds"] for a in summary["methods"])
    lines = [
        f"# Method comparison, profile `{settings['profile']}`",
        "",
        f"Headline: **{settings['headline']}** (sampled pass@1 at T={settings['temperature']} from "
        f"{settings['eval_k']} samples per problem; greedy also shown). Held-out: {settings['eval_n']} problems "
        f"of task `{settings['task']}`. "
        + (
            f"Budget, {settings['budget_means']}: {settings['prompts']} prompts; "
            if "budget_means" in settings
            else f"Budget: {settings['prompts']} training prompts, each seen once by every method; "
        )
        + f"{n_seeds} seed(s) per method. "
        + (
            "Per method: the share over seeds x problems with its 95% interval, bounded to [0, 100]%; 'vs base' is "
            "the seeds x problems difference from the base (its samples drawn again under each seed), and 'beats "
            f"base' a gain claimed under Holm's correction over {family} "
            "(per_problem.jsonl holds every score behind them)."
            if "rule" in summary
            else "Per method: the mean over seeds with the seeds' 95% t-interval (with one seed: the run's own 95% "
            "interval); 'vs base' is the paired per-problem difference from the base, averaged over seeds."
        ),
        "",
        "| method | seeds | sampled pass@1 | vs base | greedy | vs base | sd (sampled, greedy) | peak memory MB "
        "| est. GB | s/step | samples/s | models | trainable | reward s (share) | sandbox programs/s | clipped "
        "| flag |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for a in summary["methods"]:
        run = next(r for r in summary["runs"] if r["method"] == a["method"])
        single = a["n_seeds"] == 1
        flags = [
            f
            for f, on in (
                ("beats base", a.get("beats_base")),
                ("clipped > 5%", a.get("flag_clipped")),
                ("reward up, held-out not", single and run.get("flag_reward_up_accuracy_not")),
            )
            if on
        ]
        sd = "" if a["sampled_pass1_sd"] is None else f"{a['sampled_pass1_sd']:.1%}, {a['greedy_accuracy_sd']:.1%}"
        reward_time = "n/a" if a["reward_seconds"] is None else f"{a['reward_seconds']:.1f} ({a['reward_share']:.0%})"
        vs_sampled = interval(a, "sampled_vs_base_ci95", run)
        vs_greedy = interval(a, "greedy_vs_base_ci95", run)
        lines.append(
            f"| {a['method']} | {a['n_seeds']} "
            f"| {pct(a['sampled_pass1'], interval(a, 'sampled_pass1_ci95', run))} "
            f"| {diff(a.get('sampled_vs_base'), vs_sampled)} "
            f"| {pct(a['greedy_accuracy'], interval(a, 'greedy_accuracy_ci95', run, 'greedy_ci95'))} "
            f"| {diff(a.get('greedy_vs_base'), vs_greedy)} "
            f"| {sd} | {num(a['peak_memory_mb'], '.0f')} | {num(a['estimated_gb'], '.3f')} "
            f"| {num(a['seconds_per_step'], '.2f')} | {num(a['samples_per_second'], '.1f')} "
            f"| {num(a['models_in_memory'], 'd')} | {num(a['trainable_params'], ',')} "
            f"| {reward_time} | {num(a['sandbox_programs_per_second'], '.0f')} "
            f"| {pct(a['clipped_share'])} | {', '.join(flags)} |"
        )
    return lines


def single_runs(summary: dict) -> list[str]:
    """summary.md's part with one row per run (each method, each seed)."""
    lines = [
        "",
        "## Single runs",
        "",
        "| method | seed | sampled pass@1 | vs base | greedy | vs base | s/step | reward first -> last |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["runs"]:
        if r["method"] == "base":
            continue
        lines.append(
            f"| {r['method']} | {r['seed']} | {pct(r['sampled_pass1'], r['sampled_pass1_ci95'])} "
            f"| {diff(r['sampled_vs_base'], r['sampled_vs_base_ci95'])} "
            f"| {pct(r['greedy_accuracy'], r['greedy_ci95'])} "
            f"| {diff(r['greedy_vs_base'], r['greedy_vs_base_ci95'])} | {r['seconds_per_step']:.2f} "
            f"| {num(r['reward_first'], '.3f')} -> {num(r['reward_last'], '.3f')} ({r['reward_key']}) |"
        )
    return lines


def sweep_table(sweep: list[dict]) -> list[str]:
    """summary.md's part with the folder's sweep: each point's validation sampled pass@1, the chosen one marked."""
    lines = [
        "",
        "## Sweep (validation split)",
        "",
        "| method | key | value | learning rate | validation sampled pass@1 | seeds | chosen |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in sweep:
        key, value = row.get("key", "learning_rate"), row.get("value", row["learning_rate"])
        seeds = ", ".join(f"{v:.1%}" for v in row["per_seed"]) if "per_seed" in row else "1"
        chosen = ("yes, at the grid's edge" if row.get("at_edge") else "yes") if row["chosen"] else ""
        lines.append(
            f"| {row['method']} | {key} | {value:g} | {row['learning_rate']:g} "
            f"| {pct(row['validation_sampled_pass1'], row['ci95'])} | {seeds} | {chosen} |"
        )
    return lines


def write_markdown(
    summary: dict, settings: dict, path: Path, sweep: list | None = None, checks: tuple[str, dict] | None = None
) -> None:
    """summary.md; with `checks` (a tiny world's profile and published summary), whether its claims hold here."""
    lines = methods_table(summary, settings)
    lines += ["", "## What holds", "", what_holds(summary)]
    primary = primary_section(summary)
    lines += ["", *primary] if primary else []
    lines += ["", "## Transfer", "", transfer_section(summary["transfer"])] if summary.get("transfer") else []
    if checks:
        lines += ["", *transfer_table(checks[1], summary, checks[0], settings["profile"], agreement=True)]
    compute = compute_lines(summary)
    lines += ["", "## Accuracy against compute", "", *compute] if compute else []
    lines += ["", matched_section(summary["matched"])] if summary.get("matched") else []
    if summary.get("against_base"):
        lines += ["", *markdown(summary["against_base"], "## Against the base")]
    lines += ["", *markdown(summary["versus"])] if summary.get("versus") else []
    lines += single_runs(summary)
    lines += sweep_table(sweep) if sweep else []
    lines += [
        "",
        "Peak memory is measured in each method's own process: "
        + settings["memory_measure"]
        + ". 'est. GB' is `studies.memory.estimate` for the same configs. Training rewards: GRPO and PPO log "
        "the task reward of their batches; DPO, IPO and ORPO log their implicit reward margin (no task reward in "
        "training). 'clipped': share of held-out completions (greedy and sampled) that reached the length "
        "limit.",
        "",
        "## Settings",
        "",
        "```json",
        json.dumps(settings, indent=2),
        "```",
        "",
    ]
    path.write_text("\n".join(lines))


def plot_memory(summary: dict, estimates: dict | None, out: Path) -> None:
    """memory.png: measured peak memory per method (runtime and training), and the estimate by component."""
    import matplotlib.pyplot as plt

    trained = [a for a in summary["methods"] if a["method"] != "base"]
    names = [a["method"] for a in trained]
    runs = [r for r in summary["runs"] if r["method"] != "base"]
    panels = 2 if estimates else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    runtime = [next(r for r in runs if r["method"] == n).get("runtime_memory_mb") or 0 for n in names]
    training = [a["peak_memory_mb"] - rt for a, rt in zip(trained, runtime, strict=True)]
    axes[0][0].bar(names, runtime, label="runtime before model load (measured)")
    axes[0][0].bar(names, training, bottom=runtime, label="model + training (measured, mean over seeds)")
    axes[0][0].set_ylabel("peak memory, MB")
    axes[0][0].set_title(f"measured ({runs[0]['memory_measure'].split(' (')[0]})" if runs else "measured")
    axes[0][0].legend(fontsize=7)
    if estimates:
        components = [c for c in next(iter(estimates.values())) if c != "total_gb"]
        bottom = [0.0] * len(names)
        for component in components:
            values = [estimates[SCRIPT.get(m, m)][component] for m in names]
            if any(values):
                axes[0][1].bar(names, values, bottom=bottom, label=component.removesuffix("_gb"))
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        axes[0][1].set_ylabel("GB")
        axes[0][1].set_title("estimated by component (studies.memory.estimate)")
        axes[0][1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=100)
    plt.close(fig)


def plot_accuracy(summary: dict, out: Path) -> None:
    """accuracy.png: each method's held-out accuracy over seeds with its interval, every seed a point."""
    import matplotlib.pyplot as plt

    methods = summary["methods"]
    fig, ax = plt.subplots(figsize=(7, 4))
    metrics = (("sampled_pass1", "sampled_pass1_ci95", "sampled pass@1"), ("greedy_accuracy", "greedy_ci95", "greedy"))
    for offset, (metric, run_ci, label) in enumerate(metrics):
        xs = [i + offset * 0.4 for i in range(len(methods))]
        means = [a[metric] for a in methods]
        cis = [
            interval(a, f"{metric}_ci95", next(r for r in summary["runs"] if r["method"] == a["method"]), run_ci)
            for a in methods
        ]
        err = [
            [m - ci[0] for m, ci in zip(means, cis, strict=True)],
            [ci[1] - m for m, ci in zip(means, cis, strict=True)],
        ]
        ax.bar(xs, means, width=0.4, yerr=err, capsize=3, label=f"{label} (mean, 95% CI)", alpha=0.7)
        for x, a in zip(xs, methods, strict=True):
            points = [r[metric] for r in summary["runs"] if r["method"] == a["method"]]
            ax.plot([x] * len(points), points, "k.", markersize=5)
    ax.set_xticks([i + 0.2 for i in range(len(methods))], [a["method"] for a in methods])
    ax.set_ylabel("held-out accuracy (dots: single seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=100)
    plt.close(fig)


def plot_rewards(summary: dict, out: Path) -> None:
    """rewards.png: each method's training signal, every seed's raw points and rolling mean."""
    import matplotlib.pyplot as plt

    methods = summary["methods"]
    trained = [a for a in methods if a["method"] != "base"]
    runs = [r for r in summary["runs"] if r["method"] != "base"]
    colors = {a["method"]: f"C{i}" for i, a in enumerate(methods)}

    fig, axes = plt.subplots(1, max(1, len(trained)), figsize=(4 * max(1, len(trained)), 3.5), squeeze=False)
    for ax, a in zip(axes[0], trained, strict=False):
        for r in (r for r in runs if r["method"] == a["method"] and r["reward_curve"]):
            steps, values = zip(*r["reward_curve"], strict=True)
            ax.plot(steps, values, ".", color=colors[a["method"]], alpha=0.25, markersize=3)
            ax.plot(
                steps,
                rolling_mean(list(values), max(1, len(values) // 8)),
                color=colors[a["method"]],
                linewidth=1,
                label=f"seed {r['seed']} (rolling mean)",
            )
        ax.set_title(a["method"])
        ax.set_xlabel("step")
        ax.set_ylabel(a["reward_key"])
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "rewards.png", dpi=100)
    plt.close(fig)


def plot_compute(summary: dict, out: Path) -> None:
    """compute.png: validation sampled pass@1 at each checkpoint against training seconds and completions."""
    import matplotlib.pyplot as plt

    methods = summary["methods"]
    trained = [a for a in methods if a["method"] != "base"]
    runs = [r for r in summary["runs"] if r["method"] != "base"]
    colors = {a["method"]: f"C{i}" for i, a in enumerate(methods)}

    if any(r.get("compute_curve") for r in runs):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for a in trained:
            curves = [r["compute_curve"] for r in runs if r["method"] == a["method"] and r.get("compute_curve")]
            if not curves:
                continue
            length = min(len(c) for c in curves)
            sampled = "completions_generated" if "completions_generated" in curves[0][0] else "samples"
            for ax, x_key in zip(axes, ("train_seconds", sampled), strict=True):
                xs = [sum(c[i][x_key] for c in curves) / len(curves) for i in range(length)]
                ys = [[c[i]["validation_sampled_pass1"] for c in curves] for i in range(length)]
                ax.plot(xs, [sum(y) / len(y) for y in ys], marker="o", color=colors[a["method"]], label=a["method"])
                ax.fill_between(xs, [min(y) for y in ys], [max(y) for y in ys], color=colors[a["method"]], alpha=0.2)
        base = next(a for a in methods if a["method"] == "base")
        for ax, label in zip(axes, ("training seconds", "completions sampled (older tables: samples)"), strict=True):
            ax.axhline(
                summary.get("base_validation_sampled_pass1") or base["sampled_pass1"],
                color="gray",
                linestyle="--",
                linewidth=1,
                label="base",
            )
            ax.set_xlabel(label)
            ax.set_ylabel("validation sampled pass@1 (band: seeds' range)")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "compute.png", dpi=100)
        plt.close(fig)


def plot(summary: dict, estimates: dict | None, out: Path) -> None:
    """The table's figures: memory.png, accuracy.png, rewards.png and, where runs saved checkpoints, compute.png."""
    import matplotlib

    matplotlib.use("Agg")
    plot_memory(summary, estimates, out)
    plot_accuracy(summary, out)
    plot_rewards(summary, out)
    plot_compute(summary, out)
