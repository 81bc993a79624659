"""A run's folder: where it goes, which checkpoint a resume continues from, and the records written beside the
adapter (the resolved config, library versions, the sandbox's isolation mode).

A folder belongs to one run: run.json names the run and the checkpoints it wrote (rotation deletes only those), a
lock (.lock) refuses a second run while one writes, a folder holding another run's files is refused unless the user
asks to reuse it (what it holds then moves to previous-<time>/ inside it), and a resume cuts the run's
records (metrics.jsonl, checkpoints.jsonl) back to the checkpoint it continues from.
"""

import dataclasses
import fcntl
import json
import os
import shutil
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import yaml

from core.errors import UserError
from core.runs.provenance import commit, cpu
from core.runs.timing import PhaseTimer
from core.runs.tokens import TokenCount
from rewards.sandbox import isolation_record

RECORD = "run.json"
LOCK = ".lock"
_HELD_LOCKS = []  # open while the process lives: the kernel releases a flock when its holder dies, SIGKILL too


def default_output_dir(method: str, profile: str) -> str:
    base = f"runs/{method}-{profile}-{time.strftime('%Y%m%d-%H%M%S')}"
    return next(
        f"{base}{suffix}"
        for suffix in ("", *(f"-{n}" for n in range(2, 1000)))
        if not Path(f"{base}{suffix}").exists()
    )


def step_of(path: Path) -> int:
    return int(path.name.split("-")[-1])


def complete_checkpoints(output_dir: str | Path, notice: bool = False) -> list[Path]:
    """checkpoint-N folders, oldest first, whose save finished and whose trainer_state.json (written last) reads;
    with `notice`, one line for each one skipped."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    complete = []
    for path in sorted((p for p in output_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()), key=step_of):
        try:
            json.loads((path / "trainer_state.json").read_text())
            complete.append(path)
        except (OSError, ValueError) as error:
            if notice:
                print(f"notice: skipping {path}: its trainer_state.json is missing or unreadable ({error})")
    return complete


def is_main_process() -> bool:
    return os.environ.get("RANK", "0") == "0"


def lock(folder: Path) -> None:
    """Holds folder/.lock for the rest of this process: a second run into the folder is refused, naming the first."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / LOCK, "a+")  # noqa: SIM115 - held open for the process's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as error:
        handle.seek(0)
        raise UserError(
            f"another run ({handle.read().strip() or 'unknown'}) is writing to {folder}; wait for it to "
            "finish, or choose another output_dir"
        ) from error
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
    handle.flush()
    _HELD_LOCKS.append(handle)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def rollback_records(folder: Path, step: int) -> tuple[float, float]:
    """Cuts metrics.jsonl and checkpoints.jsonl back to `step` (a resume redoes what came after, so nothing is
    logged twice); returns the training seconds and CPU seconds spent up to that checkpoint (0 for CPU seconds a
    checkpoint recorded before they were counted)."""
    for name in ("metrics.jsonl", "checkpoints.jsonl"):
        rows = read_jsonl(folder / name)
        kept = [row for row in rows if row.get("step", 0) <= step]
        if len(kept) < len(rows):
            (folder / name).write_text("".join(json.dumps(row) + "\n" for row in kept))
    at = [row for row in read_jsonl(folder / "checkpoints.jsonl") if row["step"] == step]
    return (at[-1]["train_seconds"], at[-1].get("cpu_seconds", 0.0)) if at else (0.0, 0.0)


class RunFolder:
    """A claimed run folder: its path, the checkpoint a resume continues from, its record (run.json: the method,
    the checkpoints this run wrote, the training seconds before a resume, its own `save_total_limit`), the settings
    the run was parsed from (`configs`, written beside the adapter), where its training time goes (`phases`) and the
    tokens it generates and trains on (`tokens`)."""

    def __init__(self, path: Path, resume: str | None, record: dict, configs: tuple = ()):
        self.path, self.resume, self.record, self.configs = path, resume, record, configs
        self.phases = PhaseTimer()
        self.tokens = TokenCount()

    def write_files(self) -> None:
        """config.yaml (every setting, resolved) and versions.json, beside the adapter."""
        write_run_files(str(self.path), *self.configs)

    @property
    def train_seconds_before(self) -> float:
        return self.record.get("train_seconds_before", 0.0)

    @property
    def cpu_seconds_before(self) -> float:
        return self.record.get("cpu_seconds_before", 0.0)

    def wrote(self, checkpoint: str) -> bool:
        """Whether `checkpoint` (checkpoint-N) is one this run wrote (a resumed run may save a step again)."""
        return checkpoint in self.record.get("checkpoints", [])

    def save_record(self) -> None:
        if is_main_process():
            (self.path / RECORD).write_text(json.dumps(self.record, indent=2) + "\n")

    def record_checkpoint(self, name: str) -> list[str]:
        """Adds a checkpoint this run wrote to run.json and deletes its own oldest beyond the run's save_total_limit
        (never one it did not write); returns the deleted names."""
        checkpoints = self.record.setdefault("checkpoints", [])
        if name not in checkpoints:
            checkpoints.append(name)
        limit, deleted = self.record.get("save_total_limit"), []
        while limit and len(checkpoints) > limit:
            oldest = checkpoints.pop(0)
            shutil.rmtree(self.path / oldest, ignore_errors=True)
            deleted.append(oldest)
        self.save_record()
        return deleted


def resolve_run_dir(method: str, script_args, training_args, model_args=None) -> RunFolder:
    """Sets output_dir (runs/<method>-<profile>-<timestamp> unless given; `script_args.profile`), claims it for this
    run and returns it, with the checkpoint to resume and the settings to write beside the adapter.

    `resume_from_checkpoint: latest` resumes the newest complete checkpoint of output_dir (skipping, with a notice,
    any whose state is unreadable), or, when output_dir is not given, of the newest runs/<method>-<profile>-* folder.
    Without a resume, a folder holding files is refused unless `script_args.reuse_output_dir` (they then move to
    previous-<time>/ inside it).
    Checkpoint rotation is the run's own (`save_total_limit` is kept in run.json; transformers' is turned off).
    """
    profile, reuse = script_args.profile, script_args.reuse_output_dir
    resume = training_args.resume_from_checkpoint
    if training_args.output_dir in (None, "", "trainer_output"):
        runs = sorted(Path("runs").glob(f"{method}-{profile}-*")) if resume == "latest" else []
        training_args.output_dir = str(runs[-1]) if runs else default_output_dir(method, profile)
    folder = Path(training_args.output_dir)
    if resume == "latest":
        checkpoints = complete_checkpoints(folder, notice=True)
        if not checkpoints:
            raise SystemExit(f"resume_from_checkpoint=latest: no complete checkpoint in {folder}")
        resume = str(checkpoints[-1])
    elif resume and not Path(resume).is_dir():
        raise SystemExit(f"resume_from_checkpoint: {resume} is not a directory")
    training_args.resume_from_checkpoint = resume
    if is_main_process():
        lock(folder)
    own = bool(resume) and Path(resume).resolve().parent == folder.resolve()  # else: another folder's checkpoint
    record = json.loads((folder / RECORD).read_text()) if own and (folder / RECORD).is_file() else {}
    if own:
        step = step_of(Path(resume))
        seconds, cpu = rollback_records(folder, step) if is_main_process() else (0.0, 0.0)
        for stale in folder.glob(".saving-*"):  # a save this run did not finish
            shutil.rmtree(stale, ignore_errors=True)
        owned = record.get("checkpoints", [p.name for p in complete_checkpoints(folder)])
        record |= {
            "checkpoints": [c for c in owned if step_of(Path(c)) <= step],
            "train_seconds_before": seconds,
            "cpu_seconds_before": cpu,
            "resumed_from": resume,
        }
    else:
        others = (
            sorted(p.name for p in folder.iterdir() if p.name != LOCK and not p.name.startswith("previous-"))
            if folder.is_dir() and is_main_process()  # the other ranks of a launch find rank 0's files there
            else []
        )
        if others and not reuse:
            raise UserError(
                f"output_dir {folder} already holds another run's files ({len(others)}: {', '.join(others[:4])}"
                f"{', ...' if len(others) > 4 else ''}); choose another output_dir, resume it with "
                "--resume_from_checkpoint latest, or pass --reuse_output_dir true to write beside them (they move, "
                "checkpoints included, to previous-<time>/ inside it; nothing is deleted)"
            )
        if others and is_main_process():
            previous = folder / f"previous-{time.strftime('%Y%m%d-%H%M%S')}"
            previous.mkdir()
            for name in others:
                (folder / name).rename(previous / name)
            print(f"reusing {folder}: what it held moved to {previous}")
        record = {"checkpoints": [], "train_seconds_before": 0.0}
    run = RunFolder(
        folder,
        resume,
        {
            "method": method,
            **record,
            "started": record.get("started", time.strftime("%Y-%m-%d %H:%M:%S")),
            "save_total_limit": training_args.save_total_limit,
        },
        (script_args, training_args, model_args),
    )
    training_args.save_total_limit = None  # transformers would rotate any checkpoint-* of the folder: see run.json
    run.save_record()
    return run


def library_versions() -> dict[str, str]:
    versions = {}
    for package in ("torch", "transformers", "trl", "peft", "bitsandbytes", "datasets", "accelerate", "math-verify"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def write_run_files(output_dir: str, *configs) -> None:
    """The resolved config (every dataclass the parser filled) and library versions, beside the adapter."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    resolved = {}
    for config in configs:
        # json first: enums and dtypes become their plain string values
        resolved.update(json.loads(json.dumps(dataclasses.asdict(config), default=str)))
    (out / "config.yaml").write_text(yaml.safe_dump(resolved, sort_keys=True))
    # which isolation code rewards get here (rewards.sandbox): "root", "userns", "unisolated" or "unavailable"
    # and where the run's numbers came from: the commit and the CPU whose kernels computed them
    record = library_versions() | {"sandbox_isolation": isolation_record(), "commit": commit()} | cpu()
    (out / "versions.json").write_text(json.dumps(record, indent=2) + "\n")
