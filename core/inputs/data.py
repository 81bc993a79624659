"""Datasets from the hub or a local file (compressed or not), the checks on their rows and columns, and the
held-out cut; everything here runs before any model is loaded."""

import json
import os
import string
from pathlib import Path

from core.errors import DataError, MissingDataFile, UserError

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


def load_data(
    name: str, split: str = "train", config: str | None = None, required_columns=(), drop_incomplete: bool = False
):
    """A dataset split from a local JSONL/JSON/Parquet/CSV file (also .gz/.bz2/.xz/.zst/.lz4-compressed) or folder,
    or from the hub by id; checked before any model loads: readable (`check_data_file`), the required columns
    there, not empty, and no row with a missing or empty required value (`check_rows`; dropped with a count when
    `drop_incomplete`)."""
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
        for file in split_files:
            check_data_file(file)
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
    if len(dataset) == 0:
        raise DataError(f"dataset {name} (split {split!r}) has no rows")
    return check_rows(dataset, required_columns, name, drop_incomplete)


def check_data_file(path: Path) -> None:
    """A local data file as the loaders will read it, in one line naming the file, the line and what is wrong: UTF-8
    text, not empty, and for JSON one object per non-blank line (a .json file may instead hold one array of
    objects)."""
    import fsspec

    if local_format(path) == "parquet":
        check_parquet_file(path)
        return
    with fsspec.open(str(path), "rb", compression="infer") as fh:
        raw_lines = fh.read().split(b"\n")
    lines = []
    for number, raw in enumerate(raw_lines, 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise DataError(
                f"{path}, line {number}: not UTF-8 text (byte {error.start + 1} of the line is "
                f"{raw[error.start : error.start + 1]!r}); save the file as UTF-8"
            ) from error
    if not any(line.strip() for line in lines):
        raise DataError(f"{path}: empty (no rows)")
    if local_format(path) != "json":
        return
    if path.name.endswith((".json", *(f".json{c}" for c in COMPRESSIONS))):
        try:
            whole = json.loads("\n".join(lines))
        except json.JSONDecodeError:
            whole = None  # JSON lines in a .json file: read line by line below
        if isinstance(whole, list | dict):
            return
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}, line {number}: not JSON ({error.msg} at column {error.colno})") from error
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {number}: a JSON {type(row).__name__}, not an object of columns")


def check_parquet_file(path: Path) -> None:
    """A Parquet file as `datasets` will read it: a readable Parquet file with at least one row."""
    import fsspec
    import pyarrow.parquet as pq

    try:
        with fsspec.open(str(path), "rb", compression="infer") as fh:
            rows = pq.ParquetFile(fh).metadata.num_rows
    except Exception as error:  # noqa: BLE001 - pyarrow's errors for a broken file differ by cause
        raise DataError(f"{path}: not a readable Parquet file ({str(error).splitlines()[0][:120]})") from error
    if rows == 0:
        raise DataError(f"{path}: empty (no rows)")


def is_missing(value) -> bool:
    """None, an empty or blank string, an empty list: no value to prompt with or score against."""
    return value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, list) and not value)


def check_rows(dataset, columns, source: str, drop: bool = False):
    """Rows whose prompt or gold columns are missing or empty: refused, counted, with their row numbers; or, when
    the user asks (`drop_incomplete_rows`), dropped with a count."""
    bad: dict[int, list[str]] = {}
    for column in columns:
        for index, value in enumerate(dataset[column]):
            if is_missing(value):
                bad.setdefault(index, []).append(column)
    if not bad:
        return dataset
    rows = sorted(bad)
    examples = ", ".join(f"row {i + 1} ({'/'.join(bad[i])})" for i in rows[:5]) + (", ..." if len(rows) > 5 else "")
    if not drop:
        raise DataError(
            f"dataset {source}: {len(rows)} of {len(dataset)} rows have a missing or empty value: "
            f"{examples}; fix them, or drop them with drop_incomplete_rows: true"
        )
    print(f"dropped {len(rows)} of {len(dataset)} rows of {source} with a missing or empty value: {examples}")
    return dataset.select([i for i in range(len(dataset)) if i not in bad])


def require_columns(dataset, columns, source: str) -> None:
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise DataError(f"dataset {source} is missing column(s) {missing}; it has {dataset.column_names}")


def prompt_columns(prompt_column: str, prompt_template: str | None = None) -> list[str]:
    """The columns a prompt is built from, for the pre-flight column check.

    >>> prompt_columns("text", "{text} Tests: {test_list}")
    ['text', 'test_list']
    """
    if not prompt_template:
        return [prompt_column]
    return list(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(prompt_template) if name))


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


def prepared(dataset, steps, source: str):
    """The rows after each data step (`step(dataset, source)`: what a reward declared it needs, a check or columns
    mapped; the shown tests held back), before any model loads; a step's ValueError becomes one line (DataError)."""
    for step in steps:
        try:
            dataset = step(dataset, source)
        except ValueError as error:
            raise DataError(str(error)) from error
    return dataset


def prompt_rows(
    args,
    reward_columns,
    steps=(),
    heldout_fraction: float = 0.0,
    seed: int = 0,
    skip: int = 0,
    limit: int | None = None,
    heldout_data: str | None = None,
):
    """(rows to prompt, held-out rows or None) of `args`' dataset (PromptArguments), checked before any model loads:
    loaded with the prompt's columns and `reward_columns` required, `exclude_problems` dropped, `heldout_fraction`
    cut off (seeded), rows `skip` to `skip + limit` kept, then `steps` run on them; the held-out rows are those cut
    off, or the file `heldout_data` prepared as the training rows are (all of it). Rows come back unprompted."""
    needed = [*prompt_columns(args.prompt_column, args.prompt_template), *reward_columns]
    if args.shown_tests is not None:  # tests_shown is made from test_list by the steps
        if args.shown_tests < 1:
            raise UserError(f"shown_tests {args.shown_tests} must be >= 1 (unset: every test shown and scored)")
        needed = [c for c in needed if c != "tests_shown"] + ["test_list"]

    def rows(source: str, split: str, config: str | None):
        dataset = load_data(source, split, config, required_columns=needed, drop_incomplete=args.drop_incomplete_rows)
        if args.exclude_problems:
            dataset = without_problems(dataset, args.exclude_problems, args.prompt_column, source)
        return dataset

    dataset = rows(args.dataset_name, args.dataset_train_split, args.dataset_config)
    dataset, held = cut_heldout(dataset, heldout_fraction, seed, args.dataset_name)
    if skip and skip >= len(dataset):
        raise SystemExit(f"skip_prompts {skip}: {args.dataset_name} has only {len(dataset)} prompts")
    if skip or limit:
        dataset = dataset.select(range(skip, min(len(dataset), skip + limit) if limit else len(dataset)))
    if held is None and heldout_data:
        held = prepared(rows(heldout_data, "train", None), steps, heldout_data)
    return prepared(dataset, steps, args.dataset_name), held


def cut_heldout(dataset, fraction: float, seed: int, source: str):
    """(training rows, held-out rows or None): `fraction` of the data (`heldout_fraction`) cut off before training,
    seeded, so that no held-out row is ever trained on."""
    if not fraction:
        return dataset, None
    n = round(len(dataset) * fraction)
    if n < 1 or n >= len(dataset):
        raise UserError(
            f"heldout_fraction {fraction:g} of the {len(dataset)} rows of {source} leaves {n} held out "
            f"and {len(dataset) - n} to train on; both need at least one"
        )
    split = dataset.train_test_split(test_size=n, seed=seed, shuffle=True)
    return split["train"], split["test"]


PAIR_COLUMNS = ["prompt", "chosen", "rejected"]


def load_preference_pairs(args, limit: int | None = None):
    """DPO's and ORPO's data: TRL's preference columns (`prompt`, `chosen`, `rejected`) of `args`' dataset, checked
    as every recipe's rows are, the first `limit` rows (all without it); other columns dropped."""
    dataset = load_data(
        args.dataset_name,
        args.dataset_train_split,
        args.dataset_config,
        required_columns=PAIR_COLUMNS,
        drop_incomplete=args.drop_incomplete_rows,
    )
    if limit:
        dataset = dataset.select(range(min(limit, len(dataset))))
    return dataset.select_columns(PAIR_COLUMNS)


def pairs_cost(pairs_file: Path) -> Path:
    """Where `make pairs` records what sampling a pairs file cost (prompts, completions and their tokens; the studies
    add seconds and CPU seconds): DPO, IPO and ORPO train on the pairs, so their compute includes it."""
    return Path(pairs_file).with_name(Path(pairs_file).stem + ".cost.json")
