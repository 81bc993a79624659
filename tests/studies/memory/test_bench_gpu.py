"""`make bench-gpu` needs CUDA: on a machine without it, it stops at once and says so."""

import os
import subprocess
import time

from tests.conftest import REPO_ROOT


def test_bench_gpu_without_cuda_fails_at_once_naming_the_gpu():
    start = time.time()
    # hiding every GPU makes any machine a CPU-only one for this process
    result = subprocess.run(
        ["make", "bench-gpu"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert result.returncode != 0
    assert "make bench-gpu needs a CUDA GPU" in result.stderr, result.stderr[-2000:]
    assert time.time() - start < 60  # before any model is built or loaded


def test_bench_gpu_estimates_the_runs_own_lengths_and_the_pair_cut():
    """The figure printed next to max_memory_allocated is the estimator's for the 7B config as written, with the
    run's prompt length, and a pair longer than the config's max_length cut to it as the trainer cuts it."""
    import dataclasses

    import yaml

    from studies.memory.bench_gpu import estimated_mb
    from studies.memory.estimate import GB, architecture, estimate, resolve_model_config, settings_from_config

    arch = architecture(resolve_model_config("qwen2.5-7b"))
    lengths = {"prompt": 140, "pair_prompt": 90, "pair": 5000}
    configs = REPO_ROOT / "recipes" / "configs" / "7b"
    grpo = settings_from_config("grpo", configs / "grpo.yaml", 140)
    assert grpo.completion_length == yaml.safe_load((configs / "grpo.yaml").read_text())["max_completion_length"]
    assert estimated_mb("grpo", arch, lengths) == estimate(arch, grpo)["total_gb"] * GB / 2**20
    max_length = yaml.safe_load((configs / "dpo.yaml").read_text())["max_length"]
    dpo = dataclasses.replace(
        settings_from_config("dpo", configs / "dpo.yaml"), prompt_length=90, completion_length=max_length - 90
    )
    assert estimated_mb("dpo", arch, lengths) == estimate(arch, dpo)["total_gb"] * GB / 2**20
    shorter = estimated_mb("dpo", arch, {**lengths, "pair": 300})
    assert shorter < estimated_mb("dpo", arch, lengths)
