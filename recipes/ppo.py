"""PPO with QLoRA: a policy and a same-size critic (value model) on one shared 4-bit base, each with its own LoRA,
trained on rule-based rewards from `rewards.REWARDS` through a reward-model adapter (or on a learned reward model).

Usage:
    make ppo                                    # = python -m recipes.ppo --config recipes/configs/tiny/ppo.yaml
    make ppo PROFILE=7b ARGS="--max_steps 100"
    python -m recipes.ppo --config recipes/configs/tiny/ppo.yaml --resume_from_checkpoint latest

TRL's PPOTrainer scores with a reward *model*: `core.trl_internals.ppo.RewardFunctionModel` makes reward functions look
like one, and `ResumablePPOTrainer` adds the resume TRL's experimental PPO lacks.
"""

from dataclasses import dataclass, field

from peft import get_peft_model
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, set_seed
from trl import ModelConfig, TrlParser, get_peft_config
from trl.experimental.ppo import PPOConfig

from core.errors import DataError
from core.evaluation.heldout import HeldoutArguments, heldout_callbacks, own_heldout, refuse_own_heldout
from core.inputs.arguments import PromptArguments, RewardArguments, RewardWeightArguments, RunArguments
from core.inputs.config import Sources, parse_config
from core.inputs.distributed import requested_zero_stage
from core.inputs.models import check_model, load_model
from core.inputs.prepare import prepare_prompts
from core.inputs.prompts import prompt_text
from core.inputs.rewards import resolve_rewards
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir
from core.training.callbacks import run_callbacks
from core.trl_internals.chunked import check_logprobs
from core.trl_internals.ppo import RewardFunctionModel, load_value_model, prompts_per_update
from core.trl_internals.trainers import recipe_trainer


@dataclass
class PPOScriptArguments(RunArguments, RewardWeightArguments, RewardArguments, PromptArguments):
    """PPO's own arguments; the shared ones are documented in core.inputs.arguments.

    Args:
        use_reward_model: score with PPOConfig's reward_model_path (a sequence-classification model), not with the
            reward functions.
        value_learning_rate: the critic's own learning rate (TRL 1.12 has one optimizer, one rate, over policy and
            critic; a fresh score head may want another); default: learning_rate.
    """

    use_reward_model: bool = field(default=False, metadata={"help": "score with reward_model_path, not functions"})
    value_learning_rate: float | None = field(
        default=None,
        metadata={"help": "the critic's own learning rate (its LoRA and score head); default: learning_rate"},
    )


def preflight(
    script_args: PPOScriptArguments, training_args: PPOConfig, model_args: ModelConfig, heldout_args, sources: Sources
) -> None:
    if script_args.use_reward_model:
        refuse_own_heldout(heldout_args, "PPO with a reward model")
    if not model_args.use_peft:
        raise SystemExit("this recipe trains LoRA adapters (use_peft: true): the reference is the adapter-less base")
    check_logprobs(script_args.logprobs, "ppo", training_args)
    if requested_zero_stage() == 3:
        raise SystemExit(
            "PPO does not run under ZeRO-3: its critic shares the policy's frozen 4-bit base module for module "
            "(core.trl_internals.ppo.load_value_model), which ZeRO-3 partitions as it loads; use LAUNCH=zero2 or "
            "multi_gpu"
        )
    check_model(model_args, sources.of("model_name_or_path"))


def main(
    script_args: PPOScriptArguments,
    training_args: PPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
    sources: Sources = Sources(),
):
    # ----- rewards (resolved first, then every other check, before any data is read) -----
    names = [] if script_args.use_reward_model else None  # a reward model scores instead of the functions
    rewards = resolve_rewards(script_args, script_args.reward_weights, names=names)
    preflight(script_args, training_args, model_args, heldout_args, sources)

    # ----- data -----
    completion = (training_args.response_length, "response_length", sources.of("response_length"))
    prompts = prepare_prompts(
        script_args,
        rewards.names,
        model_args,
        completion,
        column="messages",
        heldout_fraction=heldout_args.heldout_fraction,
        heldout_data=heldout_args.own_data,
        seed=training_args.seed,
        limit=script_args.max_train_samples,
    )
    dataset, tokenizer = prompts.dataset, prompts.tokenizer
    batch = prompts_per_update(training_args)
    if len(dataset) < batch:
        raise DataError(
            f"dataset {script_args.dataset_name} has {len(dataset)} prompts, fewer than one PPO "
            f"batch ({batch} = per_device_train_batch_size x gradient_accumulation_steps x "
            "num_mini_batches x processes)"
        )
    tokenizer.padding_side = "left"  # PPO generates from left-padded queries
    train_dataset = dataset.map(
        lambda row: {
            "input_ids": tokenizer.apply_chat_template(
                row["messages"], add_generation_prompt=True, tokenize=True, return_dict=False
            )
        },
        remove_columns=dataset.column_names,
    )

    # ----- rewards: functions behind a reward model's interface, or a reward model -----
    if script_args.use_reward_model:
        reward_model = AutoModelForSequenceClassification.from_pretrained(
            training_args.reward_model_path, num_labels=1
        )
        own = None
    else:
        gold_columns = [c for c in dataset.column_names if c not in (script_args.prompt_column, "messages")]
        prompts_to_columns = {
            tuple(ids): {c: row[c] for c in gold_columns}
            | {"prompts": prompt_text(row, script_args.prompt_column, script_args.prompt_template)}
            for ids, row in zip(train_dataset["input_ids"], dataset, strict=True)
        }
        reward_model = RewardFunctionModel(tokenizer, rewards.trained, rewards.weights, prompts_to_columns)
        own = own_heldout(heldout_args, prompts.held, script_args, rewards, training_args.response_length)

    # ----- model -----
    run = resolve_run_dir("ppo", script_args, training_args, model_args)
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

    # ----- trainer (held-out accuracy and drift at the start, every heldout_eval_steps, the end) -----
    trainer = recipe_trainer("ppo", script_args.logprobs)(
        args=training_args,
        processing_class=tokenizer,
        model=policy,
        ref_model=None,
        reward_model=reward_model,
        value_model=value_model,
        train_dataset=train_dataset,
        callbacks=run_callbacks(run, script_args, rewards.ledger)
        + heldout_callbacks(run, heldout_args, tokenizer, own),
        resume_from=run.resume,
        value_learning_rate=script_args.value_learning_rate,
        run=run,
    )
    trainer.train()

    # ----- save -----
    trainer.save_run()
    finish_run(trainer, "ppo", model_args.model_name_or_path, script_args, script_args.reward_weights)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((PPOScriptArguments, PPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
