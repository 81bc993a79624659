"""What a run will cost, said in one line before its first step: the completions and tokens each optimizer step
generates and trains on (GRPO, PPO), or the pairs, epochs and steps (DPO, IPO, ORPO), from the trainer's own
settings once it has counted its steps."""

import math

from tqdm.auto import tqdm
from transformers import TrainerCallback


def plural(n: float, word: str) -> str:
    """
    >>> plural(1, "epoch"), plural(2.5, "epoch"), plural(1200, "pair")
    ('1 epoch', '2.5 epochs', '1,200 pairs')
    """
    return f"{n:,.4g} {word}" if n == 1 else f"{n:,.4g} {word}s" if n != int(n) else f"{int(n):,} {word}s"


def grpo_plan(args, rows: int, steps: int, processes: int) -> str:
    """TRL's GRPO generates `generation_batch_size` completions (`num_generations` per prompt) every
    `steps_per_generation * num_iterations` micro-batches and trains each optimizer step on
    `per_device_train_batch_size * gradient_accumulation_steps * processes` of them.

    >>> from types import SimpleNamespace as S
    >>> a = S(per_device_train_batch_size=8, gradient_accumulation_steps=4, generation_batch_size=32,
    ...       steps_per_generation=4, num_iterations=1, num_generations=8, max_completion_length=128)
    >>> print(grpo_plan(a, rows=2000, steps=13, processes=1))  # doctest: +NORMALIZE_WHITESPACE
    plan: 13 steps; each generates 32 completions (4 prompts x 8) of up to 128 tokens (4,096) and trains on 32;
    500 steps per epoch of 2,000 prompts; up to 53,248 tokens to generate in all
    """
    micro_per_generation = args.steps_per_generation * args.num_iterations
    generated = args.generation_batch_size * args.gradient_accumulation_steps / micro_per_generation
    trained = args.per_device_train_batch_size * args.gradient_accumulation_steps * processes
    prompts = generated / args.num_generations
    per_epoch = max(1, rows // (args.generation_batch_size // args.num_generations)) * micro_per_generation
    per_epoch = max(1, per_epoch // args.gradient_accumulation_steps)
    length = args.max_completion_length
    return (
        f"plan: {plural(steps, 'step')}; each generates {plural(generated, 'completion')} ({prompts:g} prompts x "
        f"{args.num_generations}) of up to {length:,} tokens ({generated * length:,.0f}) and trains on {trained:,}; "
        f"{plural(per_epoch, 'step')} per epoch of {plural(rows, 'prompt')}; up to {steps * generated * length:,.0f} "
        "tokens to generate in all"
    )


def ppo_plan(args, rows: int, steps: int, processes: int) -> str:
    """TRL's PPO samples one completion for each of `per_device_train_batch_size * gradient_accumulation_steps *
    processes` prompts per update, and trains on them `num_ppo_epochs` times.

    >>> from types import SimpleNamespace as S
    >>> a = S(per_device_train_batch_size=8, gradient_accumulation_steps=1, num_ppo_epochs=2, response_length=128)
    >>> print(ppo_plan(a, rows=2000, steps=16, processes=1))  # doctest: +NORMALIZE_WHITESPACE
    plan: 16 steps; each generates 8 completions (one per prompt) of up to 128 tokens (1,024) and trains on them 2
    times; 250 steps per epoch of 2,000 prompts; up to 16,384 tokens to generate in all
    """
    batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * processes
    length = args.response_length
    return (
        f"plan: {plural(steps, 'step')}; each generates {plural(batch, 'completion')} (one per prompt) of up to "
        f"{length:,} tokens ({batch * length:,}) and trains on them {args.num_ppo_epochs} times; "
        f"{plural(max(1, rows // batch), 'step')} per epoch of {plural(rows, 'prompt')}; up to "
        f"{steps * batch * length:,} tokens to generate in all"
    )


def pairs_plan(args, rows: int, steps: int, processes: int) -> str:
    """DPO, IPO and ORPO: the pairs, the epochs over them and the steps (`max_steps` given: the epochs it makes).

    >>> from types import SimpleNamespace as S
    >>> pairs_plan(S(per_device_train_batch_size=8, gradient_accumulation_steps=1), rows=64, steps=16, processes=1)
    'plan: 64 pairs, 2 epochs of 8 steps (8 pairs per step) = 16 steps; nothing generated'
    >>> pairs_plan(S(per_device_train_batch_size=2, gradient_accumulation_steps=8), rows=300, steps=500, processes=1)
    'plan: 300 pairs, 26.32 epochs of 19 steps (16 pairs per step) = 500 steps; nothing generated'
    """
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * processes
    batches = math.ceil(rows / (args.per_device_train_batch_size * processes))
    per_epoch = max(1, math.ceil(batches / args.gradient_accumulation_steps))  # as transformers counts them
    return (
        f"plan: {plural(rows, 'pair')}, {plural(round(steps / per_epoch, 2), 'epoch')} of {plural(per_epoch, 'step')} "
        f"({per_step:,} pairs per step) = {plural(steps, 'step')}; nothing generated"
    )


PLANS = {"grpo": grpo_plan, "ppo": ppo_plan, "dpo": pairs_plan, "ipo": pairs_plan, "orpo": pairs_plan}


class PlanLine(TrainerCallback):
    """Prints the plan once the trainer has counted its steps (`state.max_steps`), before the first (rank 0)."""

    def __init__(self, method: str, rows: int, processes: int):
        self.plan, self.rows, self.processes = PLANS[method], rows, processes

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero and state.max_steps:
            line = self.plan(args, self.rows, state.max_steps, self.processes)
            # above the trainer's progress bar, which exists by now, not glued to its end
            tqdm.write(line + (f" (resuming at step {state.global_step})" if state.global_step else ""))
