"""Check the memory estimator against measured peaks: each method trains 2 steps on a random-init model, 4-bit + LoRA
on the CPU, in its own process; its peak RSS above the runtime is compared with `eval.estimate` for the same
settings.

Usage:
    make bench-memory                  # = python -m eval.memory_check
    python -m eval.memory_check --hidden 512 --layers 4 --vocab 16000 --out results/bench/memory

The model is a Qwen2-architecture model with random weights (no download), large enough that the weights and
activations, not the Python/torch runtime, make up the training memory; it borrows the tiny world's tokenizer and
data (token ids below the tokenizer's size are valid in the larger vocabulary). Settings are the tiny profile's
recipe configs with one change that makes GRPO and PPO comparable: both run a micro-batch of 8 sequences (GRPO:
one prompt's group of 8, PPO: 8 prompts), as the 7B configs do. Sequence lengths given to the estimator are the
ones the runs actually have: prompt tokens of the data, completions at their maximum (a random model never stops
early), DPO/ORPO pairs padded to their longest.

Writes <out>/report.json and prints, per method: measured MB (peak RSS minus RSS before the model load), estimated
MB, and the relative error; and whether PPO measured above GRPO and the estimate orders the methods as measured.
"""

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from eval.estimate import Architecture, Settings, architecture, estimate, settings_from_config
from rewards._cli import one_line_errors

METHODS = ("grpo", "ppo", "dpo", "orpo")
COMPLETION_TOKENS = 48
MICRO_BATCH = 8


def build_model(out: Path, hidden: int, layers: int, vocab: int, tiny_model: Path):
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 8 // 3 // 64 * 64,
                         num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=2,
                         tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return config


def overrides(method: str, model_dir: Path, run_dir: Path, pairs: Path) -> list[str]:
    args = ["--model_name_or_path", str(model_dir), "--output_dir", str(run_dir), "--max_steps", "2",
            "--save_strategy", "no", "--logging_steps", "1"]
    if method == "grpo":
        args += ["--per_device_train_batch_size", str(MICRO_BATCH), "--gradient_accumulation_steps", "1",
                 "--max_completion_length", str(COMPLETION_TOKENS)]
    elif method == "ppo":
        args += ["--per_device_train_batch_size", str(MICRO_BATCH), "--local_rollout_forward_batch_size",
                 str(MICRO_BATCH), "--response_length", str(COMPLETION_TOKENS)]
    else:
        args += ["--dataset_name", str(pairs), "--per_device_train_batch_size", str(MICRO_BATCH // 2)]
    return args


def estimator_settings(method: str, config_path: Path, prompt_tokens: int, pair_tokens: int) -> Settings:
    """The estimator's view of exactly what the run does: the recipe config as `make estimate` reads it, with this
    benchmark's overrides and the runs' measured lengths."""
    settings = settings_from_config(method, config_path, prompt_tokens)
    if method in ("grpo", "ppo"):
        return dataclasses.replace(settings, micro_batch=MICRO_BATCH, completion_length=COMPLETION_TOKENS,
                                   generation_batch=MICRO_BATCH)
    return dataclasses.replace(settings, micro_batch=MICRO_BATCH // 2, prompt_length=prompt_tokens,
                               completion_length=pair_tokens - prompt_tokens)


def token_lengths(tokenizer_dir: Path, data: Path, pairs: Path) -> tuple[int, int]:
    """(mean prompt tokens with the chat template, longest chosen/rejected sequence) of the runs' data."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    def tokens(messages, generation_prompt=False) -> int:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    rows = [json.loads(line) for line in data.read_text().splitlines()[:200]]
    prompt = [tokens([{"role": "user", "content": r["question"]}], generation_prompt=True) for r in rows]
    pairs_rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    longest = max(tokens(p["prompt"] + p[side]) for p in pairs_rows for side in ("chosen", "rejected"))
    return round(sum(prompt) / len(prompt)), longest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--tiny", default="artifacts/tiny", help="the tiny world (tokenizer, data, pairs)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--out", default="results/bench/memory")
    one_line_errors()
    args = parser.parse_args(argv)

    tiny, out = Path(args.tiny), Path(args.out)
    pairs = tiny / "pairs" / "train.jsonl"
    for needed in (tiny / "model", tiny / "data" / "train.jsonl", pairs):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing: run `make tiny` and `make pairs` first")
    model_dir = out / "model"
    config = build_model(model_dir, args.hidden, args.layers, args.vocab, tiny / "model")
    arch: Architecture = architecture(config)
    prompt_tokens, pair_tokens = token_lengths(model_dir, tiny / "data" / "train.jsonl", pairs)

    report = {"model": {"hidden": args.hidden, "layers": args.layers, "vocab": args.vocab,
                        "parameters": sum(i * o for _, i, o in arch.quantized) + arch.other_params},
              "prompt_tokens": prompt_tokens, "pair_tokens": pair_tokens, "methods": {}}
    for method in args.methods:
        config_path = Path("recipes/configs/tiny") / f"{method}.yaml"
        run_dir = out / method
        command = [sys.executable, "-m", f"recipes.{method}", "--config", str(config_path),
                   *overrides(method, model_dir, run_dir, pairs)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode:
            raise SystemExit(f"{method} failed:\n{result.stderr[-3000:]}")
        cost = json.loads((run_dir / "cost.json").read_text())
        measured = cost["peak_memory_mb"] - cost["rss_before_model_mb"]
        settings = estimator_settings(method, config_path, prompt_tokens, pair_tokens)
        estimated = estimate(arch, settings)
        estimated_mb = estimated["total_gb"] * 1024
        report["methods"][method] = {"measured_mb": measured, "peak_rss_mb": cost["peak_memory_mb"],
                                     "runtime_mb": cost["rss_before_model_mb"], "estimated_mb": estimated_mb,
                                     "error": (estimated_mb - measured) / measured,
                                     "estimated_components_mb": {k: v * 1024 for k, v in estimated.items()},
                                     "models_in_memory": cost["models_in_memory"]}
        print(f"{method:>5}: measured {measured:7.0f} MB (peak RSS {cost['peak_memory_mb']:.0f} - runtime "
              f"{cost['rss_before_model_mb']:.0f}), estimated {estimated_mb:7.0f} MB, "
              f"error {(estimated_mb - measured) / measured:+.0%}", flush=True)
    methods = report["methods"]
    if not {"grpo", "ppo"} <= methods.keys():
        (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        return report
    measured_order = sorted(methods, key=lambda m: methods[m]["measured_mb"])
    estimated_order = sorted(methods, key=lambda m: methods[m]["estimated_mb"])
    report["ppo_above_grpo_measured"] = methods["ppo"]["measured_mb"] > methods["grpo"]["measured_mb"]
    report["measured_order"], report["estimated_order"] = measured_order, estimated_order
    report["same_order_grpo_ppo"] = ((methods["ppo"]["estimated_mb"] > methods["grpo"]["estimated_mb"])
                                     == report["ppo_above_grpo_measured"])
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"order, lowest first: measured {measured_order}, estimated {estimated_order}; "
          f"PPO above GRPO measured: {report['ppo_above_grpo_measured']}")
    return report


if __name__ == "__main__":
    main()
