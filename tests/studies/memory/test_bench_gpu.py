"""`make bench-gpu` needs CUDA: on a machine without it, it stops at once and says so."""

import time

import pytest

from tests.conftest import REPO_ROOT, run_as_make


def test_bench_gpu_without_cuda_fails_at_once_naming_the_gpu():
    start = time.time()
    # hiding every GPU makes any machine a CPU-only one for this process
    returncode, output = run_as_make("bench-gpu", env={"CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert returncode != 0
    assert "make bench-gpu needs a CUDA GPU" in output, output[-2000:]
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


def test_published_gpu_table_is_what_its_summary_writes():
    """docs/memory.md's measured 7B table and its summary line are gpu_table() of results/bench/gpu/summary.json,
    each estimate error is the recorded numbers' own, and the folder names the GPU and the code it ran."""
    import json

    from studies.memory.bench_gpu import gpu_table

    folder = REPO_ROOT / "results" / "bench" / "gpu"
    records = json.loads((folder / "summary.json").read_text())
    settings = json.loads((folder / "settings.json").read_text())
    assert gpu_table(records) in (REPO_ROOT / "docs" / "memory.md").read_text()
    assert gpu_table(records) in (folder / "summary.md").read_text()
    for r in records:
        assert r["memory_measure"] == "torch.cuda.max_memory_allocated"
        assert r["estimate_error"] == (r["estimated_memory_mb"] - r["peak_memory_mb"]) / r["peak_memory_mb"]
    assert "H200" in settings["device"] and len(settings["code_digest"]) == 64
    # the README's one line on it: the largest error, and which methods it covers
    worst = max(abs(r["estimate_error"]) for r in records)
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    covered = ", ".join(f"{r['method'].upper()}'s" for r in records)
    assert f"{covered} within {worst:.1%} of an H200's count" in readme


def test_resume_keeps_the_other_runs_on_the_same_gpu_only(tmp_path):
    from studies.memory.bench_gpu import kept_records, write_summary

    row = {
        "method": "grpo",
        "logprobs": "chunked",
        "peak_memory_mb": 1000.0,
        "estimated_memory_mb": 990.0,
        "estimate_error": -0.01,
        "peak_tensor_mb": 995.0,
        "seconds_per_step": 1.0,
        "samples_per_second": 1.0,
        "generation_tokens_per_second": None,
        "models_in_memory": 1,
        "time_split": None,
    }
    assert kept_records(tmp_path, "GPU A", [("grpo", "chunked")]) == []  # nothing there yet
    write_summary([row, {**row, "method": "dpo"}], {"model": "m", "device": "GPU A"}, tmp_path)
    kept = kept_records(tmp_path, "GPU A", [("grpo", "chunked"), ("ppo", "chunked")])
    assert [r["method"] for r in kept] == ["dpo"]  # grpo runs again, dpo is kept
    assert "not run here: ppo, ipo, orpo." in (tmp_path / "summary.md").read_text()

    with pytest.raises(SystemExit, match="measured on GPU A, this GPU is GPU B"):
        kept_records(tmp_path, "GPU B", [("grpo", "chunked")])


def test_a_table_without_the_meter_says_so():
    from studies.memory.bench_gpu import gpu_table

    row = {
        "method": "ppo",
        "logprobs": "chunked",
        "peak_memory_mb": 2048.0,
        "estimated_memory_mb": 2150.4,
        "estimate_error": 0.05,
        "peak_tensor_mb": None,
        "seconds_per_step": 1.0,
        "samples_per_second": 1.0,
        "generation_tokens_per_second": 300.0,
        "models_in_memory": 2,
        "time_split": None,
    }
    table = gpu_table([row])
    assert "| ppo | chunked | 2.00 | 2.10 | +5.0% |  | 1.0 |" in table
    assert "Largest estimate error: +5.0% (ppo, chunked); the live-tensor meter off; not run here: grpo, dpo" in table
