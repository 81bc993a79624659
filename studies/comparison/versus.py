"""Method against method: for every pair of methods, the difference in sampled pass@1 and in greedy accuracy on
the same held-out problems under the same seeds (seed s of one against seed s of the other), with a 95% interval
that counts both the seeds' and the problems' variance (core.stats.crossed_difference), and the sentences that say
what holds, generated from those intervals: a sentence claims an order only where its interval excludes zero."""

from itertools import combinations

from core.stats import crossed_difference

METRICS = {"sampled": "sampled pass@1", "greedy": "greedy accuracy"}


def versus(evals: dict, methods: list[str]) -> list[dict]:
    """One row per pair of `methods` (in their order) and metric, from `evaluate_all`'s per-problem scores; only the
    seeds both methods ran count."""
    rows = []
    ran = [key for key in evals if key != "base"]  # (method, seed)
    for first, second in combinations(methods, 2):
        seeds = sorted({s for m, s in ran if m == first} & {s for m, s in ran if m == second})
        if not seeds:
            continue
        for metric in METRICS:
            scores = {m: [evals[(m, s)][f"{metric}_per_problem"] for s in seeds] for m in (first, second)}
            difference = crossed_difference(scores[first], scores[second])
            low, high = difference["ci95"]
            rows.append(
                {
                    "a": first,
                    "b": second,
                    "metric": metric,
                    **difference,
                    "seeds": seeds,  # which ones (the statistic counted them)
                    "excludes_zero": low > 0 or high < 0,
                }
            )
    return rows


def sentence(row: dict) -> str:
    """What the row's interval shows, and nothing it does not.

    >>> sentence({"a": "grpo", "b": "ppo", "metric": "sampled", "mean": 0.05, "ci95": [0.01, 0.09],
    ...           "excludes_zero": True, "seeds": [0, 1], "problems": 200})
    'GRPO > PPO in sampled pass@1: +5.0 points [+1.0, +9.0] (2 seeds x 200 problems).'
    >>> sentence({"a": "dpo", "b": "orpo", "metric": "greedy", "mean": 0.01, "ci95": [-0.02, 0.04],
    ...           "excludes_zero": False, "seeds": [0], "problems": 200})
    'DPO and ORPO are not told apart in greedy accuracy: +1.0 points [-2.0, +4.0] includes 0 (1 seed x 200 problems).'
    """
    mean, (low, high) = row["mean"] * 100, (x * 100 for x in row["ci95"])
    a, b, metric = row["a"].upper(), row["b"].upper(), METRICS[row["metric"]]
    n_seeds = len(row["seeds"])
    where = f"({n_seeds} seed{'s' if n_seeds > 1 else ''} x {row['problems']} problems)"
    interval = f"{mean:+.1f} points [{low:+.1f}, {high:+.1f}]"
    if not row["excludes_zero"]:
        return f"{a} and {b} are not told apart in {metric}: {interval} includes 0 {where}."
    if mean < 0:
        a, b, interval = b, a, f"{-mean:+.1f} points [{-high:+.1f}, {-low:+.1f}]"
    return f"{a} > {b} in {metric}: {interval} {where}."


def markdown(rows: list[dict]) -> list[str]:
    """The table (A - B, both metrics) and, under it, one generated sentence per pair for the headline metric."""
    if not rows:
        return []
    lines = [
        "## Method against method",
        "",
        "A - B on the same problems under the same seeds, in points; the 95% interval counts the seeds' and the "
        "problems' variance (two-way random effects, Satterthwaite degrees of freedom; one seed: a paired "
        "t-interval over problems).",
        "",
        "| A | B | sampled pass@1 A - B | excludes 0 | greedy A - B | excludes 0 |",
        "|---|---|---|---|---|---|",
    ]
    by_pair = {}
    for row in rows:
        by_pair.setdefault((row["a"], row["b"]), {})[row["metric"]] = row
    for (a, b), metrics in by_pair.items():
        cells = []
        for metric in METRICS:
            row = metrics[metric]
            low, high = (x * 100 for x in row["ci95"])
            cells += [f"{row['mean'] * 100:+.1f} [{low:+.1f}, {high:+.1f}]", "yes" if row["excludes_zero"] else "no"]
        lines.append(f"| {a} | {b} | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {sentence(metrics['sampled'])}" for metrics in by_pair.values())]
    return lines
