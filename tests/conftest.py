import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.library_noise import quiet
from studies.processes import Run, start

REPO_ROOT = Path(__file__).resolve().parent.parent
# The tiny configs score 200 held-out problems at a run's start and end (~6 s); a test that is not about that turns it
# off, as a user would (a later --heldout_limit on the same command line wins).
NO_HELDOUT = ("--heldout_limit", "0")
# For the runs of tests about something other than quantization (signals, resume, verdicts): the tiny configs train
# in 4-bit, whose generic CPU path costs 3-4x full precision without AVX512-BF16 (docs/test-suite.md)
FULL_PRECISION = ("--load_in_4bit", "false")


def slow_without_native_bf16(test):
    """Marks a bf16 test with large products `slow` (make test, not test-fast) where the CPU has no native bf16;
    elsewhere the test stays in the inner loop."""
    from core.training.adapter_precision import native_bf16

    return test if native_bf16() else pytest.mark.slow(test)


FIXTURES = Path(__file__).parent / "fixtures"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
quiet()  # as every entry point does: tests that import the libraries directly see the same output


@pytest.fixture(scope="session")
def tiny_world() -> Path:
    """The project's tiny math world, installed from the shipped one as `make tiny` installs it."""
    from tasks.shipped import install

    out = REPO_ROOT / "artifacts" / "tiny"
    install("tiny", out)
    return out


@pytest.fixture(scope="session")
def tiny_code_world() -> Path:
    """The tiny code world, installed from the shipped one as `make tiny` installs it."""
    from tasks.shipped import install

    out = REPO_ROOT / "artifacts" / "tiny-code"
    install("tiny-code", out)
    return out


@pytest.fixture(scope="session")
def tiny_length_world() -> Path:
    """The length world (studies/grid/length), installed from the shipped one as `make tiny` installs it."""
    from tasks.shipped import install

    out = REPO_ROOT / "artifacts" / "tiny-length"
    install("tiny-length", out)
    return out


@pytest.fixture(scope="session")
def smol_world() -> Path:
    """SmolLM2-135M-Instruct, converted from the wheel's GGUF file as `make smol` converts it (once, ~17 s)."""
    from tasks.smol import install

    out = REPO_ROOT / "artifacts" / "smol"
    install(out)
    return out


@pytest.fixture(scope="session")
def tiny_pairs(tiny_world, tmp_path_factory) -> Path:
    """On-policy pairs from the tiny model, built once per test run by the real `recipes.pairs` CLI path (shared
    by every file that asks for them: each pytest-xdist worker had sampled its own, ~38 s each on an AVX2-only CPU)."""
    import subprocess

    def sample(folder: Path) -> None:
        folder.mkdir(parents=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "recipes.pairs",
                "--config",
                "recipes/configs/tiny/pairs.yaml",
                "--max_prompts",
                "48",
                "--output",
                str(folder / "train.jsonl"),
            ],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )

    return built_once(tmp_path_factory, "pairs", sample) / "train.jsonl"


def shipped_run(tmp_path_factory, method: str, *overrides: str) -> Path:
    """`make <method>` as shipped (the tiny config, held-out evaluation on as it has it, 4-bit), trained once per test
    run in a test process and shared by every test that only reads a finished run: returns its run folder, with
    what it printed beside it (`printed(run)`)."""
    import contextlib
    import importlib
    import io

    from tests.recipes.helpers import run_recipe

    def train(folder: Path) -> None:
        folder.mkdir(parents=True)
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            run_recipe(
                importlib.import_module(f"recipes.{method}"),
                f"recipes/configs/tiny/{method}.yaml",
                *overrides,
                *("--output_dir", str(folder / "run")),
                heldout=True,
            )
        (folder / "printed.txt").write_text(said.getvalue())

    return built_once(tmp_path_factory, f"shipped-{method}", train) / "run"


def printed(run: Path) -> str:
    """What a `shipped_run` printed while it trained."""
    return (run.parent / "printed.txt").read_text()


@pytest.fixture(scope="session")
def shipped_grpo(tiny_world, tmp_path_factory) -> Path:
    """`make grpo` as shipped: 40 steps, 200 held-out problems before and after."""
    return shipped_run(tmp_path_factory, "grpo")


@pytest.fixture(scope="session")
def shipped_ppo(tiny_world, tmp_path_factory) -> Path:
    """`make ppo` as shipped: 40 steps, 200 held-out problems before and after."""
    return shipped_run(tmp_path_factory, "ppo")


@pytest.fixture(scope="session")
def shipped_dpo(tiny_world, tiny_pairs, tmp_path_factory) -> Path:
    """`make dpo` as shipped, on the session's 48 prompts of pairs (one epoch; `make dpo` samples 320)."""
    return shipped_run(tmp_path_factory, "dpo", "--dataset_name", str(tiny_pairs))


@pytest.fixture(scope="session")
def shipped_orpo(tiny_world, tiny_pairs, tmp_path_factory) -> Path:
    """`make orpo` as shipped, on the session's 48 prompts of pairs."""
    return shipped_run(tmp_path_factory, "orpo", "--dataset_name", str(tiny_pairs))


@contextmanager
def as_a_command(module: str, argv) -> Iterator[None]:
    """The process state `python -m <module> <argv>` would start from, for running a command in this process: its
    sys.argv, the repository's root as the working directory (as the Makefile runs it); the excepthook its one-line
    errors set, the argv and the directory are put back after."""

    saved, cwd = (sys.argv, sys.excepthook), os.getcwd()
    sys.argv = [module, *argv]
    os.chdir(REPO_ROOT)
    try:
        yield
    finally:
        sys.argv, sys.excepthook = saved
        os.chdir(cwd)


def entry_point_error(module: str, *argv: str) -> str:
    """The line a command's entry point ends with on bad input (`error: <message>`, as its excepthook prints it),
    from its own `__main__` block run in this process (runpy), where the libraries are already imported: ~9 s less
    than a new interpreter. For the checks that come before any model loads; tests/core/test_errors.py runs the
    entry points as processes, exit status and all."""
    import runpy
    import warnings

    from core.errors import ONE_LINE

    try:
        with as_a_command(module, argv), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)  # imported by a test
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except ONE_LINE as error:
        return f"error: {error}"
    except SystemExit as stop:  # SystemExit("error: ..."): Python prints the message and exits with status 1
        if isinstance(stop.code, str):
            return stop.code
        raise
    raise AssertionError(f"python -m {module} {' '.join(argv)}: no error")


def start_command(command: list[str], env=None) -> Run:
    """`command` started in the repository's root as `studies.processes.start` starts it, its output in a log."""
    handle, log = tempfile.mkstemp(prefix="run-", suffix=".log")
    os.close(handle)
    added = env or {}
    return start(command, Path(log), env={**os.environ, **added}, read_when_used=added, cwd=REPO_ROOT, ctrl_c=True)


def what_make_runs(*make_args: str, env=None) -> list[str]:
    """The command `make <make_args>` runs: its recipe's line (`make -n`), which must be the only one (every
    prerequisite up to date), with this interpreter for the checkout's `.venv/bin/python`."""
    lines = subprocess.run(
        ["make", "-n", "-s", "--no-print-directory", *make_args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.splitlines()
    assert len(lines) == 1, lines
    program, *argv = shlex.split(lines[0])
    assert (REPO_ROOT / program).resolve() == Path(sys.executable).resolve(), lines
    return [sys.executable, *argv]


def run_as_make(*make_args: str, env=None, timeout: float = 900) -> tuple[int, str]:
    """(exit status, output) of `make <make_args>` as a user types it: the command make runs (`what_make_runs`),
    forked from the server that imported the libraries (`start_command`), not a new interpreter that spends ~7 s
    importing them. `env`: variables added to this process's."""
    added = env or {}
    started = start_command(what_make_runs(*make_args, env={**os.environ, **added}), env=added)
    output, _ = started.communicate(timeout=timeout)
    return started.returncode, output


def last_line(output: str) -> str:
    """The last line the program printed (make's own `make: *** ... Error 1` after it left out, `make[1]: ***` when
    make itself runs under make, as `make test` runs it)."""
    return [line for line in output.splitlines() if line.strip() and not re.match(r"make(\[\d+\])?: \*\*\*", line)][-1]


def run_main(module: str, *argv: str) -> None:
    """`python -m <module> <argv>` in this process: the module's main(argv) (`as_a_command`). A new interpreter would
    spend ~5 s importing what this process already has; the runs a study trains still get processes of their own."""
    import importlib.util

    package = importlib.util.find_spec(module).submodule_search_locations is not None
    entry = f"{module}.__main__" if package and importlib.util.find_spec(f"{module}.__main__") else module
    with as_a_command(module, argv):
        importlib.import_module(entry).main(list(argv))


def small_comparison(profile: str, out: Path, *methods: str, transfer: str | None = None) -> Path:
    """`make compare` at a small budget (16 prompts, 24 held-out problems, 2 samples each): each method's training in
    its own process (all of them, or `methods`), their evaluations, summary and plots; with `transfer` (TASK:FILE),
    every final adapter and the base also scored greedy on its first 8 problems. In full precision: its subject is
    the pipeline, and the 4-bit path costs 2-3x more on a CPU without AVX512-BF16 (the tests of the recipes and of
    loading cover 4-bit)."""
    argv = ["--profile", profile, "--prompts", "16", "--eval_limit", "24", "--eval_k", "2", "--seeds", "1"]
    argv += ["--load_in_4bit", "false", "--out", str(out), *(["--methods", *methods] if methods else [])]
    argv += ["--transfer", transfer, "--transfer_limit", "8"] if transfer else []
    run_main("studies.comparison", *argv)
    return out


def built_once(tmp_path_factory, name: str, build) -> Path:
    """A folder that `build(folder)` fills once per test run, however many pytest-xdist workers ask for it: the first
    builds it under a lock in the run's shared temporary folder, the others wait and read it."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this run
    out, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.is_file():
            shutil.rmtree(out, ignore_errors=True)  # a build that failed in another worker starts over
            build(out)
            done.touch()
    return out


@pytest.fixture(scope="session")
def compare_results(tiny_world, tmp_path_factory) -> Path:
    # the transfer problems: the tiny world's validation split stands in for another task (the pipeline is the subject)
    transfer = f"tiny:{tiny_world / 'data' / 'validation.jsonl'}"
    return built_once(tmp_path_factory, "compare", lambda out: small_comparison("tiny", out, transfer=transfer))


@pytest.fixture(scope="session")
def code_compare_results(tiny_code_world, tmp_path_factory) -> Path:
    # one method that scores its own completions while training and one that trains on pairs scored before: the
    # schema and the reward costs of both kinds (the math comparison runs all five)
    return built_once(tmp_path_factory, "compare-code", lambda out: small_comparison("tiny-code", out, "grpo", "dpo"))


# `make test` runs on two pytest-xdist workers (TEST_WORKERS=2, one thread each), a file at a time (--dist loadfile):
# most of the suite runs one thread at a time (imports, tiny-model steps, sandboxed programs), and a file's module
# fixtures are built once. The files with the longest tests go first (kept in this order: --no-loadscope-reorder),
# so that neither worker is left with one of them at the end.
LONGEST_FIRST = (
    "tests/studies/test_comparison.py",
    "tests/studies/memory/test_validation.py",
    "tests/recipes/test_distributed.py",
    "tests/recipes/test_heldout.py",
    "tests/recipes/test_7b_offline.py",
)


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: the files in their own order
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_terminal_summary(terminalreporter):
    """After pytest's slowest durations: any test over a minute on this machine that tests/durations.py's allow-list
    does not name, so that a slow test is seen the run it arrives, not when CI runs out of time."""
    from tests.durations import LIMIT_S, over_limit

    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                seconds[report.nodeid] = seconds.get(report.nodeid, 0.0) + report.duration
    late = over_limit(seconds)
    if late:
        terminalreporter.section(f"tests over {LIMIT_S} s here, not in tests/durations.py's allow-list")
        for nodeid in late:
            terminalreporter.write_line(f"{seconds[nodeid]:7.1f} s  {nodeid}")
