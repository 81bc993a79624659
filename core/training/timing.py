"""Where a run's training time went: seconds in generation, reward calls (core.training.callbacks.REWARD_TIME) and
held-out evaluation, the rest being forward/backward and the optimizer (cost.json's `time_split`, one summary line).

>>> PHASE_SECONDS.clear()
>>> with timed("heldout"):
...     with timed("generation"):  # inside held-out evaluation: held-out time, not training's generation
...         pass
>>> sorted(PHASE_SECONDS)
['heldout']
"""

import functools
import time

PHASE_SECONDS: dict[str, float] = {}
_ACTIVE: list[str] = []


class timed:  # noqa: N801 (used as a context manager, like contextlib's)
    """Adds the seconds spent inside to PHASE_SECONDS[phase], unless another phase is already being timed: a nested
    phase's time belongs to the outer one, so no second is counted twice."""

    def __init__(self, phase: str):
        self.phase, self.counting = phase, False

    def __enter__(self):
        self.counting = not _ACTIVE
        if self.counting:
            _ACTIVE.append(self.phase)
            self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.counting:
            _ACTIVE.pop()
            PHASE_SECONDS[self.phase] = PHASE_SECONDS.get(self.phase, 0.0) + time.perf_counter() - self.start
        return False


def time_generation(model) -> None:
    """Times every `model.generate` call as "generation" (an attribute of this model only: its class, and any other
    model, are untouched). GRPO and PPO generate through their policy's `generate`."""
    if getattr(model.generate, "timed_generation", False):
        return
    generate = model.generate

    @functools.wraps(generate)
    def timed_generate(*args, **kwargs):
        with timed("generation"):
            return generate(*args, **kwargs)

    timed_generate.timed_generation = True
    model.generate = timed_generate


def time_split(train_seconds: float, reward_seconds: float) -> dict[str, float]:
    """{generation, rewards, heldout, forward_backward}: the training seconds by phase, the last what is left.

    >>> PHASE_SECONDS.clear(); PHASE_SECONDS.update(generation=4.0, heldout=1.0)
    >>> time_split(10.0, 2.0)
    {'generation': 4.0, 'rewards': 2.0, 'heldout': 1.0, 'forward_backward': 3.0}
    """
    split = {
        "generation": PHASE_SECONDS.get("generation", 0.0),
        "rewards": reward_seconds,
        "heldout": PHASE_SECONDS.get("heldout", 0.0),
    }
    return split | {"forward_backward": max(0.0, train_seconds - sum(split.values()))}
