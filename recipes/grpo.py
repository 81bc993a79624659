"""GRPO with QLoRA: sample a group of `num_generations` completions per prompt, score them with rule-based rewards,
and use each completion's reward relative to its group as the advantage (no critic).

Usage:
    make grpo                                   # = python -m recipes.grpo --config recipes/configs/tiny/grpo.yaml
    make grpo PROFILE=7b ARGS="--max_steps 200"
    python -m recipes.grpo --config recipes/configs/tiny/grpo.yaml --resume_from_checkpoint latest
"""

from dataclasses import dataclass, field

from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser, get_peft_config

from core.evaluation.heldout import HeldoutArguments, cut_heldout, heldout_callbacks, own_heldout
from core.inputs.config import parse_config, reward_timeout_field, source_of, stop_grace_field
from core.inputs.data import (
    fit_prompt_column,
    load_data,
    prompt_columns,
    prompt_messages,
    prompt_text,
    warn_unparseable_golds,
    with_code_test_columns,
)
from core.inputs.models import check_model, load_tokenizer, model_kwargs, prompt_room
from core.logprobs.trainers import check_logprobs, with_logprobs
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir, write_run_files
from core.training.callbacks import TimedReward, run_callbacks
from core.training.trainers import recipe_trainer
from rewards import SandboxUnavailable, get_reward_funcs, required_columns
from rewards.noise import flip_noise


@dataclass
class ScriptArguments:
    dataset_name: str = field(metadata={"help": "hub id, or a local .jsonl/.json/.parquet/.csv file or folder"})
    dataset_config: str | None = None
    dataset_train_split: str = "train"
    prompt_column: str = "question"
    prompt_template: str | None = field(
        default=None,
        metadata={
            "help": "user message built from the row's columns, e.g. '{text}\\nTests:\\n{test_list}'; "
            "else prompt_column"
        },
    )
    system_prompt: str | None = None
    max_train_samples: int | None = None
    reward_funcs: list[str] = field(default_factory=lambda: ["math_accuracy"])
    reward_kwargs: dict = field(default_factory=dict, metadata={"help": "reward name -> keyword arguments"})
    reward_noise: float = field(
        default=0.0,
        metadata={
            "help": "flip each 0/1 training reward with this probability (rewards.noise; seeded by the run's seed); "
            "held-out evaluation scores with the clean rewards"
        },
    )
    drop_incomplete_rows: bool = field(
        default=False, metadata={"help": "drop rows whose prompt or gold columns are missing or empty (else refused)"}
    )
    truncate_long_prompts: bool = field(
        default=False, metadata={"help": "cut prompts longer than the model has room for (else refused)"}
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
    reward_timeout: float = reward_timeout_field()
    stop_grace_seconds: float = stop_grace_field()
    profile: str = "tiny"
    measure_tensor_memory: bool = field(
        default=False,
        metadata={
            "help": "measure the peak of live tensor bytes (core.training.memory_meter) into cost.json; slows training"
        },
    )


def preflight(script_args: ScriptArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    """Everything that can be checked before a model is loaded (GRPOConfig itself checks that each generation batch,
    over all processes, holds whole groups of num_generations)."""
    if training_args.reward_weights and len(training_args.reward_weights) != len(script_args.reward_funcs):
        raise SystemExit(
            f"reward_weights has {len(training_args.reward_weights)} entries for "
            f"{len(script_args.reward_funcs)} reward_funcs {script_args.reward_funcs}"
        )
    if training_args.use_vllm and (model_args.load_in_4bit or model_args.load_in_8bit):
        raise SystemExit(
            "use_vllm with a 4-bit/8-bit base: vLLM weight sync needs merged LoRA weights, which a "
            "quantized base cannot take. Use a bf16 base with vLLM, or use_vllm: false."
        )
    try:
        get_reward_funcs(script_args.reward_funcs, script_args.reward_kwargs)
    except (ValueError, SandboxUnavailable) as error:
        raise SystemExit(str(error)) from error
    if not 0.0 <= script_args.reward_noise <= 1.0:
        raise SystemExit(
            f"reward_noise {script_args.reward_noise} ({source_of('reward_noise')}): a flip probability, in [0, 1]"
        )
    check_logprobs(script_args.logprobs, "grpo", training_args)
    check_model(model_args, source_of("model_name_or_path"))


def main(
    script_args: ScriptArguments,
    training_args: GRPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
):
    preflight(script_args, training_args, model_args)

    # ----- data -----
    needed = [
        *prompt_columns(script_args.prompt_column, script_args.prompt_template),
        *required_columns(script_args.reward_funcs),
    ]
    dataset = load_data(
        script_args.dataset_name,
        script_args.dataset_train_split,
        script_args.dataset_config,
        required_columns=needed,
        drop_incomplete=script_args.drop_incomplete_rows,
    )
    dataset, held = cut_heldout(dataset, heldout_args, training_args.seed, script_args.dataset_name)
    if script_args.max_train_samples:
        dataset = dataset.select(range(min(script_args.max_train_samples, len(dataset))))
    warn_unparseable_golds(dataset, script_args.reward_funcs, script_args.dataset_name)
    dataset = with_code_test_columns(dataset, script_args.reward_funcs, script_args.dataset_name)
    dataset = dataset.map(
        lambda row: {
            "prompt": prompt_messages(
                prompt_text(row, script_args.prompt_column, script_args.prompt_template), script_args.system_prompt
            )
        }
    )
    tokenizer = load_tokenizer(model_args)
    room = prompt_room(
        model_args, training_args.max_completion_length, "max_completion_length", source_of("max_completion_length")
    )
    dataset = fit_prompt_column(dataset, tokenizer, room, script_args.dataset_name, script_args.truncate_long_prompts)

    # ----- rewards -----
    funcs = get_reward_funcs(script_args.reward_funcs, script_args.reward_kwargs)
    if script_args.reward_noise:  # a verifier that is sometimes wrong, on purpose; held-out truth stays clean
        trained = [flip_noise(f, script_args.reward_noise, training_args.seed + i) for i, f in enumerate(funcs)]
    else:
        trained = funcs
    reward_funcs = [TimedReward(f, script_args.reward_timeout) for f in trained]
    own = own_heldout(
        heldout_args, held, script_args, training_args.reward_weights, funcs, training_args.max_completion_length
    )

    # ----- model -----
    resume = resolve_run_dir(training_args, "grpo", script_args.profile, script_args.reuse_output_dir)
    training_args.model_init_kwargs = model_kwargs(model_args)

    # ----- held-out: accuracy and drift at the start, every heldout_eval_steps, the end -----
    heldout = heldout_callbacks(training_args.output_dir, heldout_args, tokenizer, own)

    # ----- trainer -----
    trainer = recipe_trainer(with_logprobs(GRPOTrainer, script_args.logprobs))(
        model=model_args.model_name_or_path,
        reward_funcs=reward_funcs,
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
    finish_run(
        trainer,
        "grpo",
        training_args.output_dir,
        model_args.model_name_or_path,
        script_args.profile,
        script_args,
        training_args.reward_weights,
    )
    return trainer


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
