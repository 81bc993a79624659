"""Does a preference method sharpen greedy decoding more than sampling, against an online RL method? A reviewer read
it in the published tiny table (DPO's greedy - sampled gap exceeding GRPO's); here it is tested, per comparison, from
the per-problem scores: for each (seed, problem) the preference method's greedy score minus its sampled pass@1, less
the same for the online method, as a seeds x problems difference (core.report.stats.crossed_difference), Holm over
this family of its own. It was found after the tables were published, so it is marked post hoc: a claim here is one
to pre-register and test on problems never scored, not a finding yet."""

from core.report.stats import crossed_difference, one_family
from studies.comparison.versus import CROSSED_ONLY, adjusted, detectable, mark, points

PREFERENCE, ONLINE = ("dpo", "ipo", "orpo"), ("grpo", "ppo")


def gaps(scores: dict, method: str, seeds: list[int]) -> list[list[float]]:
    """Per seed, per problem: greedy score - sampled pass@1."""
    return [
        [g - v for g, v in zip(scores[method, s]["greedy"], scores[method, s]["sampled"], strict=True)] for s in seeds
    ]


def sharpening(scores: dict) -> list[dict]:
    """One row per (preference, online) pair both trained: the difference of their greedy - sampled gaps.

    >>> scores = {(m, 0): {"greedy": g, "sampled": v} for m, g, v in (("dpo", [1, 1, 0], [0.5, 0.5, 0.0]),
    ...           ("grpo", [1, 1, 0], [1.0, 0.75, 0.0]))}
    >>> row = sharpening(scores)[0]
    >>> row["a"], row["b"], row["mean"]  # gaps 0.5, 0.5, 0 against 0, 0.25, 0: (0.5 + 0.25 + 0) / 3
    ('dpo', 'grpo', 0.25)
    """
    rows = []
    for a in PREFERENCE:
        for b in ONLINE:
            seeds = sorted({s for m, s in scores if m == a} & {s for m, s in scores if m == b})
            if seeds:
                rows.append({"a": a, "b": b, **crossed_difference(gaps(scores, a, seeds), gaps(scores, b, seeds))})
    return one_family(rows) if rows else []


def section(scores: dict, pre_registered: bool = False) -> str:
    """The README part: the table of the family and one generated sentence; `pre_registered`: a table whose
    preregistration named this family before its runs (a test of the hypothesis, not post hoc)."""
    rows = sharpening(scores)
    if not rows:
        return "No preference method and online method trained on the same seeds: nothing to compare."
    when = "pre-registered" if pre_registered else "post hoc"
    status = (
        "Named in results/compare/preregistration.json before this table's runs, on problems no run had scored: a "
        "test of the hypothesis the published table suggested."
        if pre_registered
        else "Found after the table was published: a claim here is a hypothesis for a fresh held-out set, not a "
        "finding."
    )
    lines = [
        f"## Does preference training sharpen greedy more than sampled? ({when})",
        "",
        "Per (seed, problem): the preference method's greedy score - its sampled pass@1, less the online method's; "
        f"seeds x problems interval, Holm over these {len(rows)} rows. " + status,
        "",
        "| preference | online | gap difference, points | Holm p | claimed | detectable |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        seen = "" if r["detectable"] is None else detectable(r["detectable"])
        claimed = f"yes{mark(r)}" if r["claimed"] else "no"
        lines.append(
            f"| {r['a']} | {r['b']} | {points(r['mean'], r['ci95'])} | {adjusted(r['p_holm'])} | {claimed} | {seen} |"
        )
    wider = [f"{r['a'].upper()} over {r['b'].upper()}" for r in rows if r["claimed"] and r["mean"] > 0]
    narrower = [f"{r['a'].upper()} against {r['b'].upper()}" for r in rows if r["claimed"] and r["mean"] < 0]
    said = f"Greedy gains more than sampled pass@1 for {', '.join(wider)}" if wider else "No preference method's"
    said += "" if wider else " greedy - sampled gap is told apart from an online method's"
    said += f"; the other way round for {', '.join(narrower)}" if narrower else ""
    lines += ["", said + f" ({len({s for _, s in scores})} seeds, {when})."]
    if any(mark(r) for r in rows if r["claimed"]):
        lines += ["", CROSSED_ONLY]
    return "\n".join(lines)
