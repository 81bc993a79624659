"""GPU benchmark: each method for a few steps on the 7B architecture with random weights, on one CUDA GPU, offline.

Usage:
    make bench-gpu                                   # = python -m studies.memory.bench_gpu --model qwen2.5-7b
    make bench-gpu MODEL=recipes/models/qwen2.5-7b-instruct.json ARGS="--steps 3"
    make bench-gpu ARGS="--methods grpo ppo --logprobs chunked"    # a part of it (a short GPU lease)
    make bench-gpu ARGS="--methods dpo orpo --logprobs chunked --resume"   # adds to the part already in --out

Builds the model from its shipped config.json with random weights (bf16, written once under --work), and runs
`--steps` optimizer steps of each method in its own process with the 7B profile's settings
(`recipes/configs/7b/<method>.yaml`: 4-bit NF4 base + LoRA, micro-batches, k, lengths), loading that model in
4-bit as the recipes do. No hub: the prompt is one GSM8K question (tests/fixtures) repeated, the tokenizer is a BPE
trained on the fixture (the real one cannot be downloaded), and the DPO/ORPO pair is its gold solution against a
wrong one, so every sequence length is known (random weights never stop early: completions run to their limit).
Each method runs with both log-prob paths (`--logprobs chunked full`: the configs' chunks, TRL's full logits).
Reports per method and path: peak GPU memory (torch.cuda.max_memory_allocated since training began, the model included)
next to `studies.memory.estimate`'s figure for exactly those settings and lengths, and the estimate's error, and the
live-tensor meter's peak (core.training.memory_meter, which validated the estimator on the CPU) beside CUDA's own count
(`--no-meter` leaves it out: it dispatches every operator in Python, and GRPO's generation under it on an H200 ran at
132 tokens/s, 32,768 in 248 s, where generate alone ran at 247-313); seconds per step, samples per second, and
generation tokens per second (transformers generate in 4-bit, k=8 completions of the configured length). Writes
<out>/summary.json in `make compare`'s schema (accuracy fields null: the weights are random) and summary.md. Without
CUDA it stops at once, naming the missing GPU.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from core.errors import one_line_errors
from core.evaluation.generation import generate
from core.inputs.models import load_model, load_tokenizer
from core.runs.folder import library_versions
from core.runs.provenance import code_digest, commit
from studies.costs import HOLDS, samples_trained
from studies.memory.estimate import GB, architecture, estimate, resolve_model_config, settings_from_config
from studies.memory.validation import with_pair_lengths, write_data
from studies.runner import METHODS
from studies.tiny_world import build_tokenizer

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "gsm8k_sample.jsonl"


def require_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(
            f"make bench-gpu needs a CUDA GPU: torch.cuda.is_available() is False on this machine "
            f"(torch {torch.__version__}, no NVIDIA GPU or driver visible). Run it on a machine with "
            "one; `make bench-memory` measures memory on the CPU and `make estimate` needs no device."
        )


def build_random_model(model: str, work: Path) -> Path:
    """The architecture from config.json, random bf16 weights, a local tokenizer; built once."""
    import torch
    from transformers import AutoModelForCausalLM

    out = work / "model"
    if (out / "config.json").is_file():
        return out
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    tokenizer = build_tokenizer([r["question"] + "\n" + r["answer"] for r in rows] * 4, vocab_size=2048)
    config = resolve_model_config(model)
    config.eos_token_id, config.pad_token_id, config.bos_token_id = (
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
        None,
    )
    torch.manual_seed(0)
    with torch.device("cuda"):
        random_model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    random_model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    del random_model
    torch.cuda.empty_cache()
    return out


def estimated_mb(method: str, arch, lengths: dict, logprobs: str | None = None) -> float:
    """`studies.memory.estimate` for a bench-gpu run: the 7B config as written (its log-prob path, unless given),
    with the run's exact prompt and pair lengths (a pair is cut at the config's max_length, as the trainer cuts it)."""

    config = REPO_ROOT / "recipes" / "configs" / "7b" / f"{method}.yaml"
    settings = settings_from_config(method, config, lengths["prompt"])
    settings.logprobs = logprobs or settings.logprobs
    if method in ("dpo", "orpo"):
        settings = with_pair_lengths(settings, lengths)
    return estimate(arch, settings)["total_gb"] * GB / 2**20


def generation_tokens_per_second(model_dir: Path, k: int, new_tokens: int) -> float:
    """transformers generate on the 4-bit base: 4 prompts x k completions of exactly `new_tokens` tokens."""
    import torch
    from trl import ModelConfig

    args = ModelConfig(
        model_name_or_path=str(model_dir), load_in_4bit=True, use_bnb_nested_quant=True, dtype="bfloat16"
    )
    model, tokenizer = load_model(args), load_tokenizer(args)
    prompts = [
        [{"role": "user", "content": json.loads(line)["question"]}] for line in FIXTURE.read_text().splitlines()[:4]
    ]
    generate(model, tokenizer, prompts[:1], max_new_tokens=8, temperature=1.0)  # warm-up (kernels, allocator)
    model.generation_config.min_new_tokens = new_tokens  # random weights would stop at random; time a full batch
    torch.cuda.synchronize()
    start = time.time()
    generate(model, tokenizer, prompts, max_new_tokens=new_tokens, temperature=1.0, num_return_sequences=k)
    torch.cuda.synchronize()
    seconds = time.time() - start
    del model
    torch.cuda.empty_cache()
    return len(prompts) * k * new_tokens / seconds


def split_cell(split: dict | None) -> str:
    """Seconds in generation / reward calls / forward-backward + optimizer (cost.json's time split).

    >>> split_cell({"generation": 40.0, "rewards": 1.25, "heldout": 0.0, "forward_backward": 12.5})
    '40.0 / 1.2 / 12.5'
    """
    if not split:
        return ""
    return f"{split['generation']:.1f} / {split['rewards']:.1f} / {split['forward_backward']:.1f}"


def meter_cell(record: dict) -> str:
    return "" if record["peak_tensor_mb"] is None else f"{record['peak_tensor_mb'] / 1024:.2f}"


def gpu_table(records: list[dict]) -> str:
    """The measured-against-estimated table (summary.md and docs/memory.md), and the largest error in one line."""
    lines = [
        "| method | log-probs | max_memory_allocated GB | estimated GB | error | live-tensor meter GB | s/step "
        "| samples/s | generation tokens/s | models | generation / rewards / forward-backward s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        gen = "" if r["generation_tokens_per_second"] is None else f"{r['generation_tokens_per_second']:.0f}"
        lines.append(
            f"| {r['method']} | {r['logprobs']} | {r['peak_memory_mb'] / 1024:.2f} "
            f"| {r['estimated_memory_mb'] / 1024:.2f} | {r['estimate_error']:+.1%} | {meter_cell(r)} "
            f"| {r['seconds_per_step']:.1f} | {r['samples_per_second']:.2f} | {gen} | {r['models_in_memory']} "
            f"| {split_cell(r['time_split'])} |"
        )
    worst = max(records, key=lambda r: abs(r["estimate_error"]))
    metered = [r for r in records if r["peak_tensor_mb"] is not None]
    meter_gap = lambda r: abs(r["peak_tensor_mb"] / r["peak_memory_mb"] - 1)  # noqa: E731
    meter = max(metered, key=meter_gap) if metered else None
    said = (
        f"the live-tensor meter within {meter_gap(meter):.1%} of max_memory_allocated ({meter['method']})"
        if meter
        else "the live-tensor meter off"
    )
    not_run = ", ".join(m for m in METHODS if m not in {r["method"] for r in records}) or "none"
    lines += [
        "",
        f"Largest estimate error: {worst['estimate_error']:+.1%} ({worst['method']}, {worst['logprobs']}); {said}; "
        f"not run here: {not_run}.",
    ]
    return "\n".join(lines)


def kept_records(out: Path, device: str, planned: list[tuple[str, str]]) -> list[dict]:
    """--resume: the runs an earlier bench-gpu left in `out` on this same GPU, less those about to run again."""
    summary, settings = out / "summary.json", out / "settings.json"
    if not summary.is_file():
        return []
    earlier = json.loads(settings.read_text())["device"]
    if earlier != device:
        raise SystemExit(f"--resume: {settings} was measured on {earlier}, this GPU is {device}; use another --out")
    return [r for r in json.loads(summary.read_text()) if (r["method"], r["logprobs"]) not in planned]


def write_summary(records: list[dict], settings: dict, out: Path) -> None:
    """summary.json (make compare's schema), settings.json and summary.md from the runs measured so far."""
    (out / "summary.json").write_text(json.dumps(records, indent=2) + "\n")
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    head = f"# GPU benchmark: {settings['model']} in 4-bit + LoRA, {settings['device']}"
    text = [head, "", gpu_table(records), "", "```json", json.dumps(settings, indent=2), "```", ""]
    (out / "summary.md").write_text("\n".join(text))


def bench_command(method: str, logprobs: str, model_dir: Path, run_dir: Path, args, data: Path) -> list[str]:
    """The recipe's own command for one method on the random 7B, `args.steps` steps on `data`, no checkpoints."""
    return [
        sys.executable,
        "-m",
        f"recipes.{method}",
        "--config",
        f"recipes/configs/7b/{method}.yaml",
        "--model_name_or_path",
        str(model_dir),
        "--output_dir",
        str(run_dir),
        "--max_steps",
        str(args.steps),
        "--save_strategy",
        "no",
        "--logging_steps",
        "1",
        "--measure_tensor_memory",
        str(args.meter).lower(),
        "--logprobs",
        logprobs,
        "--dataset_name",
        str(data),
    ]


def bench_record(method: str, logprobs: str, run_dir: Path, arch, lengths, tokens_per_second, records: list):
    """(its cost.json, the estimate in MB, the estimate's error) of one finished run, its record appended to
    `records` (measured memory and time against the estimate)."""
    cost = json.loads((run_dir / "cost.json").read_text())
    samples = samples_trained(method, run_dir, cost["train_steps"])
    estimate_mb = estimated_mb(method, arch, lengths, logprobs)
    error = (estimate_mb - cost["peak_memory_mb"]) / cost["peak_memory_mb"]
    records.append(
        {
            "method": method,
            "logprobs": logprobs,
            "accuracy": None,
            "accuracy_ci95": None,
            "peak_memory_mb": cost["peak_memory_mb"],
            "memory_measure": cost["measure"],
            "train_seconds": cost["train_seconds"],
            "seconds_per_step": cost["train_seconds"] / cost["train_steps"],
            "train_steps": cost["train_steps"],
            "samples_per_second": samples / cost["train_seconds"],
            "samples": samples,
            "estimated_memory_mb": estimate_mb,
            "estimate_error": error,
            # the CPU meter's count on the GPU: checks the meter against CUDA's own allocator counter
            "peak_tensor_mb": cost.get("peak_tensor_mb"),
            "models_in_memory": cost["models_in_memory"],
            "holds": HOLDS[method],
            "trainable_params": cost["trainable_params"],
            "reward_first": None,
            "reward_last": None,
            "completion_length_mean": None,
            "generation_tokens_per_second": tokens_per_second if method in ("grpo", "ppo") else None,
            "time_split": cost.get("time_split"),
        }
    )
    return cost, estimate_mb, error


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-7b", help="a shipped short name, a config.json, or a hub id")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--work", default="/tmp/bench-gpu", help="where the random model is written (~15 GB)")
    parser.add_argument("--out", default="results/bench/gpu")
    parser.add_argument(
        "--logprobs", nargs="+", default=["chunked", "full"], choices=["chunked", "full"], help="log-prob paths to run"
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument(
        "--meter",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the live-tensor meter beside CUDA's count (--no-meter: faster, for a short lease)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the other methods' runs already in --out (several short leases)"
    )
    one_line_errors()
    args = parser.parse_args(argv)
    require_cuda()  # before anything slow

    import torch
    import yaml

    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    model_dir = build_random_model(args.model, work)
    grpo_config = yaml.safe_load((REPO_ROOT / "recipes/configs/7b/grpo.yaml").read_text())
    lengths = write_data(work, model_dir)
    prompts, pairs = work / "prompts.jsonl", work / "pairs.jsonl"
    arch = architecture(resolve_model_config(args.model))
    tokens_per_second = generation_tokens_per_second(
        model_dir, grpo_config["num_generations"], grpo_config["max_completion_length"]
    )
    settings = {
        "model": args.model,
        "device": torch.cuda.get_device_name(),
        "steps": args.steps,
        "generation_tokens_per_second": tokens_per_second,
        "versions": library_versions(),
        "commit": commit(),
        "code_digest": code_digest(),
        "weights": "random (architecture from config.json)",
    }
    planned = [(m, lp) for m in args.methods for lp in args.logprobs]
    records = kept_records(out, settings["device"], planned) if args.resume else []
    failed = []
    for method, logprobs in planned:
        run_dir = out / f"{method}-{logprobs}"
        shutil.rmtree(run_dir, ignore_errors=True)  # this bench's own folder from an earlier run
        command = bench_command(
            method, logprobs, model_dir, run_dir, args, pairs if method in ("dpo", "orpo") else prompts
        )
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode:  # the other methods still run: a GPU lease is short
            failed.append(f"{method} ({logprobs})")
            print(f"{method} {logprobs} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}", flush=True)
            continue
        cost, estimate_mb, error = bench_record(method, logprobs, run_dir, arch, lengths, tokens_per_second, records)
        metered = f" (live-tensor meter {cost['peak_tensor_mb'] / 1024:.2f} GB)" if args.meter else ""
        print(
            f"{method:>5} {logprobs:>7}: max_memory_allocated {cost['peak_memory_mb'] / 1024:.2f} GB, estimated "
            f"{estimate_mb / 1024:.2f} GB, error {error:+.1%}{metered}; {records[-1]['seconds_per_step']:.1f} s/step; "
            "time: "
            + ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in (cost.get("time_split") or {}).items()),
            flush=True,
        )
        # after every method, so that a run cut short (a lease's time limit) keeps what it measured
        write_summary(records, settings | {"seconds": round(time.time() - start, 1)}, out)
    if records:
        print((out / "summary.md").read_text())
    if failed:
        raise SystemExit(f"make bench-gpu: {', '.join(failed)} failed (above)")


if __name__ == "__main__":
    main()
