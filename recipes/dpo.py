"""DPO (and IPO) with QLoRA: learn offline from preference pairs; the reference is the same 4-bit base with the
adapter off.

Usage:
    make pairs && make dpo                      # = python -m recipes.dpo --config recipes/configs/tiny/dpo.yaml
    make ipo                                    # = python -m recipes.dpo --config recipes/configs/tiny/ipo.yaml
    make dpo PROFILE=7b
    python -m recipes.dpo --config recipes/configs/tiny/dpo.yaml --resume_from_checkpoint latest

Data: `prompt`/`chosen`/`rejected` (TRL's preference format) from `make pairs` or a hub preference dataset.
"""

from dataclasses import dataclass, field

from trl import DPOConfig, DPOTrainer, ModelConfig, TrlParser, get_peft_config

from core.evaluation.heldout import HeldoutArguments, heldout_callbacks
from core.inputs.config import parse_config, source_of, stop_grace_field
from core.inputs.data import load_data
from core.inputs.models import check_adapter, check_model, load_model, load_tokenizer, model_kwargs, with_adapter
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
    init_adapter: str | None = field(
        default=None,
        metadata={
            "help": "go on training this LoRA adapter (iterative DPO: the last round's); TRL then takes a frozen copy "
            "of it as the reference, instead of the adapter-less base"
        },
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
    training_args: DPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
):
    check_model(model_args, source_of("model_name_or_path"))
    check_logprobs(script_args.logprobs, "dpo", training_args)
    method = "ipo" if list(training_args.loss_type) == ["ipo"] else "dpo"  # IPO: DPO's trainer, the squared loss
    if not model_args.use_peft:
        raise SystemExit("this recipe trains LoRA adapters (use_peft: true): the reference is the adapter-less base")
    if script_args.init_adapter:
        check_adapter(script_args.init_adapter)

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
    resume = resolve_run_dir(training_args, method, script_args.profile, script_args.reuse_output_dir)
    tokenizer = load_tokenizer(model_args)
    if script_args.init_adapter:  # loaded here, so TRL takes the model as given (its init kwargs stay unset)
        model, peft_config = with_adapter(load_model(model_args), script_args.init_adapter, trainable=True), None
    else:
        training_args.model_init_kwargs = model_kwargs(model_args)
        model, peft_config = model_args.model_name_or_path, get_peft_config(model_args)

    # ----- held-out: accuracy and drift at the start, every heldout_eval_steps, the end -----
    heldout = heldout_callbacks(training_args.output_dir, heldout_args, tokenizer)

    # ----- trainer -----
    trainer = recipe_trainer(with_logprobs(DPOTrainer, script_args.logprobs))(
        model=model,
        ref_model=None,
        args=training_args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
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
    finish_run(trainer, method, training_args.output_dir, model_args.model_name_or_path, script_args.profile)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, DPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
