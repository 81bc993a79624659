"""Evaluate a base model or a LoRA adapter on a math or code benchmark with the training verifiers, or on your own
task: any dataset scored by any rewards (core/evaluation/reward_task.py).

Usage:
    make eval MODEL=artifacts/tiny/model TASK=tiny LIMIT=20
    make eval MODEL=Qwen/Qwen2.5-7B-Instruct ADAPTER=runs/grpo-7b-... TASK=gsm8k K=8
    make eval DATA=my_task.jsonl REWARDS=math_accuracy,mymod.my_reward REWARD_WEIGHTS=1,0.5 PROMPT_COLUMN=problem
    python -m eval.run --model artifacts/tiny/model --task tiny --limit 20 --out results/eval/tiny-base

Greedy by default; with --k > 1, k samples per problem at --temperature and pass@1..k (unbiased estimator).
Writes results.json (settings, template, accuracy or pass@k with a 95% interval, versions, the commit and CPU it ran
on, seconds; with rewards also each reward's mean and the weighted sum's) and samples.jsonl (prompt, completion,
extracted answer or program, gold, score, reason; with rewards each reward's score).
"""

import argparse
import json
import time
from pathlib import Path

import torch
from transformers.hf_argparser import string_to_bool
from trl import ModelConfig

from core.errors import UserError, one_line_errors
from core.evaluation.accuracy import accuracy_metrics, evaluate_model, load_for_eval
from core.evaluation.benchmarks import TASKS, load_task_data
from core.evaluation.generation import generate
from core.evaluation.reward_task import load_reward_task, score_samples
from core.inputs.models import (
    check_adapter,
    check_model,
    completion_room,
    load_tokenizer,
    max_positions,
)
from core.inputs.prompts import fit_prompt_list
from core.report.finished import FOUR_BIT, saved_config
from core.runs.folder import library_versions
from core.runs.provenance import commit, cpu
from core.runs.storage import write_text_whole
from rewards.sandbox import SandboxUnavailable, isolation_mode, isolation_record

# Your own task's completion budget unless --max_new_tokens: 512 tokens, or half of a smaller model's positions.
DEFAULT_MAX_NEW_TOKENS = 512


def precision_label(four_bit: bool, asked: bool | None, trained_4bit: bool | None) -> str:
    """What the base was loaded in and why, for the printed line and results.json.

    >>> precision_label(True, None, True), precision_label(False, False, True)
    ('4-bit NF4, as the adapter trained', 'float32, not as the adapter trained (4-bit NF4)')
    """
    loaded = FOUR_BIT if four_bit else ("bfloat16" if torch.cuda.is_available() else "float32")
    if trained_4bit is None:
        return loaded
    if asked is None or asked == trained_4bit:
        return f"{loaded}, as the adapter trained"
    return f"{loaded}, not as the adapter trained ({FOUR_BIT if trained_4bit else 'full precision'})"


def generate_vllm(
    model_path: str, adapter: str | None, prompts: list, k: int, temperature: float, max_new_tokens: int
) -> list[list[str]]:
    """The same prompts through vLLM (optional extra: `pip install vllm`); the adapter via a LoRARequest."""
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    llm = LLM(model=model_path, enable_lora=adapter is not None, seed=0)
    params = SamplingParams(n=k, temperature=temperature, max_tokens=max_new_tokens)
    lora = LoRARequest("adapter", 1, adapter) if adapter else None
    outputs = llm.chat(prompts, params, lora_request=lora, use_tqdm=True)
    return [[choice.text for choice in output.outputs] for output in outputs]


def arguments() -> argparse.ArgumentParser:
    """make eval's command line (the module's docstring is its help)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="local path or hub id of the base model")
    parser.add_argument("--adapter", help="a run directory holding a LoRA adapter")
    parser.add_argument("--task", choices=sorted(TASKS), help="a built-in task (or --data with --rewards)")
    parser.add_argument("--data", help="a local file (the task's format, or your own) or, with --rewards, a hub id")
    parser.add_argument("--rewards", help="your own task: comma-separated reward names or dotted paths")
    parser.add_argument("--reward_weights", help="comma-separated weights, one per reward (default 1 each)")
    parser.add_argument("--prompt_column", default="question", help="with --rewards: the column prompted")
    parser.add_argument("--prompt_template", help="with --rewards: the user message built from the row's columns")
    parser.add_argument("--system_prompt", help="with --rewards: a system message before each prompt")
    parser.add_argument(
        "--pass_threshold",
        type=float,
        help="with --rewards: a sample passes at this weighted reward (default: the sum of the positive weights)",
    )
    parser.add_argument("--split", default="train", help="with --rewards: the dataset split")
    parser.add_argument("--limit", type=int)
    parser.add_argument(
        "--drop_incomplete_rows",
        action="store_true",
        help="drop rows with a missing or empty prompt or gold column (else refused)",
    )
    parser.add_argument(
        "--truncate_long_prompts",
        action="store_true",
        help="cut prompts longer than the model has room for (else refused)",
    )
    parser.add_argument("--k", type=int, default=1, help="samples per problem; >1 reports pass@k")
    parser.add_argument("--temperature", type=float, help="default 0 (greedy) for k=1, 0.8 for k>1")
    parser.add_argument("--max_new_tokens", type=int)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument(
        "--load_in_4bit",
        type=string_to_bool,
        nargs="?",
        const=True,
        help="load the base in 4-bit NF4 (true/false; default: as the adapter's run trained, else full precision)",
    )
    parser.add_argument("--use_vllm", action="store_true", help="generate with vLLM (optional, must be installed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="output folder (default results/eval/<task>-<timestamp>)")
    return parser


def load_task(args) -> tuple:
    """(task, rows, its name, the completion budget): a built-in task's rows, or your own data scored by your rewards;
    bad data, rewards or settings fail here, before the model loads."""
    if args.rewards:
        if not args.data:
            raise UserError("--rewards scores your own task: give its data with --data (a local file or a hub id)")
        task, rows = load_reward_task(
            args.data,
            [name.strip() for name in args.rewards.split(",") if name.strip()],
            [float(w) for w in args.reward_weights.split(",")] if args.reward_weights else None,
            args.prompt_column,
            args.prompt_template,
            args.system_prompt,
            args.pass_threshold,
            args.split,
            args.limit,
            args.drop_incomplete_rows,
        )
        task_name, max_new_tokens = task.name, args.max_new_tokens or DEFAULT_MAX_NEW_TOKENS
    elif args.task:
        task = TASKS[args.task]
        rows = load_task_data(task, args.data, args.limit, args.drop_incomplete_rows)
        task_name, max_new_tokens = args.task, args.max_new_tokens or task.max_new_tokens
        if task.kind == "code":
            try:
                isolation_mode()  # refuse here, before the model loads, where untrusted code cannot be isolated
            except SandboxUnavailable as error:
                raise SystemExit(str(error)) from error
    else:
        raise UserError("say what to evaluate: --task (" + ", ".join(sorted(TASKS)) + ") or --data with --rewards")
    return task, rows, task_name, max_new_tokens


def say(args, task, rows: list, metrics: dict, results: dict, unparseable: list[int], out: Path) -> None:
    """The printed line: the headline metric with its interval (and the rewards' means), unparseable golds named."""
    temperature = results["generation"]["temperature"]
    headline = (
        f"accuracy {metrics['accuracy']:.1%} [{metrics['accuracy_ci95'][0]:.1%}, {metrics['accuracy_ci95'][1]:.1%}]"
        if args.k == 1
        else ", ".join(
            f"{key} {value:.1%}"
            for key, value in metrics.items()
            if key.startswith("pass@") and not key.endswith("ci95")
        )
    )
    if args.rewards:
        means = ", ".join(
            f"{name} {m['mean']:.3f}" if m["mean"] is not None else f"{name} n/a"
            for name, m in results["reward_means"].items()
        )
        headline += f" (weighted >= {task.threshold:g}); mean {means}; weighted {results['weighted_mean']['mean']:.3f}"
    if unparseable:
        print(
            f"warning: {len(unparseable)} of {len(rows)} gold answers cannot be parsed; scored wrong (in n): "
            + ", ".join(repr(str(rows[i][task.gold])[:60]) for i in unparseable[:5])
        )
    print(
        f"{results['task']}: {headline} on n={len(rows)} ({args.model}{' + ' + args.adapter if args.adapter else ''}, "
        f"{'greedy' if temperature == 0 else f'T={temperature}'}, {results['generation']['precision']}) -> {out}"
    )


def scored(args, task, rows: list, samples, model, tokenizer, temperature: float) -> tuple:
    """(metrics, per-sample records, the template results.json records, what else it records): a built-in task
    scored by its verifier, or your own by your rewards."""
    if args.rewards:
        reward_summary, records = score_samples(task, rows, samples)
        metrics = accuracy_metrics(records, args.k, len(rows))
        template = {
            "system_prompt": task.system_prompt,
            "prompt_column": task.prompt_column,
            "prompt_template": task.prompt_template,
            "chat_template": True,
        }
        extra = {
            "rewards": task.reward_names,
            "reward_weights": task.reward_weights,
            "pass_threshold": task.threshold,
            **reward_summary,
        }
    else:
        metrics, records = evaluate_model(model, tokenizer, args.task, rows, args.k, temperature, samples=samples)
        template = {"system_prompt": task.system_prompt, "user": task.template, "chat_template": True}
        extra = {}
    return metrics, records, template, extra


def main(argv=None):
    one_line_errors()
    args = arguments().parse_args(argv)

    temperature = args.temperature if args.temperature is not None else (0.8 if args.k > 1 else 0.0)
    if temperature < 0 or (args.k > 1 and temperature == 0):
        raise UserError(
            f"--temperature {temperature:g} with --k {args.k}: "
            + ("a temperature must be >= 0 (0: greedy)" if temperature < 0 else "k > 1 samples need a temperature > 0")
        )
    if args.k < 1 or args.batch_size < 1 or (args.max_new_tokens is not None and args.max_new_tokens < 1):
        raise UserError("--k, --batch_size and --max_new_tokens must be >= 1")
    if args.use_vllm:
        import importlib.util

        if importlib.util.find_spec("vllm") is None:
            raise SystemExit("--use_vllm: vLLM is not installed (pip install vllm); drop the flag to use transformers")
    task, rows, task_name, max_new_tokens = load_task(args)
    if args.adapter:
        check_adapter(args.adapter)
    saved = saved_config(args.adapter)
    trained_4bit = None if saved is None else bool(saved.get("load_in_4bit"))
    four_bit = args.load_in_4bit if args.load_in_4bit is not None else bool(trained_4bit)
    model_args = ModelConfig(model_name_or_path=args.model, load_in_4bit=four_bit)
    check_model(model_args, "--model")
    precision = precision_label(four_bit, args.load_in_4bit, trained_4bit)
    positions = max_positions(model_args)
    if args.rewards and not args.max_new_tokens and positions:
        max_new_tokens = min(max_new_tokens, positions // 2)
    budget = "the command line" if args.max_new_tokens else f"the {task_name} task's default"
    fewer = f'make eval ARGS="--max_new_tokens {positions // 2 if positions else 256}"'
    room = completion_room(positions, max_new_tokens, "max_new_tokens", budget, f"with {fewer}")
    prompts = fit_prompt_list(
        [task.messages(row) for row in rows],
        load_tokenizer(ModelConfig(model_name_or_path=args.adapter or args.model)),
        room,
        args.data or task_name,
        args.truncate_long_prompts,
        f"shorten them, cut them with --truncate_long_prompts, or leave the prompts more room with a smaller "
        f"completion budget than max_new_tokens {max_new_tokens} ({fewer.replace(str(positions // 2), 'N')})",
    )
    start = time.time()
    torch.manual_seed(args.seed)
    if args.use_vllm:
        samples = generate_vllm(args.model, args.adapter, prompts, args.k, temperature, max_new_tokens)
        model = tokenizer = None
    else:
        model, tokenizer = load_for_eval(args.model, args.adapter, four_bit)
        samples = generate(model, tokenizer, prompts, max_new_tokens, args.batch_size, temperature, args.k)
    metrics, records, template, extra = scored(args, task, rows, samples, model, tokenizer, temperature)
    out = Path(
        args.out
        or f"results/eval/{task_name.replace(':', '-').replace(',', '+')[:60]}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "task": task_name,
        "model": args.model,
        "adapter": args.adapter,
        "n": len(rows),
        **metrics,
        **extra,
        "generation": {
            "k": args.k,
            "temperature": temperature,
            "greedy": temperature == 0,
            "max_new_tokens": max_new_tokens,
            "batch_size": args.batch_size,
            "load_in_4bit": four_bit,
            "precision": precision,
            "seed": args.seed,
            "backend": "vllm" if args.use_vllm else "transformers",
        },
        "template": template,
        "data": args.data or task.default_data or f"{task.hub_id}:{task.hub_config or ''}:{task.split}",
        "versions": library_versions(),
        # where the number came from: a published accuracy names its commit and CPU class
        "measured": {"commit": commit(), **cpu()},
        "sandbox_isolation": isolation_record(),
        "seconds": round(time.time() - start, 1),
    }
    unparseable = sorted({r["index"] for r in records if r["reason"] == "unparseable gold"})
    if not args.rewards and task.kind == "math":
        # A gold answer the verifier cannot read is a data problem: scored wrong, in the denominator, and named.
        results["unparseable_gold"] = {
            "count": len(unparseable),
            "scored_as": "wrong (0), counted in n",
            "examples": [{"index": i, "gold": str(rows[i][task.gold])[:200]} for i in unparseable[:10]],
        }
    # samples first: results.json, what the next command reads, is written whole and last
    write_text_whole(out / "samples.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    write_text_whole(out / "results.json", json.dumps(results, indent=2) + "\n")
    say(args, task, rows, metrics, results, unparseable, out)
    return results


if __name__ == "__main__":
    main()
