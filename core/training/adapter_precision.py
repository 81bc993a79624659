"""A QLoRA adapter's bf16 products, computed in fp32 where the CPU has no bf16 kernels.

TRL 1.12 stores a 4-bit model's LoRA weights in bf16 (the QLoRA recipe: `GRPOTrainer` and `DPOTrainer` cast them).
With AVX-512 or AMX, oneDNN multiplies bf16 natively, accumulating in fp32 and rounding the result to bf16. Without
them (an AVX2-only CPU) PyTorch multiplies bf16 in its own kernel, 15-30x slower than fp32 for the adapter's small
products, and that was most of a 4-bit step's time there (docs/test-suite.md). On such a CPU each LoRA layer
multiplies its bf16 input and weight in fp32 and rounds the result to bf16: the same numbers the native kernel
computes up to the order of its sums. The weights, their gradients, the optimizer's state and the saved adapter stay
bf16, as TRL made them.
"""

import torch
import torch.nn.functional as F
from torch import nn


def native_bf16() -> bool:
    """Whether oneDNN multiplies bf16 natively on this CPU (AVX-512 or AMX; `ONEDNN_MAX_CPU_ISA=AVX2` says no)."""
    return torch.ops.mkldnn._is_mkldnn_bf16_supported()


class Fp32ProductLinear(nn.Linear):
    """An `nn.Linear` of bf16 weights whose product is computed in fp32 and returned in the weight's dtype.

    >>> layer = nn.Linear(3, 2, bias=False).to(torch.bfloat16)
    >>> layer.__class__ = Fp32ProductLinear
    >>> layer(torch.ones(1, 3, dtype=torch.bfloat16)).dtype
    torch.bfloat16
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = None if self.bias is None else self.bias.float()
        with torch.autocast("cpu", enabled=False):  # bf16 autocast (a bf16 run on a CPU) would cast it back
            return F.linear(x.float(), self.weight.float(), bias).to(self.weight.dtype)


def adapter_layers(model: nn.Module) -> list[nn.Linear]:
    """The LoRA A and B layers of a PEFT model (none in a model without an adapter)."""
    return [
        layer
        for name, layer in model.named_modules()
        if isinstance(layer, nn.Linear) and (".lora_A." in name or ".lora_B." in name)
    ]


def bf16_adapter_products_in_fp32(model: nn.Module, native: bool | None = None) -> int:
    """On a CPU without native bf16 (`native`: `native_bf16()` unless given), every LoRA layer whose weight is bf16
    and on the CPU multiplies in fp32 from now on; the number of layers changed (0 on native bf16, on a GPU, for fp32
    adapters)."""
    if native_bf16() if native is None else native:
        return 0
    changed = [
        layer
        for layer in adapter_layers(model)
        if layer.weight.dtype == torch.bfloat16 and layer.weight.device.type == "cpu"
    ]
    for layer in changed:
        layer.__class__ = Fp32ProductLinear  # same parameters and state-dict keys: only the arithmetic changes
    return len(changed)
