"""The statistics the studies report: paired differences on the same problems, and intervals over seeds."""

# Two-sided 95% Student t quantiles by degrees of freedom: intervals over a handful of seeds.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
T95 |= {11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086}
T95 |= {21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042}


def t95(df: int) -> float:
    """Two-sided 95% Student t quantile (the normal's 1.96 past 30 degrees of freedom)."""
    return T95.get(df, 1.96)


def paired_difference(before: list[float], after: list[float]) -> dict:
    """Mean of per-prompt (after - before) with a 95% interval: the same prompts, so far less noisy than
    comparing the two means' intervals."""
    diffs = [a - b for a, b in zip(after, before, strict=True)]
    mean = sum(diffs) / len(diffs)
    stderr = (sum((d - mean) ** 2 for d in diffs) / max(1, len(diffs) - 1) / len(diffs)) ** 0.5
    return {"mean": mean, "ci95": [mean - 1.96 * stderr, mean + 1.96 * stderr]}


def over_seeds(values: list[float]) -> dict:
    """Mean, sample standard deviation and 95% t-interval of one value per seed (one seed: no spread).

    >>> [round(x, 4) for x in over_seeds([0.80, 0.90, 0.85])["ci95"]]  # 0.85 -/+ 4.303 x 0.05 / sqrt(3)
    [0.7258, 0.9742]
    """
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return {"mean": mean, "sd": None, "ci95": None, "n": n}
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    half = T95.get(n - 1, 1.96) * sd / n**0.5
    return {"mean": mean, "sd": sd, "ci95": [mean - half, mean + half], "n": n}
