"""PPO with QLoRA: a policy and a same-size critic (value model) on one shared 4-bit base, each with its own LoRA,
trained on rule-based rewards from `rewards.REWARDS` through a reward-model adapter (or on a learned reward model).

Usage:
    make ppo                                    # = python -m recipes.ppo --config recipes/configs/tiny/ppo.yaml
    make ppo PROFILE=7b ARGS="--max_steps 100"
    python -m recipes.ppo --config recipes/configs/tiny/ppo.yaml --resume_from_checkpoint latest

TRL's PPOTrainer scores with a reward *model*: `core.training.ppo.RewardFunctionModel` makes reward functions look like
one, and `ResumablePPOTrainer` adds the resume TRL's experimental PPO lacks.
"""

from dataclasses import dataclass, field

from peft import get_peft_model
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, set_seed
from trl import ModelConfig, TrlParser, get_peft_config
from trl.experimental.ppo import PPOConfig

from core.errors import DataError
from core.evaluation.heldout import HeldoutArguments, cut_heldout, heldout_callbacks, own_heldout, refuse_own_heldout
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
from core.inputs.distributed import requested_zero_stage
from core.inputs.models import check_model, load_model, load_tokenizer, prompt_room
from core.logprobs.trainers import check_logprobs
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir, write_run_files
from core.training.callbacks import TimedReward, run_callbacks
from core.training.ppo import (
    ChunkedPPOTrainer,
    ResumablePPOTrainer,
    RewardFunctionModel,
    load_value_model,
    prompts_per_update,
)
from core.training.trainers import recipe_trainer
from rewards import SandboxUnavailable, get_reward_funcs, required_columns


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
    reward_weights: list[float] | None = None
    reward_kwargs: dict = field(default_factory=dict)
    use_reward_model: bool = field(default=False, metadata={"help": "score with reward_model_path, not functions"})
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
            "help": "full: TRL's loop (full-vocabulary logits, stacked rollout scores); chunked: "
            "core.logprobs.ppo_loop, per-token log-probs from hidden states in chunks (the 7B memory path)"
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


def main(
    script_args: ScriptArguments,
    training_args: PPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
):
    # ----- pre-flight -----
    if not script_args.use_reward_model:
        try:
            reward_funcs = [
                TimedReward(f, script_args.reward_timeout)
                for f in get_reward_funcs(script_args.reward_funcs, script_args.reward_kwargs)
            ]
        except (ValueError, SandboxUnavailable) as error:
            raise SystemExit(str(error)) from error
        weights = script_args.reward_weights or [1.0] * len(reward_funcs)
        if len(weights) != len(reward_funcs):
            raise SystemExit(f"reward_weights has {len(weights)} entries for {len(reward_funcs)} reward_funcs")
    if script_args.use_reward_model:
        refuse_own_heldout(heldout_args, "PPO with a reward model")
    if not model_args.use_peft:
        raise SystemExit("this recipe trains LoRA adapters (use_peft: true): the reference is the adapter-less base")
    check_logprobs(script_args.logprobs, "ppo", training_args)
    if requested_zero_stage() == 3:
        raise SystemExit(
            "PPO does not run under ZeRO-3: its critic shares the policy's frozen 4-bit base module for module "
            "(core.training.ppo.load_value_model), which ZeRO-3 partitions as it loads; use LAUNCH=zero2 or multi_gpu"
        )
    check_model(model_args, source_of("model_name_or_path"))

    # ----- data -----
    needed = prompt_columns(script_args.prompt_column, script_args.prompt_template)
    if not script_args.use_reward_model:
        needed += required_columns(script_args.reward_funcs)
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
    batch = prompts_per_update(training_args)
    if len(dataset) < batch:
        raise DataError(
            f"dataset {script_args.dataset_name} has {len(dataset)} prompts, fewer than one PPO "
            f"batch ({batch} = per_device_train_batch_size x gradient_accumulation_steps x "
            "num_mini_batches x processes)"
        )
    if not script_args.use_reward_model:
        warn_unparseable_golds(dataset, script_args.reward_funcs, script_args.dataset_name)
        dataset = with_code_test_columns(dataset, script_args.reward_funcs, script_args.dataset_name)
    tokenizer = load_tokenizer(model_args)
    tokenizer.padding_side = "left"  # PPO generates from left-padded queries
    gold_columns = [c for c in dataset.column_names if c != script_args.prompt_column]
    dataset = dataset.map(
        lambda row: {
            "messages": prompt_messages(
                prompt_text(row, script_args.prompt_column, script_args.prompt_template), script_args.system_prompt
            )
        }
    )
    room = prompt_room(model_args, training_args.response_length, "response_length", source_of("response_length"))
    dataset = fit_prompt_column(
        dataset, tokenizer, room, script_args.dataset_name, script_args.truncate_long_prompts, column="messages"
    )
    train_dataset = dataset.map(
        lambda row: {
            "input_ids": tokenizer.apply_chat_template(
                row["messages"], add_generation_prompt=True, tokenize=True, return_dict=False
            )
        },
        remove_columns=dataset.column_names,
    )

    # ----- rewards -----
    if script_args.use_reward_model:
        reward_model = AutoModelForSequenceClassification.from_pretrained(
            training_args.reward_model_path, num_labels=1
        )
    else:
        prompts_to_columns = {
            tuple(ids): {c: row[c] for c in gold_columns}
            | {"prompts": prompt_text(row, script_args.prompt_column, script_args.prompt_template)}
            for ids, row in zip(train_dataset["input_ids"], dataset, strict=True)
        }
        reward_model = RewardFunctionModel(tokenizer, reward_funcs, weights, prompts_to_columns)
    own = (
        None
        if script_args.use_reward_model
        else own_heldout(
            heldout_args, held, script_args, weights, [f.func for f in reward_funcs], training_args.response_length
        )
    )

    # ----- model -----
    resume = resolve_run_dir(training_args, "ppo", script_args.profile, script_args.reuse_output_dir)
    if training_args.max_steps and training_args.max_steps > 0:  # `--max_steps` works as for the other recipes
        training_args.total_episodes = training_args.max_steps * prompts_per_update(training_args)
    # The adapter goes on here, not through PPOTrainer's peft_config: with bf16 and a 4-bit base TRL then casts the
    # norms to fp32 but leaves lm_head in bf16, and generation (outside autocast) fails on the dtype mismatch.
    set_seed(training_args.seed)  # the adapters' and the critic's score head's initial weights: the run's seed
    base = load_model(model_args, AutoModelForCausalLM)
    value_model = load_value_model(model_args, base)  # the frozen base is shared, not loaded twice
    policy = get_peft_model(base, get_peft_config(model_args))
    if training_args.activation_checkpointing:  # PPOTrainer's own loop never turns it on, for either model
        for model in (policy.get_base_model(), value_model):
            model.activation_checkpointing_enable(training_args.activation_checkpointing_kwargs)

    # ----- held-out: accuracy and drift at the start, every heldout_eval_steps, the end -----
    heldout = heldout_callbacks(training_args.output_dir, heldout_args, tokenizer, own)

    # ----- trainer -----
    trainer = recipe_trainer(ChunkedPPOTrainer if script_args.logprobs == "chunked" else ResumablePPOTrainer)(
        args=training_args,
        processing_class=tokenizer,
        model=policy,
        ref_model=None,
        reward_model=reward_model,
        value_model=value_model,
        train_dataset=train_dataset,
        callbacks=run_callbacks(
            training_args.output_dir, script_args.measure_tensor_memory, script_args.stop_grace_seconds
        )
        + heldout,
        resume_from=resume,
    )
    if trainer.is_world_process_zero():
        write_run_files(training_args.output_dir, script_args, training_args, model_args)
    trainer.train()

    # ----- save -----
    trainer.save_model(training_args.output_dir)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(training_args.output_dir)
    finish_run(
        trainer,
        "ppo",
        training_args.output_dir,
        model_args.model_name_or_path,
        script_args.profile,
        script_args,
        script_args.reward_weights,
    )
    return trainer


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, PPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
