"""The adapter merged into its base loaded in full precision (bf16, fp16 or fp32; never the 4-bit weights a QLoRA run
trained on: merging into rounded 4-bit weights and saving them rounds the adapter's update away), saved as an ordinary
model folder, and loaded back the way a user loads it."""

import gc
import json
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from trl import ModelConfig

from core.errors import UserError
from core.inputs.models import load_model, load_tokenizer, on_device

DTYPES = ("auto", "bfloat16", "float16", "float32")


def export_dtype(base: str, dtype: str) -> str:
    """The precision to merge and save in: `dtype`, or for "auto" the one the base checkpoint is stored in (its
    config's dtype: bfloat16 for Qwen2.5-7B-Instruct, float32 for the tiny worlds and the converted SmolLM2)."""
    if dtype not in DTYPES:
        raise UserError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    config = AutoConfig.from_pretrained(base)
    stored = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    name = str(stored).removeprefix("torch.") if stored is not None else "float32"
    return name if name in DTYPES else "float32"


def dequantize_into(model, quantized: ModelConfig) -> int:
    """Replaces each linear weight of `model` (full precision) by the base's 4-bit weight as the run trained on it
    (loaded with the run's quantization settings, dequantized): the adapter then sits on the weights it learned
    against, rounding and all. Returns how many weights were replaced."""
    import bitsandbytes as bnb

    four_bit = load_model(quantized)
    replaced = 0
    with torch.no_grad():
        for name, module in four_bit.named_modules():
            if isinstance(module, bnb.nn.Linear4bit):
                weight = bnb.functional.dequantize_4bit(module.weight.data, module.weight.quant_state)
                target = model.get_submodule(name).weight
                target.copy_(weight.to(device=target.device, dtype=target.dtype))
                replaced += 1
    del four_bit
    release()
    return replaced


def base_with_adapter(base: str, adapter: str, dtype: str, quantized: ModelConfig | None = None):
    """(the base in `dtype` with the adapter on, unmerged; the tokenizer the run saved beside its adapter). With
    `quantized` (the run's 4-bit settings), the base's linear weights are the 4-bit ones it trained on, dequantized."""
    from peft import PeftModel

    model = load_model(ModelConfig(model_name_or_path=base, dtype=dtype, load_in_4bit=False))
    if quantized is not None and not dequantize_into(model, quantized):
        raise RuntimeError(f"{base}: no 4-bit linear layer to dequantize")
    model = on_device(model)
    return PeftModel.from_pretrained(model, adapter), load_tokenizer(ModelConfig(model_name_or_path=adapter))


def save_merged(model, tokenizer, folder: Path) -> None:
    """Merges the adapter into the weights and saves an ordinary folder: safetensors, config, generation config,
    tokenizer and chat template. `model` is merged in place: drop it and `release()` before loading another."""
    merged = model.merge_and_unload()
    merged.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    if "quantization_config" in config:  # never: the base was loaded unquantized; a folder that says so would lie
        raise RuntimeError(f"{folder}: the merged model is flagged quantized")


def load_exported(folder: Path, dtype: str):
    """The exported folder as a user loads it: plain `from_pretrained`, no peft, no project code."""
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype))
    return on_device(model), AutoTokenizer.from_pretrained(folder)


def release() -> None:
    """Frees what dropped models held, before the next loads: one model in memory at a time (a 7B in bf16 twice
    would not fit the 24 GB GPU it trained on)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
