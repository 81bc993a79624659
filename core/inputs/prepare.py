"""The one data step of every recipe, `prepare_prompts`: the rows loaded and checked (`core.inputs.data`), with
what the chosen rewards declared they need (`rewards.required_columns`, `rewards.data_steps`) and the tests a prompt
shows held back, then prompted and fitted to the model (`core.inputs.prompts`); everything before any model loads."""

from typing import NamedTuple

from core.inputs.arguments import PromptArguments
from core.inputs.data import prompt_rows
from core.inputs.models import load_tokenizer, prompt_room
from core.inputs.prompts import prompted
from rewards import data_steps, required_columns
from rewards.code import showing


class Prompts(NamedTuple):
    dataset: object  # the rows to train on (or sample from), checked, with the prompt column when built
    held: object  # the rows held out (heldout_fraction's cut, or heldout_data's), never trained on; None without
    tokenizer: object  # the model's tokenizer, when the prompts were fitted to it


def prepare_prompts(
    args: PromptArguments,
    reward_names,
    model_args=None,
    completion: tuple[int, str, str] | None = None,
    column: str = "prompt",
    heldout_fraction: float = 0.0,
    seed: int = 0,
    skip: int = 0,
    limit: int | None = None,
    heldout_data: str | None = None,
) -> Prompts:
    """The rows a run prompts with, every check before any model loads (`core.inputs.data.prompt_rows`: the prompt's
    and the rewards' columns required, `heldout_fraction` cut off or `heldout_data` read, rows `skip` to
    `skip + limit` kept, `shown_tests` held back and each reward's own data step run); then, given `model_args`, the
    chat messages built into `column` and fitted to the room the completion budget leaves (`completion`: its value,
    setting name and where it came from). Without `model_args` (your own task in `make eval`) the rows come back
    unprompted."""
    columns, steps = required_columns(reward_names), data_steps(reward_names)
    if args.shown_tests is not None:  # held back before code_tests maps the test columns
        steps = [showing(args.shown_tests), *steps]
    dataset, held = prompt_rows(args, columns, steps, heldout_fraction, seed, skip, limit, heldout_data)
    if model_args is None:
        return Prompts(dataset, held, None)
    tokenizer = load_tokenizer(model_args)
    dataset = prompted(dataset, args, tokenizer, prompt_room(model_args, *completion), column)
    return Prompts(dataset, held, tokenizer)
