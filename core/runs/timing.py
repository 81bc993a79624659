"""Where a run's training time went: seconds in generation, reward calls (the run's `rewards.ledger.RewardLedger`)
and held-out evaluation, the rest being forward/backward and the optimizer (cost.json's `time_split`, one summary
line). Each run folder (`core.runs.folder.RunFolder`) holds one `PhaseTimer`, which its trainer, callbacks and
held-out evaluation share. Also CPU seconds (`cpu_seconds`) and the wall seconds of work spread over resumed
invocations (`Elapsed`).

>>> phases = PhaseTimer()
>>> with phases.timed("heldout"):
...     with phases.timed("generation"):  # inside held-out evaluation: held-out time, not training's generation
...         pass
>>> sorted(phases.seconds)
['heldout']
"""

import functools
import json
import resource
import time
from contextlib import contextmanager
from pathlib import Path


class PhaseTimer:
    """Seconds by phase of one run; a phase timed inside another counts for the outer one, so no second is counted
    twice."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.active: str | None = None

    def clear(self) -> None:
        self.seconds.clear()

    @contextmanager
    def timed(self, phase: str):
        if self.active is not None:
            yield
            return
        self.active, start = phase, time.perf_counter()
        try:
            yield
        finally:
            self.active = None
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start

    def time_generation(self, model) -> None:
        """Times every `model.generate` call as "generation" (an attribute of this model only: its class, and any
        other model, are untouched). GRPO and PPO generate through their policy's `generate`."""
        if getattr(model.generate, "timed_generation", False):
            return
        generate = model.generate

        @functools.wraps(generate)
        def timed_generate(*args, **kwargs):
            with self.timed("generation"):
                return generate(*args, **kwargs)

        timed_generate.timed_generation = True
        model.generate = timed_generate

    def split(self, train_seconds: float, reward_seconds: float) -> dict[str, float]:
        """{generation, rewards, heldout, forward_backward}: the training seconds by phase, the last what is left.

        >>> phases = PhaseTimer(); phases.seconds.update(generation=4.0, heldout=1.0)
        >>> phases.split(10.0, 2.0)
        {'generation': 4.0, 'rewards': 2.0, 'heldout': 1.0, 'forward_backward': 3.0}
        """
        split = {
            "generation": self.seconds.get("generation", 0.0),
            "rewards": reward_seconds,
            "heldout": self.seconds.get("heldout", 0.0),
        }
        return split | {"forward_backward": max(0.0, train_seconds - sum(split.values()))}


def cpu_seconds(children_only: bool = False) -> float:
    """User and system CPU seconds of this process and of its children that have ended (only the children's with
    `children_only`: what a subprocess cost, as the difference around it)."""
    who = [resource.RUSAGE_CHILDREN] if children_only else [resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN]
    return sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime for w in who)


class Elapsed:
    """The wall seconds a piece of work kept in `out` (a comparison) has taken over every invocation that worked on
    it (`resume` goes on from the count the folder holds; the seconds after the last save of a killed invocation are
    lost with its unfinished work)."""

    def __init__(self, out: Path, resume: bool):
        self.path = out / "elapsed.json"
        before = json.loads(self.path.read_text())["seconds"] if resume and self.path.is_file() else 0.0
        self.start = time.time() - before

    def save(self) -> float:
        seconds = time.time() - self.start
        self.path.write_text(json.dumps({"seconds": seconds}) + "\n")
        return seconds
