"""Every method on the real model (SmolLM2-135M-Instruct, `make smol`) at the smallest budget, as `make <method>
PROFILE=smol` runs it (parsed as the CLI parses, the profile's YAML and code path: hub-style folder, chat template,
its end of turn, chunked log-probs at a 49k vocabulary): one real step, an adapter that loads, the printed summary;
GRPO once through the 4-bit path, and its held-out numbers equal `make eval` on the same problems."""

import json

import pytest

import recipes.dpo as dpo
import recipes.grpo as grpo
import recipes.orpo as orpo
import recipes.ppo as ppo
from eval.run import main as eval_main
from tasks.smol import SYSTEM_PROMPT
from tests.recipes.helpers import assert_heldout_block, assert_run_summary, count_4bit, metrics_steps, run_recipe

LAYERS = 30  # SmolLM2-135M: 30 decoder layers of 7 linear modules each
SMALL = ("--max_steps", "1", "--logging_steps", "1", "--per_device_train_batch_size", "2")
SMALL_RUNS = {
    "grpo": ("--num_generations", "2", "--gradient_accumulation_steps", "1", "--max_completion_length", "24"),
    "ppo": ("--local_rollout_forward_batch_size", "2", "--response_length", "24", "--num_ppo_epochs", "1"),
    "dpo": (),
    "ipo": (),
    "orpo": (),
}
MODULES = {"grpo": grpo, "ppo": ppo, "dpo": dpo, "ipo": dpo, "orpo": orpo}


@pytest.fixture(scope="module")
def smol_pairs(smol_world, tmp_path_factory):
    """Four preference pairs in `make pairs`'s format on the smol task's train problems: the worked gold answer
    chosen, an answer off by one rejected (sampling pairs from the model is `make pairs`'s own test)."""
    rows = [json.loads(line) for line in (smol_world / "data" / "train.jsonl").read_text().splitlines()[:4]]
    path = tmp_path_factory.mktemp("smol-pairs") / "train.jsonl"
    lines = []
    for row in rows:
        step, value = row["answer"].split("\n#### ")
        prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": row["question"]}]
        lines.append(
            {
                "prompt": prompt,
                "chosen": [{"role": "assistant", "content": f"{step}. The answer is {value}."}],
                "rejected": [{"role": "assistant", "content": f"The answer is {int(value) + 1}."}],
                "score_chosen": 1.0,
                "score_rejected": 0.0,
                "answer": row["answer"],
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("method", ["grpo", "ppo", "dpo", "ipo", "orpo"])
def test_one_step_of_each_method_on_the_real_model(method, smol_world, smol_pairs, tmp_path, capsys):
    out = tmp_path / "run"
    data = ("--dataset_name", str(smol_pairs)) if method in ("dpo", "ipo", "orpo") else ()
    config = f"recipes/configs/smol/{method}.yaml"
    trainer = run_recipe(MODULES[method], config, *SMALL, *SMALL_RUNS[method], *data, "--output_dir", str(out))
    assert metrics_steps(out) == [1]
    assert_run_summary(out, method, capsys.readouterr().out, steps=1)
    assert (out / "adapter_model.safetensors").exists() and (out / "chat_template.jinja").exists()
    assert "profile: smol" in (out / "config.yaml").read_text()
    if method == "ppo":
        wrapper = trainer.accelerator.unwrap_model(trainer.model)
        assert wrapper.policy.config.vocab_size == 49152 and wrapper.value_model.config.vocab_size == 49152
    else:
        assert trainer.model.config.vocab_size == 49152 and type(trainer).__name__.startswith("Chunked")


@pytest.mark.slow
def test_grpo_in_4bit_on_the_real_model_and_its_held_out_numbers_equal_make_eval(smol_world, tmp_path, capsys):
    """The 7B path exactly (NF4 base, LoRA, chunked log-probs), on the real model: one step, held-out on 4 problems
    at the start and the end; `make eval` with the command the run prints writes the same completions, word for word,
    and the same accuracy. 16 new tokens: the equality is the completions', right or wrong (each greedy evaluation
    in 4-bit without AVX512-BF16 costs ~0.25 s a token here, every layer dequantized at every call)."""
    out = tmp_path / "run"
    four_bit = ("--load_in_4bit", "true", "--use_bnb_nested_quant", "true", "--bnb_4bit_quant_type", "nf4")
    trainer = run_recipe(
        grpo,
        "recipes/configs/smol/grpo.yaml",
        *SMALL,
        *SMALL_RUNS["grpo"],
        *four_bit,
        "--heldout_limit",
        "4",
        "--heldout_max_new_tokens",
        "16",
        "--output_dir",
        str(out),
        heldout=True,
    )
    assert count_4bit(trainer.model) == LAYERS * 7
    printed = capsys.readouterr().out
    held = assert_heldout_block(out, printed, 1)
    assert f"make eval MODEL=artifacts/smol/model ADAPTER={out} TASK=smol LIMIT=4" in printed
    model = str(smol_world / "model")
    steps = (("base", (), held["before"], 0), ("adapter", ("--adapter", str(out)), held["after"], 1))
    for name, adapter, expected, step in steps:
        results = eval_main(
            [
                "--model",
                model,
                *adapter,
                "--task",
                "smol",
                "--limit",
                "4",
                "--max_new_tokens",
                "16",
                "--load_in_4bit",
                "--out",
                str(tmp_path / name),
            ]
        )
        assert results["accuracy"] == expected
        trained = [json.loads(line) for line in (out / "heldout" / f"step-{step}.jsonl").read_text().splitlines()]
        evaluated = [json.loads(line) for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
        assert [r["completion"] for r in evaluated] == [r["completion"] for r in trained] and len(trained) == 4
