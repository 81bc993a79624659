"""A run's folder: where it goes, which checkpoint a resume continues from, and the records written beside the
adapter (the resolved config, library versions, the sandbox's isolation mode)."""

import dataclasses
import json
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import yaml

from rewards.sandbox import isolation_record


def default_output_dir(method: str, profile: str) -> str:
    return f"runs/{method}-{profile}-{time.strftime('%Y%m%d-%H%M%S')}"


def complete_checkpoints(output_dir: str | Path) -> list[Path]:
    """checkpoint-N folders, oldest first; only those whose save finished (trainer_state.json is written last)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = [
        p
        for p in output_dir.glob("checkpoint-*")
        if p.name.split("-")[-1].isdigit() and (p / "trainer_state.json").exists()
    ]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def resolve_run_dir(training_args, method: str, profile: str) -> str | None:
    """Sets output_dir (runs/<method>-<profile>-<timestamp> unless given) and returns the checkpoint to resume.

    `resume_from_checkpoint: latest` resumes the newest complete checkpoint of output_dir, or, when output_dir is
    not given, of the newest runs/<method>-<profile>-* folder.
    """
    resume = training_args.resume_from_checkpoint
    if training_args.output_dir in (None, "", "trainer_output"):
        runs = sorted(Path("runs").glob(f"{method}-{profile}-*")) if resume == "latest" else []
        training_args.output_dir = str(runs[-1]) if runs else default_output_dir(method, profile)
    if resume == "latest":
        checkpoints = complete_checkpoints(training_args.output_dir)
        if not checkpoints:
            raise SystemExit(f"resume_from_checkpoint=latest: no complete checkpoint in {training_args.output_dir}")
        resume = str(checkpoints[-1])
    elif resume and not Path(resume).is_dir():
        raise SystemExit(f"resume_from_checkpoint: {resume} is not a directory")
    training_args.resume_from_checkpoint = resume
    return resume


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
    record = library_versions() | {"sandbox_isolation": isolation_record()}
    (out / "versions.json").write_text(json.dumps(record, indent=2) + "\n")
