"""`make bench-gpu` needs CUDA: on a machine without it, it stops at once and says so."""

import os
import subprocess
import time

from tests.conftest import REPO_ROOT


def test_bench_gpu_without_cuda_fails_at_once_naming_the_gpu():
    start = time.time()
    # hiding every GPU makes any machine a CPU-only one for this process
    result = subprocess.run(["make", "bench-gpu"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode != 0
    assert "make bench-gpu needs a CUDA GPU" in result.stderr, result.stderr[-2000:]
    assert time.time() - start < 60  # before any model is built or loaded
