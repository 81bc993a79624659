"""Reward noise on purpose: a wrapper that flips a binary reward with probability p, seeded, so a study (or you)
can ask how a method copes with a verifier that is sometimes wrong (GRPO's group size under reward noise)."""

import functools
import random


def flip_noise(func, probability: float, seed: int = 0):
    """`func` with each score of 0 or 1 flipped (1 - score) with `probability`, from a random stream of its own
    seeded by `seed`: the same run sees the same flips. Scores that are not 0 or 1 (a partial credit, `None`) pass
    through unflipped; the wrapper keeps `func`'s name and signature, so its columns are checked as before. Flips
    so far: `.flipped` of `.seen` binary scores.

    >>> from rewards.math import math_accuracy
    >>> noisy = flip_noise(math_accuracy, 1.0)
    >>> noisy(["#### 4", "#### 5"], answer=["4", "4"]), noisy.flipped, noisy.seen
    ([0.0, 1.0], 2, 2)
    >>> flip_noise(math_accuracy, 0.0)(["#### 4"], answer=["4"])
    [1.0]
    """
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"reward noise: flip probability {probability} is not in [0, 1]")
    stream = random.Random(seed)

    @functools.wraps(func)
    def noisy(completions, **columns):
        scores = func(completions, **columns)
        flipped = []
        for score in scores:
            if score in (0, 1) and not isinstance(score, bool):
                noisy.seen += 1
                if stream.random() < probability:
                    noisy.flipped += 1
                    score = 1.0 - score
            flipped.append(score)
        return flipped

    noisy.flipped = noisy.seen = 0
    return noisy
