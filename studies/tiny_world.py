"""Build the offline "tiny worlds": synthetic task, tokenizer, and an SFT-warm-started Qwen2-architecture model.

Usage:
    make tiny-rebuild              # both worlds built here, under artifacts/rebuilt/, compared with the shipped ones
    python -m studies.tiny_world --out artifacts/rebuilt/tiny --force
    python -m studies.tiny_world --world code --out artifacts/rebuilt/tiny-code

The recipes start from the worlds this builder made once and the repository ships (tasks/worlds/, installed by
`make tiny`): built from the same seeds on another CPU, the weights differ (docs/tiny-worlds.md). Building one here
says whether it equals the shipped world, file by file, and both held-out accuracies.

Everything is local and seeded, so every make target and test runs without a hub. The layout it writes:
    artifacts/tiny/data/{train,validation,test}.jsonl
                                             question/answer in GSM8K's format (answer ends in "#### n"); train
                                             rows also hold the teacher's `demonstration` the SFT imitated, which
                                             forgets the carry in half the problems that have one
    artifacts/tiny/model/                    tokenizer (with chat template) + SFT'd model, fp32 safetensors
    artifacts/tiny/world.json                settings, held-out greedy accuracy, build seconds
The code world (`--world code`, tasks/code.py) writes the same layout under artifacts/tiny-code/ with MBPP's
columns (text, code, test_list, test_setup_code) in data/{train,validation,test}.jsonl; its teacher slips in half
of its demonstrations (a wrong operator, an off-by-one constant, >= for >), and its accuracy is held-out pass@1
(all three tests pass in the sandbox).
"""

import argparse
import json
import time
from pathlib import Path

import torch

from core.errors import one_line_errors
from core.evaluation.accuracy import evaluate_model
from core.runs.provenance import commit, cpu
from tasks import code as code_task
from tasks import shipped
from tasks.arithmetic import generate_splits

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
DEFAULTS = {
    "seed": 0,
    "n_train": 4000,
    "n_validation": 200,
    "n_test": 200,
    "vocab_size": 320,
    "hidden_size": 128,
    "layers": 4,
    "heads": 4,
    "kv_heads": 2,
    "intermediate_size": 256,
    "max_length": 128,
    "sft_steps": 600,
    "batch_size": 32,
    "learning_rate": 5e-3,
    "slip_rate": 0.5,
}
CODE_DEFAULTS = DEFAULTS | {"sft_steps": 300, "world": "code"}
# The length world (studies/grid/length): the math world whose teacher answers half its problems directly, without the
# columns, so a policy can choose its length and the choice matters for correctness.
LENGTH_DEFAULTS = DEFAULTS | {"world": "length", "direct_rate": 0.5}
WORLD_DEFAULTS = {"math": DEFAULTS, "code": CODE_DEFAULTS, "length": LENGTH_DEFAULTS}
WORLD_TASKS = {"math": "tiny", "code": "tiny-code", "length": "tiny-length"}
MBPP_COLUMNS = ("task_id", "text", "code", "test_list", "test_setup_code")


def write_jsonl(path: Path, rows: list[dict], columns=("question", "answer")) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({c: r[c] for c in columns}) + "\n" for r in rows))


def build_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    # One token per digit, so that column arithmetic is learnable; byte-level so that any text round-trips.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=512,
    )


def to_chat(row: dict) -> dict:
    """SFT imitates the (fallible) teacher's demonstration, not the gold answer."""
    return {
        "prompt": [{"role": "user", "content": row.get("question") or row["text"]}],
        "completion": [{"role": "assistant", "content": row["demonstration"]}],
    }


def held_out_accuracy(model, tokenizer, test_rows: list[dict], task: str = "tiny") -> float:
    """Greedy accuracy through `eval/` (the same code and verifier as `make eval TASK=tiny` / `TASK=tiny-code`)."""
    metrics, _ = evaluate_model(model, tokenizer, task, test_rows)
    return metrics["accuracy"]


def make_data(out: Path, settings: dict) -> tuple[list[dict], list[dict], list[str]]:
    """(train rows with demonstrations, held-out rows, the texts the tokenizer learns from); writes data/."""
    if settings.get("world") == "code":
        train, validation, test = code_task.generate(
            settings["n_train"],
            settings["n_validation"],
            settings["n_test"],
            seed=settings["seed"],
            slip_rate=settings["slip_rate"],
        )
        for name, rows in (("train", train), ("validation", validation), ("test", test)):
            write_jsonl(out / "data" / f"{name}.jsonl", rows, MBPP_COLUMNS)
        return train, test, [r["text"] + "\n" + r["demonstration"] + "\n" + r["code"] for r in train]
    train, validation, test = generate_splits(
        settings["n_train"],
        settings["n_validation"],
        settings["n_test"],
        seed=settings["seed"],
        slip_rate=settings["slip_rate"],
        direct_rate=settings.get("direct_rate", 0.0),
    )
    for name, rows in (("train", train), ("validation", validation), ("test", test)):
        write_jsonl(out / "data" / f"{name}.jsonl", rows)
    return train, test, [r["question"] + "\n" + r["answer"] for r in train]


def build(out: Path, settings: dict) -> dict:
    from datasets import Dataset
    from transformers import Qwen2Config, Qwen2ForCausalLM, set_seed
    from trl import SFTConfig, SFTTrainer

    start = time.time()
    set_seed(settings["seed"])
    train, test, texts = make_data(out, settings)
    tokenizer = build_tokenizer(texts, settings["vocab_size"])
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=settings["hidden_size"],
        intermediate_size=settings["intermediate_size"],
        num_hidden_layers=settings["layers"],
        num_attention_heads=settings["heads"],
        num_key_value_heads=settings["kv_heads"],
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)

    args = SFTConfig(
        output_dir=str(out / "sft"),
        max_steps=settings["sft_steps"],
        per_device_train_batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"],
        lr_scheduler_type="cosine",
        warmup_steps=20,
        weight_decay=0.0,
        max_length=settings["max_length"],
        logging_steps=25,
        save_strategy="no",
        report_to="none",
        bf16=False,
        seed=settings["seed"],
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        activation_checkpointing=True,  # TRL's SFT default, under the name transformers 5 prefers
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([to_chat(r) for r in train]),
        processing_class=tokenizer,
    )
    trainer.train()

    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    accuracy = held_out_accuracy(model, tokenizer, test, WORLD_TASKS[settings.get("world", "math")])
    world = {
        "settings": settings,
        "parameters": model.num_parameters(),
        "held_out_accuracy": accuracy,
        "n_test": len(test),
        "build_seconds": round(time.time() - start, 1),
        "built_on": cpu() | {"commit": commit()},
    }
    (out / "world.json").write_text(json.dumps(world, indent=2) + "\n")
    return world


def ensure_tiny_world(
    out: str | Path = "artifacts/rebuilt/tiny", force: bool = False, world: str = "math", seed: int | None = None
) -> dict:
    """Builds a tiny world unless a complete one is already there; returns its world.json. Another `seed` builds
    another world (data, initial weights, SFT order): what a test that depends on one world's numbers meets on
    another CPU."""
    out = Path(out)
    if not force and (out / "world.json").exists() and (out / "model" / "config.json").exists():
        return json.loads((out / "world.json").read_text())
    settings = dict(WORLD_DEFAULTS[world])
    return build(out, settings | ({"seed": seed} if seed is not None else {}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="where to build it (default artifacts/rebuilt/<world>)")
    parser.add_argument("--world", choices=sorted(WORLD_DEFAULTS), default="math")
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    parser.add_argument("--seed", type=int, help="another world than the shipped seed's (default 0)")
    one_line_errors()
    args = parser.parse_args()
    args.out = args.out or f"artifacts/rebuilt/{WORLD_TASKS[args.world]}"
    world = ensure_tiny_world(args.out, args.force, args.world, args.seed)
    print(
        f"tiny world at {args.out}: {world['parameters']:,} parameters, held-out greedy accuracy "
        f"{world['held_out_accuracy']:.1%} on {world['n_test']} problems (built in {world['build_seconds']}s)"
    )
    if args.world != "length" and world["settings"] == WORLD_DEFAULTS[args.world]:  # the length world is not shipped
        name = WORLD_TASKS[args.world]
        print(shipped.describe_comparison(shipped.compare(args.out, name), name))


if __name__ == "__main__":
    main()
