"""Prompts from rows: the user message from a column or a template, the chat messages, fitted to the room the
model leaves them (`core.inputs.prepare` runs them after the rows are loaded and checked)."""

from core.errors import DataError
from core.inputs.arguments import PromptArguments
from tasks.registry import prompt_messages, prompt_text

FIT_HINT = "shorten them, or cut them with truncate_long_prompts: true"


def row_messages(row: dict, args: PromptArguments) -> list[dict]:
    """The chat messages a recipe prompts a (prepared) row with: its system prompt, then the user message."""
    return prompt_messages(prompt_text(row, args.prompt_column, args.prompt_template), args.system_prompt)


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


def fit_prompts(
    prompt_lengths: list[int], limit: int | None, source: str, truncate: bool = False, hint: str = FIT_HINT
) -> list[int]:
    """Rows whose prompt (in tokens, chat template included) leaves no room for the completion within the model's
    positions: refused with their row numbers and `hint` (what to change), or, when the user asks
    (`truncate_long_prompts`), the number of tokens each must lose (0 for the rest).

    >>> fit_prompts([10, 50, 20], 40, "d.jsonl", truncate=True)
    [0, 10, 0]
    """
    if limit is None:
        return [0] * len(prompt_lengths)
    over = [(i, n) for i, n in enumerate(prompt_lengths) if n > limit]
    if over and not truncate:
        examples = ", ".join(f"row {i + 1} ({n} tokens)" for i, n in over[:5]) + (", ..." if len(over) > 5 else "")
        raise DataError(
            f"dataset {source}: {len(over)} prompt(s) longer than the {limit} tokens the model has room "
            f"for: {examples}; {hint}"
        )
    return [max(0, n - limit) for n in prompt_lengths]


def prompted(dataset, args: PromptArguments, tokenizer, room: int | None, column: str = "prompt"):
    """The rows with their chat messages built into `column` (`row_messages`) and fitted to the `room` the
    completion budget leaves (`fit_prompt_column`)."""
    dataset = dataset.map(lambda row: {column: row_messages(row, args)})
    return fit_prompt_column(dataset, tokenizer, room, args.dataset_name, args.truncate_long_prompts, column)
