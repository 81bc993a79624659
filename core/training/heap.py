"""The Python objects a run has when training starts (the libraries' modules, classes and functions, the model's
modules), left out of the garbage collector's passes while it trains.

TRL's PPO loop calls `gc.collect()` twice a step (after the rollouts and at the step's end, to free accelerator
memory that reference cycles hold), and Python's own oldest-generation collections pass over every live object too:
about 0.4 s a pass over the ~620,000 objects of a started tiny PPO run on a 2-core CPU (0.07 s once they are
frozen), which on the tiny world is as long as the PPO step itself (10 steps: 7.5 s of 16 s in `gc.collect`).
Collected once and frozen before training (`gc.freeze`, Python's documented way to keep long-lived objects out of
its passes), the passes go over what training makes. Nothing is kept longer than it would be: what reference
counting frees is freed as always, cycles made during training are collected as before, garbage is collected before
the freeze, and the frozen objects go back to the collector when training ends (a study trains many runs in one
process).
"""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_start() -> Iterator[None]:
    """The objects alive now out of the collector's passes until the block ends.

    >>> import gc
    >>> with frozen_start():
    ...     gc.get_freeze_count() > 0
    True
    >>> gc.get_freeze_count()
    0
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class FrozenStartWhileTraining:
    """A trainer whose `train` runs with the objects alive at its start frozen (`frozen_start`)."""

    def train(self, *args, **kwargs):
        with frozen_start():
            return super().train(*args, **kwargs)
