"""The rewards a run asked for, resolved and checked before any model loads: the functions by name or dotted path,
one weight each, the noise a study puts on purpose into what training sees, and the run's ledger of their cost."""

from dataclasses import dataclass, field

from core.errors import UserError
from core.inputs.arguments import RewardArguments
from rewards import get_reward_funcs
from rewards.ledger import RewardLedger, TimedReward
from rewards.noise import flip_noise
from rewards.sandbox import SandboxUnavailable


@dataclass
class Rewards:
    """Args:
    names: what the run asked for (registered names or dotted paths).
    funcs: the clean reward functions (held-out evaluation and `make eval` score with these).
    weights: one weight per reward.
    trained: what training calls: each function checked, timed into `ledger`, with `noise` flips if asked.
    ledger: the run's reward bookkeeping (cost.json's reward time, metrics.jsonl's per-reward means).
    """

    names: list[str]
    funcs: list
    weights: list[float]
    trained: list = field(repr=False)
    ledger: RewardLedger = field(repr=False)


def resolve_rewards(
    args: RewardArguments, weights: list[float] | None = None, noise: float = 0.0, seed: int = 0, names=None
) -> Rewards:
    """The rewards `args` asks for (or `names`: PPO with a reward model asks for none) resolved
    (rewards.get_reward_funcs: a name not registered, a dotted path that does not import, or a sandbox that cannot
    isolate code ends in one line) with one weight each (default 1.0), each called under `args.reward_timeout`; with
    `noise` (in [0, 1], checked where it is set), training sees each 0/1 reward flipped with that probability
    (rewards.noise, seeded by `seed` + the reward's index)."""
    names = list(args.reward_funcs if names is None else names)
    try:
        funcs = get_reward_funcs(names, args.reward_kwargs)
    except ValueError as error:
        raise UserError(str(error)) from error
    except SandboxUnavailable as error:  # its cause and fixes, in one line
        raise SystemExit(str(error)) from error
    weights = list(weights) if weights else [1.0] * len(funcs)
    if len(weights) != len(funcs):
        raise UserError(f"reward_weights has {len(weights)} entries for {len(funcs)} reward_funcs {names}")
    # a verifier that is sometimes wrong, on purpose; held-out truth stays clean
    noisy = [flip_noise(f, noise, seed + i) for i, f in enumerate(funcs)] if noise else funcs
    ledger = RewardLedger()
    trained = [TimedReward(f, ledger, args.reward_timeout) for f in noisy]
    return Rewards(names, funcs, weights, trained, ledger)
