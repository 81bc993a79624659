"""What every recipe's trainer gets on top of TRL's (`recipe_trainer(TrainerClass)`): checkpoints that are never
half-written, starting weights that follow the run's seed, no training under an engine other than the one the
launch asked for (core.inputs.distributed), and a run stopped in the middle of a step (a reward past `reward_timeout`,
a step stuck after SIGTERM) that ends as a signal does: the last finished step saved and listed, one line.

A recipe trainer saves each checkpoint under a temporary name (.saving-checkpoint-N) and renames it to
checkpoint-N only when complete, so a run killed in the middle of a save leaves no checkpoint-N that `latest` could
take; the next start removes the leftover.
"""

import os
import shutil
import time
from functools import cache
from pathlib import Path

from transformers import set_seed

from core.errors import close_progress_bars
from core.inputs.distributed import check_engine
from core.runs.folder import RUN
from core.runs.storage import WriteFailed, describe_failure, is_write_failure, writing
from core.training.callbacks import StopOnSignal
from core.training.timing import time_generation
from rewards import RewardTimeout
from rewards.time_limit import Expired, stop_interrupting


def finished_checkpoints(folder: Path) -> list[Path]:
    """The complete checkpoints in `folder` (checkpoint-N, not a .saving- or .kept- one), by step."""
    steps = [p for p in folder.glob("checkpoint-*") if p.name.split("-", 1)[1].isdigit()]
    return sorted(steps, key=lambda p: int(p.name.split("-", 1)[1]))


class AtomicCheckpoints:
    def _save_checkpoint(self, model, trial):
        folder = Path(self.args.output_dir)
        name = f"checkpoint-{self.state.global_step}"
        staging = folder / f".saving-{name}"
        if self.args.should_save:
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
        self.accelerator.wait_for_everyone()
        self.args.output_dir = str(staging)  # everything the trainer writes for this checkpoint lands here
        try:
            super()._save_checkpoint(model, trial)
        except BaseException as error:
            if not is_write_failure(error):
                raise
            shutil.rmtree(staging, ignore_errors=True)
            raise WriteFailed(
                describe_failure(error, name, folder)
                + "; the partial checkpoint was removed; "
                + self._earlier_checkpoints(folder)
            ) from error
        finally:
            self.args.output_dir = str(folder)
        self.accelerator.wait_for_everyone()  # every rank's files (its RNG state) are in before the rename
        if self.args.should_save:
            if (folder / name).exists():  # a resumed run saving a step again: its own is replaced, no other's
                if name in RUN.get("checkpoints", []):
                    shutil.rmtree(folder / name)
                else:
                    (folder / name).rename(folder / f"{name}.kept-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(staging / name, folder / name)
            shutil.rmtree(staging)
        self.accelerator.wait_for_everyone()


class StopsCleanly:
    def train(self, *args, **kwargs):
        try:
            return super().train(*args, **kwargs)
        except RewardTimeout as error:
            message = f"error: {error}; {self._save_last_finished_step()}"
        except Expired:  # StopOnSignal interrupted a step that did not end after SIGTERM / Ctrl-C
            stop_interrupting()
            stopper = next(c for c in self.callback_handler.callbacks if isinstance(c, StopOnSignal))
            stopper.step_stopped()
            signal_name, stuck_at = stopper.requested, stopper.stuck_at
            message = (
                f"{signal_name}: stopped in the middle of step {self.state.global_step + 1} (it was in {stuck_at}); "
                + self._save_last_finished_step()
            )
        close_progress_bars()  # the trainer's bar is finished first, so the reason is the last line
        raise SystemExit(message)

    def _save_last_finished_step(self) -> str:
        """Saves the last finished step as its checkpoint (unless it is saved already), listed in checkpoints.jsonl;
        says where, and how to resume."""
        folder, step = Path(self.args.output_dir), self.state.global_step
        resume = f"resume with --resume_from_checkpoint latest --output_dir {folder}"
        if (folder / f"checkpoint-{step}").is_dir():
            return f"its last finished step is saved in {folder / f'checkpoint-{step}'}; stopping ({resume})"
        if step == 0:
            return "no step had finished, so there is nothing to save; stopping"
        if self.accelerator.num_processes > 1:  # the other processes may be waiting in this step's collectives
            saved = finished_checkpoints(folder)
            last = f"the last checkpoint is {saved[-1]}" if saved else "no checkpoint was saved"
            return f"not saving under {self.accelerator.num_processes} processes; {last}; stopping ({resume})"
        for callback in self.callback_handler.callbacks:
            if isinstance(callback, StopOnSignal):
                callback.requested = None  # the checkpoint below is recorded, not a reason to exit
        self._save_checkpoint(self.model_wrapped, trial=None)
        self.control = self.callback_handler.on_save(self.args, self.state, self.control)
        return f"saved checkpoint-{step} (the last finished step) in {folder}; stopping ({resume})"

    def _earlier_checkpoints(self, folder: Path) -> str:
        saved = finished_checkpoints(folder)
        kept = (
            f"the earlier checkpoints are complete: {', '.join(p.name for p in saved)}" if saved else "no checkpoint"
        )
        return f"{kept} (free space, then resume with --resume_from_checkpoint latest --output_dir {folder})"

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        if _internal_call:  # inside a checkpoint: _save_checkpoint reports it
            return super().save_model(output_dir, _internal_call)
        folder = Path(output_dir or self.args.output_dir)
        with writing("the final adapter", folder, self._earlier_checkpoints(folder)):
            return super().save_model(output_dir, _internal_call)


class RecipeStart:
    """Seeds before TRL builds the model, checks the engine once the trainer's accelerator exists, and times the
    policy's generation (cost.json's time split)."""

    def __init__(self, *args, **kwargs):
        # TRL builds the LoRA adapter (random A matrices) before transformers' Trainer seeds: seed first, so a run's
        # starting weights follow its seed.
        set_seed(kwargs["args"].seed)
        super().__init__(*args, **kwargs)
        check_engine(self.accelerator.state)
        time_generation(getattr(self.model, "policy", self.model))  # PPO's model wraps its policy and critic


@cache
def recipe_trainer(trainer_class: type) -> type:
    """`trainer_class` seeded before it builds the adapter, with atomic checkpoints, stopped cleanly in the middle of a
    step, refusing an engine the launch did not ask for (made once per trainer class)."""
    return type(
        trainer_class.__name__, (RecipeStart, StopsCleanly, AtomicCheckpoints, trainer_class), {"__module__": __name__}
    )
