"""The Makefile: `make help` lists every target, one variable per flag, and targets print no library noise."""

import json
import os
import re
import subprocess

import pytest

from tests.conftest import FIXTURES, REPO_ROOT

MAKEFILE = (REPO_ROOT / "Makefile").read_text()
# What the libraries print that no user can act on (core/library_noise.py silences each at its source).
NOISE = ("kernels-community", "TRLExperimentalWarning", "experimental", "is_gradient_checkpointing", "Warning:")


def make(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    # without what tests/conftest.py silences in this process: the targets must do it themselves
    env = {k: v for k, v in os.environ.items() if k != "TRL_EXPERIMENTAL_SILENCE"}
    return subprocess.run(
        ["make", "--no-print-directory", "--silent", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_help_lists_every_target_with_a_description():
    phony = set(re.search(r"^\.PHONY: (.*?)(?<!\\)\n", MAKEFILE, re.M | re.S).group(1).replace("\\\n", " ").split())
    result = make("help")
    assert result.returncode == 0, result.stderr
    described = {m.group(1) for m in re.finditer(r"^ {2}([a-z-]+) +\S", result.stdout, re.M)}
    assert phony - {"help"} <= described, phony - described
    for variable in ("PROFILE=", "CONFIG=", "ARGS=", "MODEL=", "TASK=", "K=", "FILE=", "RUN=", "SEEDS=", "GPU_GB="):
        assert variable in result.stdout, variable


@pytest.mark.parametrize("variable", ["K", "k"])  # K is the flag's one name; k, its old name for estimate, still works
def test_one_variable_per_flag(variable):
    assert "--k 16" in make("-n", "estimate", f"{variable}=16").stdout
    assert "--k 16" in make("-n", "eval", f"{variable}=16", "MODEL=m").stdout
    for target, default in (
        ("estimate", "--model qwen2.5-7b"),
        ("bench-gpu", "--model qwen2.5-7b"),
        ("eval", "--model artifacts/tiny/model"),
    ):
        assert default in make("-n", target).stdout
    assert "--model artifacts/tiny-code/model --task tiny-code" in make("-n", "eval", "TASK=tiny-code").stdout


def test_estimate_and_score_print_no_library_noise(tmp_path):
    estimate = make("estimate", "ARGS=--json")
    assert estimate.returncode == 0, estimate.stderr
    assert json.loads(estimate.stdout)["grpo"]["total_gb"] > 0  # stdout is exactly the JSON object
    score = make("score", f"FILE={FIXTURES / 'gsm8k_sample.jsonl'}", "REWARDS=format")
    # the fixture has no `completion` column: a one-line error, and nothing else on stderr
    assert score.returncode != 0 and score.stderr.splitlines()[0].startswith("error: ")
    for result in (estimate, score):
        printed = result.stdout + result.stderr
        assert not [word for word in NOISE if word in printed], printed[-2000:]


@pytest.mark.slow
def test_eval_prints_no_library_noise(tiny_world, tmp_path):
    result = make("eval", "TASK=tiny", "LIMIT=4", f"OUT={tmp_path / 'eval'}")
    assert result.returncode == 0, result.stderr[-2000:]
    printed = result.stdout + result.stderr
    assert "tiny: accuracy" in printed and not [word for word in NOISE if word in printed], printed[-2000:]


def test_an_own_config_builds_a_tiny_world_only_when_it_names_one(tmp_path):
    own = tmp_path / "own.yaml"
    own.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\ndataset_name: my/task\n")
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "model_name_or_path: artifacts/tiny-code/model\ndataset_name: artifacts/tiny-code/pairs/train.jsonl\n"
    )
    for target in ("grpo", "dpo"):
        planned = make(
            "-n", "-W", "artifacts/tiny/world.json", "-W", "artifacts/tiny-code/world.json", target, f"CONFIG={own}"
        ).stdout
        assert "tasks.shipped" not in planned and "recipes.pairs" not in planned
        assert f"recipes.{target} --config {own}" in planned
    for target in ("dpo", "ipo", "orpo"):  # pairs of one's own: the tiny ones are not sampled first
        planned = make("-n", "-B", target, "ARGS=--dataset_name my/pairs.jsonl").stdout
        assert "recipes.pairs" not in planned and "--dataset_name my/pairs.jsonl" in planned, planned
        assert "recipes/configs/tiny/pairs.yaml" in make("-n", "-B", target).stdout
    planned = make("-n", "-B", "dpo", f"CONFIG={tiny}").stdout
    assert "tasks.shipped --world tiny-code" in planned and "recipes/configs/tiny-code/pairs.yaml" in planned
    assert "tasks.shipped --world tiny " not in planned


def test_cpu_avx2_runs_every_process_as_an_avx2_only_cpu_would():
    """`CPU=avx2`: the processes a target starts see PyTorch capped at AVX2, no bf16 matmul in oneDNN, and
    bitsandbytes answering that the CPU has no AVX512-BF16 (which picks its fused 4-bit path)."""
    probe = (
        "import torch, bitsandbytes.functional as F; "
        "print(torch.backends.cpu.get_cpu_capability(), torch.ops.mkldnn._is_mkldnn_bf16_supported(), "
        "F.has_avx512bf16())"
    )
    result = make("CPU=avx2", "--eval", f"probe: ; @$(PY) -c '{probe}'", "probe")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["AVX2", "False", "False"]
