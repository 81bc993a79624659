"""Prompts from rows: the user message from a column or a template, the chat messages, fitted to the room the
model leaves them; and `prepare_prompts`, the one data step of every recipe (load, check, cut, template, fit)."""

import string
from pathlib import Path
from typing import NamedTuple

from core.errors import UserError
from core.inputs.arguments import PromptArguments
from core.inputs.data import (
    FIT_HINT,
    cut_heldout,
    fit_prompts,
    load_data,
    prepared_for_rewards,
)
from core.inputs.models import load_tokenizer, prompt_room
from rewards import required_columns
from rewards.code import hold_back_tests


class Prompts(NamedTuple):
    dataset: object  # the rows to train on (or sample from), checked, with the prompt column when built
    held: object  # the rows `heldout_fraction` cut off before training (None without it), never trained on
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
) -> Prompts:
    """The rows a run prompts with, every check before any model loads: loaded with the prompt's and the rewards'
    columns required, `heldout_fraction` cut off (seeded), rows `skip` to `skip + limit` kept, each reward's own
    data step (`rewards.declare.prepares`: unparseable gold answers counted, code tests mapped); then, given
    `model_args`, the chat messages built into `column` and fitted to the room the completion budget leaves
    (`completion`: its value, setting name and where it came from). Without `model_args` (your own task in
    `make eval`) the rows come back unprompted."""
    needed = [*prompt_columns(args.prompt_column, args.prompt_template), *required_columns(reward_names)]
    if args.shown_tests is not None:  # tests_shown is made from test_list below
        if args.shown_tests < 1:
            raise UserError(f"shown_tests {args.shown_tests} must be >= 1 (unset: every test shown and scored)")
        needed = [c for c in needed if c != "tests_shown"] + ["test_list"]
    dataset = load_data(
        args.dataset_name,
        args.dataset_train_split,
        args.dataset_config,
        required_columns=needed,
        drop_incomplete=args.drop_incomplete_rows,
    )
    if args.exclude_problems:
        dataset = without_problems(dataset, args.exclude_problems, args.prompt_column, args.dataset_name)
    dataset, held = cut_heldout(dataset, heldout_fraction, seed, args.dataset_name)
    if skip and skip >= len(dataset):
        raise SystemExit(f"skip_prompts {skip}: {args.dataset_name} has only {len(dataset)} prompts")
    if skip or limit:
        dataset = dataset.select(range(skip, min(len(dataset), skip + limit) if limit else len(dataset)))
    if args.shown_tests is not None:
        try:
            dataset = dataset.map(lambda row: hold_back_tests(row, args.shown_tests))
        except ValueError as error:
            raise UserError(f"{args.dataset_name}: {error}; lower shown_tests ({args.shown_tests})") from None
    dataset = prepared_for_rewards(dataset, reward_names, args.dataset_name)
    if model_args is None:
        return Prompts(dataset, held, None)
    tokenizer = load_tokenizer(model_args)
    dataset = dataset.map(lambda row: {column: row_messages(row, args)})
    room = prompt_room(model_args, *completion)
    dataset = fit_prompt_column(dataset, tokenizer, room, args.dataset_name, args.truncate_long_prompts, column)
    return Prompts(dataset, held, tokenizer)


def normalised(text) -> str:
    return " ".join(str(text).split())


def without_problems(dataset, source: str, column: str, name: str):
    """`dataset` without the rows whose `column` text is one of `source`'s (a local file, or `hub_id[:split]`,
    default split test), whitespace normalised; says how many it dropped."""
    hub_id, _, split = source.partition(":") if ":" in source and not Path(source).exists() else (source, "", "")
    excluded = load_data(hub_id, split or "test", required_columns=[column])
    banned = {normalised(text) for text in excluded[column]}
    kept = dataset.filter(lambda row: normalised(row[column]) not in banned)
    print(
        f"exclude_problems: {len(dataset) - len(kept)} of {len(dataset)} rows of {name} are problems of {source} "
        f"({len(banned)}): dropped, never trained on"
    )
    return kept


def row_messages(row: dict, args: PromptArguments) -> list[dict]:
    """The chat messages a recipe prompts a (prepared) row with: its system prompt, then the user message."""
    return prompt_messages(prompt_text(row, args.prompt_column, args.prompt_template), args.system_prompt)


def prompt_text(row: dict, prompt_column: str, prompt_template: str | None = None) -> str:
    r"""The user message for a row: its `prompt_column`, or `prompt_template` filled from the row's columns (a list
    column as one item per line), e.g. MBPP's tests shown under the task.

    >>> prompt_text({"text": "Add one.", "test_list": ["assert f(1) == 2", "assert f(2) == 3"]}, "text",
    ...             "{text}\nTests:\n{test_list}")
    'Add one.\nTests:\nassert f(1) == 2\nassert f(2) == 3'
    """
    if not prompt_template:
        return row[prompt_column]
    return prompt_template.format(**{k: "\n".join(map(str, v)) if isinstance(v, list) else v for k, v in row.items()})


def prompt_columns(prompt_column: str, prompt_template: str | None = None) -> list[str]:
    """The columns a prompt is built from, for the pre-flight column check.

    >>> prompt_columns("text", "{text} Tests: {test_list}")
    ['text', 'test_list']
    """
    if not prompt_template:
        return [prompt_column]
    return list(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(prompt_template) if name))


def prompt_messages(question: str, system_prompt: str | None) -> list[dict]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": question}]


def fit_prompt_list(
    prompts: list, tokenizer, limit: int | None, source: str, truncate: bool = False, hint: str = FIT_HINT
) -> list:
    """`fit_prompts` on chat prompts (lists of messages): refused, or each long prompt's last message cut from its
    start (the end, where the question usually is, stays) by the tokens it must lose."""
    lengths = [
        len(tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=True, return_dict=False))
        for m in prompts
    ]
    cuts = fit_prompts(lengths, limit, source, truncate, hint)
    if not any(cuts):
        return prompts
    print(f"truncated {sum(1 for c in cuts if c)} prompt(s) of {source} to {limit} tokens")
    fitted = []
    for messages, cut in zip(prompts, cuts, strict=True):
        messages = [dict(m) for m in messages]
        ids = tokenizer(messages[-1]["content"], add_special_tokens=False)["input_ids"]
        messages[-1]["content"] = tokenizer.decode(ids[cut:]) if cut else messages[-1]["content"]
        fitted.append(messages)
    return fitted


def fit_prompt_column(dataset, tokenizer, limit: int | None, source: str, truncate: bool = False, column="prompt"):
    """`fit_prompt_list` on a dataset column of chat messages."""
    prompts = dataset[column]
    fitted = fit_prompt_list(prompts, tokenizer, limit, source, truncate)
    return dataset if fitted is prompts else dataset.remove_columns(column).add_column(column, fitted)
