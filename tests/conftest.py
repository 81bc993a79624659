import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_world() -> Path:
    """The project's tiny world (built by `make tiny`; built here once if missing)."""
    from recipes.tiny import ensure_tiny_world

    out = REPO_ROOT / "artifacts" / "tiny"
    ensure_tiny_world(out)
    return out


@pytest.fixture(scope="session")
def tiny_pairs(tiny_world, tmp_path_factory) -> Path:
    """On-policy pairs from the tiny model, built once by the real `recipes.pairs` CLI path."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("pairs") / "train.jsonl"
    subprocess.run([sys.executable, "-m", "recipes.pairs", "--config", "recipes/configs/tiny/pairs.yaml",
                    "--max_prompts", "48", "--output", str(out)], cwd=REPO_ROOT, check=True, capture_output=True)
    return out
