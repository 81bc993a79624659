"""What a reward declares about itself, in one place with its definition: the dataset columns it reads are its
signature's named parameters (`rewards.declared_columns`); a data step it needs on the rows before any model loads
(`@prepares`) and whether it runs model output (`@sandboxed`) are marked on the function (or class) itself, so that
a reward of your own declares them the same way and data loading knows no reward by name."""


def prepares(step):
    """Marks a reward as needing `step(dataset, source) -> dataset` on its rows before any model loads: a check that
    says what is wrong with the data (ValueError: one line naming `source`), or columns mapped into the form the
    reward reads. Steps run once each, in the order the rewards are listed.

    >>> @prepares(lambda dataset, source: [row.upper() for row in dataset])
    ... def shouting(completions, **kwargs):
    ...     return [1.0 for _ in completions]
    >>> data_step(shouting)(["a", "b"], "demo.jsonl")
    ['A', 'B']
    """

    def mark(reward):
        # on a class, a plain function would bind to each instance as a method (self as the dataset)
        reward.prepare_data = staticmethod(step) if isinstance(reward, type) else step
        return reward

    return mark


def sandboxed(reward):
    """Marks a reward that runs model output (programs): resolving it first checks that the sandbox can isolate it
    here, before any model loads (`rewards.sandbox.isolation_mode`)."""
    reward.runs_model_output = True
    return reward


def data_step(reward):
    """The data step `reward` declared (`@prepares`), or None; a callable instance finds its class's."""
    return getattr(reward, "prepare_data", None)


def is_sandboxed(reward) -> bool:
    """Whether `reward` declared that it runs model output (`@sandboxed`).

    >>> is_sandboxed(sandboxed(lambda completions, **kwargs: [0.0])), is_sandboxed(lambda completions: [0.0])
    (True, False)
    """
    return getattr(reward, "runs_model_output", False)
