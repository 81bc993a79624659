"""Build an on-policy preference dataset for DPO/ORPO from any prompt dataset, with the same rewards as GRPO/PPO:
sample `num_samples` completions per prompt from the starting model, score them, and keep (best, worst) when
their scores differ by at least `min_margin`.

Usage:
    make pairs                                  # = python -m recipes.pairs --config recipes/configs/tiny/pairs.yaml
    python -m recipes.pairs --config recipes/configs/tiny/pairs.yaml --max_prompts 64 --output runs/pairs.jsonl

Writes TRL's conversational preference format (`prompt`, `chosen`, `rejected` as message lists) plus
`score_chosen`, `score_rejected` and the prompt's gold columns, as JSONL or Parquet (by the output's suffix), and
beside it `<name>.cost.json`: the prompts, completions, completion tokens and CPU seconds the pairs' sampling took.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from trl import ModelConfig, TrlParser

from core.errors import UserError
from core.evaluation.generation import generate
from core.inputs.arguments import PromptArguments, RewardArguments, RewardWeightArguments
from core.inputs.config import Sources, parse_config
from core.inputs.data import pairs_cost
from core.inputs.models import check_adapter, check_model, load_model, with_adapter
from core.inputs.prepare import prepare_prompts
from core.inputs.rewards import resolve_rewards
from core.runs.storage import write_text_whole, write_whole
from core.runs.timing import cpu_seconds
from core.runs.tokens import TokenCount
from rewards import weighted_sum


@dataclass
class PairsArguments(RewardWeightArguments, RewardArguments, PromptArguments):
    """`make pairs`' own arguments; the shared ones are documented in core.inputs.arguments.

    Args:
        output: where to write the pairs: .jsonl or .parquet.
        max_prompts: sample from at most this many prompts.
        skip_prompts: start after this many prompts (an iterative method's later rounds: new prompts).
        adapter: sample from the model with this LoRA adapter on (on-policy pairs: the current policy).
        num_samples: completions per prompt.
        temperature: their sampling temperature.
        max_new_tokens: each completion's budget.
        batch_size: completions generated at once.
        min_margin: keep (best, worst) only when their scores differ by at least this.
        seed: the sampling seed.
        profile: the config profile this file belongs to (a label: the pairs go to `output`).
    """

    output: str = field(kw_only=True, metadata={"help": "where to write the pairs: .jsonl or .parquet"})
    max_prompts: int | None = None
    skip_prompts: int = field(
        default=0, metadata={"help": "start after this many prompts (an iterative method's later rounds: new prompts)"}
    )
    adapter: str | None = field(
        default=None,
        metadata={"help": "sample from the model with this LoRA adapter on (on-policy pairs: the current policy)"},
    )
    num_samples: int = 8
    temperature: float = 1.0
    max_new_tokens: int = 128
    batch_size: int = 64
    min_margin: float = 0.5
    seed: int = 0
    profile: str = "tiny"


def best_and_worst(completions: list[str], scores: list[float], min_margin: float):
    """(chosen, rejected, their scores) or None; ties go to the shorter completion for chosen, longer rejected."""
    ranked = sorted(zip(scores, completions, strict=True), key=lambda sc: (-sc[0], len(sc[1])))
    (best_score, best), (worst_score, worst) = ranked[0], ranked[-1]
    if best_score - worst_score < min_margin:
        return None
    return best, worst, best_score, worst_score


def main(args: PairsArguments, model_args: ModelConfig, sources: Sources = Sources()):
    # ----- pre-flight -----
    if Path(args.output).suffix not in (".jsonl", ".parquet"):
        raise SystemExit(f"output {args.output}: use a .jsonl or .parquet file name")
    rewards = resolve_rewards(args, args.reward_weights)
    if args.num_samples < 2:
        raise SystemExit(f"num_samples must be >= 2 to form a pair, got {args.num_samples}")
    check_model(model_args, sources.of("model_name_or_path"))
    if args.adapter:
        check_adapter(args.adapter)
    if args.skip_prompts < 0:
        raise SystemExit(f"skip_prompts must be >= 0, got {args.skip_prompts}")

    # ----- data -----
    completion = (args.max_new_tokens, "max_new_tokens", sources.of("max_new_tokens"))
    prompts = prepare_prompts(
        args, rewards.names, model_args, completion, "messages", skip=args.skip_prompts, limit=args.max_prompts
    )
    dataset, tokenizer = prompts.dataset, prompts.tokenizer
    gold_columns = [c for c in dataset.column_names if c not in (args.prompt_column, "messages")]

    # ----- model -----
    torch.manual_seed(args.seed)
    model = with_adapter(load_model(model_args), args.adapter)

    # ----- sample and score -----
    cpu_at_start = cpu_seconds()  # the sampling's own CPU seconds, as training counts its own (no imports, no load)
    prompts, tokens = dataset["messages"], TokenCount()
    samples = generate(
        model,
        tokenizer,
        prompts,
        max_new_tokens=args.max_new_tokens,
        batch_size=max(1, args.batch_size // args.num_samples),
        temperature=args.temperature,
        num_return_sequences=args.num_samples,
        tokens=tokens,
    )
    rows = []
    for prompt, completions, gold in zip(prompts, samples, dataset, strict=True):
        columns = {c: [gold[c]] * len(completions) for c in gold_columns}
        pair = best_and_worst(
            completions,
            weighted_sum(rewards.funcs, rewards.weights, completions, args.reward_timeout, **columns),
            args.min_margin,
        )
        if pair:
            chosen, rejected, score_chosen, score_rejected = pair
            rows.append(
                {
                    "prompt": prompt,
                    "chosen": [{"role": "assistant", "content": chosen}],
                    "rejected": [{"role": "assistant", "content": rejected}],
                    "score_chosen": score_chosen,
                    "score_rejected": score_rejected,
                    **{c: gold[c] for c in gold_columns},
                }
            )

    # ----- save -----
    out = Path(args.output)
    if not rows:  # no file: the next make dpo / make orpo would train on nothing
        kept = f"; {out} (already there) was left as it was" if out.exists() else ""
        raise UserError(
            f"no prompt produced a pair: every prompt's {args.num_samples} samples scored within {args.min_margin} "
            f"of each other, so DPO and ORPO would have nothing to learn from; nothing written{kept}; likely "
            "causes: the reward gives every completion the same score (check it with make score), the data lacks "
            "what the reward reads, a temperature too low for samples to differ, or a min_margin wider than the "
            "reward's range"
        )
    if out.suffix == ".parquet":
        import datasets

        write_whole(out, lambda partial: datasets.Dataset.from_list(rows).to_parquet(str(partial)))
    else:
        write_text_whole(out, "".join(json.dumps(r) + "\n" for r in rows))
    sampled = {
        "prompts": len(prompts),
        "samples": args.num_samples,
        "completions_generated": len(prompts) * args.num_samples,
        "sampling_cpu_seconds": cpu_seconds() - cpu_at_start,
    }
    write_text_whole(pairs_cost(out), json.dumps({**sampled, "tokens_generated": tokens.generated}, indent=2) + "\n")
    after = f" after the first {args.skip_prompts}" if args.skip_prompts else ""
    adapter = f", sampled with the adapter {args.adapter} on" if args.adapter else ""
    print(
        f"{len(rows)} pairs from {len(prompts)} prompts{after}{adapter} ({args.num_samples} samples each, margin >= "
        f"{args.min_margin}) -> {out}"
    )
    return rows


if __name__ == "__main__":
    parser = TrlParser((PairsArguments, ModelConfig))
    main(*parse_config(parser))
