"""A 4-bit model's bf16 LoRA layers multiply in fp32 on a CPU without native bf16: the native kernel's numbers (fp32
sums of bf16 products, rounded to bf16), the same bf16 weights, gradients and saved keys. The recipe trainers apply
it: tests/core/trl_internals/test_trainers.py."""

import copy

import torch
import torch.nn.functional as F
from peft import get_peft_model
from torch.utils._python_dispatch import TorchDispatchMode
from trl import get_peft_config

from core.inputs.models import load_model, load_tokenizer
from core.training.adapter_precision import Fp32ProductLinear, adapter_layers, bf16_adapter_products_in_fp32
from tests.core.inputs.test_models import tiny_model_args


class ProductDtypes(TorchDispatchMode):
    """The dtype of every matrix product run inside it, as the kernels receive them (after autocast's casts)."""

    PRODUCTS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.matmul", "aten.linear")

    def __enter__(self):
        self.dtypes = []
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func.overloadpacket) in self.PRODUCTS:
            self.dtypes.append(args[0].dtype)
        return func(*args, **(kwargs or {}))


def qlora_model(tiny_world):
    """The tiny world's model in 4-bit with a LoRA adapter cast to bf16, as TRL's GRPO and DPO trainers cast it."""
    model_args = tiny_model_args(tiny_world, lora_dropout=0.0)  # no random masks: two forwards compare
    model = get_peft_model(load_model(model_args), get_peft_config(model_args))
    for param in model.parameters():
        if param.requires_grad:
            param.data = param.data.to(torch.bfloat16)
    for layer in adapter_layers(model):  # LoRA B starts at zero: give it weights, so the adapter's output counts
        if layer.weight.shape[1] == model_args.lora_r:
            torch.nn.init.normal_(layer.weight, std=0.05)
    model.train()
    return model, load_tokenizer(model_args)


def loss_and_grads(model, batch):
    loss = model(**batch, labels=batch["input_ids"]).loss
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}


def test_bf16_lora_layers_multiply_in_fp32_with_the_native_kernels_numbers(tiny_world):
    torch.manual_seed(0)
    model, tokenizer = qlora_model(tiny_world)
    as_trl = copy.deepcopy(model)
    keys = {name: p.dtype for name, p in model.state_dict().items()}

    changed = bf16_adapter_products_in_fp32(model, native=False)
    layers = adapter_layers(model)
    assert changed == len(layers) == 2 * 4 * 7  # A and B of the 7 projections of 4 layers
    assert all(type(layer) is Fp32ProductLinear for layer in layers)
    assert {name: p.dtype for name, p in model.state_dict().items()} == keys  # same keys, still bf16

    layer = layers[1]  # a B layer: rank-8 input
    x = torch.randn(5, layer.in_features).to(torch.bfloat16)
    out = layer(x)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, F.linear(x.float(), layer.weight.float()).to(torch.bfloat16))
    for autocast in (False, True):  # a bf16 run's autocast does not send the product back to bf16
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast), ProductDtypes() as products:
            assert torch.equal(layer(x), out)
        assert products.dtypes == [torch.float32], autocast
    # the bf16 kernel's product: fp32 sums too, so the two differ by the order of the sums, within a bf16 rounding
    torch.testing.assert_close(out, F.linear(x, layer.weight), rtol=2**-7, atol=1e-3)

    batch = tokenizer(["Ana has 12 coins and gets 5 more.\n#### 17"], return_tensors="pt")
    loss, grads = loss_and_grads(model, batch)
    trl_loss, trl_grads = loss_and_grads(as_trl, batch)
    torch.testing.assert_close(loss, trl_loss, rtol=1e-2, atol=0)
    assert grads.keys() == trl_grads.keys() and all(g.dtype == torch.bfloat16 for g in grads.values())
    for name, grad in grads.items():  # every gradient of the adapter within a few bf16 roundings of TRL's path
        torch.testing.assert_close(grad, trl_grads[name], rtol=0.05, atol=0.05 * trl_grads[name].abs().max().item())


def test_nothing_changes_with_native_bf16_or_fp32_adapters(tiny_world):
    model, _ = qlora_model(tiny_world)
    assert bf16_adapter_products_in_fp32(model, native=True) == 0
    for param in model.parameters():
        if param.requires_grad:
            param.data = param.data.float()
    assert bf16_adapter_products_in_fp32(model, native=False) == 0
    assert all(type(layer) is torch.nn.Linear for layer in adapter_layers(model))
