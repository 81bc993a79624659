"""The comparison's method-against-method interval: with one seed it is the paired t-interval over problems; with
several it covers the true difference about 95% of the time when seeds and problems both vary, where an interval
over problems alone (the seeds' variance ignored) does not."""

import random

from core.report.stats import (
    crossed_difference,
    crossed_share,
    detectable_difference,
    holm,
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
