"""What a comparison's differences say, in sentences generated from its rows (studies.comparison.inference): each
method against the base and every pair of methods, in sampled pass@1 and greedy accuracy. An order is claimed only
where the row's Holm-corrected p is below 0.05; a pair not told apart says the smallest difference the run could have
detected. (Tables published before the Holm rule, whose rows carry no p, read as they were published: an order where
the 95% interval excludes zero.)"""

import textwrap

from studies.comparison.inference import METRICS


def points(mean: float, ci, sign: int = 1) -> str:
    """A difference of shares in points with its interval; sign=-1 states it the other way round.

    >>> points(0.05, [0.01, 0.09]), points(0.05, [0.01, 0.09], sign=-1)
    ('+5.0 [+1.0, +9.0]', '-5.0 [-9.0, -1.0]')
    """
    low, high = sorted(sign * x * 100 for x in ci)
    return f"{sign * mean * 100:+.1f} [{low:+.1f}, {high:+.1f}]"


def detectable(difference: float) -> str:
    """The smallest difference a run could have detected, in points (a share moves at most 100; no spread at all, as
    between two models that scored alike on every problem, leaves any difference detectable).

    >>> detectable(0.042), detectable(5.45), detectable(0.0)
    ('4.2 points', 'no difference up to 100 points', 'any difference (identical scores)')
    """
    if difference == 0:
        return "any difference (identical scores)"
    return f"{difference * 100:.1f} points" if difference <= 1 else "no difference up to 100 points"


def adjusted(p: float) -> str:
    """A Holm-adjusted p as the sentences print it.

    >>> adjusted(0.0123), adjusted(0.00001)
    ('0.012', '< 0.001')
    """
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


CROSSED_ONLY = "*: the seeds' own t-test (df = seeds - 1) would not claim it."


def mark(row: dict) -> str:
    """'*' on a claim that holds only under the crossed variance (core.report.stats.one_family's `crossed_only`)."""
    return "*" if row.get("crossed_only") else ""


def seeds_alone(row: dict) -> str:
    """The seeds' own check beside a claim, in words ('' where the row has none: one seed, or a row from before it).

    >>> seeds_alone({"seed_level": {"df": 2, "p": 0.21}, "crossed_only": True})
    'the seeds alone, df 2: p 0.210, only under the crossed variance'
    """
    check = row.get("seed_level")
    if check is None:
        return ""
    alone = "only under the crossed variance" if row.get("crossed_only") else "holds there too"
    return f"the seeds alone, df {check['df']}: p {check['p']:.3f}, {alone}"


def is_claimed(row: dict) -> bool:
    """Whether a row claims its order: Holm-adjusted p < 0.05, or, in a table from before the rule, an interval that
    excludes zero."""
    return row["claimed"] if "claimed" in row else row["excludes_zero"]


def sentence(row: dict) -> str:
    """What the row shows, and nothing it does not.

    >>> sentence({"a": "grpo", "b": "ppo", "metric": "sampled", "mean": 0.05, "ci95": [0.01, 0.09], "claimed": True,
    ...           "p_holm": 0.012, "detectable": None, "seeds": [0, 1], "problems": 200})
    'GRPO > PPO in sampled pass@1: +5.0 [+1.0, +9.0] points, Holm p 0.012 (2 seeds x 200 problems).'
    >>> crossed = {"a": "ipo", "b": "base", "metric": "sampled", "mean": 0.02, "ci95": [0.01, 0.03], "claimed": True,
    ...            "crossed_only": True, "p_holm": 0.03, "detectable": None, "seeds": [0, 1, 2], "problems": 100,
    ...            "seed_level": {"df": 2, "p": 0.21}}
    >>> for part in sentence(crossed).split("; "):
    ...     print(part)
    IPO > base in sampled pass@1: +2.0 [+1.0, +3.0] points, Holm p 0.030 (3 seeds x 100 problems
    the seeds alone, df 2: p 0.210, only under the crossed variance).
    >>> tie = {"a": "dpo", "b": "orpo", "metric": "greedy", "mean": 0.01, "ci95": [-0.02, 0.04], "claimed": False,
    ...        "p_holm": 1.0, "detectable": 0.042, "seeds": [0], "problems": 200}
    >>> for part in sentence(tie).split("; "):
    ...     print(part)
    DPO and ORPO are not told apart in greedy accuracy: +1.0 [-2.0, +4.0] points, Holm p 1.000
    the run could have detected 4.2 points (1 seed x 200 problems).
    """
    a, b = (m if m == "base" else m.upper() for m in (row["a"], row["b"]))  # the base is no method's name
    metric = METRICS[row["metric"]]
    n_seeds = len(row["seeds"])
    where = f"({n_seeds} seed{'s' if n_seeds > 1 else ''} x {row['problems']} problems)"
    holm = f", Holm p {adjusted(row['p_holm'])}" if "p_holm" in row else ""
    if not is_claimed(row):
        interval = points(row["mean"], row["ci95"])
        if "detectable" not in row:
            return f"{a} and {b} are not told apart in {metric}: {interval} points includes 0 {where}."
        seen = f"the run could have detected {detectable(row['detectable'])}"
        return f"{a} and {b} are not told apart in {metric}: {interval} points{holm}; {seen} {where}."
    if seeds_alone(row):  # beside every claim
        where = where[:-1] + f"; {seeds_alone(row)})"
    if row["mean"] < 0:
        return f"{b} > {a} in {metric}: {points(row['mean'], row['ci95'], sign=-1)} points{holm} {where}."
    return f"{a} > {b} in {metric}: {points(row['mean'], row['ci95'])} points{holm} {where}."


FAMILY = "the comparison's family (against the base and method against method, both metrics)"
PRIMARY = "P"  # beside a pre-registered primary contrast's Holm p: corrected within the primary family only


def family_words(summary: dict, unnamed: str = "the family") -> str:
    """The family a table's Holm p is taken over, in words (`unnamed`: how a table without a primary family names its
    one family).

    >>> family_words({"family_size": 30}), family_words({"family_size": 30}, "the comparison's family")
    ('the family of 30 differences', "the comparison's family of 30 differences")
    >>> family_words({"family_size": 30, "families": {"primary": 4, "secondary": 26}})
    'its family: the 4 pre-registered primary differences, or the 26 secondary ones'
    """
    families = summary.get("families")
    if not families:
        return f"{unnamed} of {summary['family_size']} differences"
    return (
        f"its family: the {families['primary']} pre-registered primary differences, or the {families['secondary']} "
        "secondary ones"
    )


def markdown(rows: list[dict], title: str = "## Method against method", family: str = FAMILY) -> list[str]:
    """The table (A - B, both metrics) and, under it, one generated sentence per pair for the headline metric;
    `family`: the rows' Holm family, in words."""
    if not rows:
        return []
    corrected = "p_holm" in rows[0]
    lines = [
        title,
        "",
        "A - B on the same problems under the same seeds, in points; the 95% interval counts the seeds' and the "
        "problems' variance (two-way random effects, Satterthwaite degrees of freedom; one seed: a paired "
        "t-interval over problems)"
        + (
            f". 'claimed': Holm-adjusted p < 0.05 over {family}; 'detectable': the smallest difference the run "
            "could have detected (80% power)."
            if corrected
            else "."
        )
        + (
            f" {PRIMARY}: a pre-registered primary contrast, its Holm p taken within the primary family alone (the "
            "others' within the secondary family)."
            if any(row.get("family") == "primary" for row in rows)
            else ""
        ),
        "",
    ]
    if corrected:
        lines += [
            "| A | B | sampled pass@1 A - B | Holm p | claimed | detectable | greedy A - B | Holm p | claimed "
            "| detectable |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
    else:
        lines += [
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
            if corrected:
                seen = "" if row["detectable"] is None else detectable(row["detectable"])
                claimed = f"yes{mark(row)}" if row["claimed"] else "no"
                primary = f" ({PRIMARY})" if row.get("family") == "primary" else ""
                cells += [points(row["mean"], row["ci95"]), adjusted(row["p_holm"]) + primary, claimed]
                cells.append(seen)
            else:
                cells += [points(row["mean"], row["ci95"]), "yes" if row["excludes_zero"] else "no"]
        lines.append(f"| {a} | {b} | " + " | ".join(cells) + " |")
    if any(mark(row) for row in rows):
        lines += ["", CROSSED_ONLY]
    lines += ["", *(f"- {sentence(metrics['sampled'])}" for metrics in by_pair.values())]
    return lines


def _against_base(entry: dict, run: dict) -> str:
    said, unseen = {"gain": [], "lose": []}, {}
    for metric, name in METRICS.items():
        if f"{metric}_vs_base_claimed" in entry:  # the Holm rule
            if entry[f"{metric}_vs_base_claimed"]:
                starred = "*" if entry.get(f"{metric}_vs_base_crossed_only") else ""
                said["gain" if entry[f"{metric}_vs_base"] > 0 else "lose"].append(name + starred)
            else:
                unseen[name] = detectable(entry[f"{metric}_vs_base_detectable"])
            continue
        low, high = entry.get(f"{metric}_vs_base_ci95_seeds") or run[f"{metric}_vs_base_ci95"]
        if low > 0 or high < 0:
            said["gain" if low > 0 else "lose"].append(name)
    if not said["gain"] and not said["lose"]:
        seen = f" (could have detected {' and '.join(unseen.values())})" if unseen else ""
        return "move{s} neither metric beyond noise" + seen
    parts = [f"{verb}{{s}} in {' and '.join(names)}" for verb, names in said.items() if names]
    only = "" if sum(map(len, said.values())) == 2 else " only"
    seen = "".join(f" ({name}: could have detected {shown})" for name, shown in unseen.items())
    return " and ".join(parts) + only + seen


def _names(methods: list[str]) -> str:
    names = [m.upper() for m in methods]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def what_holds(summary: dict) -> str:
    """The sentences under a published table, generated from its numbers (a test holds every README to them):
    each method against the base, then every pair of methods in each metric, as `sentence` claims them (Holm over
    the family, and the detectable difference of each pair not told apart).

    >>> summary = {
    ...     "rule": "seeds x problems, Holm over the family",
    ...     "family_size": 6,
    ...     "methods": [
    ...         {"method": "base"},
    ...         {"method": "grpo", "sampled_vs_base": 0.15, "sampled_vs_base_claimed": True, "greedy_vs_base": 0.2,
    ...          "greedy_vs_base_claimed": True},
    ...         {"method": "orpo", "sampled_vs_base": 0.01, "sampled_vs_base_claimed": False,
    ...          "sampled_vs_base_detectable": 0.021, "greedy_vs_base": -0.15, "greedy_vs_base_claimed": True},
    ...     ],
    ...     "runs": [{"method": "grpo"}, {"method": "orpo"}],
    ...     "versus": [
    ...         {"a": "grpo", "b": "orpo", "metric": "sampled", "mean": 0.2, "claimed": True},
    ...         {"a": "grpo", "b": "orpo", "metric": "greedy", "mean": 0.01, "claimed": False, "detectable": 0.035},
    ...     ],
    ... }
    >>> print(what_holds(summary))
    With the same prompts for every method, against the base (seeds x problems, the base's samples drawn again under
    each seed; Holm over the family of 6 differences): GRPO gains in sampled pass@1 and greedy accuracy; ORPO loses in
    greedy accuracy only (sampled pass@1: could have detected 2.1 points). Method against method (the same rule): in
    sampled pass@1 GRPO > ORPO; in greedy accuracy not told apart: GRPO and ORPO (could have detected 3.5 points).
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
            if is_claimed(r):
                winner, loser = (r["a"], r["b"]) if r["mean"] > 0 else (r["b"], r["a"])
                beats.setdefault(winner, []).append(loser + mark(r))
            else:
                seen = f" (could have detected {detectable(r['detectable'])})" if "detectable" in r else ""
                ties.append(f"{r['a'].upper()} and {r['b'].upper()}{seen}")
        said = [f"{w.upper()} > {', '.join(m.upper() for m in losers)}" for w, losers in beats.items()]
        seen = [r["detectable"] for r in rows if not is_claimed(r) and r.get("detectable")]
        if not beats and len(ties) > 2 and len(seen) == len(ties):  # every pair: one line, not one clause each
            said = [f"no two told apart (could have detected {detectable(min(seen))} to {detectable(max(seen))})"]
        else:
            said += [f"not told apart: {', '.join(ties)}"] if ties else []
        pairwise.append(f"in {name} " + "; ".join(said))
    if "rule" in summary:
        text = (
            f"With the same {summary.get('budget', 'prompts')} for every method, against the base (seeds x problems, "
            f"the base's samples drawn again under each seed; Holm over {family_words(summary)}): {against_base}."
        )
        rule = "the same rule"
    else:  # published before the Holm rule
        text = f"Against the base (the paired difference per problem, the seeds' 95% interval): {against_base}."
        rule = "the seeds x problems interval"
    if pairwise:
        text += f" Method against method ({rule}): " + "; ".join(pairwise) + "."
    if "*" in text:
        text += " " + CROSSED_ONLY
    return textwrap.fill(text, width=116, break_on_hyphens=False)


def primary_section(summary: dict) -> list[str]:
    """A table's pre-registered primary contrasts (the rows of its primary family, in the table's order): each
    difference, its Holm p within the family, claimed or the smallest difference it could have detected, and the
    seeds' own check; then one generated sentence each. Empty for a table without them."""
    rows = [r for r in summary.get("against_base", []) + summary.get("versus", []) if r.get("family") == "primary"]
    if not rows:
        return []
    lines = [
        "## Primary contrasts (pre-registered)",
        "",
        f"Named before the runs; Holm's correction over these {len(rows)} alone, every other difference in a "
        "secondary family of its own. A - B on the same problems under the same seeds, in points, with the seeds x "
        "problems 95% interval; 'seeds alone': the seeds' own t-test (df = seeds - 1).",
        "",
        "| A | B | metric | A - B | Holm p | claimed | detectable | seeds alone |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seen = "" if row["detectable"] is None else detectable(row["detectable"])
        check = row.get("seed_level")
        alone = "" if check is None else f"p {check['p']:.3f} (df {check['df']})"
        lines.append(
            f"| {row['a']} | {row['b']} | {METRICS[row['metric']]} | {points(row['mean'], row['ci95'])} "
            f"| {adjusted(row['p_holm'])} | {f'yes{mark(row)}' if row['claimed'] else 'no'} | {seen} | {alone} |"
        )
    if any(mark(row) for row in rows):
        lines += ["", CROSSED_ONLY]
    return lines + ["", *(f"- {sentence(row)}" for row in rows)]
