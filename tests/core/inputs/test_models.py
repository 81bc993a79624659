import json

import pytest
import torch
from trl import ModelConfig, get_peft_config

from core.errors import DataError
from core.inputs.data import load_data
from core.inputs.models import load_model, load_tokenizer
from tests.conftest import FIXTURES


def tiny_model_args(tiny_world, **overrides):
    args = dict(
        model_name_or_path=str(tiny_world / "model"),
        load_in_4bit=True,
        use_peft=True,
        lora_r=8,
        lora_alpha=16,
        lora_target_modules="all-linear",
        use_bnb_nested_quant=True,
        dtype="float32",
    )
    args.update(overrides)
    return ModelConfig(**args)


def test_tiny_model_loads_in_4bit_and_a_step_changes_only_lora(tiny_world):
    import bitsandbytes as bnb
    from peft import get_peft_model

    model_args = tiny_model_args(tiny_world)
    model = load_model(model_args)
    quantized = [m for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    # 4 layers x 7 projections, all NF4 with double quantization.
    assert len(quantized) == 4 * 7
    assert all(m.weight.quant_state.quant_type == "nf4" and m.weight.quant_state.nested for m in quantized)
    model = get_peft_model(model, get_peft_config(model_args))
    # As the trainers do. In eval mode on a CPU with AVX512-BF16, bitsandbytes repacks a 4-bit weight into its CPU
    # kernel's layout on the first gradient-free forward: the same weight, other bytes.
    model.train()
    lora_names = {n for n, p in model.named_parameters() if p.requires_grad}
    assert lora_names and all("lora_" in n for n in lora_names)

    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    frozen_before = {n: b.detach().clone() for n, b in model.named_buffers()}
    packed_before = {id(m): m.weight.data.clone() for m in quantized}
    tokenizer = load_tokenizer(model_args)
    batch = tokenizer(["Ana has 12 coins.\n#### 12"], return_tensors="pt")
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    for _ in range(2):  # LoRA B starts at zero: A only moves from the second step on
        loss = model(**batch, labels=batch["input_ids"]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert torch.isfinite(loss)
    changed = {n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())}
    assert changed == lora_names
    assert all(torch.equal(frozen_before[n], b) for n, b in model.named_buffers())
    assert all(torch.equal(packed_before[id(m)], m.weight.data) for m in quantized)


def test_local_jsonl_loads_and_missing_column_is_named(tmp_path):
    rows = load_data(str(FIXTURES / "gsm8k_sample.jsonl"), required_columns=["question", "answer"])
    assert len(rows) == 20 and rows[0]["answer"].split("####")[1].strip() == "72"
    with pytest.raises(ValueError, match=r"gsm8k_sample.jsonl is missing column\(s\) \['tests'\]"):
        load_data(str(FIXTURES / "gsm8k_sample.jsonl"), required_columns=["question", "tests"])


def test_parquet_and_missing_file_errors(tmp_path):
    import datasets

    datasets.Dataset.from_list([{"question": "q", "answer": "1"}]).to_parquet(tmp_path / "d.parquet")
    assert load_data(str(tmp_path / "d.parquet"))[0]["question"] == "q"
    with pytest.raises(FileNotFoundError, match="nothere.jsonl does not exist"):
        load_data(str(tmp_path / "nothere.jsonl"))


def test_unknown_hub_dataset_is_an_error_not_a_hang(monkeypatch):
    # Offline, a hub id that is not a local file must fail with the dataset's name in the message, in one line.
    with pytest.raises(DataError, match="no-such-org/no-such-dataset"):
        load_data("no-such-org/no-such-dataset")
    with pytest.raises(DataError, match="'openai/gsm8k': Couldn't reach 'openai/gsm8k'.*give a local file"):
        load_data("openai/gsm8k", "test", "main")


def test_world_json_records_the_build(tiny_world):
    world = json.loads((tiny_world / "world.json").read_text())
    assert 0.5 <= world["held_out_accuracy"] <= 0.9  # the slipping teacher leaves room for RL
    assert world["n_test"] == 200


def test_a_pad_token_that_is_the_end_of_sequence_gives_way_to_one_the_template_never_writes(tiny_world):
    """Where the pad token is missing or is the end of sequence, `load_tokenizer` pads with a special token the chat
    template never writes (PPO's loop drops every pad-valued token from its loss and its prompts); a pad apart from
    the end is kept as it is."""
    from transformers import AutoTokenizer

    from core.inputs.models import pad_apart_from_end

    tokenizer = AutoTokenizer.from_pretrained(tiny_world / "model")
    shipped = tokenizer.pad_token
    pad_apart_from_end(tokenizer)
    assert tokenizer.pad_token == shipped == "<|endoftext|>"  # already apart: kept
    written = tokenizer(tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False))["input_ids"]
    for before in (tokenizer.eos_token, None):
        tokenizer.pad_token = before
        pad_apart_from_end(tokenizer)
        assert tokenizer.pad_token == "<|endoftext|>" and tokenizer.pad_token_id not in written, before
