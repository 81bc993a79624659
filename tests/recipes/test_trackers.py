"""Experiment trackers, offline: `report_to` tensorboard, wandb (offline mode) and trackio (local) in one real run of
the tiny GRPO recipe write their files, and the run ends as usual (adapter, summary)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import FULL_PRECISION, NO_HELDOUT, REPO_ROOT

pytestmark = pytest.mark.slow  # a run in its own process, three trackers starting


def test_tensorboard_wandb_and_trackio_record_a_run_offline(tiny_world, tmp_path):
    """As a user runs it (a process of its own: trackio reads TRACKIO_DIR when it is imported)."""
    env = os.environ | {
        "WANDB_MODE": "offline",  # no account, no network: wandb writes its run under WANDB_DIR
        "WANDB_DIR": str(tmp_path / "wandb"),
        "TRACKIO_DIR": str(tmp_path / "trackio"),  # trackio's local database, no Space
    }
    (tmp_path / "wandb").mkdir()
    # several trackers at once are a YAML list (the command line takes one name)
    config = tmp_path / "grpo.yaml"
    shipped = (REPO_ROOT / "recipes" / "configs" / "tiny" / "grpo.yaml").read_text()
    config.write_text(shipped.replace("report_to: none", "report_to: [tensorboard, wandb, trackio]"))
    assert "report_to: [tensorboard" in config.read_text()
    out = tmp_path / "run"
    command = [sys.executable, "-m", "recipes.grpo", "--config", str(config), *FULL_PRECISION, *NO_HELDOUT]
    command += ["--max_steps", "2", "--logging_steps", "1", "--output_dir", str(out)]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "GRPO finished: 2 steps" in done.stdout, done.stderr[-3000:]
    events = list(out.rglob("events.out.tfevents.*"))
    assert events and all(p.stat().st_size > 0 for p in events)
    offline = list((tmp_path / "wandb").rglob("offline-run-*/*.wandb"))
    assert offline and offline[0].stat().st_size > 0
    assert [p for p in (tmp_path / "trackio").rglob("*") if p.is_file() and p.stat().st_size > 0]
    assert (out / "summary.json").is_file() and (out / "adapter_model.safetensors").is_file()
