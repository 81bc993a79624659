"""ORPO with QLoRA: SFT on the chosen answer plus an odds-ratio penalty against the rejected one; no reference model.

Usage:
    make pairs && make orpo                     # = python -m recipes.orpo --config recipes/configs/tiny/orpo.yaml
    make orpo PROFILE=7b
    python -m recipes.orpo --config recipes/configs/tiny/orpo.yaml --resume_from_checkpoint latest

Data: `prompt`/`chosen`/`rejected` (TRL's preference format) from `make pairs` or a hub preference dataset.
"""

from dataclasses import dataclass, field

from trl import ModelConfig, TrlParser, get_peft_config
from trl.experimental.orpo import ORPOConfig, ORPOTrainer

from core.evaluation.heldout import HeldoutArguments, heldout_callbacks
from core.inputs.config import parse_config, source_of, stop_grace_field
from core.inputs.data import load_data
from core.inputs.models import check_model, load_tokenizer, model_kwargs
from core.logprobs.trainers import check_logprobs, with_logprobs
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir, write_run_files
from core.training.callbacks import run_callbacks
from core.training.trainers import recipe_trainer


@dataclass
class ScriptArguments:
    dataset_name: str = field(metadata={"help": "hub id, or a local .jsonl/.json/.parquet/.csv file or folder"})
    dataset_config: str | None = None
    dataset_train_split: str = "train"
    max_train_samples: int | None = None
    drop_incomplete_rows: bool = field(
        default=False,
        metadata={"help": "drop rows whose prompt, chosen or rejected is missing or empty (else refused)"},
    )
    reuse_output_dir: bool = field(
        default=False, metadata={"help": "write into an output_dir that holds another run's files (moved aside)"}
    )
    logprobs: str = field(
        default="full",
        metadata={
            "help": "full: TRL's path (full-vocabulary logits); chunked: core.logprobs, per-token log-probs from "
            "hidden states in chunks (the 7B memory path)"
        },
    )
    stop_grace_seconds: float = stop_grace_field()
    profile: str = "tiny"
    measure_tensor_memory: bool = field(
        default=False,
        metadata={
            "help": "measure the peak of live tensor bytes (core.training.memory_meter) into cost.json; slows training"
        },
    )


def main(
    script_args: ScriptArguments,
    training_args: ORPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
):
    check_model(model_args, source_of("model_name_or_path"))
    check_logprobs(script_args.logprobs, "orpo", training_args)
    if not model_args.use_peft:
        raise SystemExit("this recipe trains LoRA adapters (use_peft: true)")

    # ----- data -----
    dataset = load_data(
        script_args.dataset_name,
        script_args.dataset_train_split,
        script_args.dataset_config,
        required_columns=["prompt", "chosen", "rejected"],
        drop_incomplete=script_args.drop_incomplete_rows,
    )
    if script_args.max_train_samples:
        dataset = dataset.select(range(min(script_args.max_train_samples, len(dataset))))
    dataset = dataset.select_columns(["prompt", "chosen", "rejected"])

    # ----- model -----
    resume = resolve_run_dir(training_args, "orpo", script_args.profile, script_args.reuse_output_dir)
    training_args.model_init_kwargs = model_kwargs(model_args)
    tokenizer = load_tokenizer(model_args)

    # ----- held-out: accuracy and drift at the start, every heldout_eval_steps, the end -----
    heldout = heldout_callbacks(training_args.output_dir, heldout_args, tokenizer)

    # ----- trainer -----
    trainer = recipe_trainer(with_logprobs(ORPOTrainer, script_args.logprobs))(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=run_callbacks(
            training_args.output_dir, script_args.measure_tensor_memory, script_args.stop_grace_seconds
        )
        + heldout,
    )
    if trainer.is_world_process_zero():
        write_run_files(training_args.output_dir, script_args, training_args, model_args)
    trainer.train(resume_from_checkpoint=resume)

    # ----- save -----
    trainer.save_model(training_args.output_dir)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(training_args.output_dir)
    finish_run(trainer, "orpo", training_args.output_dir, model_args.model_name_or_path, script_args.profile)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, ORPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
