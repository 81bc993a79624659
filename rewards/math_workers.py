"""A small pool of long-lived worker processes for parsing untrusted math output outside the trainer.

math-verify's own timeout uses `signal.alarm`, which only works in a process's main thread and cannot stop a
C-level loop (sympy expanding `9**9**9**9`). Each worker here is a fresh interpreter (never a fork of the
trainer) whose main thread runs math-verify with its own timeouts on, under an address-space rlimit; the parent
adds a wall-clock deadline per item and kills and replaces a worker that misses it. Reward functions are called
from TRL's threads, so every parent-side structure is thread-local or locked.
"""

import atexit
import json
import os
import selectors
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKER_MEMORY_BYTES = 2 * 1024**3


class _Worker:
    def __init__(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO_ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rewards.math_workers", str(WORKER_MEMORY_BYTES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd="/",
            start_new_session=True,
            text=True,
            bufsize=1,
        )

    def call(self, func: str, args: list, timeout: float):
        """Returns the function's JSON result, or raises TimeoutError / RuntimeError (worker died)."""
        self.proc.stdin.write(json.dumps({"func": func, "args": args}) + "\n")
        self.proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                raise TimeoutError
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker exited")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["result"]

    def kill(self):
        self.proc.kill()
        self.proc.wait()


class IsolatedPool:
    """`map(func, items, timeout)` runs the module-level `rewards.*` function `func` on each args tuple."""

    def __init__(self, size: int | None = None):
        self.size = size or min(4, os.cpu_count() or 1)
        self._executor = ThreadPoolExecutor(self.size, thread_name_prefix="isolated")
        self._local = threading.local()
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        atexit.register(self.close)

    def _worker(self) -> _Worker:
        worker = getattr(self._local, "worker", None)
        if worker is None or worker.proc.poll() is not None:
            worker = self._local.worker = _Worker()
            with self._lock:
                self._workers.append(worker)
        return worker

    def _run(self, func: str, args: list, timeout: float):
        worker = self._worker()
        try:
            return worker.call(func, args, timeout)
        except TimeoutError:
            worker.kill()
            return "timeout"
        except (RuntimeError, OSError, ValueError):
            worker.kill()
            return "crashed"

    def map(self, func: str, items: list[list], timeout: float) -> list:
        if not func.startswith("rewards."):
            raise ValueError(f"only rewards.* functions run in the isolated pool, got {func!r}")
        return list(self._executor.map(lambda args: self._run(func, args, timeout), items))

    def close(self):
        with self._lock:
            for worker in self._workers:
                if worker.proc.poll() is None:
                    worker.kill()
            self._workers.clear()


_POOL: IsolatedPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> IsolatedPool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = IsolatedPool()
        return _POOL


def _serve(memory_bytes: int) -> None:
    import importlib
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for line in sys.stdin:
        request = json.loads(line)
        module_name, _, func_name = request["func"].rpartition(".")
        try:
            result = getattr(importlib.import_module(module_name), func_name)(*request["args"])
            reply = {"result": result}
        except MemoryError:
            reply = {"result": "memory limit"}
        except Exception as error:  # noqa: BLE001 - any failure on untrusted input is a verdict, not a crash
            reply = {"error": f"{type(error).__name__}: {error}"[:500]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
