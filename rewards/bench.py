"""Reward throughput against plain baselines measured in the same run (`make bench-rewards`).

- code: the isolated sandbox (`rewards.code.code_tests`) vs. the same programs and tests run with a bare
  `subprocess.run([python, file], timeout=...)`, no isolation, on the same number of parallel workers;
- math: `rewards.math.math_accuracy` (isolated worker processes) vs. math-verify called in-process.
Target: the isolated sandbox within 2x of the bare baseline's time, in each isolation mode: run as root, the code
part is measured again as an unprivileged uid (the `userns` mode ordinary users get), baseline included.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def code_batch(n: int) -> tuple[list[str], list[list[str]]]:
    correct = "def solve(xs):\n    return sorted(xs)[len(xs) // 2]"
    wrong = "def solve(xs):\n    return xs[0]"
    tests = ["assert solve([3, 1, 2]) == 2", "assert solve([5, 9, 7, 1, 3]) == 5", "assert solve([4]) == 4"]
    return [correct if i % 2 else wrong for i in range(n)], [tests] * n


def bare_run(program: str, tests: list[str]) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(program + "\n" + "\n".join(tests) + "\n")
    try:
        return float(subprocess.run([sys.executable, fh.name], capture_output=True, timeout=10).returncode == 0)
    except subprocess.TimeoutExpired:
        return 0.0
    finally:
        os.unlink(fh.name)


def unprivileged_rerun(n_programs: int, uid: int = 4242) -> None:
    """The code benchmark again as an ordinary user would run it: an unprivileged uid, the system Python (the
    trainer's may sit under /root), a home of its own; both sides of the ratio measured in that process."""
    from pathlib import Path

    checkout = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as home:
        os.chown(home, uid, uid)
        subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3", "-m",
                        "rewards.bench", "--code_only", "--programs", str(n_programs)], cwd=home, check=True,
                       env={"PATH": "/usr/bin:/bin", "HOME": home, "PYTHONPATH": str(checkout),
                            "PYTHONDONTWRITEBYTECODE": "1"})


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--programs", type=int, default=64)
    parser.add_argument("--math", type=int, default=256)
    parser.add_argument("--code_only", action="store_true", help="only the sandbox line (the unprivileged rerun)")
    args = parser.parse_args(argv)

    from rewards.code import code_tests
    from rewards.math import math_accuracy
    from rewards.sandbox import default_sandbox

    programs, tests = code_batch(args.programs)
    workers = default_sandbox().workers
    code_tests(programs[:2], tests[:2])  # warm-up: interpreter probe, page cache
    with ThreadPoolExecutor(workers) as pool:
        _, bare_seconds = timed(lambda: list(pool.map(bare_run, programs, tests)))
    sandbox_scores, sandbox_seconds = timed(lambda: code_tests(programs, tests))
    assert sandbox_scores == [1.0 if i % 2 else 2 / 3 for i in range(args.programs)], "sandbox scored wrongly"
    print(f"code sandbox ({default_sandbox().isolation} mode): {args.programs / sandbox_seconds:.1f} programs/s "
          f"isolated vs {args.programs / bare_seconds:.1f} bare ({workers} workers); time ratio isolated/bare = "
          f"{sandbox_seconds / bare_seconds:.2f} (target <= 2.0)", flush=True)
    if args.code_only:
        return
    if os.geteuid() == 0 and shutil.which("setpriv"):
        unprivileged_rerun(args.programs)

    completions = [f"work...\nThe answer is {i if i % 3 else i + 1}." for i in range(args.math)]
    golds = [f"#### {i}" for i in range(args.math)]
    math_accuracy(completions[:4], golds[:4])  # warm-up: worker start

    def in_process():
        from rewards.math import verify_answer
        return [verify_answer(c, g)[0] for c, g in zip(completions, golds, strict=True)]

    baseline_scores, baseline_seconds = timed(in_process)
    isolated_scores, isolated_seconds = timed(lambda: math_accuracy(completions, golds))
    assert isolated_scores == baseline_scores

    print(f"math verify: {args.math / isolated_seconds:.1f}/s isolated vs {args.math / baseline_seconds:.1f}/s "
          f"in-process; time ratio = {isolated_seconds / baseline_seconds:.2f}")


if __name__ == "__main__":
    main()
