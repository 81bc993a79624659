"""`logprobs: chunked` against TRL's own path, one real training step each (4-bit NF4 + LoRA, gradient
checkpointing, as the 7B configs): the same seed gives the same data and completions, so the loss and every LoRA
gradient must agree, and so must the per-token log-probs. On the tiny model and on a random model with Qwen2.5's
152,064-token vocabulary; fp32 within 1e-5 relative, bf16 autocast within the bounds stated by each test."""

import json
import subprocess
import sys

import pytest
import torch
from datasets import Dataset
from transformers import AutoTokenizer, TrainerCallback
from trl import DPOConfig, DPOTrainer, GRPOConfig, GRPOTrainer, ModelConfig, get_peft_config
from trl.experimental.orpo import ORPOConfig, ORPOTrainer
from trl.trainer.utils import selective_log_softmax

from core.errors import UserError
from core.inputs.models import model_kwargs
from core.trl_internals.chunked import check_logprobs, with_logprobs
from rewards import get_reward_funcs
from tests.conftest import REPO_ROOT, entry_point_error, slow_without_native_bf16

QWEN_VOCAB = 152_064
FP32_TOLERANCE = 1e-5
# LoRA gradients sum over every token and layer in another order on each path, and the order's rounding depends on
# the CPU's vector width: 1.17e-5 on an AVX2-only CPU (GRPO, tiny model), under 1e-5 with AVX-512. A wrong log-prob
# (a shifted token, a missed mask) moves them by 1e-2 or more. PPO's loop takes the same 5e-5 (test_ppo_loop.py).
FP32_GRAD_TOLERANCE = 5e-5


@pytest.fixture(scope="module")
def rows(tiny_world):
    return [json.loads(line) for line in (tiny_world / "data" / "train.jsonl").read_text().splitlines()[:8]]


class CaptureStep(TrainerCallback):
    """The LoRA gradients just before the optimizer step, and the logged loss."""

    def __init__(self):
        self.grads, self.loss = {}, None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads = {n: p.grad.detach().float().clone() for n, p in model.named_parameters() if p.grad is not None}

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.loss = logs.get("loss", self.loss)


def model_args(path, dtype):
    return ModelConfig(
        model_name_or_path=str(path),
        dtype=dtype,
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        use_peft=True,
        lora_r=8,
        lora_alpha=16,
        lora_dropout=0.0,
        lora_target_modules="all-linear",
    )


def common(tmp_path, dtype, margs):
    return dict(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=dtype == "bfloat16",
        max_steps=1,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        activation_checkpointing=True,
        max_grad_norm=0.0,
        learning_rate=1e-3,
        seed=0,
        model_init_kwargs=model_kwargs(margs),
    )


def build(method, mode, path, dtype, rows, tmp_path):
    margs = model_args(path, dtype)
    tokenizer = AutoTokenizer.from_pretrained(path)
    capture = CaptureStep()
    if method == "grpo":
        args = GRPOConfig(
            **common(tmp_path, dtype, margs),
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=12,
            beta=0.04,  # the reference pass too
            temperature=0.7,
        )
        dataset = Dataset.from_list([{"prompt": r["question"], "answer": r["answer"]} for r in rows])
        extra = {"reward_funcs": get_reward_funcs(["math_accuracy"])}
    else:
        pairs = [{"prompt": r["question"], "chosen": r["answer"], "rejected": r["answer"][::-1]} for r in rows]
        dataset = Dataset.from_list(pairs)
        config = ORPOConfig if method == "orpo" else DPOConfig
        loss = {"loss_type": ["ipo"], "beta": 0.5} if method == "ipo" else {}
        args = config(**common(tmp_path, dtype, margs), per_device_train_batch_size=2, max_length=96, **loss)
        extra = {} if method == "orpo" else {"ref_model": None}
    trainer_class = {"grpo": GRPOTrainer, "dpo": DPOTrainer, "ipo": DPOTrainer, "orpo": ORPOTrainer}[method]
    trainer = with_logprobs(trainer_class, mode)(
        model=str(path),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(margs),
        callbacks=[capture],
        **extra,
    )
    # A mid-training adapter (LoRA's B starts at zero, where DPO's policy equals its reference), the same for both
    # paths. In fp32 runs the adapters are fp32 too: TRL's DPO casts them to bf16 under 4-bit whatever the compute
    # dtype, which would hide the log-prob path's own agreement behind bf16 rounding.
    generator = torch.Generator().manual_seed(1)
    for _, param in sorted(trainer.model.named_parameters()):
        if param.requires_grad:
            values = torch.randn(param.shape, generator=generator) * 0.05
            param.data = values.to(torch.float32 if dtype == "float32" else param.dtype)
    return trainer, capture


def one_step(method, mode, path, dtype, rows, tmp_path):
    trainer, capture = build(method, mode, path, dtype, rows, tmp_path / mode)
    trainer.train()
    assert capture.grads, "no LoRA gradient was captured"
    return trainer, capture


def compare(method, path, dtype, rows, tmp_path, loss_tolerance, grad_tolerance):
    full = one_step(method, "full", path, dtype, rows, tmp_path)[1]
    trainer, chunked = one_step(method, "chunked", path, dtype, rows, tmp_path)
    assert type(trainer).__mro__[1].__module__ == "core.trl_internals.chunked"  # the chunked override is in use
    assert abs(chunked.loss - full.loss) <= loss_tolerance * max(abs(full.loss), 1e-3)
    assert chunked.grads.keys() == full.grads.keys()
    for name, grad in full.grads.items():
        error = ((chunked.grads[name] - grad).norm() / grad.norm().clamp_min(1e-12)).item()
        assert error <= grad_tolerance, f"{name}: {error:.2e}"
    return trainer


@pytest.mark.parametrize("method", ["grpo", "dpo", "ipo", "orpo"])
def test_one_step_equals_trls_on_the_tiny_model_fp32(method, tiny_world, rows, tmp_path):
    compare(method, tiny_world / "model", "float32", rows, tmp_path, FP32_TOLERANCE, FP32_GRAD_TOLERANCE)


@pytest.mark.parametrize("method", ["grpo", "dpo", "orpo"])
def test_one_step_equals_trls_at_qwen_vocabulary_fp32(method, big_vocab_model, rows, tmp_path):
    trainer = compare(method, big_vocab_model, "float32", rows, tmp_path, FP32_TOLERANCE, FP32_GRAD_TOLERANCE)
    per_token_logps_equal(method, trainer, rows, FP32_TOLERANCE)


# On an AVX2-only EPYC these three took 150 s of make test-fast (DPO's 69 s); the fp32 runs above stay everywhere.
@slow_without_native_bf16
@pytest.mark.parametrize("method", ["grpo", "dpo", "orpo"])
def test_one_step_close_to_trls_at_qwen_vocabulary_bf16(method, big_vocab_model, rows, tmp_path):
    """bf16 autocast: the same bf16 logits, but the gradient rounds to bf16 at a different point (see
    tests/core/logprobs/test_token_logprobs.py), and the LoRA matmuls downstream round again: each LoRA gradient within
    1% (relative norm of the difference; bf16 keeps 8 bits, 0.4% a rounding)."""
    trainer = compare(method, big_vocab_model, "bfloat16", rows, tmp_path, 1e-3, 1e-2)
    per_token_logps_equal(method, trainer, rows, 1e-5)


def per_token_logps_equal(method, trainer, rows, tolerance):
    """The trained model's per-token log-probs by both paths, through the trainer's own (prepared) model."""
    tokenizer = trainer.processing_class
    ids = tokenizer([r["question"] + r["answer"] for r in rows[:3]], return_tensors="pt", padding=True)
    model = trainer.model_wrapped
    chunked_class = type(trainer)
    with torch.no_grad():
        if method == "grpo":
            keep = ids["input_ids"].shape[1] - 4
            ours, _, _ = trainer._get_per_token_logps_and_entropies(
                model, ids["input_ids"], ids["attention_mask"], keep
            )
            trainer.__class__ = GRPOTrainer
            try:
                theirs, _, _ = trainer._get_per_token_logps_and_entropies(
                    model, ids["input_ids"], ids["attention_mask"], keep
                )
            finally:
                trainer.__class__ = chunked_class
        else:
            positions = ids["attention_mask"][:, 1:].bool()
            kwargs = {**ids, "use_cache": False}
            ours = trainer._inside_forward(model, trainer._sequence_logprobs, kwargs, positions).logps[positions]
            logits = model(**kwargs).logits[:, :-1].float()
            theirs = selective_log_softmax(logits, ids["input_ids"][:, 1:])[positions]
    assert ((ours - theirs).abs().max() / theirs.abs().max()).item() <= tolerance


def test_check_logprobs_refuses_what_it_does_not_implement():
    def config(config_class, **values):
        return config_class(
            output_dir="/tmp/x", report_to="none", use_cpu=True, activation_checkpointing=False, **values
        )

    check_logprobs("chunked", "dpo", config(DPOConfig))
    with pytest.raises(UserError, match="logprobs: 'fast' is not one of full, chunked"):
        check_logprobs("fast", "grpo", config(GRPOConfig))
    check_logprobs("chunked", "dpo", config(DPOConfig, loss_type=["ipo"]))
    with pytest.raises(UserError, match=r"loss_type: \['hinge'\] \(only ipo, sigmoid\); set logprobs: full"):
        check_logprobs("chunked", "dpo", config(DPOConfig, loss_type=["hinge"]))
    check_logprobs("full", "dpo", config(DPOConfig, loss_type=["hinge"]))


@pytest.mark.parametrize("method", ["grpo", "ppo", "dpo", "orpo"])
def test_recipes_refuse_a_bad_logprobs_value_before_loading(method, tmp_path):
    config = f"recipes/configs/tiny/{method}.yaml"
    error = entry_point_error(
        f"recipes.{method}", "--config", config, "--logprobs", "fast", "--output_dir", f"{tmp_path}/run"
    )
    assert error.startswith("error: logprobs: 'fast' is not one of full, chunked"), error
    assert not (tmp_path / "run").exists()  # refused before any folder, data or model


@pytest.mark.slow
def test_chunked_logprobs_under_ddp_keep_gradients_in_sync(tiny_world):
    """Two CPU processes (gloo): the backbone runs inside DDP's forward (TRL's _ForwardRedirection), so DDP's
    reducer averages the LoRA gradients; called on the unwrapped model instead, each rank would keep its own."""
    result = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
        + ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
        + ["tests/core/trl_internals/ddp_logprobs_probe.py", str(tiny_world / "model")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["world_size"] == 2 and report["wrapped"] == "DistributedDataParallel", report
    assert report["losses_differ"], "both ranks saw the same rows: the test would show nothing"
    assert report["grads_equal"], report
