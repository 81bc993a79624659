"""The comparison's method-against-method interval: with one seed it is the paired t-interval over problems; with
several it covers the true difference about 95% of the time when seeds and problems both vary, where an interval
over problems alone (the seeds' variance ignored) does not."""

import random

from core.report.stats import crossed_difference, t95


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
