"""Under the same-completions budget only PPO trains differently (over k x the prompts); GRPO, DPO, IPO and ORPO train
exactly as under the same-prompts budget. `borrow` copies their finished runs from the same-prompts comparison (with
their pairs, evaluations and compute curves) instead of training and scoring them again, where that comparison ran
the same training code, configs and worlds (`training_digest`) with the same prompts and evaluation settings; the
summary's settings say which runs were borrowed and from where."""

import hashlib
import json
import shutil
from pathlib import Path

from core.runs.provenance import REPO, code_digest
from studies.comparison.published import read_published
from studies.runner import PREFERENCE_METHODS

# What a run and its scores depend on: the training code, configs and worlds, evaluation, and the study runner and
# scoring that call them (the comparison's report code is not among them: reports change without changing a run).
TRAINED_BY = ("rewards", "tasks", "core", "recipes", "eval")
RUNNER = (REPO / "studies" / "runner.py", REPO / "studies" / "scoring.py")

# The settings two comparisons must share for a run of one to be a run of the other.
SAME = ("profile", "prompts", "eval_k", "eval_n", "temperature", "load_in_4bit", "validation_k", "training_digest")
SAME += ("heldout_sha256", "tuned")  # the same held-out problems, the same tuning (None: as every table before them)


def training_digest() -> str:
    """SHA-256 of the code, configs and worlds a run and its scores come from.

    >>> len(training_digest()) == 64 and training_digest() != code_digest()
    True
    """
    runner = "".join(path.read_text() for path in RUNNER)
    return hashlib.sha256((code_digest(folders=TRAINED_BY) + runner).encode()).hexdigest()


def same_settings(source: Path, settings: dict) -> bool:
    """Whether the comparison in `source` ran as `settings` says on every key of `SAME` (its runs can be taken)."""
    published = read_published(source)
    return published is not None and all(published[1].get(key) == settings.get(key) for key in SAME)


def borrow(source: Path, out: Path, methods, seeds: list[int], settings: dict) -> list[str]:
    """Copy into `out` the finished runs of `methods` for `seeds` from the comparison in `source`, with what they
    trained on and were scored as, when `source`'s settings.json shares `SAME` with `settings`; returns the runs
    copied ("<method>-seed<s>"), none when the settings differ."""
    if not same_settings(source, settings):
        return []
    copied = []
    for seed in seeds:
        files = [f"eval_base-seed{seed}.json", f"eval_base-seed{seed}.jsonl"]
        for method in methods:
            run = source / f"{method}-seed{seed}"
            if not (run / "summary.json").is_file():
                continue
            shutil.copytree(run, out / run.name, dirs_exist_ok=True)
            files += [f"eval_{method}-seed{seed}.json", f"eval_{method}-seed{seed}.jsonl"]
            if method in PREFERENCE_METHODS:
                files += [f"pairs-seed{seed}.jsonl", f"pairs-seed{seed}.cost.json"]
            copied.append(run.name)
        for name in dict.fromkeys(files):
            if (source / name).is_file():
                shutil.copy2(source / name, out / name)
    return copied


def borrowed_note(source: Path, copied: list[str]) -> dict:
    where = source.resolve()
    return (
        {"from": str(where.relative_to(REPO) if where.is_relative_to(REPO) else where), "runs": copied}
        if copied
        else {}
    )


if __name__ == "__main__":  # the digest a comparison's settings.json would record now
    print(json.dumps({"training_digest": training_digest()}))
