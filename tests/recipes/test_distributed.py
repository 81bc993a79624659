"""Recipes under `accelerate launch` (the Makefile's LAUNCH= / NPROC=), as two CPU processes over gloo: DDP, DeepSpeed
ZeRO-2 and ZeRO-3 for GRPO and DPO, PPO under ZeRO-2 and ORPO under ZeRO-3 (4-bit base on; off where the adapter is
compared with one process's), PPO under ZeRO-3 and FSDP on CPU refused, and two "machines" on localhost. Each run
records the engine it ran under in summary.json; these tests hold it to what the launch asked for."""

import json
import os
import shlex
import socket
import subprocess
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from tests.conftest import NO_HELDOUT, REPO_ROOT, last_line, run_as_make
from tests.recipes.helpers import assert_adapter_loads_and_generates

STEPS = ["--max_steps", "2", "--logging_steps", "1", "--save_strategy", "no"]
# GRPO: 16 completions per rank = 2 prompts x 8, one micro-batch: each step is 4 prompts over the two ranks
GRPO_BATCH = ["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "1"]


def make_variables(*args: str, launch: str | None = None, nproc: int = 2, launch_args: str = "", **kw) -> list[str]:
    variables = [f"ARGS={shlex.join((*NO_HELDOUT, *args))}"]
    if launch:
        variables += [f"LAUNCH={launch}", f"NPROC={nproc}"] + ([f"LAUNCH_ARGS={launch_args}"] if launch_args else [])
    return variables + [f"{key}={value}" for key, value in kw.items()]


def make(method: str, *args: str, env=None, **kw):
    """`make <method> LAUNCH=<launch> NPROC=<nproc> ARGS=...`, as a user types it, started (`finished` waits)."""
    return subprocess.Popen(
        ["make", "--no-print-directory", method, *make_variables(*args, **kw)],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finished(proc: subprocess.Popen) -> str:
    output = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, output[-5000:]
    return output


def refused(method: str, launch: str, run: Path) -> str:
    """Output of a launch that must end before training: it fails, no rank finishes, nothing is written."""
    proc = make(method, *STEPS, "--output_dir", str(run), launch=launch)
    output = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0
    assert "finished" not in output and not run.exists()  # nothing trained, nothing written
    return output


def pairs_config(pairs: Path, folder: Path, method: str = "dpo", **settings) -> Path:
    """The tiny DPO (or ORPO) config on the test's own pairs (so make does not build the shipped ones)."""
    shipped = REPO_ROOT / f"recipes/configs/tiny/{method}.yaml"
    config = yaml.safe_load(shipped.read_text()) | {"dataset_name": str(pairs)}
    path = folder / f"{method}.yaml"
    path.write_text(yaml.safe_dump(config | settings))
    return path


def engine(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())["distributed"]


def assert_both_ranks_finished(output: str, method: str) -> None:
    assert "[rank 0/2, backend gloo] finished" in output and "[rank 1/2, backend gloo] finished" in output
    assert output.count(f"{method.upper()} finished: 2 steps") == 1  # the summary: rank 0 only


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("launch", ["zero2", "zero3"])
def test_grpo_under_deepspeed_records_the_stage_and_the_ranks_score_different_prompts(launch, tiny_world, tmp_path):
    run, log = tmp_path / "run", tmp_path / "prompts.jsonl"
    output = finished(
        make(
            "grpo",
            *STEPS,
            *GRPO_BATCH,
            "--reward_funcs",
            "tests.recipes.reward_probes.record_prompts",
            "--output_dir",
            str(run),
            launch=launch,
            env={"PROMPT_LOG": str(log)},
        )
    )
    assert_both_ranks_finished(output, "grpo")
    stage = int(launch[-1])
    assert engine(run) == {"type": "DEEPSPEED", "zero_stage": stage, "world_size": 2, "machines": 1, "backend": "gloo"}
    assert f"engine   DEEPSPEED ZeRO-{stage}, 2 processes (gloo)" in output
    # each rank scores its own completions: two ranks, two steps, and no prompt scored by both
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    by_rank = {rank: {p for c in calls if c["rank"] == rank for p in c["prompts"]} for rank in ("0", "1")}
    assert len(calls) == 4 and all(by_rank.values()) and not by_rank["0"] & by_rank["1"]
    # the tokens both ranks generated (TRL hands rewards each completion's ids with its end of turn; cost.json
    # counts no special token): a sum over the ranks, trained on once
    counts = [n for c in calls for n in c["token_counts"]]
    tokens = json.loads((run / "cost.json").read_text())["tokens"]
    assert sum(counts) - len(counts) <= tokens["generated"] <= sum(counts) and tokens["trained"] == tokens["generated"]
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["load_in_4bit"] and config["bnb_4bit_quant_storage"] == ("float32" if stage == 3 else None)
    cost = json.loads((run / "cost.json").read_text())  # ZeRO-3 partitions the LoRA weights over the two ranks
    adapter = sum(tensor.numel() for tensor in load_file(run / "adapter_model.safetensors").values())
    assert cost["trainable_params"] == adapter
    assert cost["trainable_params_held"] == (adapter // 2 if stage == 3 else adapter)
    assert_adapter_loads_and_generates(run, tiny_world / "model")


@pytest.mark.slow
def test_dpo_under_zero3_with_a_4bit_base_records_stage_3_and_saves_an_adapter(tiny_world, tiny_pairs, tmp_path):
    run = tmp_path / "run"
    config = pairs_config(tiny_pairs, tmp_path)
    output = finished(make("dpo", *STEPS, "--output_dir", str(run), launch="zero3", CONFIG=config))
    assert_both_ranks_finished(output, "dpo")
    assert engine(run) == {"type": "DEEPSPEED", "zero_stage": 3, "world_size": 2, "machines": 1, "backend": "gloo"}
    assert yaml.safe_load((run / "config.yaml").read_text())["bnb_4bit_quant_storage"] == "float32"
    assert_adapter_loads_and_generates(run, tiny_world / "model")


def relative_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return sum(float((a[k] - b[k]).norm() ** 2) for k in a) ** 0.5 / sum(float(b[k].norm() ** 2) for k in b) ** 0.5


@pytest.mark.slow
def test_dpo_under_zero2_and_zero3_saves_the_adapter_one_process_makes_from_both_ranks_batches(tiny_pairs, tmp_path):
    """One step of plain SGD at learning rate 1 from the seeded LoRA init (B = 0), full-precision base: the adapter is
    the init minus the gradient. Two ranks of 8 pairs must give what one process gives on the same 16 pairs (their
    averaged gradient; under ZeRO-3 also gathered from both ranks' partitions at the save), and differ from what the
    first rank's 8 alone give."""
    config = pairs_config(tiny_pairs, tmp_path, load_in_4bit=False, use_bnb_nested_quant=False, optim="sgd")
    one_step = ["--max_steps", "1", "--learning_rate", "1", "--save_strategy", "no", "--output_dir"]
    runs = {name: tmp_path / name for name in ("zero2", "zero3", "one-16", "one-8")}
    for launch in ("zero2", "zero3"):
        output = finished(make("dpo", *one_step, str(runs[launch]), launch=launch, CONFIG=config))
        assert "[rank 1/2, backend gloo] finished" in output
        assert engine(runs[launch])["type"] == "DEEPSPEED" and engine(runs[launch])["zero_stage"] == int(launch[-1])
    for name, batch in (("one-16", "16"), ("one-8", "8")):  # one process: forked, as a recipe can be (run_as_make)
        one = make_variables(*one_step, str(runs[name]), "--per_device_train_batch_size", batch, CONFIG=config)
        returncode, output = run_as_make("dpo", *one)
        assert returncode == 0, output[-5000:]
        assert engine(runs[name]) == {"type": "NO", "world_size": 1, "machines": 1, "backend": None}
    adapters = {name: load_file(run / "adapter_model.safetensors") for name, run in runs.items()}
    for launch in ("zero2", "zero3"):
        assert relative_difference(adapters[launch], adapters["one-16"]) < 1e-5, launch
        assert relative_difference(adapters[launch], adapters["one-8"]) > 1e-3, launch


@pytest.mark.slow
@pytest.mark.parametrize(("method", "launch"), [("ppo", "zero2"), ("orpo", "zero3")])
def test_ppo_and_orpo_under_deepspeed_record_the_stage_and_save_an_adapter(method, launch, tiny_pairs, tmp_path):
    run = tmp_path / "run"
    settings = {"CONFIG": pairs_config(tiny_pairs, tmp_path, "orpo")} if method == "orpo" else {}
    output = finished(make(method, *STEPS, "--output_dir", str(run), launch=launch, **settings))
    assert_both_ranks_finished(output, method)
    assert engine(run)["type"] == "DEEPSPEED" and engine(run)["zero_stage"] == int(launch[-1])
    assert engine(run)["world_size"] == 2
    assert load_file(run / "adapter_model.safetensors")  # PPO: the policy's adapter, written by rank 0


@pytest.mark.slow
def test_ppo_under_zero3_is_refused_in_one_line_before_any_model_loads(tiny_world, tmp_path):
    output = refused("ppo", "zero3", tmp_path / "run")
    assert output.count("PPO does not run under ZeRO-3") == 1 and "PPO does not run under ZeRO-3" in last_line(output)


@pytest.mark.slow
def test_ddp_on_two_cpu_processes_records_multi_cpu(tiny_world, tmp_path):
    run = tmp_path / "run"
    output = finished(make("grpo", *STEPS, *GRPO_BATCH, "--output_dir", str(run), launch="multi_gpu"))
    assert_both_ranks_finished(output, "grpo")
    assert engine(run) == {"type": "MULTI_CPU", "world_size": 2, "machines": 1, "backend": "gloo"}
    assert (run / "adapter_model.safetensors").exists() and not list(tmp_path.glob("*/rank*"))


@pytest.mark.slow
def test_fsdp_on_cpu_is_refused_in_one_line_before_any_model_loads(tiny_world, tmp_path):
    output = refused("grpo", "fsdp", tmp_path / "run")
    refusals = [line for line in output.splitlines() if "error: this launch asks for FSDP" in line]
    assert len(refusals) == 1  # the same line from both ranks: once, last, with no launcher traceback after it
    assert "would run as MULTI_CPU, unsharded" in refusals[0] and "LAUNCH=zero3" in refusals[0]
    assert last_line(output) == refusals[0] and "Traceback" not in output and "ChildFailedError" not in output


@pytest.mark.slow
def test_a_crash_in_a_rank_still_shows_its_traceback(tiny_world, tmp_path):
    """A reward that raises past the project's checks (a BaseException) is a crash, not a refusal."""
    rewards = tmp_path / "crashing_rewards.py"
    rewards.write_text(
        "class Boom(BaseException):\n    pass\n\n\ndef boom(completions, **kwargs):\n    raise Boom('x')\n"
    )
    proc = make(
        "grpo",
        *STEPS,
        *GRPO_BATCH,
        *("--output_dir", str(tmp_path / "run"), "--reward_funcs", "crashing_rewards.boom"),
        launch="multi_gpu",
        env={"PYTHONPATH": str(tmp_path)},
    )
    output = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0
    assert "Traceback" in output and "crashing_rewards.Boom: x" in output


@pytest.mark.slow
def test_two_machines_of_one_process_each_train_one_run_under_deepspeed(tiny_pairs, tmp_path):
    """The README's N-machine command, as two "machines" on localhost: the same make command on each, with its
    machine rank and the first machine's address."""
    run = tmp_path / "run"
    config = pairs_config(tiny_pairs, tmp_path)
    cluster = f"--num_machines 2 --main_process_ip 127.0.0.1 --main_process_port {free_port()}"
    machines = [
        make(
            "dpo",
            *STEPS,
            "--output_dir",
            str(run),
            launch="zero2",
            launch_args=f"{cluster} --machine_rank {rank}",
            CONFIG=config,
        )
        for rank in (0, 1)
    ]
    first, second = (finished(machine) for machine in machines)
    assert "[rank 0/2, backend gloo] finished" in first and "DPO finished: 2 steps" in first
    assert "[rank 1/2, backend gloo] finished" in second and "DPO finished" not in second
    assert engine(run) == {"type": "DEEPSPEED", "zero_stage": 2, "world_size": 2, "machines": 2, "backend": "gloo"}
    assert "engine   DEEPSPEED ZeRO-2, 2 processes on 2 machines (gloo)" in first


EXPECTED_LAUNCH = {
    "single_gpu": ("NO", None),
    "multi_gpu": ("MULTI_GPU", None),
    "zero2": ("DEEPSPEED", 2),
    "zero3": ("DEEPSPEED", 3),
    "fsdp": ("FSDP", None),
}


def launch_environment(name: str) -> dict[str, str]:
    """What `accelerate launch --config_file recipes/accelerate/<name>.yaml --num_processes 2` sets for each process
    (a DDP or FSDP config), by accelerate's own launch code."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    path = REPO_ROOT / "recipes" / "accelerate" / f"{name}.yaml"
    args = launch_command_parser().parse_args(
        ["--config_file", str(path), "--num_processes", "2", "--main_process_port", str(free_port()), "x.py"]
    )
    return prepare_multi_gpu_env(_validate_launch_command(args)[0])


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
            # one command per machine (torchrun), the same as DDP's, rather than ssh from the first
            assert config.deepspeed_config["deepspeed_multinode_launcher"] == "standard", path.name
        if distributed_type == "FSDP":
            assert config.fsdp_config, path.name


def test_fsdp_config_is_fsdp2_with_a_full_state_dict(monkeypatch):
    """accelerate's FSDP plugin, built from the environment the launch gives each process."""
    from accelerate.utils import FullyShardedDataParallelPlugin
    from torch.distributed.fsdp import CPUOffloadPolicy, StateDictType

    for key, value in launch_environment("fsdp").items():
        monkeypatch.setenv(key, value)
    plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is True
    assert plugin.state_dict_type == StateDictType.FULL_STATE_DICT  # the save writes adapter_model.safetensors
    assert not isinstance(plugin.cpu_offload, CPUOffloadPolicy)
    assert plugin.auto_wrap_policy.__name__ == "transformer_auto_wrap_policy"  # one decoder layer a unit
