"""Datasets from the hub or a local file (compressed or not), the checks on their columns, and the prompts built
from their rows; everything here runs before any model is loaded."""

import os
import string
from pathlib import Path

from core.errors import DataError, MissingDataFile
from rewards import required_columns as reward_columns
from rewards.code import code_test_columns, require_code_tests
from rewards.math import unparseable_golds

LOCAL_SUFFIXES = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
# What `datasets`' builders decompress by themselves (fsspec infers it from the extension; .zst and .lz4 need the
# zstandard / lz4 packages, which the pinned stack does not install).
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst", ".lz4")


def local_format(path: Path) -> str | None:
    """The `datasets` builder for a local data file, compressed or not: train.jsonl.gz -> "json".

    >>> [local_format(Path(p)) for p in ("a.jsonl", "HumanEval.jsonl.gz", "b.csv.xz", "c.gz", "d.txt")]
    ['json', 'json', 'csv', None, None]
    """
    suffixes = path.suffixes
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    return LOCAL_SUFFIXES.get(suffixes[-1]) if suffixes else None


def is_local_dataset(name: str) -> bool:
    return local_format(Path(name)) is not None or os.path.sep in name and Path(name).exists()


def load_data(name: str, split: str = "train", config: str | None = None, required_columns=()):
    """A dataset split from a local JSONL/JSON/Parquet/CSV file (also .gz/.bz2/.xz/.zst/.lz4-compressed) or folder,
    or from the hub by id."""
    import datasets

    if is_local_dataset(name):
        path = Path(name)
        if not path.exists():
            raise MissingDataFile(f"dataset file {name} does not exist")
        files = sorted(p for p in path.iterdir() if local_format(p)) if path.is_dir() else [path]
        if not files:
            raise MissingDataFile(
                f"dataset directory {name} holds no {'/'.join(LOCAL_SUFFIXES)} file (optionally "
                f"compressed: {'/'.join(COMPRESSIONS)})"
            )
        builder = local_format(files[0])
        if builder is None:
            raise DataError(
                f"dataset file {name}: unknown format; use {'/'.join(LOCAL_SUFFIXES)}, optionally "
                f"compressed ({'/'.join(COMPRESSIONS)})"
            )
        split_files = [f for f in files if f.name.startswith(split)] if path.is_dir() else files
        if not split_files:
            raise MissingDataFile(f"dataset directory {name} has no file for split {split!r}")
        dataset = datasets.load_dataset(builder, data_files=[str(f) for f in split_files], split="train")
    else:
        try:
            dataset = datasets.load_dataset(name, config, split=split)
        except datasets.exceptions.DatasetNotFoundError as error:
            raise DataError(f"unknown dataset {name!r} (not a local file, not on the hub): {error}") from error
        except ConnectionError as error:  # offline, or the hub unreachable: a local copy works everywhere
            raise DataError(
                f"dataset {name!r}: {error}; without the hub, give a local file (a .jsonl, .json, "
                ".parquet or .csv path) instead"
            ) from error
    require_columns(dataset, required_columns, name)
    return dataset


def require_columns(dataset, columns, source: str) -> None:
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise DataError(f"dataset {source} is missing column(s) {missing}; it has {dataset.column_names}")


def warn_unparseable_golds(dataset, reward_names, source: str, column: str = "answer") -> list[tuple[int, str]]:
    """Gold answers math_accuracy cannot parse are a data problem: their samples score None and teach nothing.
    Says how many, with the first few, before any model loads (when a chosen reward reads `answer`)."""
    if column not in reward_columns(reward_names):
        return []
    bad = unparseable_golds(dataset[column])
    if bad:
        print(
            f"warning: {len(bad)} of {len(dataset)} gold answers in {source} (column {column!r}) cannot be parsed; "
            "math_accuracy scores their samples None (left out of the reward): "
            + ", ".join(f"row {i}: {gold[:60]!r}" for i, gold in bad[:5])
            + (", ..." if len(bad) > 5 else "")
        )
    return bad


def with_code_test_columns(dataset, reward_names, source: str):
    """For code_tests: the dataset's own test columns (this project's `tests`, MBPP's `test_list`, HumanEval's
    `test` + `entry_point` + `prompt`) mapped to `tests` / `setup` / `code_prefix`, before `prompt` is rebuilt as
    chat messages. Fails before any model loads when the dataset has none of them."""
    if "code_tests" not in reward_names:
        return dataset
    try:
        require_code_tests(dataset.column_names, source)
    except ValueError as error:
        raise DataError(str(error)) from error
    return dataset.map(code_test_columns)


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
