"""Where a number came from: the commit of this repository, and the CPU model with the instruction-set flags that
change PyTorch's and bitsandbytes' CPU kernels (and so a tiny world's weights and a table's digits).

>>> sorted(cpu())
['cpu', 'kernel_flags']
"""

import hashlib
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The flags under which the same seeds were seen to give other worlds (docs/tiny-worlds.md), and their neighbours.
KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile")


def cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict:
    """{"cpu": model name, "kernel_flags": the KERNEL_FLAGS this CPU has}; the platform's names where there is no
    /proc/cpuinfo."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return {"cpu": platform.processor() or platform.machine(), "kernel_flags": []}
    fields = {}
    for line in lines:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {
        "cpu": fields.get("model name") or platform.processor() or platform.machine(),
        "kernel_flags": [f for f in KERNEL_FLAGS if f in flags],
    }


def commit(repo: Path = REPO) -> str | None:
    """The checked-out commit, with "+changes" when the work tree's code differs from it; None outside a git
    checkout. Changes under results/ do not count: they are what runs write (a comparison spread over sessions keeps
    its records there as it goes), not code that ran."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


# What a published number depends on: the code below the studies and the recipes' configs and the shipped worlds.
DIGESTED = ("rewards", "tasks", "core", "recipes", "eval", "studies")


def code_digest(repo: Path = REPO, folders=DIGESTED) -> str:
    """SHA-256 over the path and bytes of every .py, .yaml and .json file under `folders` (the shipped worlds'
    manifest included): two runs with the same digest ran the same code, configs and worlds.

    >>> len(code_digest())
    64
    """
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((repo / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".yaml", ".json") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(repo).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
