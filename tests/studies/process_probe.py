"""Run as `python -m tests.studies.process_probe <how it ends> [state file]` by tests/studies/test_processes.py: prints
what a run sees of its process, then ends as asked."""

import atexit
import importlib.util
import json
import os
import signal
import sys

SEEN_BEFORE = "torch" in sys.modules  # true in a fork of the server, which imported it; false in a new interpreter


def main(ending: str) -> None:
    print(
        json.dumps(
            {
                "pid": os.getpid(),
                "cwd": os.getcwd(),
                "variable": os.environ.get("PROBE_VARIABLE"),
                "nvml": os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"),
                "libraries_already_imported": SEEN_BEFORE,
                "argv": sys.argv[1:],
                "main": __name__,
                "path0": sys.path[0],
                "on_pythonpath": importlib.util.find_spec("probe_on_pythonpath") is not None,
            }
        ),
        flush=True,
    )
    atexit.register(print, "atexit ran")
    sum(i * i for i in range(3_000_000))  # CPU seconds to count
    print("before the end")  # buffered: it must reach the log
    if ending == "exit-3":
        sys.exit(3)
    if ending == "message":
        sys.exit("error: a one-line message")
    if ending == "raise":
        raise ValueError("a crash")
    if ending == "interrupt":
        raise KeyboardInterrupt
    if ending == "wait":  # for a signal
        while True:
            signal.pause()
    if ending == "kill":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1])
