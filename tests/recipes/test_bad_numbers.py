"""Bad numbers, stuck rewards, settings that cannot train, a full disk: each ends in one line, with nothing trained on
garbage and nothing hanging. Real processes on the tiny GRPO recipe, with a reward module of the user's own (outside
the project, on PYTHONPATH), in full precision (their subject is not the 4-bit path); the settings in-process, through
the CLI's own parser."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import recipes.grpo as grpo
import recipes.orpo as orpo
import recipes.ppo as ppo
from studies.processes import Run
from tests.conftest import FULL_PRECISION, NO_HELDOUT, REPO_ROOT, last_line, start_command
from tests.recipes.helpers import run_recipe

GRPO = "recipes/configs/tiny/grpo.yaml"
USER_REWARDS = '''
import atexit
import os
import time
from pathlib import Path

CALLS = {"n": 0}
if os.environ.get("SLOW_EXIT"):  # an exit hook that takes its time (a logger uploading its last records)
    atexit.register(time.sleep, float(os.environ["SLOW_EXIT"]))


def one_inf(completions, **kwargs):
    return [float("inf") if i == 3 else 0.5 for i in range(len(completions))]


def one_nan(completions, **kwargs):
    return [float("nan") if i == 1 else 0.5 for i in range(len(completions))]


def hangs_at_third_call(completions, **kwargs):
    """Scores like any reward, but its third call never returns while HANG is set (a stalled call to a judge)."""
    CALLS["n"] += 1
    if CALLS["n"] >= 3 and os.environ.get("HANG"):
        Path(os.environ["HANG"]).touch()
        while True:
            time.sleep(1)
    return [float(len(c) % 2) for c in completions]
'''


@pytest.fixture
def user_rewards(tmp_path) -> dict:
    folder = tmp_path / "user_code"
    folder.mkdir()
    (folder / "user_rewards.py").write_text(USER_REWARDS)
    return {"PYTHONPATH": str(folder)}


def grpo_cli(run: Path, *args: str, env=None) -> Run:
    command = [sys.executable, "-m", "recipes.grpo", "--config", GRPO, *NO_HELDOUT, *FULL_PRECISION]
    return start_command([*command, "--output_dir", str(run), *args], env=env)


def ended(proc: Run, timeout: float = 600) -> str:
    output = proc.communicate(timeout=timeout)[0]
    assert proc.returncode == 1, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    return output


def listed(run: Path) -> list[int]:
    path = run / "checkpoints.jsonl"
    return [json.loads(line)["step"] for line in path.read_text().splitlines()] if path.is_file() else []


@pytest.mark.slow
@pytest.mark.parametrize(("reward", "value", "row"), [("one_inf", "inf", 3), ("one_nan", "nan", 1)])
def test_a_non_finite_reward_ends_the_run_before_any_step(reward, value, row, user_rewards, tiny_world, tmp_path):
    run = tmp_path / "run"
    output = ended(grpo_cli(run, "--reward_funcs", f"user_rewards.{reward}", "--max_steps", "3", env=user_rewards))
    assert last_line(output) == (
        f"error: reward {reward!r} returned {value} on row {row}: a reward must be a finite number (or None)"
    )
    assert not list(run.glob("checkpoint-*")) and not (run / "adapter_model.safetensors").exists()
    assert not (run / "metrics.jsonl").exists()  # no step was logged, so none trained on it


@pytest.mark.slow
def test_a_reward_past_its_time_limit_stops_the_run_saved_and_it_resumes(user_rewards, tiny_world, tmp_path):
    run, marker = tmp_path / "run", tmp_path / "hanging"
    args = ["--reward_funcs", "user_rewards.hangs_at_third_call", "--max_steps", "4", "--logging_steps", "1"]
    start = time.monotonic()
    output = ended(grpo_cli(run, *args, "--reward_timeout", "4", env=user_rewards | {"HANG": str(marker)}))
    assert marker.exists() and time.monotonic() - start < 120
    assert "notice: reward 'hangs_at_third_call' has run 1 s on 64 completion(s) (reward_timeout 4 s stops it)" in (
        output
    )
    line = last_line(output)
    assert line.startswith("error: reward 'hangs_at_third_call' ran 4.") and "past reward_timeout 4 s" in line
    assert "(stopped at user_rewards.py:" in line and "in hangs_at_third_call" in line
    assert f"saved checkpoint-2 (the last finished step) in {run}; stopping" in line
    assert listed(run) == [2] and json.loads((run / "checkpoint-2" / "trainer_state.json").read_text())

    resumed = grpo_cli(run, *args, "--resume_from_checkpoint", "latest", env=user_rewards)
    output = resumed.communicate(timeout=600)[0]
    assert resumed.returncode == 0, output[-3000:]
    rows = [json.loads(r) for r in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if "loss" in row] == [1, 2, 3, 4]  # each step logged once


@pytest.mark.slow
def test_sigterm_while_a_reward_hangs_ends_the_run_within_the_grace_saying_where(user_rewards, tiny_world, tmp_path):
    run, marker = tmp_path / "run", tmp_path / "hanging"
    proc = grpo_cli(
        run,
        *("--reward_funcs", "user_rewards.hangs_at_third_call", "--max_steps", "10"),
        *("--reward_timeout", "0", "--stop_grace_seconds", "2"),  # no limit: only the signal can end it
        env=user_rewards | {"HANG": str(marker), "SLOW_EXIT": "5"},  # once the step has stopped, no kill
    )
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.log.read_text()[-3000:]
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    output = ended(proc, timeout=60)
    assert time.monotonic() - sent < 30
    assert "SIGTERM: the step did not end within 2 s; it was in reward 'hangs_at_third_call' (running for" in output
    assert "at user_rewards.py:" in output and "in hangs_at_third_call: time.sleep(1); interrupting it" in output
    assert last_line(output).startswith("SIGTERM: stopped in the middle of step 3 (it was in reward")
    assert last_line(output).endswith(
        f"saved checkpoint-2 (the last finished step) in {run}; stopping (resume with --resume_from_checkpoint "
        f"latest --output_dir {run})"
    )
    assert listed(run) == [2]


@pytest.mark.slow
def test_a_full_disk_during_a_checkpoint_keeps_the_earlier_ones_and_resumes_once_freed(tiny_world, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * 2_300_000)  # room for a tiny checkpoint (0.9 MB) or two, not three
        run = disk / "run"
        args = ["--max_steps", "3", "--save_steps", "1", "--logging_steps", "1"]
        line = last_line(ended(grpo_cli(run, *args)))
        failed = int(re.match(rf"error: could not write checkpoint-(\d+) in {re.escape(str(run))}: ", line)[1])
        assert "No space left on device" in line or "unexpected pos" in line
        assert " MB free there); the partial checkpoint was removed; the earlier checkpoints are complete: " in line
        earlier = [f"checkpoint-{step}" for step in range(1, failed)]
        assert line.endswith(
            f"{', '.join(earlier)} (free space, then resume with --resume_from_checkpoint latest --output_dir {run})"
        )
        assert sorted(p.name for p in run.glob("*checkpoint-*")) == earlier  # no partial .saving-checkpoint left
        assert listed(run) == list(range(1, failed))
        for checkpoint in earlier:
            json.loads((run / checkpoint / "trainer_state.json").read_text())

        filler.unlink()
        resumed = grpo_cli(run, *args, "--save_total_limit", "1", "--resume_from_checkpoint", "latest")
        output = resumed.communicate(timeout=600)[0]
        assert resumed.returncode == 0, output[-3000:]
        assert listed(run) == [1, 2, 3] and (run / "adapter_model.safetensors").is_file()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.mark.parametrize(
    ("module", "config", "flags", "expected"),
    [
        (grpo, GRPO, ["--temperature", "0"], "temperature 0 (from the command line) must be > 0: this method samples"),
        (grpo, GRPO, ["--temperature", "-1"], "temperature -1 (from the command line) must be > 0"),
        (ppo, "recipes/configs/tiny/ppo.yaml", ["--temperature", "0"], "temperature 0 (from the command line)"),
        (grpo, GRPO, ["--lora_r", "0"], "lora_r 0 (from the command line) must be > 0: it is the LoRA adapter's rank"),
        (grpo, GRPO, ["--beta", "-1"], "beta -1 (from the command line) must be >= 0: it weighs the KL penalty"),
        (ppo, "recipes/configs/tiny/ppo.yaml", ["--kl_coef", "-0.1"], "kl_coef -0.1 (from the command line) must"),
        (orpo, "recipes/configs/tiny/orpo.yaml", ["--beta", "-1"], "beta -1 (from the command line) must be >= 0"),
        (
            grpo,
            GRPO,
            ["--num_generations", "1"],
            "num_generations 1 (from the command line): GRPO requires at least 2",
        ),
        (grpo, GRPO, ["--top_p", "0"], "top_p 0 (from the command line) must be in (0, 1]"),
        (grpo, GRPO, ["--epsilon", "-1"], "epsilon -1 (from the command line) must be > 0: the clipping range"),
        (grpo, GRPO, ["--num_iterations", "0"], "num_iterations 0 (from the command line) must be >= 1"),
        (grpo, GRPO, ["--logging_steps=0"], "logging_steps 0 (from the command line): logging strategy"),
        (
            grpo,
            GRPO,
            ["--max_completion_length", "100000"],
            "max_completion_length 100000 (from the command line) is at or beyond the model's 512 positions: the "
            "completion budget leaves no room for a prompt; give fewer than 512 tokens",
        ),
        (
            ppo,
            "recipes/configs/tiny/ppo.yaml",
            ["--response_length", "512"],
            "response_length 512 (from the command line) is at or beyond the model's 512 positions",
        ),
    ],
)
def test_settings_that_cannot_train_are_refused_before_any_model_loads(
    module, config, flags, expected, tiny_world, tmp_path
):
    from core.errors import UserError

    run = tmp_path / "run"
    with pytest.raises((SystemExit, UserError)) as refusal:
        run_recipe(module, config, *flags, "--output_dir", str(run))
    message = str(refusal.value)
    assert expected in message and "\n" not in message
    assert not run.exists()  # refused before the run folder, which comes before the model


def test_a_value_trl_refuses_in_the_yaml_names_the_file(tiny_world, tmp_path):
    import yaml

    config = tmp_path / "grpo.yaml"
    config.write_text(yaml.safe_dump(yaml.safe_load((REPO_ROOT / GRPO).read_text()) | {"num_generations": 1}))
    with pytest.raises(SystemExit, match=rf"^error in {config}: GRPO requires at least 2 generations"):
        run_recipe(grpo, str(config), "--output_dir", str(tmp_path / "run"), "--max_steps", "2")


DIVERGED = re.compile(
    r"error: training diverged at step (\d+) \(learning rate 1e\+30\): (.+); nothing of this step saved, "
    r"(?:the last checkpoint, (\S+), is kept|no checkpoint had been saved); lower learning_rate \(1e\+30\) and "
    r"start again"
)


@pytest.mark.parametrize("method", ["grpo", "ppo", "dpo", "ipo", "orpo"])
def test_a_diverging_run_stops_at_that_step_in_one_line_and_saves_nothing_non_finite(
    method, tiny_world, tiny_pairs, tmp_path
):
    """A learning rate far too high: the first update throws the adapter's weights to ~1e30, the next overflows. The
    run stops at the step that made them non-finite (or at the generation that met them), naming the step, the rate
    and the last checkpoint; every checkpoint it saved (one per step before) holds finite weights, no final adapter
    is written."""
    import torch
    from safetensors.torch import load_file

    import recipes.dpo as dpo

    modules = {"grpo": grpo, "ppo": ppo, "dpo": dpo, "ipo": dpo, "orpo": orpo}  # IPO: DPO's script, its own YAML
    data = ["--dataset_name", str(tiny_pairs)] if method in ("dpo", "ipo", "orpo") else []
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        run_recipe(
            modules[method],
            f"recipes/configs/tiny/{method}.yaml",
            *FULL_PRECISION,
            *data,
            "--learning_rate",
            "1e30",
            "--lr_scheduler_type",
            "constant",
            "--warmup_steps",
            "0",
            "--max_steps",
            "6",
            "--save_steps",
            "1",
            "--output_dir",
            str(out),
        )
    said = str(stop.value.code)
    match = DIVERGED.fullmatch(said)
    assert match, said
    step, saved = int(match.group(1)), sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    # the checkpoint named is the newest, of the step before (PPO's first update takes several optimizer steps and
    # can diverge within it: then there is none, and it says so)
    assert [str(p) for p in saved[-1:]] == [match.group(3)] if match.group(3) else saved == [], said
    assert all(int(p.name.split("-")[1]) == n for n, p in enumerate(saved, 1)) and len(saved) == step - 1, said
    for folder in saved:
        weights = load_file(folder / "adapter_model.safetensors")
        assert all(torch.isfinite(w).all() for w in weights.values()), folder
    assert not (out / "adapter_model.safetensors").exists() and not (out / "summary.json").exists()
