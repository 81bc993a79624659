"""The engine a recipe runs under when `accelerate launch` starts it (recipes/accelerate/*.yaml): what the launch asked
for, the settings a machine without CUDA needs to give it that, a one-line refusal when it would run as something
else, and the record of the engine it really ran under (summary.json's `distributed`).

accelerate decides the engine from the launch's environment and the training arguments together, and falls back
without a word: `use_cpu: true` turns a DeepSpeed launch into plain DDP (MULTI_CPU), and FSDP exists in accelerate
only on accelerators (its CPU path is MULTI_CPU whatever the config says), so a CPU "FSDP" run is unsharded DDP.
"""

import importlib
import os

import torch
import torch.distributed as dist
from accelerate.state import AcceleratorState

from core.errors import UserError

# What a launch config's `distributed_type` sets in the environment of every process `accelerate launch` starts.
REQUESTS = {"ACCELERATE_USE_DEEPSPEED": "DEEPSPEED", "ACCELERATE_USE_FSDP": "FSDP"}
# The types accelerate gives a process group without an accelerator (never sharded).
UNSHARDED_FALLBACKS = ("NO", "MULTI_CPU")


def requested_engine() -> str | None:
    """DEEPSPEED or FSDP when this process was launched with a config asking for it, else None."""
    return next((engine for key, engine in REQUESTS.items() if os.environ.get(key, "").lower() == "true"), None)


def requested_zero_stage() -> int | None:
    stage = os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE")
    return int(stage) if requested_engine() == "DEEPSPEED" and stage and stage.isdigit() else None


def shards_parameters() -> bool:
    """Whether the launch shards the model's parameters (ZeRO-3, FSDP): a 4-bit base must then store its packed
    weights in the compute dtype, so they can be cut into shards like every other tensor."""
    return requested_engine() == "FSDP" or requested_zero_stage() == 3


def prepare_cpu_launch(given: set[str]) -> dict[str, str]:
    """What a launch needs on a machine without CUDA: sets the launch's mixed precision to "no" here, and returns
    the settings for the recipe's parser to read after the user's own command line (the YAML stays as written; a
    setting the user gave on the command line, one of `given`, is kept).

    The launch configs ask for bf16 autocast, which is for GPUs: here the recipe's own bf16/fp16 decide (the CPU
    configs compute in fp32, and DeepSpeed refuses a mixed precision the training arguments do not share). DeepSpeed
    runs on its CPU accelerator over gloo only when the trainer is not told `use_cpu` (that makes accelerate start
    DDP instead) and is given the backend (else accelerate counts one process)."""
    if torch.cuda.is_available() or "ACCELERATE_MIXED_PRECISION" not in os.environ:  # not launched by accelerate
        return {}
    os.environ["ACCELERATE_MIXED_PRECISION"] = "no"
    if requested_engine() != "DEEPSPEED":
        return {}
    skip_inference_allreduce_build()
    return {key: value for key, value in (("use_cpu", "false"), ("ddp_backend", "gloo")) if key not in given}


def skip_inference_allreduce_build() -> None:
    """DeepSpeed's CPU backend compiles its shared-memory all-reduce (a C++ extension: ~45 s on two cores, and a
    compiler, at the first start in an environment) whenever it starts a process group. Only inference's
    tensor-parallel layers call it (`inference_all_reduce`, which without it falls back to torch.distributed); training
    never does, so a CPU training launch does not build it. Written against deepspeed 0.19's `deepspeed.comm.torch`
    (`TorchBackend.__init__` calls `build_shm_op`; tests/core/inputs/test_distributed.py fails if that changes)."""
    # the submodule, not the package's attribute `torch` (which is torch itself)
    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None


def check_engine(state) -> None:
    """Refuses, in one line, a launch that asked for DeepSpeed or FSDP but would run as something else. Called with
    the training arguments' PartialState before any model loads (there FSDP is still the multi-accelerator type it
    becomes FSDP from), and with the trainer's AcceleratorState before training, where the type is final."""
    wanted, actual = requested_engine(), state.distributed_type.name
    if wanted is None or actual == wanted:
        return
    if not isinstance(state, AcceleratorState) and wanted == "FSDP" and actual not in UNSHARDED_FALLBACKS:
        return
    if wanted == "FSDP" and not torch.cuda.is_available():
        raise UserError(
            f"this launch asks for FSDP, but accelerate runs FSDP only on GPUs (or other accelerators): here it "
            f"would run as {actual}, unsharded. To shard on CPU use DeepSpeed (LAUNCH=zero3); FSDP needs a GPU"
        )
    raise UserError(
        f"this launch asks for {wanted}, but accelerate would run it as {actual}"
        + (" because use_cpu is true: set use_cpu false" if getattr(state, "_cpu", False) else "")
    )


def engine_record(state) -> dict:
    """The engine a run really ran under, from accelerate's state: its type (accelerate's name: DEEPSPEED, FSDP,
    MULTI_GPU, MULTI_CPU, NO), the ZeRO stage or FSDP version, the number of processes and of machines they ran on,
    and the collective backend."""
    record = {"type": state.distributed_type.name}
    if record["type"] == "DEEPSPEED":
        record["zero_stage"] = state.deepspeed_plugin.zero_stage
    if record["type"] == "FSDP":
        record["fsdp_version"] = state.fsdp_plugin.fsdp_version
    backend = dist.get_backend() if dist.is_available() and dist.is_initialized() else None
    per_machine = os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("LOCAL_SIZE")  # torchrun's; DeepSpeed's
    machines = state.num_processes // int(per_machine) if per_machine else 1
    return record | {"world_size": state.num_processes, "machines": machines, "backend": backend}


def describe(record: dict) -> str:
    """'DEEPSPEED ZeRO-2, 2 processes (gloo)' for the run's printed summary."""
    stage = (
        f" ZeRO-{record['zero_stage']}"
        if "zero_stage" in record
        else (f" v{record['fsdp_version']}" if "fsdp_version" in record else "")
    )
    processes = f"{record['world_size']} process{'es' if record['world_size'] != 1 else ''}" + (
        f" on {record['machines']} machines" if record["machines"] > 1 else ""
    )
    return f"{record['type']}{stage}, {processes}" + (f" ({record['backend']})" if record["backend"] else "")
