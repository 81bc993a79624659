"""Whether a tiny world's claims hold on a real model: every difference of the tiny world's family (a method against
the base, a method against a method, in sampled pass@1 and greedy accuracy) beside the same difference on the real
model, each read under its own comparison's rule (studies.comparison.inference), with a verdict generated from the
two rows. The real model's comparison prints it under its own tables (`make compare PROFILE=smol`, checked against
results/compare/tiny/summary.json).

>>> tiny = {"a": "grpo", "b": "base", "metric": "sampled", "mean": 0.1, "ci95": [0.05, 0.15], "claimed": True,
...         "detectable": None}
>>> verdict(tiny, tiny | {"mean": 0.02, "ci95": [0.01, 0.03]})
'holds'
>>> verdict(tiny, tiny | {"mean": -0.02, "ci95": [-0.03, -0.01]})
'flips'
>>> verdict(tiny, tiny | {"mean": 0.01, "ci95": [-0.05, 0.07], "claimed": False, "detectable": 0.08})
'not seen (it could have detected 8.0 points)'
>>> verdict(tiny, tiny | {"mean": 0.03, "ci95": [-0.02, 0.12], "claimed": False, "detectable": 0.08})
'consistent (the tiny effect lies in its interval; it could have detected 8.0 points)'
>>> verdict(tiny, tiny | {"mean": 0.01, "ci95": [-0.2, 0.22], "claimed": False, "detectable": 0.31})
'not told apart (it could have detected only 31.0 points)'
>>> verdict(tiny, tiny | {"mean": 0.3, "ci95": [-0.07, 0.69], "claimed": False, "detectable": 1.3})
'not told apart (it could have detected no difference up to 100 points)'
>>> verdict(tiny, None)
'not measured'
"""

from studies.comparison.inference import METRICS
from studies.comparison.versus import detectable, is_claimed, points


def said(row: dict) -> str:
    """One row as a claim in words: its order where claimed, else 'not told apart'.

    >>> said({"a": "grpo", "b": "ppo", "metric": "sampled", "mean": -0.05, "ci95": [-0.09, -0.01], "claimed": True})
    'PPO > GRPO'
    >>> said({"a": "dpo", "b": "base", "metric": "greedy", "mean": 0.05, "ci95": [0.01, 0.09], "claimed": True})
    'DPO > base'
    """
    a, b = row["a"].upper(), "base" if row["b"] == "base" else row["b"].upper()
    if not is_claimed(row):
        return f"{a} ~ {b}"
    return f"{a} > {b}" if row["mean"] > 0 else f"{b} > {a}"


def verdict(tiny: dict, real: dict | None, consistent: bool = True) -> str:
    """What the real model's row says of the tiny world's claim `tiny` (a claimed row); consistent=False: as tables
    before #64 said it, 'not seen' whether or not the real interval held the tiny world's difference."""
    if real is None:
        return "not measured"
    if is_claimed(real):
        return "holds" if (real["mean"] > 0) == (tiny["mean"] > 0) else "flips"
    could = real.get("detectable")
    if could is not None and could <= abs(tiny["mean"]):
        low, high = real["ci95"]
        if consistent and low <= tiny["mean"] <= high:  # none claimed, and none that rules out the tiny world's
            return f"consistent (the tiny effect lies in its interval; it could have detected {detectable(could)})"
        return f"not seen (it could have detected {detectable(could)})"
    if not could:
        return "not told apart"
    only = "" if could > 1 else "only "  # a run that could have detected nothing has no 'only'
    return f"not told apart (it could have detected {only}{detectable(could)})"


def rows_of(summary: dict) -> dict:
    """(a, b, metric) -> row, over the family's rows against the base and between methods (a table from before the
    Holm rule: its rows against the base made from each method's paired difference and the seeds' interval, claimed
    where that interval excluded zero, as it was published)."""
    against_base = summary.get("against_base")
    if against_base is None:
        against_base = []
        for entry in summary["methods"]:
            for metric in METRICS if entry["method"] != "base" else ():
                low, high = entry[f"{metric}_vs_base_ci95_seeds"]
                mean, excludes = entry[f"{metric}_vs_base"], low > 0 or high < 0
                row = {"a": entry["method"], "b": "base", "metric": metric, "mean": mean, "ci95": [low, high]}
                against_base.append(row | {"excludes_zero": excludes})
    return {(r["a"], r["b"], r["metric"]): r for r in against_base + summary.get("versus", [])}


TESTABLE = ("holds", "flips", "not seen", "consistent")  # verdicts where the real run could have seen the tiny effect


def transfer_table(
    tiny: dict,
    real: dict,
    tiny_name: str,
    real_name: str,
    title: str | None = None,
    intro: str | None = None,
    agreement: bool = False,
) -> list[str]:
    """The markdown section: each claim of the tiny world (orders and gains over the base, both metrics) beside the
    real model's row and the verdict; then what the real model claims that the tiny world did not. With `agreement`
    (a real model's table), how many claims it could test and how many of its differences point the tiny world's
    way. (Any two tables of the same methods: an earlier table and its rerun, with `title` and `intro`.)"""
    tiny_rows, real_rows = rows_of(tiny), rows_of(real)
    lines = [
        title or f"## Does `{tiny_name}` hold on `{real_name}`?",
        "",
        intro
        or f"Each difference `{tiny_name}` claims (Holm over its own family), beside the same difference on "
        f"`{real_name}` under this comparison's rule; budgets: `{tiny.get('budget', 'prompts')}` and "
        f"`{real.get('budget', 'prompts')}`. 'not seen' means the real run could have detected a difference as large "
        "as the tiny world's and its interval leaves the tiny world's difference out; 'consistent' that it could "
        "have detected it and its interval holds it; 'not told apart' that it could not have.",
        "",
        f"| claim on `{tiny_name}` | metric | `{tiny_name}` A - B | `{real_name}` A - B | on `{real_name}` "
        "| verdict |",
        "|---|---|---|---|---|---|",
    ]
    counts, same_sign = {}, 0
    for key, row in tiny_rows.items():
        if not is_claimed(row):
            continue
        other = real_rows.get(key)
        same_sign += other is not None and (other["mean"] > 0) == (row["mean"] > 0)
        said_there = "" if other is None else said(other)
        seen = "" if other is None else points(other["mean"], other["ci95"])
        judged = verdict(row, other)
        kind = judged.split(" (")[0]
        counts[kind] = counts.get(kind, 0) + 1
        lines.append(
            f"| {said(row)} | {METRICS[row['metric']]} | {points(row['mean'], row['ci95'])} | {seen} "
            f"| {said_there} | {judged} |"
        )
    new = [
        r for key, r in real_rows.items() if is_claimed(r) and (key not in tiny_rows or not is_claimed(tiny_rows[key]))
    ]
    tally = ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"
    claims = sum(counts.values())
    lines += ["", f"Of the {claims} claims of `{tiny_name}`: {tally}."]
    if agreement and claims:
        testable = sum(n for what, n in counts.items() if what in TESTABLE)
        lines[-1] += (
            f" Testable on `{real_name}` (claimed there, or it could have detected a difference as large as "
            f"`{tiny_name}`'s): {testable} of {claims}. The difference on `{real_name}` has `{tiny_name}`'s sign in "
            f"{same_sign} of {claims}."
        )
    if new:
        lines += [
            "",
            f"Claimed on `{real_name}` and not on `{tiny_name}`: "
            + "; ".join(f"{said(r)} in {METRICS[r['metric']]} ({points(r['mean'], r['ci95'])} points)" for r in new)
            + ".",
        ]
    return lines


def replaced_section(old: dict, new: dict, old_name: str) -> list[str]:
    """A rerun's README section: each claim of the table it replaced (`old`, kept as replaced.json beside it) and
    what the rerun says of it."""
    intro = (
        f"Each claim of the table this one replaced ({old_name}; under its own rule: an order where the 95% "
        "interval excluded zero, no correction), beside the same difference here (Holm over this table's family). "
        "'not seen': this run could have detected a difference as large as the old one and its interval leaves the "
        "old difference out; 'consistent': it could have, and its interval holds the old difference; 'not told "
        "apart': it could not have."
    )
    return transfer_table(old, new, "old", "new", "## Against the table this one replaced", intro)


def replication_section(published: dict, fresh: dict, published_name: str) -> list[str]:
    """A pre-registered rerun's section: each claim of the published table of its profile and budget, read against
    the rerun on problems no run had scored, with seeds no sweep used (results/compare/preregistration.json)."""
    intro = (
        f"Each claim of the published table ({published_name}, Holm over its family), beside the same difference in "
        "this pre-registered rerun: problems no run had scored, seeds its tuning never used (Holm over this table's "
        "family). 'holds': claimed here in the same direction; 'flips': claimed the other way; 'not seen': this run "
        "could have detected a difference as large and its interval leaves it out; 'consistent': it could have, and "
        "its interval holds it; 'not told apart': it could not have."
    )
    title = "## Does the published table replicate?"
    return transfer_table(published, fresh, "published", "rerun", title, intro)


def budget_section(prompts: dict, completions: dict) -> list[str]:
    """The same-completions table's section: each claim of the same-prompts table and what it becomes when every
    method samples the same completions (which orders the budget made)."""
    intro = (
        "Each claim of the same-prompts table (Holm over its family), beside the same difference when every method "
        "samples the same completions (Holm over this table's family). 'not seen': this run could have detected a "
        "difference as large and its interval leaves it out; 'consistent': it could have, and its interval holds it; "
        "'not told apart': it could not have."
    )
    title = "## The same prompts against the same completions"
    return transfer_table(prompts, completions, "prompts", "completions", title, intro)
