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


def crossed_difference(a: list[list[float]], b: list[list[float]]) -> dict:
    """A against B on the same problems under the same seeds: the mean of the per-(seed, problem) differences
    a[s][p] - b[s][p], with a 95% interval that counts both the seeds' and the problems' variance. Seeds and problems
    are crossed (every seed scores every problem), so the two-way random-effects decomposition gives the variance of
    the mean from its mean squares, (MS_seed + MS_problem - MS_residual) / (S P), with Satterthwaite's degrees of
    freedom for the t quantile; with one seed it is the paired t-interval over problems. (If the seeds and problems
    explain less than the residual, the estimate is floored at the larger of MS_seed and MS_problem over S P.)

    >>> same_gain = crossed_difference([[1, 1, 0, 1], [1, 1, 0, 1]], [[0, 1, 0, 0], [0, 1, 0, 0]])
    >>> round(same_gain["mean"], 3), same_gain["seeds"], same_gain["problems"]
    (0.5, 2, 4)
    >>> noisy_seeds = crossed_difference([[1, 1, 1, 1], [0, 0, 0, 0]], [[0, 0, 0, 0], [0, 0, 0, 0]])
    >>> noisy_seeds["mean"], noisy_seeds["ci95"][0] < 0 < noisy_seeds["ci95"][1]  # one seed gained, one did not
    (0.5, True)
    """
    diffs = [[x - y for x, y in zip(row_a, row_b, strict=True)] for row_a, row_b in zip(a, b, strict=True)]
    seeds, problems = len(diffs), len(diffs[0])
    mean = sum(map(sum, diffs)) / (seeds * problems)
    problem_means = [sum(row[p] for row in diffs) / seeds for p in range(problems)]
    ms_problem = seeds * sum((m - mean) ** 2 for m in problem_means) / max(1, problems - 1)
    if seeds == 1:
        variance, df = ms_problem / problems, problems - 1
    else:
        seed_means = [sum(row) / problems for row in diffs]
        ms_seed = problems * sum((m - mean) ** 2 for m in seed_means) / (seeds - 1)
        residual = sum(
            (diffs[s][p] - seed_means[s] - problem_means[p] + mean) ** 2 for s in range(seeds) for p in range(problems)
        )
        ms_residual = residual / max(1, (seeds - 1) * (problems - 1))
        combined = max(ms_seed + ms_problem - ms_residual, ms_seed, ms_problem)
        variance = combined / (seeds * problems)
        terms = ms_seed**2 / (seeds - 1) + ms_problem**2 / max(1, problems - 1)
        terms += ms_residual**2 / max(1, (seeds - 1) * (problems - 1))
        df = max(1, int(combined**2 / terms)) if terms else 1
    half = t95(df) * variance**0.5
    return {"mean": mean, "ci95": [mean - half, mean + half], "df": df, "seeds": seeds, "problems": problems}
