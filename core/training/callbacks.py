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

from core.inputs.arguments import STOP_GRACE_SECONDS, RunArguments
from core.runs.folder import RunFolder
from core.runs.storage import write_text_whole, writing
from core.runs.timing import cpu_seconds
from core.training.divergence import StopOnDivergence
from core.training.memory_meter import LiveTensorMeter, model_tensors, rss_mb
from rewards.ledger import RewardLedger
from rewards.time_limit import install_alarm_handler, interrupt_main_thread, running

# The runtime alone (Python, torch, transformers and, since the recipes import it first, TRL; no model yet): what a
# CPU peak sits on top of.
RSS_BEFORE_MODEL_MB = rss_mb()


class MetricsLogger(TrainerCallback):
    """Every logged row, as one JSON line of <output_dir>/metrics.jsonl (rank 0), with each reward's mean since the
    last row where the trainer does not log it, and the lengths of what each pass/fail reward passed and failed."""

    def __init__(self, output_dir: str, ledger: RewardLedger):
        self.path, self.ledger = Path(output_dir) / "metrics.jsonl", ledger

    def on_log(self, args, state, control, logs=None, **kwargs):
        scored = self.ledger.means_since_last_log()
        if state.is_world_process_zero and logs:
            row = {"step": state.global_step, **{k: v for k, v in scored.items() if k not in logs}, **logs}
            with writing("metrics.jsonl", self.path.parent), open(self.path, "a") as fh:
                fh.write(json.dumps(row) + "\n")


class StopOnSignal(TrainerCallback):
    """SIGTERM (a scheduler's preemption, `kill`) or Ctrl-C (SIGINT) saves a checkpoint at the end of the current
    step, says where, and exits without a traceback; a second Ctrl-C stops at once, without saving.

    A step that has not ended `grace_seconds` after the signal (stuck in a reward, a stalled call, a step longer than
    a scheduler waits) is interrupted where it is, said in one line (the reward, the file and line), and the run
    stops with the last finished step saved (`core.trl_internals.trainers.StopsCleanly`). Code that cannot be
    interrupted (C code that never lets Python run) is killed from outside another `grace_seconds` later, again with
    one line."""

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
    checkpoint was taken, in training seconds and training CPU seconds (accuracy against compute in the comparison)."""

    def __init__(self, run: RunFolder, ledger: RewardLedger, measure_tensors: bool = False):
        self.run, self.ledger, self.phases, self.measure_tensors = run, ledger, run.phases, measure_tensors
        self.output_dir = run.path

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.meter = None
        if self.measure_tensors:  # the bytes of live tensors, as max_memory_allocated counts them on a GPU
            self.meter = LiveTensorMeter()
            self.meter.track(model_tensors(model) if model else [])
            self.model_bytes, self.between_steps_bytes = self.meter.live_bytes, 0
            self.meter.__enter__()
        self.start = time.time() - self.run.train_seconds_before  # a resumed run's seconds go on counting
        self.cpu_at_start = cpu_seconds()
        self.ledger.time.clear()
        self.ledger.scores.clear()
        self.phases.clear()
        self.run.tokens.clear()
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
                # CPU seconds of training (a resumed run's before it resumed included): the comparison's rows at
                # matched compute pick checkpoints by them
                cpu = self.run.cpu_seconds_before + cpu_seconds() - self.cpu_at_start
                row = {"step": state.global_step, "train_seconds": time.time() - self.start, "cpu_seconds": cpu}
                fh.write(json.dumps(row) + "\n")
            self.run.record_checkpoint(f"checkpoint-{state.global_step}")

    def on_train_end(self, args, state, control, **kwargs):
        if self.meter is not None:
            self.meter.__exit__(None, None, None)
        train_seconds = time.time() - self.start
        tokens = self.run.tokens.totals()  # every rank: a sum across them
        reward_seconds = sum(spent["seconds"] for spent in self.ledger.time.values())
        record = {
            "train_seconds": train_seconds,
            # CPU time (user + system, every core, the sandbox's finished programs included): of training (a resumed
            # run's before it resumed included, as train_seconds and checkpoints.jsonl count it), and of this whole
            # process so far (its imports and model loading too)
            "cpu_seconds_training": self.run.cpu_seconds_before + cpu_seconds() - self.cpu_at_start,
            "cpu_seconds_process": cpu_seconds(),
            # a resumed run's split covers the seconds since it resumed; the rest counts as forward_backward
            "time_split": self.phases.split(train_seconds, reward_seconds),
            "train_steps": state.global_step,
            # completion tokens generated and trained on (core.runs.tokens; null where the trainer counts none: PPO
            # with a trained reward model); a resumed run's since it resumed
            "tokens": tokens if any(tokens.values()) else None,
            "trainable_params": self.trainable,
            "trainable_params_held": self.trainable_held,  # by this rank (rank 0): fewer where parameters are sharded
            "models_in_memory": self.bases,
            "reward_time": {name: dict(spent) for name, spent in self.ledger.time.items()},
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


def run_callbacks(run: RunFolder, args: RunArguments, ledger: RewardLedger | None = None) -> list:
    """metrics.jsonl logging, cost.json (memory, time) and graceful SIGTERM for any transformers Trainer, on the
    run's folder (and its phase timer) and reward ledger (none for a method without rewards)."""
    ledger = ledger if ledger is not None else RewardLedger()
    # CostMeter before StopOnSignal: the checkpoint a signal saves is recorded before the process leaves
    return [
        MetricsLogger(str(run.path), ledger),
        StopOnDivergence(),  # after the logger: a non-finite row is on record; before any checkpoint of that step
        CostMeter(run, ledger, args.measure_tensor_memory),
        StopOnSignal(args.stop_grace_seconds),
    ]
