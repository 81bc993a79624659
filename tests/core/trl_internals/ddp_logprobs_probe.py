"""Run under `accelerate launch` with two processes: chunked log-probs through a DDP-wrapped 4-bit + LoRA model,
each rank on its own rows. Prints, on rank 0, whether the LoRA gradients after backward are the same on every rank
(DDP averaged them: its hooks fired) and whether the ranks' losses differed (they saw different data)."""

import json
import sys

import torch
from accelerate import Accelerator
from peft import get_peft_model
from transformers import AutoModelForCausalLM
from trl import ModelConfig, get_peft_config

from core.inputs.models import load_model
from core.trl_internals.chunked import ChunkedLogprobs


class Probe(ChunkedLogprobs):
    def __init__(self, accelerator):
        self.accelerator = accelerator


def main(model_path: str):
    accelerator = Accelerator(cpu=True)  # as the recipes' use_cpu: one process per rank over gloo
    margs = ModelConfig(
        model_name_or_path=model_path,
        dtype="float32",
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        use_peft=True,
        lora_r=8,
        lora_alpha=16,
        lora_target_modules="all-linear",
    )
    torch.manual_seed(0)
    model = get_peft_model(load_model(margs, AutoModelForCausalLM), get_peft_config(margs))
    for _, param in sorted(model.named_parameters()):
        if param.requires_grad:
            torch.nn.init.normal_(param, std=0.05)  # the same on every rank (same seed), B non-zero
    wrapped = accelerator.prepare(model)
    probe = Probe(accelerator)
    rank = accelerator.process_index
    ids = torch.randint(3, 300, (2, 16), generator=torch.Generator().manual_seed(100 + rank))
    kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False}
    positions = torch.ones_like(ids[:, 1:], dtype=torch.bool)
    out = probe._inside_forward(wrapped, probe._sequence_logprobs, kwargs, positions)
    loss = -out.logps.mean()
    accelerator.backward(loss)
    grads = torch.cat([p.grad.flatten() for _, p in sorted(model.named_parameters()) if p.grad is not None])
    gathered = accelerator.gather(grads[None])
    losses = accelerator.gather(loss.detach()[None])
    if accelerator.is_main_process:
        print(
            json.dumps(
                {
                    "world_size": accelerator.num_processes,
                    "distributed_type": str(accelerator.distributed_type),
                    "wrapped": type(wrapped).__name__,
                    "grads_equal": bool(torch.allclose(gathered[0], gathered[1], rtol=1e-5, atol=1e-7)),
                    "losses_differ": bool(losses[0] != losses[1]),
                }
            )
        )
    # both ranks leave the process group together: a rank exiting while gloo's threads still run can abort the
    # other ("terminate called without an active exception", seen once in CI)
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main(sys.argv[1])
