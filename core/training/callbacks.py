"""What every recipe's trainer reports while it trains: metrics.jsonl, cost.json (memory, time, reward time),
checkpoints.jsonl (and the run's own checkpoint rotation), and a graceful stop on SIGTERM or Ctrl-C (save a
checkpoint, then exit; a step that does not end within a grace period is interrupted, saying where it was)."""

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import torch
from transformers import PreTrainedModel, TrainerCallback

from core.inputs.config import STOP_GRACE_SECONDS
from core.runs.folder import RUN, record_checkpoint
from core.runs.storage import write_text_whole, writing
from core.training.memory_meter import LiveTensorMeter, model_tensors, rss_mb
from core.training.timing import PHASE_SECONDS, time_split
from rewards import call_reward
from rewards.time_limit import REWARD_TIMEOUT_SECONDS, install_alarm_handler, interrupt_main_thread, running

# The runtime alone (Python, torch, transformers and, since the recipes import it first, TRL; no model yet): what a
# CPU peak sits on top of.
RSS_BEFORE_MODEL_MB = rss_mb()

# Seconds, calls and completions spent in each reward function during training (TimedReward), for cost.json.
REWARD_TIME: dict[str, dict[str, float]] = {}
# Each reward's scores since the last logged step, so every trainer's metrics.jsonl has `rewards/<name>/mean` (GRPO
# logs it itself; PPO logs only the weighted total).
REWARD_SCORES: dict[str, list[float]] = {}
# The token lengths of the completions each pass/fail reward passed and failed since the last logged step (this
# process's batches), for metrics.jsonl's `lengths/<name>/passed` and `/failed`.
REWARD_LENGTHS: dict[str, list[int]] = {}


class TimedReward:
    """A reward function as training calls it: checked (`rewards.call_reward`: one finite number or None per
    completion within `timeout` seconds, or an error naming the reward and the row) and timed into REWARD_TIME (what
    a code reward's sandbox costs per step). A class, not a closure, so it pickles like the rewards it wraps."""

    def __init__(self, func, timeout: float | None = REWARD_TIMEOUT_SECONDS):
        self.func, self.timeout = func, timeout
        self.__name__ = getattr(func, "__name__", type(func).__name__)

    def __call__(self, completions, **columns):
        start = time.perf_counter()
        scores = call_reward(self.func, completions, timeout=self.timeout, **columns)
        spent = REWARD_TIME.setdefault(self.__name__, {"seconds": 0.0, "calls": 0, "completions": 0})
        spent["seconds"] += time.perf_counter() - start
        spent["calls"] += 1
        spent["completions"] += len(completions)
        REWARD_SCORES.setdefault(self.__name__, []).extend(score for score in scores if score is not None)
        log_lengths_by_score(self.__name__, scores, columns)
        return scores


def log_lengths_by_score(name: str, scores: list, columns: dict) -> None:
    """For a pass/fail reward, the token lengths of the completions it passed and of those it failed (TRL's GRPO
    hands rewards `completion_ids`), kept in this process for MetricsLogger: what training does to the length of
    right and of wrong answers (GRPO's length bias). Not through TRL's `log_metric`: that gathers each metric across
    ranks, and a rank whose batch has no passed (or no failed) completion would leave the others waiting."""
    ids = columns.get("completion_ids")
    if ids is None or len(ids) != len(scores) or not {s for s in scores if s is not None} <= {0.0, 1.0}:
        return
    for verdict, value in (("passed", 1.0), ("failed", 0.0)):
        lengths = [len(i) for i, s in zip(ids, scores, strict=True) if s == value]
        REWARD_LENGTHS.setdefault(f"lengths/{name}/{verdict}", []).extend(lengths)


class MetricsLogger(TrainerCallback):
    """Every logged row, as one JSON line of <output_dir>/metrics.jsonl (rank 0), with each reward's mean since the
    last row where the trainer does not log it, and the lengths of what each pass/fail reward passed and failed."""

    def __init__(self, output_dir: str):
        self.path = Path(output_dir) / "metrics.jsonl"

    def on_log(self, args, state, control, logs=None, **kwargs):
        scored = {
            f"rewards/{name}/mean": sum(scores) / len(scores) for name, scores in REWARD_SCORES.items() if scores
        }
        scored |= {key: sum(lengths) / len(lengths) for key, lengths in REWARD_LENGTHS.items() if lengths}
        REWARD_SCORES.clear()
        REWARD_LENGTHS.clear()
        if state.is_world_process_zero and logs:
            row = {"step": state.global_step, **{k: v for k, v in scored.items() if k not in logs}, **logs}
            with writing("metrics.jsonl", self.path.parent), open(self.path, "a") as fh:
                fh.write(json.dumps(row) + "\n")


class StopOnSignal(TrainerCallback):
    """SIGTERM (a scheduler's preemption, `kill`) or Ctrl-C (SIGINT) saves a checkpoint at the end of the current
    step, says where, and exits without a traceback; a second Ctrl-C stops at once, without saving.

    A step that has not ended `grace_seconds` after the signal (stuck in a reward, a stalled call, a step longer than
    a scheduler waits) is interrupted where it is, said in one line (the reward, the file and line), and the run
    stops with the last finished step saved (`core.training.trainers.StopsCleanly`). Code that cannot be interrupted (C
    code that never lets Python run) is killed from outside another `grace_seconds` later, again with one line."""

    def __init__(self, grace_seconds: float = STOP_GRACE_SECONDS):
        self.requested, self.grace_seconds = None, grace_seconds
        self.stuck_at: str | None = None
        self._killer: subprocess.Popen | None = None
        install_alarm_handler()  # here, in the main thread: the interruption is raised by SIGALRM
        signal.signal(signal.SIGTERM, self._request)
        signal.signal(signal.SIGINT, self._request)

    def _request(self, signum, frame):
        name = signal.Signals(signum).name
        if self.requested == "SIGINT" and name == "SIGINT":
            print("\nSIGINT again: stopping now, without saving", file=sys.stderr, flush=True)
            os._exit(130)
        first = self.requested is None
        self.requested = name
        if name == "SIGINT":
            print(
                "\nSIGINT: saving a checkpoint at the end of this step (Ctrl-C again stops at once)",
                file=sys.stderr,
                flush=True,
            )
        if first and self.grace_seconds and self.grace_seconds > 0:
            timer = threading.Timer(self.grace_seconds, self._interrupt_step)
            timer.daemon = True
            timer.start()

    def _interrupt_step(self):
        """Runs in a timer thread: the step has not ended since the signal came."""
        frame = sys._current_frames().get(threading.main_thread().ident)
        place = next((f for f in reversed(traceback.extract_stack(frame)) if "time_limit.py" not in f.filename), None)
        where = f"{Path(place.filename).name}:{place.lineno} in {place.name}" if place else "an unknown place"
        reward = running()
        self.stuck_at = f"{reward + ' at ' if reward else ''}{where}" + (
            f": {place.line.strip()}" if place and place.line else ""
        )
        print(
            f"\n{self.requested}: the step did not end within {self.grace_seconds:g} s; it was in {self.stuck_at}; "
            "interrupting it",
            file=sys.stderr,
            flush=True,
        )
        self._killer = _kill_later(
            self.grace_seconds, f"{self.requested}: the interrupted step did not stop either; killed"
        )
        interrupt_main_thread()

    def step_stopped(self) -> None:
        """The interrupted step has ended: the kill is called off, so saving the last finished step and exiting may
        take what they take (on a slow disk, longer than the grace)."""
        if self._killer is not None:
            self._killer.kill()
            self._killer.wait()
            self._killer = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.requested:
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_save(self, args, state, control, **kwargs):
        if self.requested:  # PPO's loop ignores should_training_stop: leave once the checkpoint is on disk
            raise SystemExit(
                f"{self.requested}: saved checkpoint-{state.global_step} in {args.output_dir}; stopping "
                f"(resume with --resume_from_checkpoint latest --output_dir {args.output_dir})"
            )


def _kill_later(seconds: float, message: str) -> subprocess.Popen:
    """SIGKILL this process `seconds` from now unless it has exited, from another process (this one may never run
    Python again); that process holds a pidfd, so a later process with the same pid is safe."""
    watcher = (
        "import os, select, signal, sys\n"
        f"fd = os.pidfd_open({os.getpid()})\n"
        f"if not select.select([fd], [], [], {seconds})[0]:\n"
        f"    print({message!r}, file=sys.stderr, flush=True)\n"
        "    signal.pidfd_send_signal(fd, signal.SIGKILL)\n"
    )
    return subprocess.Popen([sys.executable, "-c", watcher], start_new_session=True)


class CostMeter(TrainerCallback):
    """cost.json: what training cost, measured in-process. Peak memory excludes the model load's transient:
    torch.cuda.max_memory_allocated on a GPU; on a CPU the peak RSS since training began (the kernel's high-water
    mark, reset through /proc/self/clear_refs). Also wall-clock training seconds, optimizer steps, trainable
    parameters, the number of 4-bit base models held (PPO's critic is a second one), the time spent in each reward,
    the training seconds split into generation, rewards, held-out evaluation and forward/backward (`time_split`),
    and with `measure_tensors` the live tensor bytes (core.training.memory_meter). checkpoints.jsonl: when each
    checkpoint was taken, in training seconds (accuracy against compute in the comparison)."""

    def __init__(self, output_dir: str, measure_tensors: bool = False):
        self.output_dir, self.measure_tensors = Path(output_dir), measure_tensors

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.meter = None
        if self.measure_tensors:  # the bytes of live tensors, as max_memory_allocated counts them on a GPU
            self.meter = LiveTensorMeter()
            self.meter.track(model_tensors(model) if model else [])
            self.model_bytes, self.between_steps_bytes = self.meter.live_bytes, 0
            self.meter.__enter__()
        self.start = time.time() - RUN.get("train_seconds_before", 0.0)  # a resumed run's seconds go on counting
        REWARD_TIME.clear()
        REWARD_SCORES.clear()
        PHASE_SECONDS.clear()
        trainable = [p for p in model.parameters() if p.requires_grad] if model else []
        # ZeRO-3 leaves each rank a partition of every parameter (ds_tensor) and the full size in ds_numel
        self.trainable = sum(getattr(p, "ds_numel", p.numel()) for p in trainable) if model else None
        self.trainable_held = sum(p.ds_tensor.numel() if hasattr(p, "ds_tensor") else p.numel() for p in trainable)
        # networks with a head (a policy, PPO's critic): a backbone is its own base_model, and PEFT's wrappers are
        # not PreTrainedModels; in 4-bit or full precision alike
        self.bases = (
            sum(1 for m in model.modules() if isinstance(m, PreTrainedModel) and m.base_model is not m)
            if model
            else None
        )
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
            return
        self.rss_at_train_begin = rss_mb()
        try:
            Path("/proc/self/clear_refs").write_text("5")  # 5: reset the peak RSS to the current RSS
            self.measure = "peak RSS since training began (VmHWM after a reset)"
        except OSError:
            self.measure = "peak RSS over the process's lifetime (ru_maxrss; VmHWM could not be reset)"

    def on_step_end(self, args, state, control, **kwargs):
        if self.meter is not None:  # what stays live from one step to the next: model + optimizer state
            self.between_steps_bytes = max(self.between_steps_bytes, self.meter.live_bytes)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            with writing("checkpoints.jsonl", self.output_dir), open(self.output_dir / "checkpoints.jsonl", "a") as fh:
                fh.write(json.dumps({"step": state.global_step, "train_seconds": time.time() - self.start}) + "\n")
            record_checkpoint(self.output_dir, f"checkpoint-{state.global_step}")

    def on_train_end(self, args, state, control, **kwargs):
        if self.meter is not None:
            self.meter.__exit__(None, None, None)
        train_seconds = time.time() - self.start
        reward_seconds = sum(spent["seconds"] for spent in REWARD_TIME.values())
        record = {
            "train_seconds": train_seconds,
            # a resumed run's split covers the seconds since it resumed; the rest counts as forward_backward
            "time_split": time_split(train_seconds, reward_seconds),
            "train_steps": state.global_step,
            "trainable_params": self.trainable,
            "trainable_params_held": self.trainable_held,  # by this rank (rank 0): fewer where parameters are sharded
            "models_in_memory": self.bases,
            "reward_time": {name: dict(spent) for name, spent in REWARD_TIME.items()},
            "peak_tensor_mb": self.meter.peak_bytes / 2**20 if self.meter else None,
        }
        if self.meter is not None:
            record["tensor_mb"] = {
                "model": self.model_bytes / 2**20,
                "between_steps": self.between_steps_bytes / 2**20,
                "peak": self.meter.peak_bytes / 2**20,
            }
        if torch.cuda.is_available():
            record |= {
                "peak_memory_mb": torch.cuda.max_memory_allocated() / 2**20,
                "max_memory_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
                "measure": "torch.cuda.max_memory_allocated",
                "device": torch.cuda.get_device_name(),
            }
        else:
            peak = rss_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            record |= {
                "peak_memory_mb": peak,
                "measure": self.measure,
                "device": "cpu",
                "rss_before_model_mb": RSS_BEFORE_MODEL_MB,
                "rss_at_train_begin_mb": self.rss_at_train_begin,
            }
        if state.is_world_process_zero:
            write_text_whole(self.output_dir / "cost.json", json.dumps(record, indent=2) + "\n")


def run_callbacks(
    output_dir: str, measure_tensors: bool = False, stop_grace_seconds: float = STOP_GRACE_SECONDS
) -> list:
    """metrics.jsonl logging, cost.json (memory, time) and graceful SIGTERM for any transformers Trainer."""
    # CostMeter before StopOnSignal: the checkpoint a signal saves is recorded before the process leaves
    return [MetricsLogger(output_dir), CostMeter(output_dir, measure_tensors), StopOnSignal(stop_grace_seconds)]
