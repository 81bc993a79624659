"""The comparison's one inference rule, from the per-problem scores alone: every accuracy is a share over seeds x
problems with a 95% interval bounded to [0, 1]; every claim (a method against the base, a method against a method,
in sampled pass@1 and in greedy accuracy) is the seeds x problems difference (core.report.stats.crossed_difference,
the base drawn again under each seed), and the claims of one comparison form one family, Holm-corrected at 5%. A
difference is claimed only where its Holm-adjusted p is below 0.05; one that is not gives the smallest difference
the run could have detected (80% power, at the level its Holm step tested it). A table with contrasts named before
its runs (a pre-registration's `primary_contrasts`) corrects them as one family and every other difference as a
second, secondary one."""

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


def primary_contrasts(named: list, methods: list[str]) -> list[tuple[str, str, str]]:
    """A pre-registration's primary contrasts as (a, b, metric), each in the order the table writes it (a method before
    the base, and before the methods after it in `methods`); one line naming the first that is not a difference of
    the table.

    >>> primary_contrasts([["base", "ipo", "sampled"], ["grpo", "ppo", "sampled"]], ["grpo", "ppo", "ipo"])
    [('ipo', 'base', 'sampled'), ('grpo', 'ppo', 'sampled')]
    """
    order = [*methods, "base"]
    contrasts = []
    for entry in named:
        if not (isinstance(entry, list | tuple) and len(entry) == 3):
            raise SystemExit(f"primary contrast {entry!r}: not [a, b, metric]")
        a, b, metric = entry
        if metric not in METRICS or a not in order or b not in order or a == b:
            raise SystemExit(
                f"primary contrast {list(entry)}: not a difference of the table (a and b two of {order}, metric one "
                f"of {sorted(METRICS)})"
            )
        a, b = sorted((a, b), key=order.index)
        if (a, b, metric) in contrasts:
            raise SystemExit(f"primary contrast {list(entry)}: named twice")
        contrasts.append((a, b, metric))
    return contrasts


def infer(scores: dict, methods: list[str], primary: list | tuple = ()) -> dict:
    """{"shares": method -> metric -> share, "against_base": rows, "versus": rows}, every row corrected in one family:
    p_holm, claimed (p_holm < 0.05), level (its Holm step's), detectable (when not claimed). With `primary` ((a, b,
    metric) contrasts, `primary_contrasts`), those rows are one family and the rest another: each row says which
    (`family`), and "families" counts both."""
    trained = [m for m in methods if seeds_of(scores, m)]
    against_base = [difference(scores, m, "base", metric) for m in trained for metric in METRICS]
    versus = [difference(scores, a, b, metric) for a, b in combinations(trained, 2) for metric in METRICS]
    against_base, versus = [r for r in against_base if r], [r for r in versus if r]
    rows = against_base + versus
    named = set(primary_contrasts(list(primary), methods))
    families = None
    if named:
        missing = named - {(r["a"], r["b"], r["metric"]) for r in rows}
        if missing:
            raise SystemExit(f"primary contrast {list(sorted(missing)[0])}: the table has no scores for it")
        is_primary = [(r["a"], r["b"], r["metric"]) in named for r in rows]
        first = iter(one_family([r for r, p in zip(rows, is_primary, strict=True) if p]))
        second = iter(one_family([r for r, p in zip(rows, is_primary, strict=True) if not p]))
        rows = [
            next(first) | {"family": "primary"} if p else next(second) | {"family": "secondary"} for p in is_primary
        ]
        families = {"primary": sum(is_primary), "secondary": len(rows) - sum(is_primary)}
    else:
        rows = one_family(rows)
    return {
        "rule": RULE,
        "family_size": len(rows),
        **({"families": families} if families else {}),
        "shares": {m: shares(scores, m) for m in ["base", *trained]},
        "against_base": rows[: len(against_base)],
        "versus": rows[len(against_base) :],
    }
