"""A run that diverges stops at that step in one line, before anything non-finite is saved: the trainable weights
are checked after every optimizer step (before the step's checkpoint), the logged loss and gradient norm as they are
logged, and a generation that meets non-finite probabilities (torch's sampler: "probability tensor contains either
inf, nan or element < 0", 30 lines deep) is named for what it is."""

import math

import torch
from transformers import TrainerCallback


class Diverged(RuntimeError):
    """Training produced a non-finite number; the message names the step, the learning rate and what."""


# torch's multinomial sampler on probabilities built from non-finite logits
SAMPLER_MESSAGE = "probability tensor contains either `inf`, `nan` or element < 0"


def learning_rate(args, lr_scheduler=None) -> float:
    """The learning rate the last step used (the scheduler's), else the configured one."""
    try:
        return float(lr_scheduler.get_last_lr()[0])
    except (AttributeError, IndexError, TypeError):
        return float(args.learning_rate)


def diverged(step: int, rate: float, what: str) -> Diverged:
    return Diverged(f"training diverged at step {step} (learning rate {rate:.3g}): {what}")


def non_finite_parameter(model) -> str | None:
    """The name of the first trainable parameter holding a NaN or an infinity (a sharded engine's empty placeholder
    holds none)."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.requires_grad and parameter.numel() and not torch.isfinite(parameter).all():
                return name
    return None


def is_sampler_failure(error: BaseException) -> bool:
    return isinstance(error, RuntimeError) and SAMPLER_MESSAGE in str(error)


class StopOnDivergence(TrainerCallback):
    """Raises `Diverged` at the end of the step whose update left a trainable weight non-finite (before that step is
    saved), or when the loss or gradient norm logged is non-finite (before the step's checkpoint, which transformers
    saves after logging)."""

    def on_step_end(self, args, state, control, model=None, lr_scheduler=None, **kwargs):
        name = non_finite_parameter(model) if model is not None else None
        if name:
            raise diverged(state.global_step, learning_rate(args, lr_scheduler), f"the weight {name} is not finite")

    def on_log(self, args, state, control, logs=None, lr_scheduler=None, **kwargs):
        for key in ("loss", "grad_norm"):
            value = (logs or {}).get(key)
            if isinstance(value, float) and not math.isfinite(value):
                raise diverged(state.global_step, learning_rate(args, lr_scheduler), f"{key} is {value}")
