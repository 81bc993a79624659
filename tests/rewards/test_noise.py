"""rewards.noise: a reward flipped on purpose, at the rate asked, the same flips for the same seed."""

import pytest

from rewards import declared_columns
from rewards.math import math_accuracy
from rewards.noise import flip_noise


def scores(noisy, n=2000):
    return noisy(["#### 4"] * n, answer=["4"] * n)


def test_flips_binary_scores_at_the_asked_rate_and_repeats_with_the_seed():
    first = scores(flip_noise(math_accuracy, 0.3, seed=7))
    assert 0.26 < first.count(0.0) / len(first) < 0.34  # 600 expected flips of 2000, sd ~20
    assert scores(flip_noise(math_accuracy, 0.3, seed=7)) == first
    assert scores(flip_noise(math_accuracy, 0.3, seed=8)) != first


def test_leaves_partial_credit_and_not_applicable_alone_and_keeps_the_columns():
    noisy = flip_noise(lambda completions, **_: [0.5, None, 1.0], 1.0)
    assert noisy(["a", "b", "c"]) == [0.5, None, 0.0] and (noisy.flipped, noisy.seen) == (1, 1)
    wrapped = flip_noise(math_accuracy, 0.1)
    assert wrapped.__name__ == "math_accuracy" and declared_columns(wrapped) == declared_columns(math_accuracy)


@pytest.mark.parametrize("probability", [-0.1, 1.5])
def test_a_probability_outside_0_1_is_refused_in_one_line(probability):
    with pytest.raises(ValueError, match=f"flip probability {probability} is not in"):
        flip_noise(math_accuracy, probability)
