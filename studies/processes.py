"""A study's runs, each in a process of its own, without each paying the libraries' imports: `python -m <recipe>`
commands are forked from multiprocessing's fork server, which imports torch, transformers, TRL, PEFT and
bitsandbytes once (5-10 s a process on 2 cores, for runs of tens of seconds in the tests and minutes in the studies).

A forked run is still a fresh process in what a run measures and touches: its own memory (the recipes measure peak
RSS from training's start), its own threads (torch starts them on first use, after the fork), the caller's
environment and working directory at the call, the module's `__main__` as `python -m` runs it, its atexit handlers,
its output in its log and its exit status. Its CPU seconds leave out the imports it did not do. Where the server
could not give that, the command runs as a new interpreter: when the caller's environment is not the one the server
started with (a variable read at import, such as `ATEN_CPU_CAPABILITY`, would not reach the libraries), where CUDA
is available (a fork must not inherit a CUDA context, and GPU runs are minutes long), and for any command that is not
`python -m <module>` with this interpreter.
"""

import atexit
import functools
import multiprocessing
import os
import runpy
import subprocess
import sys
from pathlib import Path

from core.runs.timing import cpu_seconds

# the libraries, and the recipes with what they import of this project (another second a run)
PRELOAD = ["torch", "transformers", "peft", "trl", "bitsandbytes", "datasets", "accelerate"]
PRELOAD += [f"recipes.{name}" for name in ("grpo", "ppo", "dpo", "orpo", "pairs")]


def run_command(command: list[str], log: Path) -> tuple[int, float | None]:
    """Run `command` with its output (stdout and stderr) in `log`: (exit status, as `subprocess` gives it; CPU
    seconds of the run and of the processes it waited for, None where it was killed before it could say)."""
    server = fork_server()
    if server.serves(command):
        return server.run(command[2], command[3:], log)
    before = cpu_seconds(children_only=True)
    with open(log, "w") as fh:
        result = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT)
    return result.returncode, cpu_seconds(children_only=True) - before


@functools.cache  # multiprocessing keeps one fork server per process: so does this
def fork_server() -> "ForkServer":
    return ForkServer()


class ForkServer:
    def __init__(self):
        self.context = None
        self.environment: dict[str, str] | None = None  # the server's, from its start

    def serves(self, command: list[str]) -> bool:
        if len(command) < 3 or command[:2] != [sys.executable, "-m"]:
            return False
        if self.environment is None:
            return not cuda_available()
        changed = changed_variables(self.environment, os.environ)
        if changed:
            print(
                f"[studies] {', '.join(changed)} changed since the fork server started: {command[2]} runs in a new "
                "interpreter, which imports the libraries again",
                file=sys.stderr,
                flush=True,
            )
        return not changed

    def run(self, module: str, argv: list[str], log: Path) -> tuple[int, float | None]:
        if self.context is None:
            self.context = multiprocessing.get_context("forkserver")
            self.context.set_forkserver_preload(PRELOAD)
            self.environment = dict(os.environ)
        receive, send = self.context.Pipe(duplex=False)
        args = (module, list(argv), str(log), os.getcwd(), dict(os.environ), send)
        process = self.context.Process(target=run_module, args=args, name=module)
        process.start()
        send.close()
        process.join()
        try:
            cpu = receive.recv()
        except EOFError:  # killed before it could say
            cpu = None
        receive.close()
        return process.exitcode, cpu


# Variables that change in a process while it runs and that no library reads at import: the fork gets their value at
# the call like every other, so a change in them does not need a new interpreter.
READ_WHEN_USED = {
    "PYTEST_CURRENT_TEST",  # pytest's, at every test
    # `import deepspeed` sets it (to 1) in whatever process imports it; torch reads it when asked about CUDA
    "PYTORCH_NVML_BASED_CUDA_CHECK",
}


def changed_variables(before: dict, now) -> list[str]:
    """The environment variables set, unset or changed from `before` to `now`, but those in `READ_WHEN_USED`.

    >>> changed_variables({"A": "1", "PYTEST_CURRENT_TEST": "t1"}, {"A": "2", "B": "", "PYTEST_CURRENT_TEST": "t2"})
    ['A', 'B']
    """
    names = (set(before) | set(now)) - READ_WHEN_USED
    return sorted(name for name in names if before.get(name) != now.get(name))


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def run_module(module: str, argv: list[str], log: str, cwd: str, environment: dict, send) -> None:
    """In the forked process: `python -m module argv...`, its output in `log`, ended as the interpreter ends (the
    message or traceback, then the atexit handlers); sends the CPU seconds it spent before it exits."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environment)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.argv = [module, *argv]
    sys.path.insert(0, cwd)  # `python -m` puts the working directory first
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as end:
        status = end.code if isinstance(end.code, int) else 0 if end.code is None else 1
        if not isinstance(end.code, int | None):
            print(end.code, file=sys.stderr)  # as the interpreter prints `sys.exit("message")`
    except BaseException:
        sys.excepthook(*sys.exc_info())  # the recipe's own one-line error, or the traceback
        status = 1
    sys.stdout.flush()
    atexit._run_exitfuncs()  # a fork's exit (os._exit) would skip them; an interpreter's runs them
    sys.stdout.flush()
    sys.stderr.flush()
    send.send(cpu_seconds())
    raise SystemExit(status)
