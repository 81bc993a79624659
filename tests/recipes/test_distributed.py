"""Recipes under `accelerate launch` with two CPU processes (gloo): the same scripts that run on one device."""

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.slow
@pytest.mark.parametrize("method", ["grpo", "dpo"])
def test_two_processes_on_cpu_both_finish_and_one_adapter_is_saved(method, tiny_world, tiny_pairs, tmp_path):
    out = tmp_path / method
    data = (
        ["--dataset_name", str(tiny_pairs)]
        if method == "dpo"
        else ["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "1"]
    )
    # accelerate's `--cpu` keeps one process unless mpirun is set up; `--multi_gpu` on a machine without CUDA
    # starts one process per rank over torch.distributed with the gloo backend.
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "-m",
        f"recipes.{method}",
        "--config",
        f"recipes/configs/tiny/{method}.yaml",
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
        *data,
    ]
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "[rank 0/2, backend gloo] finished" in output and "[rank 1/2, backend gloo] finished" in output
    assert output.count(f"{method.upper()} finished: 2 steps") == 1  # the summary: rank 0 only
    assert (out / "adapter_model.safetensors").exists() and not list(tmp_path.glob("*/rank*"))


EXPECTED_LAUNCH = {
    "single_gpu": ("NO", None),
    "multi_gpu": ("MULTI_GPU", None),
    "zero2": ("DEEPSPEED", 2),
    "zero3": ("DEEPSPEED", 3),
    "fsdp": ("FSDP", None),
}


def test_every_accelerate_config_parses_with_accelerate_as_what_its_name_says():
    from accelerate.commands.config.config_args import load_config_from_file

    paths = sorted((REPO_ROOT / "recipes" / "accelerate").glob("*.yaml"))
    assert {p.stem for p in paths} == set(EXPECTED_LAUNCH)
    for path in paths:
        config = load_config_from_file(str(path))
        distributed_type, zero_stage = EXPECTED_LAUNCH[path.stem]
        assert config.distributed_type.name == distributed_type, path.name
        if zero_stage:
            assert config.deepspeed_config["zero_stage"] == zero_stage, path.name
        if distributed_type == "FSDP":
            assert config.fsdp_config, path.name
