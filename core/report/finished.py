"""A finished run's own records, read back by the commands that come after training (`make audit`, `make export`):
its summary, config and versions, the task that measures it, and its last held-out evaluation."""

import json
from pathlib import Path

import yaml

from core.errors import UserError
from core.evaluation.benchmarks import TASKS
from core.report.summary import PROFILE_TASKS


def run_record(run: Path) -> tuple[dict, dict]:
    """(summary.json, config.yaml) of a finished run folder, or one line saying what is missing."""
    for name in ("summary.json", "config.yaml", "adapter_config.json"):
        if not (run / name).is_file():
            raise UserError(f"{run}: no {name}; a finished run's folder is needed (runs/<method>-...)")
    return json.loads((run / "summary.json").read_text()), yaml.safe_load((run / "config.yaml").read_text())


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
