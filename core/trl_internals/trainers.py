"""What every recipe's trainer gets on top of TRL's (`RecipeTrainer`, and the recipes' trainer classes built on it:
`recipe_trainer(method, logprobs)`): checkpoints that are never
half-written, starting weights that follow the run's seed, no training under an engine other than the one the
launch asked for (core.inputs.distributed), a run stopped in the middle of a step (a reward past `reward_timeout`,
a step stuck after SIGTERM) that ends as a signal does: the last finished step saved and listed, one line; and the
tokens it generated and trained on counted into its folder's `tokens` (cost.json).

A recipe trainer saves each checkpoint under a temporary name (.saving-checkpoint-N) and renames it to
checkpoint-N only when complete, so a run killed in the middle of a save leaves no checkpoint-N that `latest` could
take; the next start removes the leftover.
"""

import os
import shutil
import time
from pathlib import Path

from transformers import set_seed
from trl import DPOTrainer, GRPOTrainer
from trl.experimental.orpo import ORPOTrainer

from core.errors import close_progress_bars
from core.inputs.distributed import check_engine
from core.runs.folder import RunFolder
from core.runs.storage import WriteFailed, describe_failure, is_write_failure, writing
from core.runs.tokens import completion_tokens
from core.training.adapter_precision import bf16_adapter_products_in_fp32
from core.training.callbacks import StopOnSignal
from core.training.divergence import Diverged, diverged, is_sampler_failure, learning_rate
from core.training.heap import FrozenStartWhileTraining
from core.training.plan import PLANS, PlanLine
from core.trl_internals.chunked import ChunkedDPOTrainer, ChunkedGRPOTrainer, ChunkedORPOTrainer
from core.trl_internals.ppo import ChunkedPPOTrainer, ResumablePPOTrainer, RewardFunctionModel
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
                if self.run.wrote(name):
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
        except Diverged as error:
            message = f"error: {error}; {self._kept_after_divergence()}"
        except RuntimeError as error:  # a generation (GRPO, PPO) that met the non-finite weights first
            if not is_sampler_failure(error):
                raise
            rate = learning_rate(self.args, getattr(self, "lr_scheduler", None))
            what = "generation met non-finite next-token probabilities (the weights or their outputs overflowed)"
            message = f"error: {diverged(self.state.global_step + 1, rate, what)}; {self._kept_after_divergence()}"
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

    def _kept_after_divergence(self) -> str:
        """What is kept when training diverged: the last checkpoint (written before it; the diverged weights are
        never saved) and what to do."""
        folder = Path(self.args.output_dir)
        saved = finished_checkpoints(folder)
        kept = f"the last checkpoint, {saved[-1]}, is kept" if saved else "no checkpoint had been saved"
        return f"nothing of this step saved, {kept}; lower learning_rate ({self.args.learning_rate:g}) and start again"

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
    policy's generation into the run's phase timer (cost.json's time split); holds the run's folder (`run`) and
    writes its settings there once built."""

    def __init__(self, *args, run: RunFolder, **kwargs):
        self.run = run
        # TRL builds the LoRA adapter (random A matrices) before transformers' Trainer seeds: seed first, so a run's
        # starting weights follow its seed.
        set_seed(kwargs["args"].seed)
        super().__init__(*args, **kwargs)
        check_engine(self.accelerator.state)
        bf16_adapter_products_in_fp32(self.model)  # after TRL's cast of a 4-bit model's adapter to bf16
        method = run.record.get("method")
        if method in PLANS and hasattr(self.train_dataset, "__len__"):  # a streamed dataset has no length to plan
            self.add_callback(PlanLine(method, len(self.train_dataset), self.accelerator.num_processes))
        run.phases.time_generation(getattr(self.model, "policy", self.model))  # PPO's model: policy and critic
        if self.is_world_process_zero():
            run.write_files()

    def save_run(self) -> None:
        """The final adapter (every rank takes part, as TRL's save does) and, on rank 0, the tokenizer beside it."""
        self.save_model(self.args.output_dir)
        if self.is_world_process_zero():
            self.processing_class.save_pretrained(self.args.output_dir)


class RecipeTrainer(RecipeStart, FrozenStartWhileTraining, StopsCleanly, AtomicCheckpoints):
    """A TRL trainer seeded before it builds the adapter, with atomic checkpoints, stopped cleanly in the middle of a
    step, refusing an engine the launch did not ask for, its start's objects out of the garbage collector's passes
    while it trains (core.training.heap): put it first among a trainer class's bases."""


class CountsGRPOTokens:
    """The run's tokens (core.runs.tokens): every completion of a training batch's groups generated, and trained on
    once per `num_iterations`."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.model.training:  # TRL's own test for a training batch
            special = self.processing_class.all_special_ids
            count = completion_tokens(output["completion_ids"], output["completion_mask"], special)
            self.run.tokens.record(generated=count, trained=count * self.num_iterations)
        return output


class CountsPreferenceTokens:
    """The run's tokens (core.runs.tokens): the chosen and rejected completions of every training batch (their
    sampling is counted where the pairs were made)."""

    def training_step(self, model, inputs, *args, **kwargs):
        special = self.processing_class.all_special_ids
        if "completion_mask" in inputs:  # DPO (and IPO): chosen and rejected rows, completion positions marked
            count = completion_tokens(inputs["input_ids"], inputs["completion_mask"], special)
        else:  # ORPO: each side's labels, the prompt and padding at -100
            labels = (inputs["chosen_labels"], inputs["rejected_labels"])
            count = sum(completion_tokens(ids, ids != -100, special) for ids in labels)
        self.run.tokens.record(trained=count)
        return super().training_step(model, inputs, *args, **kwargs)


class CountsPPOTokens:
    """The run's tokens (core.runs.tokens): every rollout response the reward adapter scores, trained on
    `num_ppo_epochs` times (nothing is counted with a trained reward model: no adapter sees the responses)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(kwargs.get("reward_model"), RewardFunctionModel):
            kwargs["reward_model"].backbone.count_into(self.run.tokens, self.args.num_ppo_epochs)


class GRPORecipeTrainer(RecipeTrainer, CountsGRPOTokens, GRPOTrainer):
    pass


class ChunkedGRPORecipeTrainer(RecipeTrainer, CountsGRPOTokens, ChunkedGRPOTrainer):
    pass


class DPORecipeTrainer(RecipeTrainer, CountsPreferenceTokens, DPOTrainer):
    pass


class ChunkedDPORecipeTrainer(RecipeTrainer, CountsPreferenceTokens, ChunkedDPOTrainer):
    pass


class ORPORecipeTrainer(RecipeTrainer, CountsPreferenceTokens, ORPOTrainer):
    pass


class ChunkedORPORecipeTrainer(RecipeTrainer, CountsPreferenceTokens, ChunkedORPOTrainer):
    pass


class PPORecipeTrainer(RecipeTrainer, CountsPPOTokens, ResumablePPOTrainer):
    pass


class ChunkedPPORecipeTrainer(RecipeTrainer, CountsPPOTokens, ChunkedPPOTrainer):
    pass


# (trainer, logprobs) -> the class its recipe trains with; IPO is DPO's trainer with its loss
RECIPE_TRAINERS = {
    ("grpo", "full"): GRPORecipeTrainer,
    ("grpo", "chunked"): ChunkedGRPORecipeTrainer,
    ("dpo", "full"): DPORecipeTrainer,
    ("dpo", "chunked"): ChunkedDPORecipeTrainer,
    ("orpo", "full"): ORPORecipeTrainer,
    ("orpo", "chunked"): ChunkedORPORecipeTrainer,
    ("ppo", "full"): PPORecipeTrainer,
    ("ppo", "chunked"): ChunkedPPORecipeTrainer,
}


def recipe_trainer(trainer: str, logprobs: str = "full") -> type:
    """The recipe trainer class of `trainer` (grpo, ppo, dpo, orpo) on the `logprobs` path (full, chunked)."""
    return RECIPE_TRAINERS[trainer, logprobs]
