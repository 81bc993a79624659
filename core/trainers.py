"""What every recipe's trainer gets on top of TRL's (`recipe_trainer(TrainerClass)`): checkpoints that are never
half-written, starting weights that follow the run's seed, and no training under an engine other than the one the
launch asked for (core.distributed).

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

from core.distributed import check_engine
from core.run_dir import RUN


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


class RecipeStart:
    """Seeds before TRL builds the model, checks the engine once the trainer's accelerator exists."""

    def __init__(self, *args, **kwargs):
        # TRL builds the LoRA adapter (random A matrices) before transformers' Trainer seeds: seed first, so a run's
        # starting weights follow its seed.
        set_seed(kwargs["args"].seed)
        super().__init__(*args, **kwargs)
        check_engine(self.accelerator.state)


@cache
def recipe_trainer(trainer_class: type) -> type:
    """`trainer_class` seeded before it builds the adapter, with atomic checkpoints, refusing an engine the launch did
    not ask for (made once per trainer class)."""
    return type(trainer_class.__name__, (RecipeStart, AtomicCheckpoints, trainer_class), {"__module__": __name__})
