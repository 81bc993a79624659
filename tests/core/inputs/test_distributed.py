"""What a launch asks for, what a CPU machine needs to give it that, and the refusal when it would run as something
else, in this process (the launches themselves: tests/recipes/test_distributed.py)."""

import os

import pytest
import torch
from accelerate import PartialState
from trl import ModelConfig

from core.errors import UserError
from core.inputs.distributed import (
    check_engine,
    describe,
    engine_record,
    prepare_cpu_launch,
    requested_engine,
    shards_parameters,
)
from core.inputs.models import model_kwargs

LAUNCH_ENV = ("ACCELERATE_USE_DEEPSPEED", "ACCELERATE_USE_FSDP", "ACCELERATE_DEEPSPEED_ZERO_STAGE")


@pytest.fixture
def launched(monkeypatch):
    """Sets what `accelerate launch` puts in each process's environment for a config."""
    for key in (*LAUNCH_ENV, "ACCELERATE_MIXED_PRECISION"):
        monkeypatch.delenv(key, raising=False)

    def launch(engine: str | None, stage: int | None = None, mixed_precision: str = "bf16"):
        monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", mixed_precision)
        if engine:
            monkeypatch.setenv(f"ACCELERATE_USE_{engine}", "true")
        if stage:
            monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", str(stage))

    return launch


def test_the_request_and_whether_it_shards_parameters(launched):
    assert requested_engine() is None and not shards_parameters()
    launched("DEEPSPEED", 2)
    assert requested_engine() == "DEEPSPEED" and not shards_parameters()
    launched("DEEPSPEED", 3)
    assert shards_parameters()


def test_fsdp_shards_parameters(launched):
    launched("FSDP")
    assert requested_engine() == "FSDP" and shards_parameters()


def test_without_cuda_a_deepspeed_launch_gets_gloo_and_no_use_cpu_and_the_configs_own_precision(launched):
    assert prepare_cpu_launch(set()) == {}  # not launched: nothing changes
    launched("DEEPSPEED", 2)
    assert prepare_cpu_launch({"config"}) == {"use_cpu": "false", "ddp_backend": "gloo"}
    assert os.environ["ACCELERATE_MIXED_PRECISION"] == "no"  # the recipe's bf16/fp16 decide
    assert prepare_cpu_launch({"ddp_backend", "use_cpu"}) == {}  # the user's own settings stay


def test_without_cuda_a_ddp_launch_keeps_use_cpu(launched):
    launched(None)
    assert prepare_cpu_launch(set()) == {} and os.environ["ACCELERATE_MIXED_PRECISION"] == "no"


def test_a_cpu_deepspeed_launch_does_not_build_the_inference_all_reduce(launched, monkeypatch):
    """The C++ op DeepSpeed's CPU backend would compile at start is used by `inference_all_reduce` alone (which falls
    back without it); a DeepSpeed version that calls it from elsewhere, or builds it another way, fails here."""
    import importlib
    import inspect

    backend = importlib.import_module("deepspeed.comm.torch")
    monkeypatch.setattr(backend, "build_shm_op", backend.build_shm_op)  # restored after the test
    source = inspect.getsource(backend)
    assert source.count("= build_shm_op()") == 1 and "self.shm_comm_op = build_shm_op()" in source
    assert source.count("shm_comm_op.") == 2  # initialize and vector_kernel_level, both under `!= None`
    fallback = inspect.getsource(backend.TorchBackend.inference_all_reduce)
    assert "getattr(self, 'shm_vector_kernel_level', 0)" in fallback
    launched("DEEPSPEED", 2)
    prepare_cpu_launch(set())
    assert backend.build_shm_op() is None


def test_a_sharded_4bit_base_is_stored_in_the_compute_dtype(launched):
    args = ModelConfig(model_name_or_path="m", load_in_4bit=True, dtype="float32")
    assert model_kwargs(args)["quantization_config"].bnb_4bit_quant_storage == torch.uint8  # bitsandbytes' default
    launched("DEEPSPEED", 3)
    sharded = ModelConfig(model_name_or_path="m", load_in_4bit=True, dtype="float32")
    assert model_kwargs(sharded)["quantization_config"].bnb_4bit_quant_storage == torch.float32


def test_one_process_is_recorded_as_no_engine_and_a_sharding_request_is_refused(launched):
    state = PartialState()
    record = engine_record(state)
    assert record == {"type": "NO", "world_size": 1, "machines": 1, "backend": None}
    assert describe(record) == "NO, 1 process"
    check_engine(state)  # nothing was asked for
    launched("FSDP")
    with pytest.raises(UserError, match=r"asks for FSDP, .* would run as NO, unsharded. .*LAUNCH=zero3"):
        check_engine(state)
    launched("DEEPSPEED", 2)
    with pytest.raises(UserError, match="asks for DEEPSPEED, but accelerate would run it as NO"):
        check_engine(state)


def test_describe_names_stage_processes_machines_and_backend():
    record = {"type": "DEEPSPEED", "zero_stage": 3, "world_size": 16, "machines": 2, "backend": "nccl"}
    assert describe(record) == "DEEPSPEED ZeRO-3, 16 processes on 2 machines (nccl)"
    assert describe({"type": "FSDP", "fsdp_version": 2, "world_size": 8, "machines": 1, "backend": "nccl"}) == (
        "FSDP v2, 8 processes (nccl)"
    )
