"""What a recipe trainer (RecipeTrainer) adds to a TRL trainer at its start: the adapter's random initialisation
follows the run's seed (TRL builds it before transformers' Trainer seeds). Atomic checkpoints:
tests/recipes/test_faults.py."""

from datasets import Dataset
from trl import DPOConfig, ModelConfig, get_peft_config

from core.inputs.models import model_kwargs
from core.runs.folder import RunFolder
from core.training.trainers import recipe_trainer


def lora_init(model_path, seed: int, tmp_path) -> dict:
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
    return {name: p.detach().clone() for name, p in trainer.model.named_parameters() if "lora_A" in name}


def test_the_adapters_starting_weights_follow_the_seed(tiny_world, tmp_path):
    model = tiny_world / "model"
    first, again, other = (lora_init(model, seed, tmp_path / str(i)) for i, seed in enumerate((3, 3, 4)))
    assert first and all((first[name] == again[name]).all() for name in first)
    assert any((first[name] != other[name]).any() for name in first)
