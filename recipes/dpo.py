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

from trl import DPOConfig, ModelConfig, TrlParser, get_peft_config

from core.evaluation.heldout import HeldoutArguments, heldout_callbacks
from core.inputs.arguments import DataArguments, RunArguments
from core.inputs.config import Sources, parse_config
from core.inputs.data import load_preference_pairs
from core.inputs.models import check_adapter, check_model, load_model, load_tokenizer, model_kwargs, with_adapter
from core.report.summary import finish_run
from core.runs.folder import resolve_run_dir
from core.training.callbacks import run_callbacks
from core.trl_internals.chunked import check_logprobs
from core.trl_internals.trainers import recipe_trainer


@dataclass
class DPOScriptArguments(RunArguments, DataArguments):
    """DPO's own arguments; the shared ones are documented in core.inputs.arguments.

    Args:
        init_adapter: go on training this LoRA adapter (iterative DPO: the last round's); TRL then takes a frozen
            copy of it as the reference, instead of the adapter-less base.
    """

    init_adapter: str | None = field(
        default=None,
        metadata={
            "help": "go on training this LoRA adapter (iterative DPO: the last round's); TRL then takes a frozen copy "
            "of it as the reference, instead of the adapter-less base"
        },
    )


def main(
    script_args: DPOScriptArguments,
    training_args: DPOConfig,
    model_args: ModelConfig,
    heldout_args: HeldoutArguments,
    sources: Sources = Sources(),
):
    check_model(model_args, sources.of("model_name_or_path"))
    check_logprobs(script_args.logprobs, "dpo", training_args)
    method = "ipo" if list(training_args.loss_type) == ["ipo"] else "dpo"  # IPO: DPO's trainer, the squared loss
    if not model_args.use_peft:
        raise SystemExit("this recipe trains LoRA adapters (use_peft: true): the reference is the adapter-less base")
    if script_args.init_adapter:
        check_adapter(script_args.init_adapter)

    # ----- data -----
    dataset = load_preference_pairs(script_args, script_args.max_train_samples)

    # ----- model -----
    run = resolve_run_dir(method, script_args, training_args, model_args)
    tokenizer = load_tokenizer(model_args)
    if script_args.init_adapter:  # loaded here, so TRL takes the model as given (its init kwargs stay unset)
        model, peft_config = with_adapter(load_model(model_args), script_args.init_adapter, trainable=True), None
    else:
        training_args.model_init_kwargs = model_kwargs(model_args)
        model, peft_config = model_args.model_name_or_path, get_peft_config(model_args)

    # ----- trainer (held-out accuracy and drift at the start, every heldout_eval_steps, the end) -----
    trainer = recipe_trainer("dpo", script_args.logprobs)(
        model=model,
        ref_model=None,
        args=training_args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=run_callbacks(run, script_args) + heldout_callbacks(run, heldout_args, tokenizer),
        run=run,
    )
    trainer.train(resume_from_checkpoint=run.resume)

    # ----- save -----
    trainer.save_run()
    finish_run(trainer, method, model_args.model_name_or_path, script_args)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((DPOScriptArguments, DPOConfig, ModelConfig, HeldoutArguments))
    main(*parse_config(parser))
