"""When things go wrong, nothing is lost and nothing is silent: real processes, real signals, on the tiny recipes.
A kill between a logged step and the next checkpoint, a kill in the middle of a save, an unreadable checkpoint,
Ctrl-C, another run's folder, two runs at once into one folder. In full precision: the subject is the run's files and
signals, not the 4-bit path (tests/recipes/test_{grpo,ppo}.py stop and resume runs in 4-bit)."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from studies.processes import Run
from tests.conftest import FULL_PRECISION, NO_HELDOUT, start_command

pytestmark = pytest.mark.slow  # each case trains the tiny model, kills it and resumes it
GRPO = "recipes/configs/tiny/grpo.yaml"
DPO = "recipes/configs/tiny/dpo.yaml"


def start(config: str, *args: str) -> Run:
    """A recipe in its own process (`tests.recipes.helpers.start_command`), Ctrl-C at its default (a background
    job's ignored SIGINT would test nothing)."""
    method = Path(config).stem
    return start_command(
        [sys.executable, "-m", f"recipes.{method}", "--config", config, *NO_HELDOUT, *FULL_PRECISION, *args]
    )


def finish(config: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = start(config, *args)
    output, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, output[-3000:]
    return subprocess.CompletedProcess(proc.args, proc.returncode, output)


def wait_for(condition, proc: Run, timeout: float = 600, poll: float = 0.005):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended first:\n{proc.communicate()[0][-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("timed out")
        time.sleep(poll)


def logged(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def dpo_args(pairs: Path, run: Path, *extra: str) -> list[str]:
    """The tiny DPO run these tests kill, resume and reuse: its pairs and folder, a step logged at a time, micro-batch
    2, plus `extra` (steps, saves)."""
    common = ["--dataset_name", str(pairs), "--output_dir", str(run), "--logging_steps", "1"]
    return [*common, "--per_device_train_batch_size", "2", *extra]


def steps(run: Path) -> list[int]:
    return [row["step"] for row in logged(run) if "loss" in row]


def test_kill_after_a_logged_step_then_resume_logs_each_step_once(tiny_pairs, tmp_path):
    run = tmp_path / "dpo"
    args = dpo_args(tiny_pairs, run, "--max_steps", "6", "--save_steps", "2")
    proc = start(DPO, *args)
    wait_for(lambda: 3 in steps(run), proc)  # step 3 logged; its checkpoint comes at step 4
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = {row["step"]: row["loss"] for row in logged(run) if "loss" in row}
    saved_before = [row["step"] for row in map(json.loads, (run / "checkpoints.jsonl").read_text().splitlines())]
    assert 3 in first and saved_before == [2] and not (run / "checkpoint-4").exists()

    finish(DPO, *args, "--resume_from_checkpoint", "latest")
    assert steps(run) == [1, 2, 3, 4, 5, 6]  # the redone steps 3 (and 4) logged once
    again = {row["step"]: row["loss"] for row in logged(run) if "loss" in row}
    assert again[3] == pytest.approx(first[3], rel=1e-3)  # the same batch and weights, within CPU noise
    checkpoints = [json.loads(line) for line in (run / "checkpoints.jsonl").read_text().splitlines()]
    assert [c["step"] for c in checkpoints] == [2, 4, 6]
    assert checkpoints[-1]["train_seconds"] >= checkpoints[0]["train_seconds"]  # seconds go on counting
    # CPU seconds too: the resumed process adds its own to the first one's at step 2 (it redid steps 3-4 too)
    assert 0 < checkpoints[0]["cpu_seconds"] < checkpoints[1]["cpu_seconds"] < checkpoints[2]["cpu_seconds"]
    record = json.loads((run / "run.json").read_text())
    assert record["cpu_seconds_before"] == checkpoints[0]["cpu_seconds"]
    cost = json.loads((run / "cost.json").read_text())
    assert cost["train_seconds"] >= checkpoints[-1]["train_seconds"] * 0.99
    # the whole run's training CPU seconds, the first process's included: at least the last checkpoint's
    assert cost["cpu_seconds_training"] >= checkpoints[-1]["cpu_seconds"]
    assert cost["cpu_seconds_training"] - record["cpu_seconds_before"] < cost["cpu_seconds_process"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 6


def test_a_kill_in_the_middle_of_a_save_leaves_no_checkpoint_to_take(tiny_pairs, tmp_path):
    for attempt in range(5):  # the kill must land while a save is being written; retry if it came too late
        run = tmp_path / f"dpo-{attempt}"
        args = dpo_args(tiny_pairs, run, "--max_steps", "4", "--save_steps", "1")
        proc = start(DPO, *args)
        wait_for(lambda run=run: any(run.glob(".saving-checkpoint-2")), proc, poll=0.0005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if any(run.glob(".saving-*")):
            break
    else:
        pytest.fail("no kill landed during a save in 5 attempts")
    assert [p.name for p in sorted(run.glob("checkpoint-*"))] in (["checkpoint-1"], ["checkpoint-1", "checkpoint-2"])
    for checkpoint in run.glob("checkpoint-*"):  # what carries the final name is complete
        json.loads((checkpoint / "trainer_state.json").read_text())
    finish(DPO, *args, "--resume_from_checkpoint", "latest")
    assert not any(run.glob(".saving-*")) and steps(run) == [1, 2, 3, 4]


def test_an_unreadable_latest_checkpoint_is_skipped_with_a_notice(tiny_pairs, tmp_path):
    run = tmp_path / "dpo"
    args = dpo_args(tiny_pairs, run, "--save_steps", "1")
    finish(DPO, *args, "--max_steps", "2")
    state = run / "checkpoint-2" / "trainer_state.json"
    state.write_text(state.read_text()[:40])  # truncated, as a full disk leaves it
    resumed = finish(DPO, *args, "--max_steps", "3", "--resume_from_checkpoint", "latest").stdout
    assert f"notice: skipping {run / 'checkpoint-2'}: its trainer_state.json is missing or unreadable" in resumed
    assert steps(run) == [1, 2, 3]


def test_ctrl_c_saves_a_checkpoint_and_says_where_and_twice_stops_at_once(tiny_world, tmp_path):
    run = tmp_path / "grpo"
    proc = start(GRPO, "--output_dir", str(run), "--max_steps", "40", "--logging_steps", "1")
    wait_for(lambda: 1 in steps(run), proc)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1 and "Traceback" not in output and "KeyboardInterrupt" not in output
    saved = [json.loads(line)["step"] for line in (run / "checkpoints.jsonl").read_text().splitlines()]
    assert f"SIGINT: saved checkpoint-{saved[-1]} in {run}; stopping" in output
    json.loads((run / f"checkpoint-{saved[-1]}" / "trainer_state.json").read_text())

    again = tmp_path / "grpo-twice"
    proc = start(GRPO, "--output_dir", str(again), "--max_steps", "40", "--logging_steps", "1")
    wait_for(lambda: 1 in steps(again), proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "SIGINT again: stopping now, without saving" in output
    assert "Traceback" not in output


def test_another_runs_folder_is_refused_or_reused_without_losing_anything(tiny_pairs, tmp_path):
    run = tmp_path / "theirs"
    args = dpo_args(tiny_pairs, run, "--save_steps", "1", "--save_total_limit", "2")
    finish(DPO, *args, "--max_steps", "2")
    (run / "checkpoint-100").mkdir()  # another run's, with a number this one will never reach
    (run / "checkpoint-100" / "trainer_state.json").write_text("{}")
    before = {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".lock"}

    refused = start(DPO, *args, "--max_steps", "2")
    output, _ = refused.communicate(timeout=300)
    assert refused.returncode == 1 and "Traceback" not in output
    assert f"error: output_dir {run} already holds another run's files" in output
    assert {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".lock"} == before

    reused = finish(DPO, *args, "--max_steps", "4", "--reuse_output_dir", "true").stdout
    previous = next(run.glob("previous-*"))
    assert f"reusing {run}: what it held moved to {previous}" in reused
    for relative, data in before.items():  # every file of theirs is still there, moved aside, byte for byte
        assert (previous / relative).read_bytes() == data, relative
    # this run's rotation (save_total_limit 2) kept its own last two and touched nothing of theirs
    assert sorted(p.name for p in run.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-4"]
    assert json.loads((run / "run.json").read_text())["checkpoints"] == ["checkpoint-3", "checkpoint-4"]
    assert steps(run) == [1, 2, 3, 4] and steps(previous) == [1, 2]


def test_two_runs_at_once_into_one_folder_the_second_is_refused(tiny_world, tmp_path):
    run = tmp_path / "grpo"
    first = start(GRPO, "--output_dir", str(run), "--max_steps", "40", "--logging_steps", "1")
    try:
        wait_for(lambda: (run / "run.json").is_file(), first)
        second = start(GRPO, "--output_dir", str(run), "--max_steps", "2")
        output, _ = second.communicate(timeout=300)
        assert second.returncode == 1 and "Traceback" not in output
        assert f"error: another run (pid {first.pid}, started" in output and f"is writing to {run}" in output
    finally:
        first.kill()
        first.wait()
    rows = logged(run)
    assert all(rows[i]["step"] < rows[i + 1]["step"] for i in range(len(rows) - 1))  # one run's rows, in order
    assert (run / "config.yaml").is_file()
