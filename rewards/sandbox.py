"""Run untrusted Python programs against tests, isolated from the trainer, from the machine and from the user's files.

Three isolation modes; `Sandbox().isolation` says which one runs, and recipes/eval record it (`versions.json`,
`results.json`):

- `root` (the trainer runs as root): Linux namespaces made with `unshare`, and the program runs as an unprivileged
  uid of its own (one per parallel slot) with no capabilities, so RLIMIT_NPROC really binds and no file is the
  program's own.
- `userns` (an ordinary user): the same namespaces inside an unprivileged user namespace. There the program keeps
  the caller's uid on the host's files, so the filesystem view below is what protects the user's files, and the
  harness drops every capability (bounding, ambient, effective, permitted) so that the program, root of its user
  namespace, cannot unmount or remount what hides them.
- `unisolated`: only by explicit opt-in, `REWARDS_SANDBOX=unisolated`, for machines where no namespace can be made
  (no `unshare`; unprivileged user namespaces disabled, e.g. Ubuntu 24.04's
  `kernel.apparmor_restrict_unprivileged_userns=1`). Without the opt-in, code rewards refuse to run there
  (`SandboxUnavailable`, naming the cause and the fixes); with it, a warning is printed by every process that
  creates a sandbox.

What `root` and `userns` protect (each program, every run):
- the user's files: the host's whole mount tree is made read-only, recursively (mount_setattr), in the program's
  private mount namespace; empty read-only tmpfs are mounted over `/home`, `/root`, `/run` (user sockets such as
  ssh-agent, D-Bus, docker.sock), `$HOME`, `$XDG_RUNTIME_DIR`, `$HF_HOME`, the project checkout, the trainer's
  working directory and any directory listed in `REWARDS_SANDBOX_HIDE` (os.pathsep-separated), wherever they are.
  The program cannot read, list, change or delete anything there, and writes nowhere but its private, size-capped
  tmpfs on /tmp, /var/tmp and /dev/shm (its working directory, gone when it ends). Chosen over bubblewrap, which is
  not installed on most training machines, and over Landlock, which has no Python binding and cannot hide a
  directory's names, only deny access to them; the harness already owns a mount namespace, so hiding is a few
  mount calls with no extra process;
- the machine: a fresh interpreter process (`python -I -S`, never a fork of the trainer) in its own session and
  process group, killed as a group at the wall-clock timeout; new network namespace (no interfaces up: nothing to
  connect to, not even the host's localhost), new PID namespace (the program sees only itself; `kill(-1)` reaches
  nothing outside; every process it starts dies with it), new IPC and UTS namespaces; rlimits on CPU seconds,
  address space, processes, file size and open files, no core dumps; no new privileges (setuid binaries are inert);
- secrets in the environment: nothing of the caller's (no HF_TOKEN, WANDB_API_KEY, ...), stdin closed,
  stdout/stderr captured to files capped by RLIMIT_FSIZE and truncated when read back;
- the verdict: a test counts as passed only when the harness reports it, after the test ran to its end, on a
  private pipe, tagged with a random nonce; the harness seals frame and object introspection with an audit hook
  so the program cannot find the nonce. Exit codes and output never count.

What they do not protect:
- the kernel, CPU caches and timing (no seccomp filter; this is not a defence against kernel exploits);
- world-readable files outside the hidden directories stay readable (e.g. /etc/passwd, /opt, /srv, /data): put
  private data there in `REWARDS_SANDBOX_HIDE`;
- a program that defeats the tests' own logic (e.g. returning an object whose __eq__ is always True, or patching
  a stdlib module the tests import) passes those tests: that is reward hacking the tests must guard against.

`unisolated` protects only the trainer's process (a separate interpreter, the rlimits, the clean environment and
the verdict channel above). The program runs with the caller's uid on the real filesystem and network: it can
read, change and delete everything the user can, and connect anywhere the user can.
"""

import marshal
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
CHECKOUT = Path(__file__).resolve().parent.parent
SANDBOX_UID_BASE = 61000
OUTPUT_LIMIT = 4096
OPT_IN = "REWARDS_SANDBOX"
EXTRA_HIDDEN = "REWARDS_SANDBOX_HIDE"
# What the interpreter and the private mounts need: never hidden, even when e.g. the trainer runs from "/".
SYSTEM_DIRS = (
    "/usr",
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/dev",
    "/proc",
    "/sys",
    "/tmp",
    "/var/tmp",
)
FIXES = (
    f"Fixes: allow unprivileged user namespaces (Ubuntu 23.10+/24.04: `sudo sysctl -w "
    f"kernel.apparmor_restrict_unprivileged_userns=0`; older Debian: `sudo sysctl -w "
    f"kernel.unprivileged_userns_clone=1`; everywhere: `user.max_user_namespaces` > 0), install util-linux's "
    f"`unshare`, run as root, or accept the risk with {OPT_IN}=unisolated (untrusted programs then run with "
    f"your uid on your files and network, limited only by rlimits)."
)


class SandboxUnavailable(RuntimeError):
    """No isolation can be made here and the user has not opted in to running untrusted code without it (the entry
    points report it in one line: `core.errors`)."""


@dataclass(frozen=True)
class Limits:
    # HumanEval's harness (and bigcode's for MBPP) gives a program 3 s of wall clock: a model's loops and waits cost
    # that, not more, and every HumanEval canonical solution ends well inside it (tests/rewards/test_code_harness.py)
    timeout: float = 3.0
    cpu_seconds: int = 10
    memory_bytes: int = 1024**3
    processes: int = 32
    file_bytes: int = 16 * 1024**2
    open_files: int = 64
    tmpfs_bytes: int = 64 * 1024**2

    def rlimits(self) -> dict[str, int]:
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_NPROC": self.processes,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
        }


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


def hidden_directories() -> list[str]:
    """The directories a program must not see, as real paths, shallowest first (see the module docstring)."""
    candidates = [
        "/home",
        "/root",
        "/run",
        os.environ.get("HOME"),
        os.environ.get("XDG_RUNTIME_DIR"),
        os.environ.get("HF_HOME"),
        str(CHECKOUT),
        os.getcwd(),
        *os.environ.get(EXTRA_HIDDEN, "").split(os.pathsep),
    ]
    hidden = []
    for candidate in filter(None, candidates):
        path = os.path.realpath(candidate)
        if any(system == path or system.startswith(path.rstrip("/") + "/") for system in SYSTEM_DIRS):
            continue  # "/" or an ancestor of what the interpreter needs: read-only is what protects it
        hidden.append(path)
    return sorted(dict.fromkeys(hidden), key=lambda p: (p.count("/"), p))


def _run_quietly(command: list[str]) -> tuple[bool, str]:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return False, str(error)
    return proc.returncode == 0, proc.stderr.strip()[-500:]


class Sandbox:
    """Runs programs in parallel (`run_many`), each in its own namespaces; see the module docstring.

    Raises `SandboxUnavailable` when no isolation can be made and `REWARDS_SANDBOX=unisolated` is not set.
    """

    def __init__(self, limits: Limits = Limits(), workers: int | None = None, readonly_method: str = "mount_setattr"):
        self.limits = limits
        # twice the cores: a program that waits (sleep, input, a deadlock) holds its slot to the timeout without
        # using a core, and a wall-clock timeout makes such slots the cost of a batch (make bench-rewards)
        self.workers = workers or 2 * len(os.sched_getaffinity(0))
        self._slots = list(range(self.workers))
        self._slots_lock = threading.Lock()
        self._readonly_method = readonly_method  # "remount": the pre-5.12 kernels' path, selectable for tests
        self._hidden = hidden_directories()
        self._isolation = self._detect_isolation()

    def _detect_isolation(self) -> str:
        requested = os.environ.get(OPT_IN, "")
        if requested not in ("", "unisolated"):
            raise SandboxUnavailable(
                f"{OPT_IN}={requested!r}: the only accepted value is 'unisolated' (unset: "
                "isolate, or refuse where isolation is impossible)"
            )
        if requested == "unisolated":
            with warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.warn(
                    f"rewards.sandbox: {OPT_IN}=unisolated: untrusted programs run with your uid on your "
                    "files and network, limited only by rlimits; they can read, change and delete "
                    "anything you can.",
                    RuntimeWarning,
                    stacklevel=3,
                )
            self._python = sys.executable
            return "unisolated"
        as_root = os.geteuid() == 0
        self._unshare = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--ipc", "--uts"]
        if not as_root:
            self._unshare[1:1] = ["--user", "--map-root-user"]
        if not shutil.which("unshare"):
            raise SandboxUnavailable(
                f"rewards.sandbox: cannot isolate untrusted code: `unshare` (util-linux) is not on PATH. {FIXES}"
            )
        works, error = _run_quietly([*self._unshare, "true"])
        if not works:
            raise SandboxUnavailable(
                f"rewards.sandbox: cannot isolate untrusted code: creating Linux namespaces "
                f"failed ({' '.join(self._unshare)}: {error or 'no message'}). {FIXES}"
            )
        self._isolation = "root" if as_root else "userns"
        self._python = self._pick_python()
        return self._isolation

    def _pick_python(self) -> str:
        # The sandboxed program may not reach the trainer's interpreter (a venv or pyenv under a hidden home, or
        # under /root for the sandbox uid); programs need only the standard library, so any Python 3 that runs a
        # test inside the real sandbox will do.
        candidates = list(
            dict.fromkeys(
                p
                for p in (
                    os.path.realpath(sys.executable),
                    shutil.which("python3"),
                    "/usr/bin/python3",
                    "/usr/local/bin/python3",
                )
                if p
            )
        )
        failures = []
        for candidate in candidates:
            self._python = candidate
            result = self._run("import decimal, json, socket\ndef f():\n    return 1", ["assert f() == 1"], "", 0)
            if result.passed == 1:
                return candidate
            failures.append(f"{candidate}: {result.status} {result.stderr.strip()[-300:]}")
        raise SandboxUnavailable(
            "rewards.sandbox: no Python interpreter runs inside the sandbox (its standard "
            "library must lie outside the hidden directories " + ", ".join(self._hidden) + "): " + "; ".join(failures)
        )

    @property
    def isolation(self) -> str:
        """ "root" (namespaces + own uid), "userns" (namespaces in a user namespace) or "unisolated" (opt-in)."""
        return self._isolation

    def _command(self) -> list[str]:
        python = [self._python, "-I", "-S", "-c", HARNESS]
        if self._isolation == "unisolated":
            return python
        # The harness makes the filesystem view and drops privileges itself (see _sandbox_harness.py); it is
        # PID 1 of the new PID namespace, so every process the program starts dies with it.
        return [*self._unshare, "--mount", *python]

    def _isolation_job(self, slot: int) -> dict:
        namespaces = self._isolation != "unisolated"
        return {
            "mounts": ["/tmp", "/var/tmp", "/dev/shm"] if namespaces else [],
            "hide": self._hidden if namespaces else [],
            "readonly_method": self._readonly_method,
            "tmpfs_bytes": self.limits.tmpfs_bytes,
            "uid": SANDBOX_UID_BASE + slot if self._isolation == "root" else None,
        }

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
        job = marshal.dumps(
            {
                "program": program,
                "tests": tests,
                "setup": setup,
                "nonce": nonce,
                "report_fd": report_write,
                "limits": self.limits.rlimits(),
                **self._isolation_job(slot),
            },
            4,
        )  # a format every Python 3 reads
        try:
            with (
                open(os.path.join(workdir, "stdout"), "w+b") as out,
                open(os.path.join(workdir, "stderr"), "w+b") as err,
            ):
                proc = subprocess.Popen(
                    self._command(),
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    pass_fds=(report_write,),
                    env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"},
                    cwd=workdir,
                    start_new_session=True,
                )
                os.close(report_write)
                report_write = -1
                reports = _Reader(report_read)
                status = "ok"
                try:
                    proc.stdin.write(job)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                if not _wait_exit(proc, self.limits.timeout):
                    status = "timeout"
                _kill_group(proc)
                if status == "ok" and proc.returncode != 0:
                    status = (
                        f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
                    )
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


def isolation_mode() -> str:
    """The mode code rewards will run in here ("root", "userns", "unisolated"); raises `SandboxUnavailable` with
    the cause and the fixes where none is possible. Recipes and `make eval` call it in their pre-flight."""
    return default_sandbox().isolation


def isolation_record() -> str:
    """The mode for run records (versions.json, results.json): never raises; "unavailable" where code rewards
    would refuse to run."""
    try:
        return isolation_mode()
    except SandboxUnavailable:
        return "unavailable"
