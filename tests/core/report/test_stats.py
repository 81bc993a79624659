"""The comparison's method-against-method interval: with one seed it is the paired t-interval over problems; with
several it covers the true difference about 95% of the time when seeds and problems both vary, where an interval
over problems alone (the seeds' variance ignored) does not."""

import random

from core.report.stats import (
    crossed_difference,
    crossed_share,
    detectable_difference,
    holm,
    one_family,
    p_value,
    share_interval,
    share_over_seeds,
    standard_error,
    t95,
)


def test_one_seed_is_the_paired_t_interval_over_problems():
    a, b = [[1, 1, 0, 1, 0, 1, 1, 0]], [[0, 1, 0, 0, 0, 1, 0, 0]]
    diffs = [x - y for x, y in zip(a[0], b[0], strict=True)]
    mean = sum(diffs) / 8
    half = t95(7) * (sum((d - mean) ** 2 for d in diffs) / 7 / 8) ** 0.5
    result = crossed_difference(a, b)
    assert result["mean"] == mean and result["df"] == 7
    assert abs(result["ci95"][0] - (mean - half)) < 1e-12 and abs(result["ci95"][1] - (mean + half)) < 1e-12


def simulated(rng: random.Random, seeds: int, problems: int, true: float) -> tuple[list, list]:
    """Per-(seed, problem) scores of A and B: B is noise around a problem's difficulty; A adds the true difference, a
    seed's luck (training noise shared by all of its problems) and per-score noise."""
    difficulty = [rng.gauss(0, 1) for _ in range(problems)]
    luck = [rng.gauss(0, 0.3) for _ in range(seeds)]
    b = [[d + rng.gauss(0, 0.2) for d in difficulty] for _ in range(seeds)]
    a = [[d + true + luck[s] + rng.gauss(0, 0.2) for d in difficulty] for s in range(seeds)]
    return a, b


def test_several_seeds_cover_the_true_difference_and_problems_alone_do_not():
    rng, true, trials = random.Random(0), 0.1, 400
    covered = naive_covered = 0
    for _ in range(trials):
        a, b = simulated(rng, 5, 40, true)
        low, high = crossed_difference(a, b)["ci95"]
        covered += low <= true <= high
        # the per-problem means over seeds, paired over problems: the seeds' luck counted as if it were signal
        means_a = [[sum(row[p] for row in a) / 5 for p in range(40)]]
        means_b = [[sum(row[p] for row in b) / 5 for p in range(40)]]
        low, high = crossed_difference(means_a, means_b)["ci95"]
        naive_covered += low <= true <= high
    assert 0.90 <= covered / trials <= 0.995
    assert naive_covered / trials < 0.6


def test_a_share_s_interval_stays_within_0_and_1_and_is_the_t_interval_far_from_both():
    rng = random.Random(1)
    for _ in range(2000):
        mean, se, df = rng.random(), rng.random() * 0.3, rng.randint(1, 40)
        low, high = share_interval(mean, se, df, trials=rng.choice([None, 600]))
        assert 0.0 <= low <= high <= 1.0
    # three seeds at 86.7% with a standard error of 3.6 points: the t-interval reaches 102.2%
    assert share_interval(0.867, 0.036, 2)[1] < 1.0
    low, high = share_interval(0.5, 0.01, 500)
    assert abs(low - (0.5 - t95(500) * 0.01)) < 1e-3 and abs(high - (0.5 + t95(500) * 0.01)) < 1e-3
    # seeds that all scored 100%: the scores behind them still bound how sure one can be
    assert share_over_seeds([1.0, 1.0, 1.0], trials_per_seed=200)["ci95"][0] < 1.0


def test_holm_rejects_what_its_steps_allow_and_no_more():
    p = [0.001, 0.02, 0.012, 0.04, 0.3]
    # sorted: 0.001 <= 0.05/5, 0.012 <= 0.05/4, 0.02 > 0.05/3: stop; everything after stays
    results = holm(p)
    assert [r["rejected"] for r in results] == [True, False, True, False, False]
    assert [round(r["p_holm"], 4) for r in results] == [0.005, 0.06, 0.048, 0.08, 0.3]
    assert all(r["p_holm"] >= q for r, q in zip(results, p, strict=True))


def test_the_detectable_difference_is_detected_four_times_in_five():
    """Data whose true difference is the detectable difference computed from their standard error: the t-test at the
    level rejects about 80% of the time (the definition), a difference a third its size far less often."""
    rng, n, sd, trials = random.Random(2), 30, 1.0, 1500
    se = sd / n**0.5
    detectable = detectable_difference(se, n - 1, level=0.05)
    rejected = {detectable: 0, detectable / 3: 0}
    for true in rejected:
        for _ in range(trials):
            diffs = [rng.gauss(true, sd) for _ in range(n)]
            mean = sum(diffs) / n
            observed_se = (sum((d - mean) ** 2 for d in diffs) / (n - 1) / n) ** 0.5
            rejected[true] += p_value(mean, observed_se, n - 1) < 0.05
    assert 0.74 <= rejected[detectable] / trials <= 0.86
    assert rejected[detectable / 3] / trials < 0.3


def test_a_stored_interval_gives_back_its_standard_error():
    fresh = crossed_difference([[1, 0, 1, 1, 0], [1, 1, 1, 0, 0]], [[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]])
    assert abs(standard_error({k: v for k, v in fresh.items() if k != "se"}) - fresh["se"]) < 0.01 * fresh["se"]
    published = {"mean": 0.05, "ci95": [0.01, 0.09], "df": 40}  # stored with the normal's 1.96 past 30
    assert abs(standard_error(published) - 0.04 / 1.96) < 1e-12
    assert crossed_share([[1, 1], [1, 1]], samples_per_score=8)["ci95"][1] == 1.0


def test_satterthwaite_s_degrees_of_freedom_are_not_rounded():
    """By hand: differences [[1, 0, 1], [0, 0, 1]] (2 seeds x 3 problems): mean 1/2; MS_seed = 3 x 2 x (1/6)^2 = 1/6,
    MS_problem = 2 x (0 + 1/4 + 1/4) / 2 = 1/2, MS_residual = (1/3) / 2 = 1/6; combined = 1/6 + 1/2 - 1/6 = 1/2;
    df = (1/2)^2 / ((1/6)^2 + (1/2)^2 / 2 + (1/6)^2 / 2) = (1/4) / (1/6) = 1.5, not 1; se = sqrt(1/2 / 6)."""
    result = crossed_difference([[1, 0, 1], [0, 0, 1]], [[0, 0, 0], [0, 0, 0]])
    assert abs(result["df"] - 1.5) < 1e-12
    assert abs(result["se"] - (1 / 12) ** 0.5) < 1e-12
    half = result["ci95"][1] - result["mean"]
    assert abs(half - t95(1.5) * result["se"]) < 1e-12 and t95(1.5) < t95(1)
    # the reviewer's case: 1.9995 degrees of freedom are t 4.30, not 12.71 (df 1) -- a third of the width
    assert round(t95(1.9995), 2) == 4.30 and round(t95(1), 2) == 12.71
    assert abs(p_value(0.5, (1 / 12) ** 0.5, 1.5) - result["p"]) < 1e-12


def test_a_row_holm_did_not_claim_is_held_to_the_level_where_holm_stopped():
    """p = 0.001, 0.02, 0.012, 0.04, 0.3: Holm claims 0.001 (at 0.05/5) and 0.012 (at 0.05/4) and stops at 0.02
    (0.05/3). Each of the three unclaimed rows would have needed 0.05/3 -- not 0.05/2 or 0.05 by its own rank -- and
    its detectable difference is computed at that level."""
    p = [0.001, 0.02, 0.012, 0.04, 0.3]
    levels = [r["level"] for r in holm(p)]
    assert levels == [0.05 / 5, 0.05 / 3, 0.05 / 4, 0.05 / 3, 0.05 / 3]
    rows = one_family([{"mean": 0.1, "se": 0.02, "df": 50.5}, {"mean": 0.01, "se": 0.02, "df": 50.5}])
    rows += one_family([{"mean": 0.01, "se": 0.02, "df": 50.5}, {"mean": 0.02, "se": 0.02, "df": 50.5}])
    assert rows[0]["claimed"] and not rows[1]["claimed"]  # one claimed of two: the other would need 0.05 / 1
    assert rows[1]["detectable"] == detectable_difference(0.02, 50.5, 0.05)
    assert not rows[2]["claimed"] and not rows[3]["claimed"]  # none claimed of two: each would have needed 0.05 / 2
    assert rows[2]["detectable"] == rows[3]["detectable"] == detectable_difference(0.02, 50.5, 0.025)
    assert rows[2]["detectable"] > detectable_difference(0.02, 50.5, 0.05)


def crossed(common: int, extra: tuple[int, ...]) -> list[list[float]]:
    """Per-(seed, problem) gains over 100 problems: `common` problems gained under every seed, and each seed's own
    next `extra[s]` problems."""
    return [[1.0 if p < common + e else 0.0 for p in range(100)] for e in extra]


def test_a_claim_the_seeds_alone_would_not_make_is_marked():
    """Three seeds gaining 5, 10 and 15 points, 5 of them on problems every seed gains: the crossed variance claims
    the gain (Satterthwaite's df about 5.7), the seeds' own t-test (df 2) does not: `crossed_only`. With 10 problems
    in common the seeds' own test claims it too."""
    zero = [[0.0] * 100 for _ in range(3)]
    row = one_family([crossed_difference(crossed(5, (0, 5, 10)), zero)])[0]
    assert row["claimed"] and row["p"] < 0.05 < row["seed_level"]["p"] and row["seed_level"]["df"] == 2
    assert row["seed_level"]["means"] == [0.05, 0.10, 0.15] and row["crossed_only"]
    firmer = one_family([crossed_difference(crossed(10, (0, 5, 10)), zero)])[0]
    assert firmer["claimed"] and firmer["seed_level"]["p"] < 0.05 and not firmer["crossed_only"]
    one_seed = crossed_difference(crossed(5, (10,)), [[0.0] * 100])
    assert one_seed["seed_level"] is None and "crossed_only" not in one_family([one_seed])[0]
