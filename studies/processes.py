"""Runs, each in a process of its own, without each paying the libraries' imports: `python -m <recipe>` commands are
forked from multiprocessing's fork server, which imports torch, transformers, TRL, PEFT and bitsandbytes once (5-10 s
a process on 2 cores, for runs of tens of seconds in the tests and minutes in the studies). The studies' runs go
through `run_command`; the tests that start a recipe and then signal, kill or race it through `start`, which gives
as much of `subprocess.Popen` as they use.

A forked run is still a fresh process in what a run measures and touches: its own pid, memory (the recipes measure
peak RSS from training's start) and threads (torch starts them on first use, after the fork), the caller's
environment and working directory at the call, PYTHONPATH's folders after the working directory on its path, the
module's `__main__` as `python -m` runs it, its atexit handlers, its output in its log, its exit status (an uncaught
Ctrl-C ends it by SIGINT, as it ends an interpreter) and signals sent to its pid. Its CPU seconds leave out the
imports it did not do. Where the server could not give that, the command runs as a new interpreter: when the
environment differs from the one the server started with (a variable read at import, such as
`ATEN_CPU_CAPABILITY`, would not reach the libraries) but for variables read when used, where CUDA is available (a
fork must not inherit a CUDA context, and GPU runs are minutes long), and for any command that is not
`python -m <module>` with this interpreter.
"""

import atexit
import contextlib
import functools
import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
import threading
from pathlib import Path

from core.runs.timing import cpu_seconds

# the libraries, and the recipes with what they import of this project (another second a run)
PRELOAD = ["torch", "transformers", "peft", "trl", "bitsandbytes", "datasets", "accelerate"]
PRELOAD += [f"recipes.{name}" for name in ("grpo", "ppo", "dpo", "orpo", "pairs")]


def run_command(command: list[str], log: Path) -> tuple[int, float | None]:
    """Run `command` with its output (stdout and stderr) in `log`: (exit status, as `subprocess` gives it; CPU
    seconds of the run and of the processes it waited for, None where it was killed before it could say)."""
    run = start(command, log)
    run.wait()
    return run.returncode, run.cpu_seconds()


def start(
    command: list[str], log: Path, env: dict | None = None, read_when_used=(), cwd: Path | None = None, ctrl_c=False
) -> "Run":
    """`command` started with its output in `log`, forked where the server can give it a fresh process's start, else
    a new interpreter. `env`: its whole environment (this process's by default); `read_when_used`: variables in it
    that the command's own code reads when it uses them (a test's probe), so that a change in them keeps the fork;
    `cwd`: its working directory (this process's by default); `ctrl_c`: SIGINT at its default even where this
    process ignores it (a background job does, and so would its new interpreter)."""
    env = dict(os.environ if env is None else env)
    server = fork_server()
    if server.serves(command, env, set(read_when_used)):
        interrupt = ctrl_c or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        return server.start(command[2], command[3:], log, env, str(cwd or os.getcwd()), interrupt)
    return Run(log, command, env=env, cwd=cwd, ctrl_c=ctrl_c)


@functools.cache  # multiprocessing keeps one fork server per process: so does this
def fork_server() -> "ForkServer":
    return ForkServer()


class Run:
    """A started command, as much of `subprocess.Popen` as callers use (pid, poll, wait, send_signal, kill,
    returncode, communicate), its output in `log`: a new interpreter, or (`forked`) a fork of the server."""

    def __init__(self, log: Path, command: list[str], env=None, cwd=None, ctrl_c=False, forked=None, receive=None):
        self.log, self.args, self.returncode, self._cpu = Path(log), command, None, None
        self._forked, self._receive = forked, receive
        if forked is None:
            self._before = cpu_seconds(children_only=True)
            with open(log, "w") as fh:
                default = (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if ctrl_c else None
                self._process = subprocess.Popen(
                    command, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd, preexec_fn=default
                )
        self.pid = forked.pid if forked is not None else self._process.pid

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self._forked.exitcode if self._forked is not None else self._process.poll()
            if code is not None:
                self._ended(code)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self._forked is not None:
            self._forked.join(timeout)
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, None]:
        """Waits for the end; (its output, None), as `Popen.communicate` with stderr into stdout."""
        self.wait(timeout)
        return self.log.read_text(errors="replace"), None

    def send_signal(self, signal_number: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal_number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def cpu_seconds(self) -> float | None:
        """CPU seconds the ended run spent (with the processes it waited for); None where a fork was killed before it
        could say."""
        return self._cpu

    def _ended(self, code: int) -> None:
        self.returncode = code
        if self._forked is None:
            self._cpu = cpu_seconds(children_only=True) - self._before
            return
        if self._receive.poll():
            with contextlib.suppress(EOFError):
                self._cpu = self._receive.recv()
        self._receive.close()


class ForkServer:
    def __init__(self):
        self.context = None
        self.environment: dict[str, str] | None = None  # the server's, from its start
        self.lock = threading.Lock()

    def serves(self, command: list[str], env: dict, read_when_used: set[str]) -> bool:
        if len(command) < 3 or command[:2] != [sys.executable, "-m"]:
            return False
        if self.environment is None and cuda_available():
            return False
        server = os.environ if self.environment is None else self.environment  # what it starts, or started, with
        changed = [
            name
            for name in changed_variables(server, env)
            if name not in read_when_used and not (name == "PYTHONPATH" and env.get(name))
        ]
        if changed:
            print(
                f"[studies] {', '.join(changed)} changed since the fork server started: {command[2]} runs in a new "
                "interpreter, which imports the libraries again",
                file=sys.stderr,
                flush=True,
            )
        return not changed

    def start(self, module: str, argv: list[str], log: Path, env: dict, cwd: str, interrupt: bool) -> Run:
        with self.lock:  # callers start runs from threads
            if self.context is None:
                self.context = multiprocessing.get_context("forkserver")
                self.context.set_forkserver_preload(PRELOAD)
                self.environment = dict(os.environ)
        receive, send = self.context.Pipe(duplex=False)
        args = (module, list(argv), str(log), cwd, env, interrupt, send)
        process = self.context.Process(target=run_module, args=args, name=module)
        Path(log).write_text("")  # there from the start, as a Popen's output file is
        process.start()
        # multiprocessing joins its children at this process's exit; a Popen's child may outlive its parent
        multiprocessing.process._children.discard(process)
        send.close()
        return Run(log, [sys.executable, "-m", module, *argv], forked=process, receive=receive)


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


def run_module(module: str, argv: list[str], log: str, cwd: str, environment: dict, interrupt: bool, send) -> None:
    """In the forked process: `python -m module argv...`, its output in `log`, ended as the interpreter ends (the
    message or traceback, then the atexit handlers); sends the CPU seconds it spent before it exits."""
    # Ctrl-C as an interpreter started from the caller would take it, not as the server had it
    signal.signal(signal.SIGINT, signal.default_int_handler if interrupt else signal.SIG_IGN)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environment)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.argv = [module, *argv]
    # `python -m` puts the working directory first, then PYTHONPATH's folders (those the server did not start with)
    folders = [
        f for f in environment.get("PYTHONPATH", "").split(os.pathsep) if f and os.path.abspath(f) not in sys.path
    ]
    sys.path[:0] = [cwd, *(os.path.abspath(f) for f in folders)]
    interrupted = False
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as end:
        status = end.code if isinstance(end.code, int) else 0 if end.code is None else 1
        if not isinstance(end.code, int | None):
            print(end.code, file=sys.stderr)  # as the interpreter prints `sys.exit("message")`
    except BaseException as error:
        sys.excepthook(*sys.exc_info())  # the recipe's own one-line error, or the traceback
        status, interrupted = 1, isinstance(error, KeyboardInterrupt)
    sys.stdout.flush()
    atexit._run_exitfuncs()  # a fork's exit (os._exit) would skip them; an interpreter's runs them
    sys.stdout.flush()
    sys.stderr.flush()
    send.send(cpu_seconds())
    if interrupted:  # an interpreter ended by an uncaught Ctrl-C ends by SIGINT, as a shell expects
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    raise SystemExit(status)
