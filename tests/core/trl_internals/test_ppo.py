"""PPO's critic on the policy's frozen base (core.trl_internals.ppo.load_value_model): the same values as a critic
loaded from the checkpoint on its own, one copy of the base in memory, and adapters that stay apart."""

import torch
from peft import get_peft_model
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
from trl import ModelConfig, get_peft_config

from core.inputs.models import load_model
from core.training.memory_meter import model_tensors
from core.trl_internals.ppo import load_value_model


def model_args(tiny_world):
    return ModelConfig(
        model_name_or_path=str(tiny_world / "model"),
        dtype="float32",
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        use_bnb_nested_quant=True,
        use_peft=True,
        lora_r=8,
        lora_alpha=16,
        lora_target_modules="all-linear",
    )


def unique_bytes(*models) -> int:
    storages = {}
    for model in models:
        for tensor in model_tensors(model):
            storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
    return sum(storages.values())


def test_critic_shares_the_frozen_base_and_computes_what_a_loaded_one_does(tiny_world):
    margs = model_args(tiny_world)
    base = load_model(margs, AutoModelForCausalLM)
    critic = load_value_model(margs, base)
    policy = get_peft_model(base, get_peft_config(margs))

    policy_params = dict(policy.get_base_model().model.named_parameters())
    critic_params = dict(critic.model.named_parameters())
    frozen = [name for name, param in critic_params.items() if not param.requires_grad]
    assert frozen and all(critic_params[name] is policy_params[name] for name in frozen)
    trainable = [name for name, param in critic_params.items() if param.requires_grad]
    assert trainable and not any(critic_params[name] is policy_params.get(name) for name in trainable)
    assert {n for n, p in critic.named_parameters() if p.requires_grad} >= {"score.modules_to_save.default.weight"}

    # one copy of the base: the critic adds its adapter and score head, nothing else
    own = [p for n, p in critic.named_parameters() if "lora_" in n or "score" in n]
    assert unique_bytes(policy, critic) - unique_bytes(policy) == sum(p.numel() * p.element_size() for p in own)
    alone = load_model(margs, AutoModelForSequenceClassification, num_labels=1)

    # the critic's backbone is the checkpoint's: same hidden states as a critic loaded on its own (LoRA B is 0)
    ids = torch.randint(3, 200, (2, 12))
    with torch.no_grad():
        ours = critic.model(input_ids=ids).last_hidden_state
        theirs = alone.model(input_ids=ids).last_hidden_state
    assert torch.equal(ours, theirs)

    # training the critic's adapter leaves the policy's outputs alone
    with torch.no_grad():
        before = policy(input_ids=ids).logits
        for name, param in critic.named_parameters():
            if "lora_B" in name:
                param.add_(0.1)
        after = policy(input_ids=ids).logits
        moved = critic.model(input_ids=ids).last_hidden_state
    assert torch.equal(before, after) and not torch.equal(moved, ours)
