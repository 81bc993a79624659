"""Live tensor memory on any device, on the real code path: what `torch.cuda.max_memory_allocated` counts on a GPU
(the bytes of live tensor storages), measured on a CPU too.

`LiveTensorMeter` is a `TorchDispatchMode`: every tensor an operator returns inside it has its storage counted once
(by the storage's identity), and a `weakref.finalize` on that storage takes its bytes off again when it is freed;
the meter keeps the peak. Tensors that exist before it starts (the loaded model, say) are added with `track`;
`model_tensors` lists a model's parameters, buffers and bitsandbytes' quantization constants (which are neither).
So the 4-bit weights, LoRA, gradients, optimizer state, activations, logits and their copies are counted exactly
as the trainers create them, which the estimator (`studies.memory.estimate`) is checked against. `rss_mb` is the
other measure, the process's resident memory, which is what a CPU run's peak is reported in.

torch's own `torch.distributed._tools.mem_tracker.MemTracker` would do this, but it registers gradient hooks on
every parameter and fails on the frozen 4-bit parameters of a QLoRA model; a small meter of our own is the way.
It costs Python-level dispatch on every operator (timed by `make bench-memory`: overhead.json), so recipes turn it
on only with `measure_tensor_memory: true`.

>>> with LiveTensorMeter() as meter:
...     a = torch.zeros(1024)               # 4 KiB
...     b = torch.zeros(2048)               # 8 KiB: 12 KiB live
...     del a                               # 8 KiB live
...     c = torch.zeros(512, dtype=torch.float64)  # 4 KiB: 12 KiB live again
>>> meter.peak_bytes, meter.live_bytes
(12288, 12288)
"""

import weakref
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def rss_mb(field: str = "VmRSS") -> float | None:
    """This process's resident memory (VmRSS) or its peak (VmHWM) in MiB, from /proc (Linux); None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def quant_state_tensors(param) -> list[torch.Tensor]:
    """The constants bitsandbytes keeps beside a 4-bit weight (none for other parameters)."""
    state = getattr(param, "quant_state", None)
    if state is None:
        return []
    tensors = [state.absmax, state.code]
    if state.nested:
        tensors += [state.state2.absmax, state.state2.code, state.offset]
    return [t for t in tensors if isinstance(t, torch.Tensor)]


def model_tensors(model) -> list[torch.Tensor]:
    """A model's parameters and buffers, and the quantization state bitsandbytes keeps beside each 4-bit weight."""
    return [*model.parameters(), *model.buffers(), *(t for p in model.parameters() for t in quant_state_tensors(p))]


class LiveTensorMeter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.live_bytes = 0
        self.peak_bytes = 0
        self._live: set[int] = set()

    def track(self, tensors) -> None:
        """Counts tensors that already exist (e.g. the model's parameters and buffers), each storage once."""
        for tensor in tensors:
            self._count(tensor)

    def reset_peak(self) -> None:
        self.peak_bytes = self.live_bytes

    def _count(self, tensor: torch.Tensor) -> None:
        if tensor.device.type == "meta":
            return
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):  # tensor subclasses without a plain storage
            return
        key = id(storage)
        if key in self._live:
            return
        nbytes = storage.nbytes()
        self._live.add(key)
        self.live_bytes += nbytes
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        weakref.finalize(storage, self._free, key, nbytes)

    def _free(self, key: int, nbytes: int) -> None:
        if key in self._live:
            self._live.discard(key)
            self.live_bytes -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for item in tree_flatten(out)[0]:
            if isinstance(item, torch.Tensor):
                self._count(item)
        return out
