"""The memory estimator: its arithmetic against hand-computed values, its weight figure against a real 4-bit load,
and its command-line JSON interface on the shipped 7B config (offline)."""

import dataclasses
import json
import sys

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen2Config
from trl import ModelConfig

from core.inputs.models import load_model
from studies.memory.estimate import (
    GB,
    METHODS,
    Settings,
    architecture,
    estimate,
    estimate_all,
    fits,
    measured_weight_bytes,
    quantized_bytes,
)
from studies.memory.tables import estimate_table
from tests.conftest import REPO_ROOT, entry_point_error

# 2 layers, hidden 64, MLP 128, 4 query heads and 2 KV heads of 16, vocabulary 100, untied lm_head.
SMALL = {
    "vocab_size": 100,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}


def small_settings(method: str, **overrides) -> Settings:
    values = {
        "method": method,
        "micro_batch": 4,
        "prompt_length": 8,
        "completion_length": 8,
        "generation_batch": 8,
        "rollout_batch": 8,
        "dtype": "float32",
        "nested_quant": False,
        "lora_r": 8,
        "optimizer": "adamw_torch",
        "gradient_checkpointing": True,
    }
    return Settings(**{**values, **overrides})


def test_component_arithmetic_matches_hand_computed_bytes():
    arch = architecture(Qwen2Config(**SMALL))
    grpo = {key: value * GB for key, value in estimate(arch, small_settings("grpo")).items()}

    # 4-bit matrices per layer: q, o 64x64 = 4096 weights; k, v 64x32 = 2048; gate, up, down 64x128 = 8192.
    # Each: n/2 packed bytes + one fp32 absmax per 64 weights + a 16-entry fp32 code (64 bytes).
    q = 4096 // 2 + 4 * 4096 // 64 + 64  # 2368
    kv = 2048 // 2 + 4 * 2048 // 64 + 64  # 1216
    mlp = 8192 // 2 + 4 * 8192 // 64 + 64  # 4672
    quantized = 2 * (2 * q + 2 * kv + 3 * mlp)
    # fp32: embeddings and lm_head 100x64 each, q/k/v biases 64+32+32 and two norms of 64 per layer, final norm 64
    others = 4 * (2 * 6400 + 2 * (128 + 128) + 64)
    assert grpo["weights_gb"] == quantized + others == 95872

    # LoRA r=8 on every linear layer: r*(in+out) = 8*(128+96+96+128+192+192+192) = 8192 per layer, fp32
    lora = 2 * 8192
    assert grpo["lora_gb"] == grpo["gradients_gb"] == 4 * lora
    assert grpo["optimizer_gb"] == 8 * lora  # AdamW: two fp32 moments

    tokens = 4 * 16  # micro-batch 4 x (8 prompt + 8 completion tokens)
    # GRPO's layer per token, fp32: 13.5 hidden-wide vectors (LoRA dropout outputs and masks, the norms' copies),
    # 5 MLP-wide, q and the attention output, k and v (2 heads of 16), 7 LoRA A outputs of rank 8
    one_layer = tokens * 4 * (13.5 * 64 + 5 * 128 + 2 * 64 + 2 * 32 + 7 * 8)
    checkpoints = 2 * tokens * 64 * 4  # each layer's input
    assert grpo["activations_gb"] == checkpoints + one_layer == 481280
    assert grpo["logits_gb"] == 4 * 8 * 100 * 16  # completion tokens only, four fp32 copies
    assert grpo["kv_cache_gb"] == 8 * 16 * (2 * 2 * 2 * 16 * 4)  # 8 sequences x 16 tokens x K,V x layers x heads
    assert grpo["critic_weights_gb"] == grpo["rollout_buffer_gb"] == grpo["reference_pass_gb"] == 0
    # with checkpointing the logits are freed before the layers recompute (while gradients appear, and CUDA
    # dequantizes the largest 4-bit matrix, 64x128, for its matmul): the larger of the two phases, not the sum
    largest_dequantized = 8192 * 4
    assert grpo["total_gb"] == pytest.approx(
        95872 + (4 + 8) * lora + checkpoints + max(one_layer + 4 * lora + largest_dequantized, 51200)
    )

    no_checkpointing = {
        key: value * GB for key, value in estimate(arch, small_settings("grpo", gradient_checkpointing=False)).items()
    }
    assert no_checkpointing["activations_gb"] == 2 * one_layer
    # without it the peak is the start of backward: every layer's activations and the logits, no gradients yet
    assert no_checkpointing["total_gb"] == pytest.approx(95872 + 12 * lora + 2 * one_layer + 51200)

    ppo = {key: value * GB for key, value in estimate(arch, small_settings("ppo")).items()}
    critic_trainable = lora + 64  # its own LoRA and a 64 -> 1 head
    # the critic's 4-bit base, embeddings and norms are the policy's tensors: its own are the head (kept by PEFT's
    # modules_to_save) and its trainable LoRA + head copy
    assert ppo["critic_weights_gb"] == 64 * 4 + 4 * critic_trainable
    assert ppo["optimizer_gb"] == 8 * (lora + critic_trainable)
    assert ppo["rollout_buffer_gb"] == 8 * 8 * 100 * 4  # rollout of 8 x 8 response tokens, fp32 logits
    # the head over prompt and completion three times, the response's scaled logits twice
    assert ppo["logits_gb"] == 4 * 100 * (3 * 4 * 16 + 2 * 4 * 8)
    assert ppo["activations_gb"] == 2 * 2 * tokens * 64 * 4 + tokens * 4 * (8 * 64 + 4 * 128 + 2 * 64 + 2 * 32 + 7 * 8)
    assert ppo["total_gb"] > grpo["total_gb"]

    dpo = {key: value * GB for key, value in estimate(arch, small_settings("dpo", generation_batch=0)).items()}
    assert dpo["reference_pass_gb"] == 8 * 16 * 100 * 8  # chosen + rejected, no gradient, fp32 logits + a copy
    assert dpo["logits_gb"] == 8 * 16 * 100 * 16
    assert dpo["kv_cache_gb"] == 0


def test_chunked_logprobs_arithmetic():
    """`logprobs: chunked`: three fp32 buffers of one chunk of tokens x the vocabulary, plus an fp32 hidden-wide row
    per scored token; PPO's rollout keeps two fp32 log-probs per response token instead of logits."""
    arch = architecture(Qwen2Config(**SMALL))  # vocabulary 100: a chunk holds every scored token
    grpo = {k: v * GB for k, v in estimate(arch, small_settings("grpo", logprobs="chunked")).items()}
    assert grpo["logits_gb"] == 3 * 4 * (4 * 8) * 100 + 4 * (4 * 8) * 64  # 32 completion tokens
    orpo = {k: v * GB for k, v in estimate(arch, small_settings("orpo", logprobs="chunked")).items()}
    assert orpo["logits_gb"] == 3 * 4 * (8 * 16) * 100 + 4 * (8 * 16) * 64  # every position of 8 sequences
    ppo = {k: v * GB for k, v in estimate(arch, small_settings("ppo", logprobs="chunked")).items()}
    assert ppo["rollout_buffer_gb"] == 8 * 8 * 8
    dpo = {k: v * GB for k, v in estimate(arch, small_settings("dpo", logprobs="chunked", generation_batch=0)).items()}
    assert dpo["reference_pass_gb"] == dpo["logits_gb"] + 8 * 16 * 64 * 4  # + the reference's last hidden states

    big = dataclasses.replace(arch, vocab=152_064)  # a chunk is 110 tokens: the buffers stop growing with length
    long = estimate(big, small_settings("grpo", logprobs="chunked", completion_length=4096))["logits_gb"] * GB
    assert long == 3 * 4 * 110 * 152_064 + 4 * (4 * 4096) * 64


def test_7b_configs_fit_12_gb_with_chunked_logprobs():
    """The shipped 7B settings: GRPO, DPO and ORPO within 8 GB, PPO within 12, and all four on a 12 GB GPU with
    the margin; TRL's path (`--logprobs full`) does not fit 12 GB for any of them."""
    chunked, settings = estimate_all("qwen2.5-7b")
    assert {m: s.logprobs for m, s in settings.items()} == dict.fromkeys(METHODS, "chunked")
    assert settings["grpo"].completion_length == 512 and settings["grpo"].lora_r == 16
    for method in ("grpo", "dpo", "orpo"):
        assert chunked[method]["total_gb"] <= 8, method
    assert chunked["ppo"]["total_gb"] <= 12
    assert all(fits(r["total_gb"], 12) for r in chunked.values())
    full, _ = estimate_all("qwen2.5-7b", logprobs="full")
    assert not any(fits(r["total_gb"], 12) for r in full.values())
    # docs/memory.md's 7B table is these numbers, and the README's row of totals too
    assert estimate_table(chunked, full) in (REPO_ROOT / "docs" / "memory.md").read_text()
    readme = (REPO_ROOT / "README.md").read_text()
    for results in (chunked, full):
        assert " | ".join(f"{results[m]['total_gb']:.2f}" for m in METHODS) in readme


def test_nested_quantization_constants():
    n = 4096 * 4096
    blocks = n // 64
    # uint8 absmax per block, fp32 absmax per 256 blocks, a 256-entry fp32 code for them, the 16-entry code, offset
    assert quantized_bytes(n, nested=True) == n // 2 + blocks + 4 * (blocks // 256) + 1024 + 64 + 4


@pytest.mark.parametrize("nested", [False, True])
def test_weight_figure_matches_a_real_4bit_load(tmp_path, nested):
    config = Qwen2Config(
        **{
            **SMALL,
            "vocab_size": 512,
            "hidden_size": 256,
            "intermediate_size": 704,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
        }
    )
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    loaded = load_model(
        ModelConfig(model_name_or_path=str(tmp_path), load_in_4bit=True, dtype="float32", use_bnb_nested_quant=nested)
    )
    assert any(getattr(p, "quant_state", None) is not None for p in loaded.parameters()), "not a 4-bit load"
    measured = measured_weight_bytes(loaded)
    estimated = estimate(architecture(config), small_settings("grpo", nested_quant=nested))["weights_gb"] * GB
    assert abs(estimated - measured) / measured < 0.02, (estimated, measured)


def test_json_interface_on_the_shipped_7b_config(capsys, monkeypatch):
    from studies.memory.estimate import main

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs the one-line hook
    main(["--model", "qwen2.5-7b", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"grpo", "ppo", "dpo", "orpo"}
    for method, components in report.items():
        assert components["total_gb"] >= components["weights_gb"] > 0, method
    # 7.6B parameters, 6.5B of them in 4-bit (~0.53 bytes each with constants), 1.09B embeddings/lm_head in bf16
    assert 4.5 < report["grpo"]["weights_gb"] < 6.0
    assert report["ppo"]["total_gb"] > report["grpo"]["total_gb"]  # the critic's activations, LoRA and optimizer
    assert report["ppo"]["critic_weights_gb"] < 0.05 * report["ppo"]["weights_gb"]  # its base is the policy's


def test_unknown_model_file_fails_clearly():
    error = entry_point_error("studies.memory.estimate", "--model", "no/such/config.json", "--json")
    assert error.startswith("--model no/such/config.json: no such config file"), error
