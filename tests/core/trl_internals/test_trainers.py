"""What a recipe trainer (RecipeTrainer) adds to a TRL trainer at its start: the adapter's random initialisation
follows the run's seed (TRL builds it before transformers' Trainer seeds); a 4-bit model's bf16 adapter multiplies in
fp32 where the CPU has no native bf16. Atomic checkpoints: tests/recipes/test_faults.py."""

import torch
from datasets import Dataset
from trl import DPOConfig, ModelConfig, get_peft_config

from core.inputs.models import model_kwargs
from core.runs.folder import RunFolder
from core.training.adapter_precision import Fp32ProductLinear, adapter_layers, native_bf16
from core.trl_internals.trainers import recipe_trainer


def dpo_trainer(model_path, seed: int, tmp_path):
    model_args = ModelConfig(
        model_name_or_path=str(model_path), load_in_4bit=True, dtype="float32", use_peft=True, lora_r=4
    )
    pairs = Dataset.from_list([{"prompt": "1+1=", "chosen": "2", "rejected": "3"}] * 2)
    args = DPOConfig(
        output_dir=str(tmp_path),
        seed=seed,
        use_cpu=True,
        bf16=False,
        report_to="none",
        max_length=16,
        activation_checkpointing=False,
    )
    args.model_init_kwargs = model_kwargs(model_args)
    trainer = recipe_trainer("dpo")(
        model=str(model_path),
        args=args,
        train_dataset=pairs,
        peft_config=get_peft_config(model_args),
        run=RunFolder(tmp_path, None, {}),
    )
    return trainer


def lora_init(model_path, seed: int, tmp_path) -> dict:
    trainer = dpo_trainer(model_path, seed, tmp_path)
    return {name: p.detach().clone() for name, p in trainer.model.named_parameters() if "lora_A" in name}


def test_the_adapters_starting_weights_follow_the_seed(tiny_world, tmp_path):
    model = tiny_world / "model"
    first, again, other = (lora_init(model, seed, tmp_path / str(i)) for i, seed in enumerate((3, 3, 4)))
    assert first and all((first[name] == again[name]).all() for name in first)
    assert any((first[name] != other[name]).any() for name in first)


def test_a_4bit_models_bf16_adapter_multiplies_in_fp32_only_without_native_bf16(tiny_world, tmp_path):
    """TRL's DPO trainer casts a 4-bit model's adapter to bf16; the recipe trainer keeps those weights and, on a CPU
    without native bf16 (an AVX2-only CPU, or `make ... CPU=avx2`), multiplies them in fp32."""
    layers = adapter_layers(dpo_trainer(tiny_world / "model", 3, tmp_path).model)
    assert layers and all(layer.weight.dtype == torch.bfloat16 for layer in layers)
    assert {type(layer) for layer in layers} == {torch.nn.Linear if native_bf16() else Fp32ProductLinear}
