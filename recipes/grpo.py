"""GRPO with QLoRA: sample a group of `num_generations` completions per prompt, score them with rule-based rewards,
and use each completion's reward relative to its group as the advantage (no critic).

Usage:
    make grpo                                   # = python -m recipes.grpo --config recipes/configs/tiny/grpo.yaml
    make grpo PROFILE=7b ARGS="--max_steps 200"
    python -m recipes.grpo --config recipes/configs/tiny/grpo.yaml --resume_from_checkpoint latest
"""

from dataclasses import dataclass, field

from trl import GRPOConfig, ModelConfig, TrlParser, get_peft_config

from core.evaluation.heldout import HeldoutArguments, heldout_callbacks, own_heldout
from core.inputs.arguments import PromptArguments, RewardArguments, RunArguments
from core.inputs.config import Sources, parse_config
from core.inputs.models import check_model, model_kwargs
from core.inputs.prepare import prepare_prompts
from core.inputs.rewards import Rewards, resolve_rewards
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir
from core.training.callbacks import run_callbacks
from core.trl_internals.chunked import check_logprobs
from core.trl_internals.trainers import recipe_trainer


@dataclass
class GRPOScriptArguments(RunArguments, RewardArguments, PromptArguments):
    """GRPO's own arguments; the shared ones are documented in core.inputs.arguments (`reward_weights` is
    GRPOConfig's).

    Args:
        reward_noise: flip each 0/1 training reward with this probability (rewards.noise; seeded by the run's seed);
            held-out evaluation scores with the clean rewards.
    """

    reward_noise: float = field(
        default=0.0,
        metadata={
            "help": "flip each 0/1 training reward with this probability (rewards.noise; seeded by the run's seed); "
            "held-out evaluation scores with the clean rewards"
        },
    )


def preflight(
    script_args: GRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig, sources: Sources
) -> Rewards:
    """Everything checked before any data is read or a model loaded; returns the run's rewards, resolved (GRPOConfig
    itself checks that each generation batch, over all processes, holds whole groups of num_generations)."""
    if training_args.use_vllm and (model_args.load_in_4bit or model_args.load_in_8bit):
        raise SystemExit(
            "use_vllm with a 4-bit/8-bit base: vLLM weight sync needs merged LoRA weights, which a "
            "quantized base cannot take. Use a bf16 base with vLLM, or use_vllm: false."
        )
    if not 0.0 <= script_args.reward_noise <= 1.0:
        raise SystemExit(
            f"reward_noise {script_args.reward_noise} ({sources.of('reward_noise')}): a flip probability, in [0, 1]"
        )
    rewards = resolve_rewards(script_args, training_args.reward_weights, script_args.reward_noise, training_args.seed)
    check_logprobs(script_args.logprobs, "grpo", training_args)
    check_model(model_args, sources.of("model_name_or_path"))
    return rewards


def main(
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
    sources: Sources = Sources(),
):
    # ----- rewards (resolved with every other check before any data is read) -----
    rewards = preflight(script_args, training_args, model_args, sources)

    # ----- data -----
    completion = (training_args.max_completion_length, "max_completion_length", sources.of("max_completion_length"))
    prompts = prepare_prompts(
        script_args,
        rewards.names,
        model_args,
        completion,
        heldout_fraction=heldout_args.heldout_fraction,
        heldout_data=heldout_args.own_data,
        seed=training_args.seed,
        limit=script_args.max_train_samples,
    )
    own = own_heldout(heldout_args, prompts.held, script_args, rewards, training_args.max_completion_length)

    # ----- model -----
    run = resolve_run_dir("grpo", script_args, training_args, model_args)
    training_args.model_init_kwargs = model_kwargs(model_args)

    # ----- trainer (held-out accuracy and drift at the start, every heldout_eval_steps, the end) -----
    trainer = recipe_trainer("grpo", script_args.logprobs)(
        model=model_args.model_name_or_path,
        reward_funcs=rewards.trained,
        args=training_args,
        train_dataset=prompts.dataset,
        processing_class=prompts.tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=run_callbacks(run, script_args, rewards.ledger)
        + heldout_callbacks(run, heldout_args, prompts.tokenizer, own),
        run=run,
    )
    trainer.train(resume_from_checkpoint=run.resume)

    # ----- save -----
    trainer.save_run()
    finish_run(trainer, "grpo", model_args.model_name_or_path, script_args, rewards.weights)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
