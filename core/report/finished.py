"""A finished run's own records, read back by the commands that come after training (`make audit`, `make export`):
its summary, config and versions, the task that measures it, and its last held-out evaluation."""

import json
from pathlib import Path

import yaml

from core.errors import UserError
from core.evaluation.benchmarks import TASKS, load_task_data
from core.report.summary import PROFILE_TASKS

FOUR_BIT = "4-bit NF4"


def run_record(run: Path) -> tuple[dict, dict]:
    """(summary.json, config.yaml) of a finished run folder, or one line saying what is missing."""
    for name in ("summary.json", "config.yaml", "adapter_config.json"):
        if not (run / name).is_file():
            raise UserError(f"{run}: no {name}; a finished run's folder is needed (runs/<method>-...)")
    return json.loads((run / "summary.json").read_text()), yaml.safe_load((run / "config.yaml").read_text())


def saved_config(adapter: str | Path | None) -> dict | None:
    """The config.yaml of the run that saved `adapter` (a run folder, or one of its checkpoints); None without one."""
    if not adapter:
        return None
    for folder in (Path(adapter), Path(adapter).parent):
        if (folder / "config.yaml").is_file():
            return yaml.safe_load((folder / "config.yaml").read_text()) or {}
    return None


def trained_precision(config: dict) -> str:
    """What the run loaded its base in, as every report names it.

    >>> trained_precision({"load_in_4bit": True}), trained_precision({"dtype": "bfloat16"}), trained_precision({})
    ('4-bit NF4', 'bfloat16', 'full precision')
    """
    return FOUR_BIT if config.get("load_in_4bit") else str(config.get("dtype") or "full precision")


def task_of(run: Path, config: dict, task: str | None) -> str:
    """The built-in task that measures what the run trained for: `task`, else its profile's."""
    if task:
        return task
    profile = config.get("profile")
    if profile in PROFILE_TASKS:
        return PROFILE_TASKS[profile]
    raise UserError(
        f"{run}: profile {profile!r} has no built-in held-out task; name one with --task ({', '.join(TASKS)}) "
        "and its problems with --data"
    )


def last_heldout(run: Path) -> tuple[dict, list[dict]] | None:
    """(settings, per-problem greedy records) of the run's last held-out evaluation of a built-in task: its own
    while training, else `make audit`'s; None when it has none."""
    for folder in (run / "heldout", run / "audit" / "heldout"):
        settings = folder / "settings.json"
        steps = [p for p in folder.glob("step-*.jsonl") if p.stem.removeprefix("step-").isdigit()]
        if settings.is_file() and steps:
            last = max(steps, key=lambda p: int(p.stem.removeprefix("step-")))
            records = [json.loads(line) for line in last.read_text().splitlines() if line.strip()]
            found = json.loads(settings.read_text())
            if found.get("task") in TASKS and "rewards" not in found:
                return found, records
    return None


def heldout_problems(run: Path, config: dict, task: str | None, data: str | None, limit: int | None):
    """The problems that measure a finished run after training (`make export`'s check): its own last held-out
    evaluation's task, data and count unless told otherwise, else its profile's task, 200 problems. Returns (task,
    data, rows, the run's own per-problem records on exactly those rows or None): a smaller `limit` keeps the records
    of the first problems, which are the rows it loads."""
    own = last_heldout(run)
    task = task_of(run, config, task or (own[0]["task"] if own else None))
    same = own is not None and own[0]["task"] == task and data in (None, own[0].get("data"))
    data = data or (own[0].get("data") if same else None)
    rows = load_task_data(TASKS[task], data, limit or (own[0]["n"] if same else 200))
    records = [r for r in own[1] if r["index"] < len(rows)] if same else []
    return task, data, rows, (records if len(records) == len(rows) else None)
