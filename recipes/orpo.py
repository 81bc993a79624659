"""ORPO with QLoRA: SFT on the chosen answer plus an odds-ratio penalty against the rejected one; no reference model.

Usage:
    make pairs && make orpo                     # = python -m recipes.orpo --config recipes/configs/tiny/orpo.yaml
    make orpo PROFILE=7b
    python -m recipes.orpo --config recipes/configs/tiny/orpo.yaml --resume_from_checkpoint latest

Data: `prompt`/`chosen`/`rejected` (TRL's preference format) from `make pairs` or a hub preference dataset.
"""

from dataclasses import dataclass

from trl import ModelConfig, TrlParser, get_peft_config
from trl.experimental.orpo import ORPOConfig

from core.evaluation.heldout import HeldoutArguments, heldout_callbacks
from core.inputs.arguments import DataArguments, RunArguments
from core.inputs.config import Sources, parse_config
from core.inputs.data import load_preference_pairs
from core.inputs.models import check_model, load_tokenizer, model_kwargs
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir
from core.training.callbacks import run_callbacks
from core.trl_internals.chunked import check_logprobs
from core.trl_internals.trainers import recipe_trainer


@dataclass
class ORPOScriptArguments(RunArguments, DataArguments):
    """ORPO's arguments, all shared (core.inputs.arguments)."""


def main(
    script_args: ORPOScriptArguments,
    training_args: ORPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
    sources: Sources = Sources(),
):
    check_model(model_args, sources.of("model_name_or_path"))
    check_logprobs(script_args.logprobs, "orpo", training_args)
    if not model_args.use_peft:
        raise SystemExit("this recipe trains LoRA adapters (use_peft: true)")

    # ----- data -----
    dataset = load_preference_pairs(script_args, script_args.max_train_samples)

    # ----- model -----
    run = resolve_run_dir("orpo", script_args, training_args, model_args)
    training_args.model_init_kwargs = model_kwargs(model_args)
    tokenizer = load_tokenizer(model_args)

    # ----- trainer (held-out accuracy and drift at the start, every heldout_eval_steps, the end) -----
    trainer = recipe_trainer("orpo", script_args.logprobs)(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=run_callbacks(run, script_args) + heldout_callbacks(run, heldout_args, tokenizer),
        run=run,
    )
    trainer.train(resume_from_checkpoint=run.resume)

    # ----- save -----
    trainer.save_run()
    finish_run(trainer, "orpo", model_args.model_name_or_path, script_args)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((ORPOScriptArguments, ORPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
