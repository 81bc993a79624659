"""What a study writes from its numbers (studies.grid.engine's summary.json and settings.json, under its rules): the
provenance line, the cells' table, each cell against its reference in words (an order only where the seeds x problems
difference survives Holm's correction over the study's family; otherwise the smallest difference the study could have
detected), and accuracy against drift as a plot."""

from pathlib import Path

from studies.comparison.inference import METRICS
from studies.comparison.versus import adjusted, detectable, points, seeds_alone


def provenance(settings: dict) -> str:
    """The first line of a study's README: where and when its numbers came from, and its budget."""
    threads = settings.get("omp_num_threads")
    shared = f", {threads} thread per process beside other jobs: s/step is not the machine's speed" if threads else ""
    return (
        f"Measured at commit {settings['commit']} on {settings['cpu']} ({settings['cpus']} cores{shared}), "
        f"{settings['seconds']:.0f} s in all; profile `{settings['profile']}`, {settings['seeds']} seeds per cell, "
        f"{settings['eval_n']} held-out problems scored with the clean reward (greedy, and {settings['eval_k']} "
        f"samples at T={settings['temperature']} for sampled pass@1), 4-bit as trained. KL from the start: the mean "
        f"per-token KL(policy || start) on {settings['drift_problems']} held-out problems at the end of each run."
    )


def on_one_gpu(target: str, summary: dict) -> str:
    """The line every study README ends with: the same grid at 7B, and how the README is written again (each
    difference from the per-problem scores, where the study kept them)."""
    kept = ", each difference again from per_problem.jsonl beside it (every held-out score of every run and the base)"
    scores = "" if ran_before_64(summary) else kept
    return (
        f"The same grid on one GPU: `make {target} PROFILE=7b` (Qwen2.5-7B-Instruct in 4-bit + LoRA on GSM8K, the "
        "7b recipe configs; not run for this README). `python -m studies.grid.<study> --report` rewrites this README "
        f"and its plots from summary.json and settings.json{scores}."
    )


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
            f"| {'n/a' if c['kl'] is None else format(c['kl'], '.4f')} "
            f"| {'n/a' if c['seconds_per_step'] is None else format(c['seconds_per_step'], '.2f')} |{extra}"
            f" {', '.join(c['checks']) or 'none'} |"
        )
    return "\n".join(lines)


WHAT_THE_NUMBERS_SAY = (
    "What the numbers say (generated from summary.json; an order only where its seeds x problems difference survives "
    "Holm's correction over the study's family):"
)
# Below this difference an order wants 5 seeds before it is relied on (3 suffice for larger ones).
SMALL_DIFFERENCE, SEEDS_FOR_SMALL = 0.03, 5


def rounded_down(row: dict) -> bool:
    """A difference from a study run before its degrees of freedom were kept as Satterthwaite gives them (no
    seed-level check beside it): its df was stored rounded down to a whole number, so its interval, p and detectable
    difference err on the wide side, and only a rerun (with its per-problem scores) gives the exact ones."""
    return "seed_level" not in row and row.get("seeds", 1) > 1


def could_have_detected(row: dict) -> str:
    """'could have detected X', said as a bound where the row's df was rounded down.

    >>> could_have_detected({"detectable": 0.042, "seeds": 3, "seed_level": None})
    'could have detected 4.2 points'
    >>> could_have_detected({"detectable": 0.042, "seeds": 3})
    'could have detected 4.2 points (df rounded down: a bound)'
    """
    bound = " (df rounded down: a bound)" if rounded_down(row) else ""
    return f"could have detected {detectable(row['detectable'])}{bound}"


def ran_before_64(summary: dict) -> bool:
    """Whether a study's differences come from before #64 (`rounded_down`): no per-problem scores behind them."""
    return any(
        rounded_down(c[f"{m}_vs_reference"]) for c in summary["cells"] for m in METRICS if c.get(f"{m}_vs_reference")
    )


def family_line(summary: dict) -> str:
    """How the sentences below a study's table decide, with the size of its family (and, for a study run before the
    degrees of freedom were kept unrounded, what that does to its numbers)."""
    said = (
        f"An order is claimed only where its seeds x problems difference survives Holm's correction over the study's "
        f"{summary['family_size']} differences (every cell against its reference, sampled pass@1 and greedy); a pair "
        "not told apart gives the smallest difference the study could have detected (80% power, at the level Holm "
        "would have needed for it). Intervals of shares stay within [0, 100]%."
    )
    if ran_before_64(summary):
        said += (
            " This study ran before #64: its degrees of freedom were stored rounded down to whole numbers and its "
            "per-problem scores were not kept, so every interval, p and detectable difference here is on the wide "
            "side (a bound, marked), and a claim here holds at the exact degrees of freedom too; a rerun gives exact "
            "numbers."
        )
    return said


def against_reference(summary: dict, metric: str = "sampled") -> list[str]:
    """One sentence per cell that is not a reference: better, worse, or not told apart, in points with the seeds x
    problems interval and the Holm-adjusted p; an order only where it is claimed, and said to want more seeds where it
    is below 3 points on fewer than 5; a pair not told apart with the difference the study could have detected. The
    sampled sentences open with how they decide (`family_line`)."""
    name = {"sampled": "sampled pass@1", "greedy": "greedy accuracy"}[metric]
    lines = [family_line(summary)] if metric == "sampled" else []
    for c in summary["cells"]:
        row = c.get(f"{metric}_vs_reference")
        if row is None:
            continue
        interval = f"{points(row['mean'], row['ci95'])} points, Holm p {adjusted(row['p_holm'])}"
        if not row["claimed"]:
            seen = could_have_detected(row)
            lines.append(f"{c['cell']} and {c['reference_cell']} are not told apart in {name}: {interval}; {seen}.")
            continue
        verb = "beats" if row["mean"] > 0 else "falls below"
        seeds = len({r["seed"] for r in summary["runs"] if r["cell"] == c["cell"]})
        small = abs(row["mean"]) < SMALL_DIFFERENCE and seeds < SEEDS_FOR_SMALL
        caveat = f" (under 3 points on {seeds} seeds: rerun with SEEDS=5 before relying on it)" if small else ""
        if seeds_alone(row):  # beside every claim (absent from studies run before it)
            caveat += f"; {seeds_alone(row)}"
        lines.append(f"{c['cell']} {verb} {c['reference_cell']} in {name}: {interval}{caveat}.")
    return lines


def seed_spread(summary: dict, wide: float = 0.10) -> list[str]:
    """One line per cell whose seeds disagree: any seed's held-out sampled pass@1 below the base's, or seeds more
    than `wide` apart; each seed's number, so a collapse in one seed is seen, not averaged away."""
    base = summary["base"]["sampled_pass1"]
    lines = []
    for c in summary["cells"]:
        values = [
            r["sampled_pass1"] for r in sorted(summary["runs"], key=lambda r: r["seed"]) if r["cell"] == c["cell"]
        ]
        below = sum(v < base for v in values)
        if values and (below or max(values) - min(values) > wide):
            lines.append(
                f"{c['cell']}: sampled pass@1 by seed {', '.join(f'{v:.1%}' for v in values)}; {below} of "
                f"{len(values)} below the base's {base:.1%}."
            )
    return lines


def versus(cell: dict, metric: str = "sampled") -> str:
    """A cell against its reference in a few words: the points with the seeds x problems interval, and whether the
    difference is claimed under Holm (else what the study could have detected)."""
    row = cell.get(f"{metric}_vs_reference")
    if row is None:
        return "the reference"
    said = "beyond noise" if row["claimed"] else f"not told apart, {could_have_detected(row)}"
    said += " (only under the crossed variance)" if row.get("crossed_only") else ""
    return f"{points(row['mean'], row['ci95'])} points vs {cell['reference_cell']}, {said}"


def cell_named(summary: dict, name: str) -> dict:
    return next(c for c in summary["cells"] if c["cell"] == name)


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
