"""Validate the memory estimator: each method trains 2 steps through its real recipe, 4-bit + LoRA, on random-init
Qwen2 models, with the 7B profile's settings; the peak of live tensor bytes (core.training.memory_meter, what
torch.cuda.max_memory_allocated counts on a GPU) is compared with `studies.memory.estimate` for exactly those settings.

Usage:
    make bench-memory                         # = python -m studies.memory.validation: every model, ~30 min on 2 cores
    python -m studies.memory.validation --sizes qwen-vocab --logprobs chunked --methods grpo ppo --no-time

Models: ~86M and ~320M parameters at a 32,000-token vocabulary, and one at Qwen2.5's 152,064 tokens (hidden 512, 4
layers), where the logits dominate as they do at 7B. Each runs both log-prob paths (`logprobs: full`, TRL's;
`chunked`, core.logprobs.token_logprobs) with activation checkpointing on and off. Settings are
`recipes/configs/7b/<method>.yaml` as written (micro-batch, GRPO's k = 8, LoRA r=16 on all linear layers, nested NF4,
paged_adamw_8bit, bf16 compute, PPO's critic on the policy's base), with three changes for a CPU's time: completions of
64 tokens instead of the 7B length, one generation's micro-batches per optimizer step (GRPO: k / micro-batch = 2, the
others 1: the peak is per micro-batch; PPO's rollout shrinks with it and the estimator is given the same), and
`use_cpu`. The data is one GSM8K question (with the 7B system prompt) repeated, and one chosen/rejected pair built from
it, so every sequence length is known exactly: a random model never stops early, so completions run to their limit.

Per run it compares three measured parts with the estimate's: the model (4-bit bases, LoRA, PPO's critic: live
when training starts), what stays live between steps (adds the optimizer state), and the peak. Writes
<out>/validation.json (records: method, model, vocab_size, logprobs, settings, measured MB, estimated MB, relative
error, parts) and prints a table; then times each method's two log-prob paths without the meter at Qwen2.5's
vocabulary (<out>/time.json: chunked / full training seconds) and the small GRPO run without the meter against the
metered one (<out>/overhead.json: the meter's cost). `--publish` also writes results/memory/validation.json and
time.json, which docs/memory.md's tables and tests/studies/memory/test_validation.py read.
"""

import argparse
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import yaml

from core.errors import one_line_errors
from studies.memory.estimate import GB, Settings, architecture, estimate, settings_from_config
from studies.memory.tables import validation_table
from studies.processes import run_command
from studies.tiny_world import build_tokenizer

REPO_ROOT = Path(__file__).resolve().parents[2]
METHODS = ("grpo", "ppo", "dpo", "orpo")
# Two sizes of the same family: ~86M and ~320M parameters (hidden, layers, vocabulary).
SIZES = {"small": (768, 6, 32000), "medium": (1024, 24, 32000), "qwen-vocab": (512, 4, 152064)}
COMPLETION_TOKENS = 64
PUBLISHED = REPO_ROOT / "results" / "memory" / "validation.json"
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "gsm8k_sample.jsonl"


def build_model(out: Path, hidden: int, layers: int, vocab: int):
    """A random-init Qwen2 (GQA with 2 KV heads, untied lm_head, as Qwen2.5-7B) with a local tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    tokenizer = build_tokenizer([r["question"] + "\n" + r["answer"] for r in rows] * 4, vocab_size=2048)
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3 // 64 * 64,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=2,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    if not (out / "config.json").is_file():
        torch.manual_seed(0)
        Qwen2ForCausalLM(config).save_pretrained(out)
        tokenizer.save_pretrained(out)
    return config


def grpo_messages(row: dict) -> list[dict]:
    """The messages the 7B GRPO config prompts a GSM8K row with, built as its recipe builds them."""
    from core.inputs.arguments import PromptArguments
    from core.inputs.prompts import row_messages

    config = yaml.safe_load((REPO_ROOT / "recipes" / "configs" / "7b" / "grpo.yaml").read_text())
    names = {"dataset_name", "task", "prompt_column", "prompt_template", "system_prompt"}
    return row_messages(row, PromptArguments(**{k: v for k, v in config.items() if k in names}))


def write_data(work: Path, tokenizer_dir: Path) -> dict:
    """One GSM8K question repeated, and one pair from it; returns their exact token lengths (the GRPO prompt as the
    7B config builds it)."""
    from transformers import AutoTokenizer

    row = json.loads(FIXTURE.read_text().splitlines()[0])
    gold = row["answer"].rsplit("#### ", 1)[1].strip()
    wrong = row["answer"].rsplit("#### ", 1)[0] + f"#### {gold}1"
    prompt = [{"role": "user", "content": row["question"]}]
    pair = {
        "prompt": prompt,
        "chosen": [{"role": "assistant", "content": row["answer"]}],
        "rejected": [{"role": "assistant", "content": wrong}],
    }
    (work / "prompts.jsonl").write_text((json.dumps(row) + "\n") * 64)
    (work / "pairs.jsonl").write_text((json.dumps(pair) + "\n") * 64)

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)

    def tokens(messages, generation_prompt=False) -> int:
        return len(
            tokenizer.apply_chat_template(
                messages, tokenize=True, add_generation_prompt=generation_prompt, return_dict=False
            )
        )

    return {
        "prompt": tokens(grpo_messages(row), generation_prompt=True),
        "pair_prompt": tokens(prompt, generation_prompt=True),
        "pair": max(tokens(prompt + pair[side]) for side in ("chosen", "rejected")),
    }


def accumulation(method: str) -> int:
    """Micro-batches per optimizer step: one, except that GRPO needs a whole group of k completions per generation
    batch (the 7B config's micro-batch of 4 is half of k = 8); the peak is per micro-batch either way."""
    if method != "grpo":
        return 1
    config = yaml.safe_load((REPO_ROOT / "recipes" / "configs" / "7b" / "grpo.yaml").read_text())
    return max(1, config["num_generations"] // config["per_device_train_batch_size"])


def run_args(
    method: str,
    model_dir: Path,
    work: Path,
    run_dir: Path,
    checkpointing: bool,
    logprobs: str = "full",
    metered: bool = True,
    dtype: str = "bfloat16",
) -> list[str]:
    data = work / ("pairs.jsonl" if method in ("dpo", "orpo") else "prompts.jsonl")
    args = [
        "--config",
        str(REPO_ROOT / "recipes" / "configs" / "7b" / f"{method}.yaml"),
        "--model_name_or_path",
        str(model_dir),
        "--dataset_name",
        str(data),
        "--output_dir",
        str(run_dir),
        "--use_cpu",
        "true",
        "--max_steps",
        "2",
        "--gradient_accumulation_steps",
        str(accumulation(method)),
        "--save_strategy",
        "no",
        "--logging_steps",
        "1",
        "--activation_checkpointing",
        str(checkpointing).lower(),
        "--measure_tensor_memory",
        str(metered).lower(),
        "--logprobs",
        logprobs,
        "--dtype",
        dtype,
        "--bf16",
        str(dtype == "bfloat16").lower(),
    ]
    if method == "grpo":
        args += ["--max_completion_length", str(COMPLETION_TOKENS)]
    if method == "ppo":
        args += ["--response_length", str(COMPLETION_TOKENS)]
    return args


def run_recipe(method: str, model_dir: Path, work: Path, run_dir: Path, checkpointing: bool, **options) -> dict:
    """One 2-step run of the method's recipe in a fresh `run_dir` (this bench's own); returns its cost.json."""
    shutil.rmtree(run_dir, ignore_errors=True)
    args = run_args(method, model_dir, work, run_dir, checkpointing, **options)
    log = work / f"{run_dir.name}.log"
    # a process of its own (the meter counts the run's tensors from its start), forked without the imports' seconds
    returncode, _ = run_command([sys.executable, "-m", f"recipes.{method}", *args], log)
    if returncode:
        raise SystemExit(f"{method} ({run_dir.name}) failed:\n{log.read_text()[-5000:]}")
    return json.loads((run_dir / "cost.json").read_text())


def with_pair_lengths(settings, lengths: dict):
    """DPO/ORPO settings for `write_data`'s pair: its exact prompt and sequence lengths, the sequence cut at the
    config's max_length as the trainer cuts it."""
    total = min(lengths["pair"], settings.prompt_length + settings.completion_length)
    return dataclasses.replace(
        settings, prompt_length=lengths["pair_prompt"], completion_length=total - lengths["pair_prompt"]
    )


def estimator_settings(method: str, lengths: dict, checkpointing: bool, logprobs: str, dtype: str = "bfloat16"):
    """The estimator's view of exactly what the run does: the 7B config as `make estimate` reads it, with this
    benchmark's overrides and the runs' exact lengths."""
    config = REPO_ROOT / "recipes" / "configs" / "7b" / f"{method}.yaml"
    settings = dataclasses.replace(
        settings_from_config(method, config, lengths["prompt"]),
        gradient_checkpointing=checkpointing,
        logprobs=logprobs,
        dtype=dtype,
    )
    if method == "grpo":
        return dataclasses.replace(
            settings, completion_length=COMPLETION_TOKENS, generation_batch=settings.micro_batch * accumulation(method)
        )
    if method == "ppo":  # one micro-batch per step: the rollout is one too
        return dataclasses.replace(
            settings,
            completion_length=COMPLETION_TOKENS,
            generation_batch=settings.micro_batch,
            rollout_batch=settings.micro_batch,
        )
    return with_pair_lengths(settings, lengths)


def estimated_parts(components: dict) -> dict:
    """The estimate's components grouped as the meter sees them (MB)."""
    mb = {key: value * GB / 2**20 for key, value in components.items()}
    model = mb["weights_gb"] + mb["lora_gb"] + mb["critic_weights_gb"]
    return {
        "model": model,
        "between_steps": model + mb["optimizer_gb"] + mb["rollout_buffer_gb"],
        "peak": mb["total_gb"],
    }


def record_architecture(record: dict):
    """The estimator's view of the model a published record was measured on (its `model` fields)."""
    from transformers import Qwen2Config

    m = record["model"]
    config = Qwen2Config(
        vocab_size=m["vocab"],
        hidden_size=m["hidden"],
        intermediate_size=m["intermediate"],
        num_hidden_layers=m["layers"],
        num_attention_heads=m["heads"],
        num_key_value_heads=m["kv_heads"],
        tie_word_embeddings=False,
    )
    return architecture(config)


def with_estimate(record: dict, arch=None) -> dict:
    """Fills a record's estimated fields from the current estimator (its measured fields stay as they are)."""
    components = estimate(arch or record_architecture(record), Settings(**record["settings"]))
    estimated = estimated_parts(components)
    record["estimated_mb"] = round(estimated["peak"], 1)
    record["error"] = round((estimated["peak"] - record["measured_mb"]) / record["measured_mb"], 4)
    for part, value in estimated.items():
        record["parts_mb"][part]["estimated"] = round(value, 1)
    record["estimated_components_mb"] = {k: round(v * GB / 2**20, 1) for k, v in components.items()}
    return record


def measure(
    size: str, methods, checkpointing_modes, logprobs_modes, work: Path, dtype: str = "bfloat16"
) -> list[dict]:
    hidden, layers, vocab = SIZES[size]
    model_dir = work / f"model-{size}"
    config = build_model(model_dir, hidden, layers, vocab)
    arch = architecture(config)
    lengths = write_data(work, model_dir)
    parameters = sum(i * o for _, i, o in arch.quantized) + arch.other_params
    records = []
    plan = [(lp, ckpt, m) for lp in logprobs_modes for ckpt in checkpointing_modes for m in methods]
    for logprobs, checkpointing, method in plan:
        run_dir = work / f"{size}-{method}-{logprobs}-{'ckpt' if checkpointing else 'nockpt'}"
        start = time.time()
        cost = run_recipe(method, model_dir, work, run_dir, checkpointing, logprobs=logprobs, dtype=dtype)
        settings = estimator_settings(method, lengths, checkpointing, logprobs, dtype)
        measured = cost["tensor_mb"]
        record = {
            "method": method,
            "size": size,
            "vocab_size": vocab,
            "logprobs": logprobs,
            "model": {
                "parameters": parameters,
                "hidden": hidden,
                "layers": layers,
                "vocab": vocab,
                "intermediate": config.intermediate_size,
                "heads": config.num_attention_heads,
                "kv_heads": config.num_key_value_heads,
            },
            "settings": dataclasses.asdict(settings),
            "measured_mb": round(measured["peak"], 1),
            "parts_mb": {part: {"measured": round(measured[part], 1)} for part in ("model", "between_steps", "peak")},
            "peak_rss_mb": round(cost["peak_memory_mb"], 1),
            "seconds": round(time.time() - start, 1),
        }
        with_estimate(record, arch)
        estimated = {part: values["estimated"] for part, values in record["parts_mb"].items()}
        records.append(record)
        print(
            f"{size:>10} {method:>4} {logprobs:>7} checkpointing {'on ' if checkpointing else 'off'}: measured "
            f"{record['measured_mb']:7.1f} MB, estimated {record['estimated_mb']:7.1f} MB, error "
            f"{record['error']:+.1%}  (model {measured['model']:.0f}/{estimated['model']:.0f}, between steps "
            f"{measured['between_steps']:.0f}/{estimated['between_steps']:.0f}; {record['seconds']:.0f} s)",
            flush=True,
        )
    return records


def meter_overhead(work: Path) -> dict:
    """Training seconds of the small GRPO run with and without the meter, measured now, one after the other."""
    hidden, layers, vocab = SIZES["small"]
    model_dir = work / "model-small"
    build_model(model_dir, hidden, layers, vocab)
    seconds = {}
    for metered in (False, True):
        run_dir = work / f"overhead-{'metered' if metered else 'plain'}"
        seconds[metered] = run_recipe("grpo", model_dir, work, run_dir, True, metered=metered)["train_seconds"]
    return {
        "method": "grpo",
        "size": "small",
        "train_seconds_without_meter": round(seconds[False], 2),
        "train_seconds_with_meter": round(seconds[True], 2),
        "ratio": round(seconds[True] / seconds[False], 2),
    }


def logprobs_time(work: Path, methods) -> list[dict]:
    """Training seconds of each method with TRL's log-prob path and the chunked one, on the Qwen2.5-vocabulary
    model, checkpointing on, without the meter, measured now, one after the other."""
    hidden, layers, vocab = SIZES["qwen-vocab"]
    model_dir = work / "model-qwen-vocab"
    build_model(model_dir, hidden, layers, vocab)
    rows = []
    for method in methods:
        seconds = {}
        for logprobs in ("full", "chunked"):
            run_dir = work / f"time-{method}-{logprobs}"
            cost = run_recipe(method, model_dir, work, run_dir, True, logprobs=logprobs, metered=False)
            seconds[logprobs] = cost["train_seconds"]
        rows.append(
            {
                "method": method,
                "vocab_size": vocab,
                "train_seconds_full": round(seconds["full"], 2),
                "train_seconds_chunked": round(seconds["chunked"], 2),
                "ratio": round(seconds["chunked"] / seconds["full"], 3),
            }
        )
        print(f"{method}: chunked / full training seconds {rows[-1]['ratio']:.2f}x", flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=SIZES)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--checkpointing", nargs="+", default=["on", "off"], choices=["on", "off"])
    parser.add_argument("--logprobs", nargs="+", default=["full", "chunked"], choices=["full", "chunked"])
    parser.add_argument(
        "--dtype",
        default="bfloat16",
        choices=["bfloat16", "float32"],
        help="compute dtype (the 7B configs': bfloat16; float32 where the CPU has no native bf16 matmul)",
    )
    parser.add_argument("--out", default="results/bench/memory")
    parser.add_argument("--publish", action="store_true", help=f"also write {PUBLISHED.relative_to(REPO_ROOT)}")
    parser.add_argument(
        "--overhead",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the small GRPO run without the meter (<out>/overhead.json)",
    )
    parser.add_argument(
        "--time",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time each method's chunked log-probs against TRL's at Qwen2.5's vocabulary (<out>/time.json)",
    )
    parser.add_argument(
        "--reestimate",
        metavar="VALIDATION_JSON",
        help="after an estimator change: recompute the estimates of these measured records in place; runs nothing",
    )
    one_line_errors()
    args = parser.parse_args(argv)

    if args.reestimate:
        path = Path(args.reestimate)
        records = [with_estimate(record) for record in json.loads(path.read_text())]
        path.write_text(json.dumps(records, indent=2) + "\n")
        print(validation_table(records))
        return records
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    for size in args.sizes:
        checkpointing = [mode == "on" for mode in args.checkpointing]
        records += measure(size, args.methods, checkpointing, args.logprobs, out, args.dtype)
    text = json.dumps(records, indent=2) + "\n"
    (out / "validation.json").write_text(text)
    if args.publish:
        PUBLISHED.parent.mkdir(parents=True, exist_ok=True)
        PUBLISHED.write_text(text)
    print(validation_table(records))
    if args.overhead:
        overhead = meter_overhead(out)
        (out / "overhead.json").write_text(json.dumps(overhead, indent=2) + "\n")
        print(
            f"the live-tensor meter's cost: {overhead['train_seconds_with_meter']} s of training with it, "
            f"{overhead['train_seconds_without_meter']} s without ({overhead['ratio']}x)"
        )
    if args.time:
        times = logprobs_time(out, args.methods)
        (out / "time.json").write_text(json.dumps(times, indent=2) + "\n")
        if args.publish:
            (PUBLISHED.parent / "time.json").write_text(json.dumps(times, indent=2) + "\n")
    worst = max(abs(r["error"]) for r in records)
    print(f"largest error {worst:.1%} over {len(records)} runs")
    return records


if __name__ == "__main__":
    main()
