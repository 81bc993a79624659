"""How much accelerator memory does each method need? An estimate from a model's config alone (no weights).

Usage:
    make estimate MODEL=qwen2.5-7b GPU_GB=24          # = python -m studies.memory.estimate --model qwen2.5-7b
    make estimate MODEL=recipes/models/qwen2.5-7b-instruct.json K=16 SEQ=1024
    make estimate MODEL=qwen2.5-7b ARGS="--logprobs full"   # TRL's full-vocabulary logits, not the chunks
    python -m studies.memory.estimate --model qwen2.5-7b --json   # one JSON object, method -> component -> GB

The model is built on the `meta` device from its config.json (a shipped short name, a path, or a hub id: only
config.json is fetched), so the parameter counts are exact. The training settings come from the profile's recipe
configs (`recipes/configs/<profile>/<method>.yaml`: micro-batch, group size k, sequence lengths, LoRA rank and
targets, optimizer, gradient checkpointing, compute dtype), falling back to TRL's defaults; flags override them.

Components, in GB (2**30 bytes), per process:
  weights_gb        base model: 4-bit NF4 linear layers (packed weights + quantization constants, nested or not),
                    everything else (embeddings, lm_head, norms, biases) in the compute dtype
  lora_gb           LoRA A/B matrices: fp32 (PEFT upcasts adapters on a quantized base), except that TRL's GRPO and DPO
                    cast them to the compute dtype
  gradients_gb      one gradient per trainable parameter, in its dtype (policy and PPO's critic)
  optimizer_gb      AdamW state: 8 bytes per trainable parameter, 2 for the 8-bit optimizers
  critic_weights_gb PPO only: the critic's own tensors, its LoRA and scalar head; its 4-bit base, embeddings and
                    norms are the policy's (core.trl_internals.ppo.load_value_model shares them)
  rollout_buffer_gb PPO only: the rollout's fp32 logits (rollout batch x response x vocabulary), kept for its epochs
  activations_gb    saved for backward, per model that trains (PPO: two): with activation checkpointing each layer's
                    input plus one layer's working set during its recompute; without it every layer's working set
                    (per-method vector counts in LAYER_VECTORS, read off the measured tensors)
  logits_gb         the language-model head's output and its copies at the start of backward (_logits_bytes)
  kv_cache_gb       generation (GRPO: the whole generation batch of k completions per prompt; PPO: one forward
                    batch of its rollout)
  reference_pass_gb DPO only: the no-grad forward of the reference (the same base with the adapter off) over the
                    chosen and rejected sequences; it runs before the policy's forward, so it does not add to it
  total_gb          weights + lora + optimizer + critic + rollout buffer
                    + max(training transient, kv_cache, reference_pass)   (the phases do not overlap), where the
                    training transient, at the start of backward or in a layer's recompute, is checkpointed inputs
                    + max(logits, one layer + gradients + one dequantized 4-bit matrix (CUDA)) with checkpointing,
                    and activations + logits without
Validated against the live-tensor peak of the real recipes (make bench-memory, results/memory/validation.json):
bf16 compute, at two model sizes, checkpointing on and off. For fp32 compute the counts are the same tensors at 4
bytes: at Qwen2.5's vocabulary within 1.4% (`--dtype float32`; the test runs it where a CPU has no bf16 matmul).
What the estimate leaves out: the CUDA context (~0.5 GB, not counted by torch.cuda.max_memory_allocated), allocator
fragmentation, and a vLLM server's memory. "fits" adds 10% + 0.5 GB to the total for those.
"""

import argparse
import dataclasses
import json
import math
from pathlib import Path

import yaml

from core.errors import one_line_errors
from core.logprobs.token_logprobs import chunk_tokens
from core.training.memory_meter import quant_state_tensors

REPO_ROOT = Path(__file__).resolve().parents[2]
GB = 2**30
METHODS = ("grpo", "ppo", "dpo", "orpo")
GPU_SIZES_GB = (8, 12, 16, 24, 40, 80)
# config.json of the models the 7B recipes use, so the estimate works offline.
MODELS = {
    "qwen2.5-7b": "recipes/models/qwen2.5-7b-instruct.json",
    "qwen2.5-7b-instruct": "recipes/models/qwen2.5-7b-instruct.json",
    "Qwen/Qwen2.5-7B-Instruct": "recipes/models/qwen2.5-7b-instruct.json",
}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# Bytes of optimizer state per trainable parameter.
OPTIMIZER_BYTES = {
    "adamw_torch": 8,
    "adamw_torch_fused": 8,
    "adamw_hf": 8,
    "paged_adamw_32bit": 8,
    "adamw_8bit": 2,
    "adamw_bnb_8bit": 2,
    "paged_adamw_8bit": 2,
    "sgd": 0,
}
# A GSM8K question with the 7B configs' system prompt in Qwen's chat template is 100-250 tokens.
PROMPT_TOKENS = 256
BLOCKSIZE = 64  # bitsandbytes' 4-bit block size (one absmax per 64 weights)
NESTED_BLOCKSIZE = 256  # double quantization: one fp32 absmax per 256 uint8 absmax values


def quantized_bytes(n: int, nested: bool) -> int:
    """Exact bytes bitsandbytes holds for one NF4-quantized matrix of `n` weights.

    >>> quantized_bytes(4096 * 4096, nested=False)   # packed + fp32 absmax + 16-entry code
    9437248
    >>> quantized_bytes(4096 * 4096, nested=True)    # packed + uint8 absmax + fp32 absmax of those + codes + offset
    8655940
    """
    blocks = math.ceil(n / BLOCKSIZE)
    code = 16 * 4
    if not nested:
        return math.ceil(n / 2) + 4 * blocks + code
    return math.ceil(n / 2) + blocks + 4 * math.ceil(blocks / NESTED_BLOCKSIZE) + 256 * 4 + code + 4


def measured_weight_bytes(model) -> int:
    """Bytes of a loaded model's parameters plus bitsandbytes' quantization state, summed tensor by tensor."""
    tensors = [t for param in model.parameters() for t in (param, *quant_state_tensors(param))]
    return sum(t.numel() * t.element_size() for t in tensors)


def resolve_model_config(model: str):
    from transformers import AutoConfig

    path = REPO_ROOT / MODELS[model] if model in MODELS else Path(model)
    if path.suffix == ".json":
        if not path.is_file():
            raise SystemExit(f"--model {model}: no such config file {path}")
        return AutoConfig.from_pretrained(str(path))
    return AutoConfig.from_pretrained(model)  # a hub id or a local model folder: config.json only


@dataclasses.dataclass
class Architecture:
    """What the estimate needs from the model, read off a meta-device build."""

    quantized: list[tuple[str, int, int]]  # (name, in_features, out_features) of each 4-bit linear layer
    other_params: int  # embeddings, lm_head, norms, biases: kept in the compute dtype
    lm_head_params: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int


def architecture(config) -> Architecture:
    import torch
    from torch import nn
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    lm_head = model.get_output_embeddings()
    # transformers keeps the output embedding out of bitsandbytes, as it does every non-Linear module.
    quantized = [
        (name, m.in_features, m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and m is not lm_head
    ]
    quantized_params = sum(i * o for _, i, o in quantized)
    total = sum(p.numel() for p in model.parameters())
    text = config.get_text_config()
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return Architecture(
        quantized=quantized,
        other_params=total - quantized_params,
        lm_head_params=0 if text.tie_word_embeddings else lm_head.weight.numel(),
        hidden=text.hidden_size,
        intermediate=text.intermediate_size,
        layers=text.num_hidden_layers,
        heads=text.num_attention_heads,
        kv_heads=getattr(text, "num_key_value_heads", None) or text.num_attention_heads,
        head_dim=head_dim,
        vocab=text.vocab_size,
    )


@dataclasses.dataclass
class Settings:
    """One method's training settings that drive memory."""

    method: str
    micro_batch: int  # sequences in one forward/backward (DPO/ORPO: pairs, so twice as many sequences)
    prompt_length: int
    completion_length: int
    generation_batch: int = 0  # sequences generated at once (GRPO, PPO)
    rollout_batch: int = 0  # PPO: sequences per rollout, whose logits it keeps through its epochs
    dtype: str = "bfloat16"
    nested_quant: bool = True
    lora_r: int = 16
    lora_targets: str | list[str] = "all-linear"
    optimizer: str = "paged_adamw_8bit"
    gradient_checkpointing: bool = True
    logprobs: str = "full"  # "chunked": core.logprobs.token_logprobs, no full-vocabulary logits


def _default(config_class, name):
    for field in dataclasses.fields(config_class):
        if field.name == name:
            return field.default if field.default is not dataclasses.MISSING else field.default_factory()
    raise KeyError(name)


def settings_from_config(method: str, path: Path, prompt_length: int = PROMPT_TOKENS) -> Settings:
    """Read a recipe config; keys it does not set take TRL's defaults for that method. GRPO and PPO configs
    bound only the completion, so the prompt length is given."""
    from trl import DPOConfig, GRPOConfig
    from trl.experimental.orpo import ORPOConfig
    from trl.experimental.ppo import PPOConfig

    config_class = {"grpo": GRPOConfig, "ppo": PPOConfig, "dpo": DPOConfig, "orpo": ORPOConfig}[method]
    values = yaml.safe_load(path.read_text()) or {}

    def get(key):
        return values[key] if key in values else _default(config_class, key)

    grad_accum = get("gradient_accumulation_steps")
    # transformers 5 names it activation_checkpointing; TRL's configs default the old name to True
    checkpointing = values.get("activation_checkpointing", values.get("gradient_checkpointing"))
    checkpointing = get("gradient_checkpointing") if checkpointing is None else checkpointing
    common = {
        "dtype": values.get("dtype", "bfloat16"),
        "nested_quant": values.get("use_bnb_nested_quant", False),
        "lora_r": values.get("lora_r", 16),
        "lora_targets": values.get("lora_target_modules", "all-linear"),
        "optimizer": str(get("optim")),
        "gradient_checkpointing": checkpointing,
        "logprobs": values.get("logprobs", "full"),
    }
    if common["dtype"] in (None, "auto"):
        common["dtype"] = "bfloat16"
    if method == "grpo":
        steps_per_generation = get("steps_per_generation") or grad_accum
        return Settings(
            method,
            get("per_device_train_batch_size"),
            prompt_length,
            get("max_completion_length"),
            generation_batch=get("per_device_train_batch_size") * steps_per_generation,
            **common,
        )
    if method == "ppo":
        rollout = get("per_device_train_batch_size") * grad_accum * get("num_mini_batches")
        return Settings(
            method,
            get("per_device_train_batch_size"),
            prompt_length,
            get("response_length"),
            generation_batch=min(rollout, get("local_rollout_forward_batch_size")),
            rollout_batch=rollout,
            **common,
        )
    max_length = get("max_length") or 1024
    return Settings(
        method, get("per_device_train_batch_size"), max_length // 2, max_length - max_length // 2, **common
    )


def _lora_params(arch: Architecture, settings: Settings) -> int:
    targets = settings.lora_targets
    chosen = [(i, o) for name, i, o in arch.quantized if targets == "all-linear" or name.rsplit(".", 1)[-1] in targets]
    return sum(settings.lora_r * (i + o) for i, o in chosen)


# What one decoder layer keeps for backward, per token, as (count in the compute dtype, count in fp32) of vectors of
# each width. Read off the live tensors of each trainer's real step (make bench-memory, bf16 compute, TRL 1.12,
# transformers 5.24, peft 0.21): the RMSNorms keep an fp32 copy of their input; GRPO keeps LoRA dropout's outputs and
# masks (TRL disables dropout for the others); PPO and ORPO train fp32 LoRA adapters, so every adapter input is
# cast (PPO to fp32; ORPO's hidden states are fp32 and cast down for the 4-bit matmuls); padded pairs (DPO) take
# the attention path that repeats K/V to every head.
LAYER_VECTORS = {
    "grpo": {"hidden": (11.5, 2), "intermediate": (5, 0), "attention": (2, 0), "kv": (2, 0), "lora": (7, 0)},
    "ppo": {"hidden": (0, 8), "intermediate": (3, 1), "attention": (2, 0), "kv": (2, 0), "lora": (0, 7)},
    "dpo": {"hidden": (2, 2), "intermediate": (4, 0), "attention": (4, 0), "kv": (0, 0), "lora": (7, 0)},
    "orpo": {"hidden": (6, 2), "intermediate": (1, 3), "attention": (4, 0), "kv": (0, 0), "lora": (7, 0)},
}


def _layer_bytes_per_token(arch: Architecture, settings: Settings, e: int) -> float:
    widths = {
        "hidden": arch.hidden,
        "intermediate": arch.intermediate,
        "attention": arch.heads * arch.head_dim,
        "kv": arch.kv_heads * arch.head_dim,
        "lora": settings.lora_r,
    }
    return sum(
        widths[w] * (n_compute * e + n_fp32 * 4) for w, (n_compute, n_fp32) in LAYER_VECTORS[settings.method].items()
    )


def _scored_tokens(settings: Settings, sequences: int) -> int:
    """Positions whose log-probs a method takes: the completion (GRPO, PPO, DPO), or every position (ORPO's NLL
    covers the prompt)."""
    if settings.method == "orpo":
        return sequences * (settings.prompt_length + settings.completion_length)
    return sequences * settings.completion_length


def _chunked_bytes(arch: Architecture, settings: Settings, sequences: int) -> float:
    """core.logprobs.token_logprobs' transient: three fp32 [chunk x vocabulary] buffers at a time (the chunk's
    log-softmax, its softmax, and their product or logsumexp's temporaries; measured), plus the fp32 d logp / d h rows
    it keeps for backward."""
    scored = _scored_tokens(settings, sequences)
    return 3 * 4 * min(chunk_tokens(arch.vocab), scored) * arch.vocab + 4 * scored * arch.hidden


def _logits_bytes(arch: Architecture, settings: Settings, sequences: int, e: int) -> float:
    """The language-model head's output and its copies at their peak (the start of backward). GRPO, DPO and ORPO:
    four fp32 copies (accelerate's fp32 output conversion under bf16 autocast, the gradient of TRL's gather as
    zeros + scatter_add, and the stacked gradient of its per-row logsumexp); ORPO also keeps the chosen half's
    log-softmax for its NLL term. PPO's own forward keeps the logits and two gradient buffers in the compute dtype
    over the whole sequence and the temperature-scaled response logits twice. GRPO scores only the completion.
    `logprobs: chunked` replaces all of these by one chunk (_chunked_bytes)."""
    if settings.logprobs == "chunked":
        return _chunked_bytes(arch, settings, sequences)
    length = settings.prompt_length + settings.completion_length
    if settings.method == "grpo":
        return sequences * settings.completion_length * arch.vocab * 16
    if settings.method == "ppo":
        return sequences * arch.vocab * (3 * e * length + 2 * e * settings.completion_length)
    per_token = 16 + (2 if settings.method == "orpo" else 0)  # ORPO: 4 bytes over the chosen half
    return sequences * length * arch.vocab * per_token


def estimate(arch: Architecture, settings: Settings) -> dict[str, float]:
    """Bytes per component for one method (see the module docstring), in GB."""
    e = DTYPE_BYTES[settings.dtype]
    if settings.optimizer not in OPTIMIZER_BYTES:
        raise SystemExit(f"optimizer {settings.optimizer!r} is not modelled; known: {', '.join(OPTIMIZER_BYTES)}")
    quantized = sum(quantized_bytes(i * o, settings.nested_quant) for _, i, o in arch.quantized)
    weights = quantized + arch.other_params * e
    lora = _lora_params(arch, settings)
    models = 2 if settings.method == "ppo" else 1  # PPO's critic runs forward and backward with the policy
    critic_trainable = lora + arch.hidden if models == 2 else 0  # its own LoRA on the same targets, the scalar head
    optimizer_per_param = OPTIMIZER_BYTES[settings.optimizer]
    length = settings.prompt_length + settings.completion_length
    sequences = settings.micro_batch * (2 if settings.method in ("dpo", "orpo") else 1)
    tokens = sequences * length
    # TRL's GRPO and DPO cast the adapters to the compute dtype under bf16; PPO's and ORPO's stay in PEFT's fp32.
    lora_bytes = e if settings.method in ("grpo", "dpo") else 4
    out = {
        "weights_gb": weights,
        "lora_gb": lora_bytes * lora,
        "gradients_gb": lora_bytes * lora + 4 * critic_trainable,
        "optimizer_gb": optimizer_per_param * (lora + critic_trainable),
    }
    out["critic_weights_gb"] = arch.hidden * e + 4 * critic_trainable if models == 2 else 0.0
    # PPO keeps the rollout's fp32 logits (rollout batch x response x vocabulary) through its training epochs;
    # chunked, only the policy's and the reference's log-probs
    per_token = 8 if settings.logprobs == "chunked" else arch.vocab * 4
    out["rollout_buffer_gb"] = (
        settings.rollout_batch * settings.completion_length * per_token if settings.method == "ppo" else 0.0
    )
    layer = tokens * _layer_bytes_per_token(arch, settings, e)
    out["logits_gb"] = _logits_bytes(arch, settings, sequences, e)
    if settings.gradient_checkpointing:
        # each layer's input is kept; backward recomputes one layer at a time, after the logits are freed
        saved = models * arch.layers * tokens * arch.hidden * e
        out["activations_gb"] = saved + layer
        # the peak is the start of backward (logits) or a layer's recompute, by when the gradients exist; there, on
        # CUDA, bitsandbytes dequantizes one 4-bit weight at a time to the compute dtype for the matmul (its CPU
        # kernels do not, so make bench-memory cannot see this term; at 7B the logits' phase is far larger anyway)
        dequantized = max(i * o for _, i, o in arch.quantized) * e
        transient = saved + max(out["logits_gb"], layer + out["gradients_gb"] + dequantized)
    else:
        out["activations_gb"] = models * arch.layers * layer
        transient = out["activations_gb"] + out["logits_gb"]
    kv_per_token = 2 * arch.layers * arch.kv_heads * arch.head_dim * e
    out["kv_cache_gb"] = settings.generation_batch * length * kv_per_token
    # DPO's reference: a no-grad forward with the adapter off, before the policy's; its fp32 logits are its peak
    # (chunked: one chunk, and the final hidden states)
    if settings.logprobs == "chunked":
        reference = _chunked_bytes(arch, settings, sequences) + tokens * arch.hidden * e
    else:
        reference = tokens * arch.vocab * (4 + e)
    out["reference_pass_gb"] = reference if settings.method == "dpo" else 0.0
    # gradients are not static: they are created during backward, after the logits' peak (`transient`)
    static = sum(out[k] for k in ("weights_gb", "lora_gb", "optimizer_gb", "critic_weights_gb", "rollout_buffer_gb"))
    out["total_gb"] = static + max(transient, out["kv_cache_gb"], out["reference_pass_gb"])
    return {key: value / GB for key, value in out.items()}


def fits(total_gb: float, gpu_gb: float) -> bool:
    return total_gb * 1.1 + 0.5 <= gpu_gb


def estimate_all(
    model: str,
    profile: str = "7b",
    k: int | None = None,
    seq: int | None = None,
    config_dir: Path | None = None,
    logprobs: str | None = None,
) -> tuple[dict, dict]:
    """(method -> components in GB, method -> Settings) for the profile's recipe configs."""
    arch = architecture(resolve_model_config(model))
    config_dir = config_dir or REPO_ROOT / "recipes" / "configs" / profile
    results, settings_by_method = {}, {}
    for method in METHODS:
        path = config_dir / f"{method}.yaml"
        if not path.is_file():
            raise SystemExit(f"no recipe config {path} for {method}")
        settings = settings_from_config(method, path)
        if k is not None and method == "grpo":
            prompts = max(1, settings.generation_batch // max(1, settings.micro_batch))
            settings.micro_batch, settings.generation_batch = k, k * prompts
        if seq is not None:
            settings.prompt_length, settings.completion_length = seq // 2, seq - seq // 2
        if logprobs is not None:
            settings.logprobs = logprobs
        results[method] = estimate(arch, settings)
        settings_by_method[method] = settings
    return results, settings_by_method


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help=f"{', '.join(MODELS)}, a config.json path, or a hub id")
    parser.add_argument("--profile", default="7b", help="recipe configs the settings come from")
    parser.add_argument("--k", type=int, help="GRPO group size (completions per prompt in a micro-batch)")
    parser.add_argument("--seq", type=int, help="prompt + completion tokens (split half and half)")
    parser.add_argument(
        "--logprobs", choices=("full", "chunked"), help="log-prob path for every method (default: the configs')"
    )
    parser.add_argument("--gpu_gb", type=float, default=24.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object, method -> component -> GB")
    one_line_errors()
    args = parser.parse_args(argv)

    results, settings = estimate_all(args.model, args.profile, args.k, args.seq, logprobs=args.logprobs)
    if args.json:
        print(json.dumps({m: {c: round(v, 4) for c, v in r.items()} for m, r in results.items()}, indent=2))
        return results
    components = [c for c in next(iter(results.values())) if c != "total_gb"]
    sizes = sorted({*GPU_SIZES_GB, args.gpu_gb})
    print(f"model {args.model}, settings from recipes/configs/{args.profile}/, GB = 2^30 bytes, estimated")
    print(f"{'component':<20}" + "".join(f"{m:>10}" for m in METHODS))
    for component in [*components, "total_gb"]:
        print(f"{component:<20}" + "".join(f"{results[m][component]:>10.2f}" for m in METHODS))
    for size in sizes:
        print(
            f"{'fits ' + format(size, 'g') + ' GB':<20}"
            + "".join(f"{'yes' if fits(results[m]['total_gb'], size) else 'no':>10}" for m in METHODS)
        )
    for method in METHODS:
        s = settings[method]
        print(
            f"{method}: micro-batch {s.micro_batch}, prompt {s.prompt_length} + completion {s.completion_length} "
            f"tokens, generation batch {s.generation_batch}, {s.dtype}, LoRA r={s.lora_r}, {s.optimizer}, "
            f"gradient checkpointing {s.gradient_checkpointing}, log-probs {s.logprobs}"
        )
    return results


if __name__ == "__main__":
    main()
