"""Run untrusted Python programs against tests, isolated from the trainer and from the machine.

What is isolated (each program, every run):
- a fresh interpreter process (`python -I -S`), started with `subprocess` (never a fork of the trainer), in its
  own session/process group; the parent kills the whole group at the wall-clock timeout;
- Linux namespaces via `unshare`: a new network namespace (no interfaces up: nothing to connect to, not even the
  host's localhost), a new PID namespace (the program sees only itself; `kill(-1)` reaches nothing outside, and
  every process it started dies with it), new mount, IPC and UTS namespaces with private size-capped tmpfs on
  /tmp, /var/tmp and /dev/shm, which is the program's working directory and vanishes with it;
- as root, the program runs as an unprivileged uid of its own (one per parallel slot, with no new
  privileges), so it cannot write the project, /root or the host's /tmp, and RLIMIT_NPROC really binds
  (it does not bind root); without root, a user namespace maps the caller to root inside;
- rlimits: CPU seconds, address space, processes, file size, open files, no core dumps;
- an environment with nothing of the caller's (no HF_TOKEN, WANDB_API_KEY, ...), stdin closed, stdout/stderr
  captured to files capped by RLIMIT_FSIZE and truncated when read back;
- the verdict: a test counts as passed only when the harness reports it, after the test ran to its end, on a
  private pipe, tagged with a random nonce; the harness seals frame and object introspection with an audit hook
  so the program cannot find the nonce. Exit codes and output never count.

What is not isolated:
- the kernel, CPU caches and timing (no seccomp filter; this is not a defence against kernel exploits);
- the read-only view of the host filesystem (the program can read world-readable files, e.g. /etc/passwd);
- a program that defeats the tests' own logic (e.g. returning an object whose __eq__ is always True, or patching
  a stdlib module the tests import) passes those tests: that is reward hacking the tests must guard against;
- where `unshare` is unavailable (no user namespaces), programs run with rlimits only, with a one-time warning.
"""

import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HARNESS = (Path(__file__).parent / "_sandbox_harness.py").read_text()
SANDBOX_UID_BASE = 61000
OUTPUT_LIMIT = 4096


@dataclass(frozen=True)
class Limits:
    timeout: float = 10.0
    cpu_seconds: int = 10
    memory_bytes: int = 1024**3
    processes: int = 32
    file_bytes: int = 16 * 1024**2
    open_files: int = 64
    tmpfs_bytes: int = 64 * 1024**2

    def rlimits(self) -> dict[str, int]:
        return {"RLIMIT_CPU": self.cpu_seconds, "RLIMIT_AS": self.memory_bytes, "RLIMIT_NPROC": self.processes,
                "RLIMIT_FSIZE": self.file_bytes, "RLIMIT_NOFILE": self.open_files, "RLIMIT_CORE": 0}


@dataclass(frozen=True)
class RunResult:
    passed: int
    total: int
    status: str  # "ok", "timeout", "killed by signal N", "exit N", "syntax error"
    stdout: str
    stderr: str

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def _probe(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class Sandbox:
    """Runs programs in parallel (`run_many`), each in its own namespaces; see the module docstring."""

    def __init__(self, limits: Limits = Limits(), workers: int | None = None):
        self.limits = limits
        self.workers = workers or max(2, os.cpu_count() or 1)
        self._slots = list(range(self.workers))
        self._slots_lock = threading.Lock()
        self._isolation = self._detect_isolation()

    def _detect_isolation(self) -> str:
        as_root = os.geteuid() == 0
        unshare = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--ipc", "--uts"]
        if not as_root:
            unshare[1:1] = ["--user", "--map-root-user"]
        if shutil.which("unshare") and _probe([*unshare, "true"]):
            self._unshare = unshare
            self._python = self._pick_python(as_root)
            return "root" if as_root else "userns"
        warnings.warn(
            "rewards.sandbox: cannot create Linux namespaces here (no unshare or user namespaces); untrusted code "
            "runs with rlimits only: no network cut, no PID or filesystem isolation.", RuntimeWarning, stacklevel=3)
        self._python = sys.executable
        return "rlimits-only"

    def _pick_python(self, as_root: bool) -> str:
        # The sandbox uid may not reach the trainer's interpreter (e.g. a venv under /root); programs need only
        # the standard library, so any Python 3 it can execute will do.
        candidates = list(dict.fromkeys(p for p in (os.path.realpath(sys.executable), shutil.which("python3"),
                                                    "/usr/bin/python3", "/usr/local/bin/python3") if p))
        uid = SANDBOX_UID_BASE
        drop = f"import os; os.setgroups([]); os.setresgid({uid}, {uid}, {uid}); os.setresuid({uid}, {uid}, {uid}); "
        for candidate in candidates:
            # After the harness drops to the sandbox uid, programs import the standard library as that uid.
            if _probe([candidate, "-I", "-S", "-c", (drop if as_root else "") + "import decimal, json, socket"]):
                return candidate
        raise RuntimeError(f"rewards.sandbox: no Python interpreter the sandbox user can run among {candidates}")

    @property
    def isolation(self) -> str:
        """"root" (namespaces + own uid), "userns" (namespaces in a user namespace) or "rlimits-only"."""
        return self._isolation

    def _command(self) -> list[str]:
        python = [self._python, "-I", "-S", "-c", HARNESS]
        if self._isolation == "rlimits-only":
            return python
        # The harness mounts the private tmpfs and drops to the slot's uid itself (see _sandbox_harness.py); it is
        # PID 1 of the new PID namespace, so every process the program starts dies with it.
        return [*self._unshare, "--mount", *python]

    def _isolation_job(self, slot: int) -> dict:
        namespaces = self._isolation != "rlimits-only"
        return {"mounts": ["/tmp", "/var/tmp", "/dev/shm"] if namespaces else [],
                "tmpfs_bytes": self.limits.tmpfs_bytes,
                "uid": SANDBOX_UID_BASE + slot if self._isolation == "root" else None}

    def run(self, program: str, tests: list[str], setup: str = "") -> RunResult:
        """Runs `setup`, then `program`, then each test string; passed = tests that ran to the end."""
        try:
            compile(program, "<program>", "exec")
        except (SyntaxError, ValueError) as error:
            return RunResult(0, len(tests), "syntax error", "", str(error)[:OUTPUT_LIMIT])
        with self._slots_lock:
            slot = self._slots.pop()
        try:
            return self._run(program, tests, setup, slot)
        finally:
            with self._slots_lock:
                self._slots.append(slot)

    def _run(self, program: str, tests: list[str], setup: str, slot: int) -> RunResult:
        nonce = secrets.token_hex(16)
        workdir = tempfile.mkdtemp(prefix="sandbox-")
        report_read, report_write = os.pipe()
        job = json.dumps({"program": program, "tests": tests, "setup": setup, "nonce": nonce,
                          "report_fd": report_write, "limits": self.limits.rlimits(), **self._isolation_job(slot)})
        try:
            with open(os.path.join(workdir, "stdout"), "w+b") as out, open(os.path.join(workdir, "stderr"),
                                                                            "w+b") as err:
                proc = subprocess.Popen(
                    self._command(), stdin=subprocess.PIPE, stdout=out, stderr=err, pass_fds=(report_write,),
                    env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}, cwd=workdir,
                    start_new_session=True,
                )
                os.close(report_write)
                report_write = -1
                reports = _Reader(report_read)
                status = "ok"
                try:
                    proc.stdin.write(job.encode())
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                if not _wait_exit(proc, self.limits.timeout):
                    status = "timeout"
                _kill_group(proc)
                if status == "ok" and proc.returncode != 0:
                    status = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                              else f"exit {proc.returncode}")
                passed_indices = reports.finish(nonce, len(tests))
                out.seek(0)
                err.seek(0)
                stdout = out.read(OUTPUT_LIMIT).decode(errors="replace")
                stderr = err.read(OUTPUT_LIMIT).decode(errors="replace")
            return RunResult(len(passed_indices), len(tests), status, stdout, stderr)
        finally:
            if report_write >= 0:
                os.close(report_write)
            shutil.rmtree(workdir, ignore_errors=True)

    def run_many(self, jobs: list[tuple[str, list[str], str]]) -> list[RunResult]:
        """Runs (program, tests, setup) jobs on `workers` parallel slots, results in order."""
        with ThreadPoolExecutor(self.workers) as executor:
            return list(executor.map(lambda job: self.run(*job), jobs))


class _Reader:
    """Drains the report pipe in a thread so a chatty harness never blocks on a full pipe."""

    def __init__(self, fd: int):
        self._chunks: list[bytes] = []
        self._fd = fd
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self):
        total = 0
        while chunk := os.read(self._fd, 65536):
            total += len(chunk)
            if total < 1024**2:
                self._chunks.append(chunk)

    def finish(self, nonce: str, n_tests: int) -> set[int]:
        self._thread.join(timeout=5)
        os.close(self._fd)
        passed = set()
        for line in b"".join(self._chunks).decode(errors="replace").splitlines():
            tag, _, index = line.partition(" ")
            if tag == nonce and index.isdigit() and int(index) < n_tests:
                passed.add(int(index))
        return passed


def _wait_exit(proc: subprocess.Popen, timeout: float) -> bool:
    """Waits for exit without Popen.wait(timeout)'s polling (it sleeps up to 50 ms between checks)."""
    pidfd = os.pidfd_open(proc.pid)
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])
    finally:
        os.close(pidfd)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


_SANDBOX: Sandbox | None = None
_SANDBOX_LOCK = threading.Lock()


def default_sandbox() -> Sandbox:
    global _SANDBOX
    with _SANDBOX_LOCK:
        if _SANDBOX is None:
            _SANDBOX = Sandbox()
        return _SANDBOX
