"""Method against method: for every pair of methods, the difference in sampled pass@1 and in greedy accuracy on
the same held-out problems under the same seeds (seed s of one against seed s of the other), with a 95% interval
that counts both the seeds' and the problems' variance (core.report.stats.crossed_difference), and the sentences that
say what holds, generated from those intervals: a sentence claims an order only where its interval excludes zero."""

import textwrap
from itertools import combinations

from core.report.stats import crossed_difference

METRICS = {"sampled": "sampled pass@1", "greedy": "greedy accuracy"}


def points(mean: float, ci, sign: int = 1) -> str:
    """A difference of shares in points with its interval; sign=-1 states it the other way round.

    >>> points(0.05, [0.01, 0.09]), points(0.05, [0.01, 0.09], sign=-1)
    ('+5.0 [+1.0, +9.0]', '-5.0 [-9.0, -1.0]')
    """
    low, high = sorted(sign * x * 100 for x in ci)
    return f"{sign * mean * 100:+.1f} [{low:+.1f}, {high:+.1f}]"


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
    'GRPO > PPO in sampled pass@1: +5.0 [+1.0, +9.0] points (2 seeds x 200 problems).'
    >>> sentence({"a": "dpo", "b": "orpo", "metric": "greedy", "mean": 0.01, "ci95": [-0.02, 0.04],
    ...           "excludes_zero": False, "seeds": [0], "problems": 200})
    'DPO and ORPO are not told apart in greedy accuracy: +1.0 [-2.0, +4.0] points includes 0 (1 seed x 200 problems).'
    """
    a, b, metric = row["a"].upper(), row["b"].upper(), METRICS[row["metric"]]
    n_seeds = len(row["seeds"])
    where = f"({n_seeds} seed{'s' if n_seeds > 1 else ''} x {row['problems']} problems)"
    if not row["excludes_zero"]:
        interval = points(row["mean"], row["ci95"])
        return f"{a} and {b} are not told apart in {metric}: {interval} points includes 0 {where}."
    if row["mean"] < 0:
        return f"{b} > {a} in {metric}: {points(row['mean'], row['ci95'], sign=-1)} points {where}."
    return f"{a} > {b} in {metric}: {points(row['mean'], row['ci95'])} points {where}."


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
            cells += [points(row["mean"], row["ci95"]), "yes" if row["excludes_zero"] else "no"]
        lines.append(f"| {a} | {b} | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {sentence(metrics['sampled'])}" for metrics in by_pair.values())]
    return lines


def _against_base(entry: dict, run: dict) -> str:
    said = {"gain": [], "lose": []}
    for metric, name in METRICS.items():
        low, high = entry.get(f"{metric}_vs_base_ci95_seeds") or run[f"{metric}_vs_base_ci95"]
        if low > 0 or high < 0:
            said["gain" if low > 0 else "lose"].append(name)
    if not said["gain"] and not said["lose"]:
        return "move{s} neither metric beyond noise"
    parts = [f"{verb}{{s}} in {' and '.join(names)}" for verb, names in said.items() if names]
    return " and ".join(parts) + ("" if sum(map(len, said.values())) == 2 else " only")


def _names(methods: list[str]) -> str:
    names = [m.upper() for m in methods]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def what_holds(summary: dict) -> str:
    """The sentences under a published table, generated from its numbers (a test holds every README to them):
    each method against the base (the seeds' 95% interval of the paired difference, as in the table), then every
    pair of methods in each metric (the seeds x problems interval of `versus`): an order is claimed only where the
    interval excludes zero.

    >>> summary = {
    ...     "methods": [
    ...         {"method": "base"},
    ...         {"method": "grpo", "sampled_vs_base_ci95_seeds": [0.1, 0.2], "greedy_vs_base_ci95_seeds": [0.1, 0.3]},
    ...         {"method": "orpo", "sampled_vs_base_ci95_seeds": [0, 0.02], "greedy_vs_base_ci95_seeds": [-0.2, -0.1]},
    ...     ],
    ...     "runs": [{"method": "grpo"}, {"method": "orpo"}],
    ...     "versus": [
    ...         {"a": "grpo", "b": "orpo", "metric": "sampled", "mean": 0.2, "excludes_zero": True},
    ...         {"a": "grpo", "b": "orpo", "metric": "greedy", "mean": 0.3, "excludes_zero": True},
    ...     ],
    ... }
    >>> print(what_holds(summary))
    Against the base (the paired difference per problem, the seeds' 95% interval): GRPO gains in sampled pass@1 and
    greedy accuracy; ORPO loses in greedy accuracy only. Method against method (the seeds x problems interval): in
    sampled pass@1 GRPO > ORPO; in greedy accuracy GRPO > ORPO.
    """
    groups = {}
    for entry in summary["methods"]:
        if entry["method"] != "base":
            run = next(r for r in summary["runs"] if r["method"] == entry["method"])
            groups.setdefault(_against_base(entry, run), []).append(entry["method"])
    against_base = "; ".join(
        f"{_names(ms)} {phrase.format(s='' if len(ms) > 1 else 's')}" for phrase, ms in groups.items()
    )
    pairwise = []
    for metric, name in METRICS.items():
        rows = [r for r in summary.get("versus", []) if r["metric"] == metric]
        if not rows:
            continue
        beats, ties = {}, []
        for r in rows:
            if r["excludes_zero"]:
                winner, loser = (r["a"], r["b"]) if r["mean"] > 0 else (r["b"], r["a"])
                beats.setdefault(winner, []).append(loser)
            else:
                ties.append(f"{r['a'].upper()} and {r['b'].upper()}")
        said = [f"{w.upper()} > {', '.join(m.upper() for m in losers)}" for w, losers in beats.items()]
        said += [f"not told apart: {', '.join(ties)}"] if ties else []
        pairwise.append(f"in {name} " + "; ".join(said))
    text = f"Against the base (the paired difference per problem, the seeds' 95% interval): {against_base}."
    if pairwise:
        text += " Method against method (the seeds x problems interval): " + "; ".join(pairwise) + "."
    return textwrap.fill(text, width=116, break_on_hyphens=False)
