"""The comparison's one inference rule, from the per-problem scores alone: every accuracy is a share over seeds x
problems with a 95% interval bounded to [0, 1]; every claim (a method against the base, a method against a method,
in sampled pass@1 and in greedy accuracy) is the seeds x problems difference (core.report.stats.crossed_difference,
the base drawn again under each seed), and the claims of one comparison form one family, Holm-corrected at 5%. A
difference is claimed only where its Holm-adjusted p is below 0.05; one that is not gives the smallest difference
the run could have detected (80% power, at the level its Holm step tested it)."""

from itertools import combinations

from core.report.stats import crossed_difference, crossed_share, one_family

METRICS = {"sampled": "sampled pass@1", "greedy": "greedy accuracy"}
RULE = "seeds x problems, Holm over the family"


def seeds_of(scores: dict, method: str) -> list[int]:
    return sorted(seed for m, seed in scores if m == method)


def shares(scores: dict, method: str) -> dict:
    """metric -> crossed_share of `method` over its seeds x problems."""
    seeds = seeds_of(scores, method)
    k = scores[(method, seeds[0])]["samples"]
    return {
        metric: crossed_share([scores[(method, s)][metric] for s in seeds], k if metric == "sampled" else 1)
        for metric in METRICS
    }


def difference(scores: dict, a: str, b: str, metric: str) -> dict | None:
    """a - b in `metric` over the seeds both have, or None without one."""
    seeds = sorted(set(seeds_of(scores, a)) & set(seeds_of(scores, b)))
    if not seeds:
        return None
    result = crossed_difference([scores[(a, s)][metric] for s in seeds], [scores[(b, s)][metric] for s in seeds])
    return {"a": a, "b": b, "metric": metric, **result, "seeds": seeds}


def infer(scores: dict, methods: list[str]) -> dict:
    """{"shares": method -> metric -> share, "against_base": rows, "versus": rows}, every row corrected in one family:
    p_holm, claimed (p_holm < 0.05), level (its Holm step's), detectable (when not claimed)."""
    trained = [m for m in methods if seeds_of(scores, m)]
    against_base = [difference(scores, m, "base", metric) for m in trained for metric in METRICS]
    versus = [difference(scores, a, b, metric) for a, b in combinations(trained, 2) for metric in METRICS]
    against_base, versus = [r for r in against_base if r], [r for r in versus if r]
    family = one_family(against_base + versus)
    against_base, versus = family[: len(against_base)], family[len(against_base) :]
    return {
        "rule": RULE,
        "family_size": len(family),
        "shares": {m: shares(scores, m) for m in ["base", *trained]},
        "against_base": against_base,
        "versus": versus,
    }
