"""The statistics the studies report: paired differences on the same problems, intervals over seeds and over
seeds x problems, intervals for shares that stay within [0, 1], the Holm correction over a family of claims, and the
smallest difference a run could have detected."""

from scipy import stats

# Two-sided 95% Student t quantiles as the tables published before 2026-12-05 computed them (the normal's 1.96 past 30
# degrees of freedom): only to read a standard error back from an interval those tables stored.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
T95 |= {11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086}
T95 |= {21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042}
ALPHA = 0.05  # every family's error rate
POWER = 0.8  # the detectable difference's power


def t_quantile(probability: float, df: float) -> float:
    """Student t quantile (scipy).

    >>> round(t_quantile(0.975, 4), 3), round(t_quantile(0.975, 1000), 3)
    (2.776, 1.962)
    """
    return float(stats.t.ppf(probability, df))


def t95(df: float) -> float:
    """Two-sided 95% Student t quantile, at any positive degrees of freedom (not rounded: at 1.9995, 4.30, not 12.7).

    >>> round(t95(1.9995), 2), round(t95(1), 2)
    (4.3, 12.71)
    """
    return t_quantile(0.975, df)


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
    half = t95(n - 1) * sd / n**0.5
    return {"mean": mean, "sd": sd, "ci95": [mean - half, mean + half], "n": n, "se": sd / n**0.5, "df": n - 1}


def share_interval(mean: float, se: float, df: float, trials: int | None = None) -> list[float]:
    """A 95% interval for a share (accuracy, pass@1) that stays within [0, 1]: Wilson's score interval at the
    effective number of trials its standard error implies (p(1 - p) / se^2, at most `trials`, the scores behind the
    mean), with the t quantile of its degrees of freedom. A t-interval over three seeds at 87% can reach past 100%;
    this one cannot, and it matches the t-interval where the share is far from both ends.

    >>> [round(x, 3) for x in share_interval(0.867, 0.036, 2)]  # three seeds near the top: a t-interval ends at 1.02
    [0.649, 0.958]
    >>> [round(x, 3) for x in share_interval(0.5, 0.02, 1000)]  # far from the ends: mean -/+ 1.96 se
    [0.461, 0.539]
    >>> round(share_interval(1.0, 0.0, 2, trials=600)[1], 9)
    1.0
    """
    z = t95(max(1, df))
    if mean <= 0 or mean >= 1 or se <= 0:
        n = trials or 1
    else:
        n = mean * (1 - mean) / se**2
        n = min(n, trials) if trials else n
    centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (mean * (1 - mean) / n + z * z / (4 * n * n)) ** 0.5
    return [max(0.0, centre - half), min(1.0, centre + half)]


def share_over_seeds(values: list[float], trials_per_seed: int | None = None) -> dict:
    """`over_seeds` of a share, its interval bounded to [0, 1] (`share_interval`)."""
    result = over_seeds(values)
    if result["ci95"] is not None:
        trials = trials_per_seed * len(values) if trials_per_seed else None
        result["ci95"] = share_interval(result["mean"], result["se"], result["df"], trials)
    return result


def holm(p_values: list[float], alpha: float = ALPHA) -> list[dict]:
    """Holm's step-down correction over one family: for each p-value (in the given order) its adjusted p, whether it
    is rejected at family-wise `alpha`, and `level`: for a rejected one the level its step tested it at (alpha / (m -
    rank)); for one not rejected, the level it would have needed, that of the step where Holm stopped (alpha / (m -
    rejections)): a row Holm never reached is not tested at its own rank's looser level.

    >>> [(round(r["p_holm"], 3), r["rejected"], round(r["level"], 4)) for r in holm([0.01, 0.04, 0.03, 0.005])]
    [(0.03, True, 0.0167), (0.06, False, 0.025), (0.06, False, 0.025), (0.02, True, 0.0125)]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    results, running, stopped = [None] * m, 0.0, False
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        stopped = stopped or p_values[i] > alpha / (m - rank)
        results[i] = {"p_holm": running, "rejected": not stopped, "level": alpha / (m - rank)}
    rejections = sum(r["rejected"] for r in results)
    for r in results:
        if not r["rejected"]:
            r["level"] = alpha / (m - rejections)
    return results


def detectable_difference(se: float, df: float, level: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference a two-sided t-test at `level` would detect with probability `power`, from the
    observed standard error: (t_(1 - level/2) + t_power) x se.

    >>> round(detectable_difference(0.01, 1000), 4)  # (1.962 + 0.842) x 1 point
    0.028
    """
    return (t_quantile(1 - level / 2, df) + t_quantile(power, df)) * se


def p_value(mean: float, se: float, df: float) -> float:
    """Two-sided p of a t-test of mean = 0 (1 when there is no spread and no difference)."""
    if se <= 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * stats.t.sf(abs(mean) / se, df))


def standard_error(record: dict) -> float:
    """A stored interval's standard error: its own `se`, or read back from its 95% interval and degrees of freedom
    as the tables published before 2026-12-05 computed them (T95, the normal's 1.96 past 30)."""
    if record.get("se") is not None:
        return record["se"]
    low, high = record["ci95"]
    df = record["df"]
    return (high - low) / 2 / (T95.get(df, 1.96) if float(df).is_integer() else t95(df))


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
        df = max(1.0, combined**2 / terms) if terms else 1.0  # Satterthwaite's df is not a whole number
    se = variance**0.5
    half = t95(df) * se
    return {
        "mean": mean,
        "ci95": [mean - half, mean + half],
        "df": df,
        "se": se,
        "p": p_value(mean, se, df),
        "seeds": seeds,
        "problems": problems,
        "seed_level": seed_level([sum(row) / problems for row in diffs]),
    }


def seed_level(seed_means: list[float]) -> dict | None:
    """The check beside a crossed claim: a one-sample t-test over the seeds' own mean differences (df = seeds - 1),
    which counts each seed once however many problems it scored; None with one seed.

    >>> check = seed_level([0.10, 0.12, 0.02])  # mean 0.08, sd 0.0529: se 0.0306, t 2.62 on 2 df
    >>> round(check["mean"], 3), round(check["se"], 4), check["df"], round(check["p"], 3)
    (0.08, 0.0306, 2, 0.12)
    """
    if len(seed_means) < 2:
        return None
    spread = over_seeds(seed_means)
    return {
        "means": seed_means,
        "mean": spread["mean"],
        "se": spread["se"],
        "df": spread["df"],
        "p": p_value(spread["mean"], spread["se"], spread["df"]),
    }


def crossed_share(scores: list[list[float]], samples_per_score: int = 1) -> dict:
    """A share over seeds x problems (scores[s][p] in [0, 1]): its mean with a 95% interval from the crossed
    variance (`crossed_difference` against zero), bounded to [0, 1] (`share_interval`; `samples_per_score` counts
    the sampled completions behind each score, for its effective number of trials).

    >>> result = crossed_share([[1, 1, 0, 1], [1, 0, 0, 1]])
    >>> result["mean"], 0 <= result["ci95"][0] < result["mean"] < result["ci95"][1] <= 1
    (0.625, True)
    """
    spread = crossed_difference(scores, [[0] * len(row) for row in scores])
    trials = len(scores) * len(scores[0]) * samples_per_score
    ci = share_interval(spread["mean"], spread["se"], spread["df"], trials)
    return {"mean": spread["mean"], "ci95": ci, "se": spread["se"], "df": spread["df"]}


def one_family(rows: list[dict], alpha: float = ALPHA) -> list[dict]:
    """Rows of differences (mean, 95% interval, degrees of freedom, and `se` or an interval to read it from) as one
    family of claims: each gets its two-sided p, Holm's adjusted p, `claimed` (adjusted p below `alpha`), `level` (the
    level Holm tested it at, or, not claimed, the level it would have needed: `holm`), and, where not claimed, the
    smallest difference the run could have detected at that level with 80% power. Intervals are recomputed from the
    standard error with the exact t quantile. A row with a seed-level check (`seed_level`) gets `crossed_only`:
    claimed, but the seeds' own t-test at the same level would not claim it (the claim rests on the crossed variance).

    >>> rows = one_family([{"mean": 0.1, "se": 0.02, "df": 100}, {"mean": 0.01, "se": 0.02, "df": 100}])
    >>> [(r["claimed"], r["detectable"] is None) for r in rows]
    [(True, True), (False, False)]
    """
    updated = []
    for row in rows:
        se = standard_error(row)
        half = t95(row["df"]) * se
        ci = [row["mean"] - half, row["mean"] + half]
        updated.append(row | {"se": se, "ci95": ci, "p": p_value(row["mean"], se, row["df"])})
    for row, corrected in zip(updated, holm([r["p"] for r in updated], alpha), strict=True):
        row |= {"p_holm": corrected["p_holm"], "claimed": corrected["rejected"], "level": corrected["level"]}
        row["excludes_zero"] = row["ci95"][0] > 0 or row["ci95"][1] < 0
        row["detectable"] = None if row["claimed"] else detectable_difference(row["se"], row["df"], row["level"])
        if row.get("seed_level") is not None:
            row["crossed_only"] = row["claimed"] and not row["seed_level"]["p"] <= row["level"]
    return updated
