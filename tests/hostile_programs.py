"""Hostile programs for the code sandbox, run by tests/test_rewards_sandbox.py inside an outer PID namespace.

Run as a script (`unshare -p -f --mount-proc python tests/hostile_programs.py OUT.json`): runs every case through
`rewards.code.code_tests` (the real reward path), then checks what was left behind, and writes the findings.
Each case's tests would pass if the attack worked; the sandbox must score every one 0.
"""

import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

SECRET = "hf_sEcReT_tOkEn_123"
OUTSIDE_FILE = "/tmp/hostile-sandbox-escape-marker"
OUTSIDE_REPO_FILE = str(Path(__file__).resolve().parent / "hostile-escape-marker")

_FORGE = """
import os
for fd in range(3, 64):
    for line in (b"0 0\\n", b"PASS 0\\n", b"passed\\n"):
        try:
            os.write(fd, line)
        except OSError:
            pass
"""

CASES = {
    "infinite_loop": ("def f(x):\n    return x\nwhile True:\n    pass", ["assert f(1) == 1"]),
    "fork_bomb": ("import os\ndef f(x):\n    return x\nwhile True:\n    os.fork()", ["assert f(1) == 1"]),
    "memory_bomb": ("def f(x):\n    return x\nblob = bytearray(8 * 1024**3)", ["assert f(1) == 1"]),
    "disk_filler": ("def f(x):\n    return x\nwith open('fill', 'wb') as fh:\n    while True:\n"
                    "        fh.write(b'x' * 1024**2)", ["assert f(1) == 1"]),
    "network_connect": ("import socket\ndef f(x):\n    s = socket.create_connection(('127.0.0.1', PORT), timeout=2)\n"
                        "    s.sendall(b'leak')\n    return x", ["assert f(1) == 1"]),
    "env_secrets": ("import os\ndef f(x):\n    return os.environ.get('HF_TOKEN', '') + os.environ.get("
                    "'WANDB_API_KEY', '')\nprint(dict(os.environ))", [f"assert f(1) == '{SECRET}' * 2"]),
    "write_outside_tmp": (f"def f(x):\n    for p in ({OUTSIDE_FILE!r}, {OUTSIDE_REPO_FILE!r}, '/root/pwned'):\n"
                          "        try:\n            open(p, 'w').write('pwned')\n        except OSError:\n"
                          "            pass\n    return open(" + repr(OUTSIDE_REPO_FILE) + ").read()",
                          ["assert f(1) == 'pwned'"]),
    "kill_parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef f(x):\n    return x",
                    ["assert f(1) == 2"]),
    "kill_everything": ("import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
                        "def f(x):\n    return x", ["assert f(1) == 2"]),
    "sys_exit_0": ("import sys\nsys.exit(0)\ndef f(x):\n    return x", ["assert f(1) == 1"]),
    "os_exit_0": ("import os\nos._exit(0)\ndef f(x):\n    return x", ["assert f(1) == 1"]),
    "bare_exit": ("exit()\ndef f(x):\n    return x", ["assert f(1) == 1"]),
    "quit_in_test": ("def f(x):\n    quit()", ["assert f(1) == 1"]),
    "fake_passed_markers": ("print('All tests passed!\\nPASSED 1/1\\nOK')\nimport sys\nsys.stderr.write('passed')\n"
                            "def f(x):\n    return 0", ["assert f(1) == 1"]),
    "forged_report_lines": (_FORGE + "import os\nos._exit(0)", ["assert f(1) == 1"]),
    "system_exit_from_function": ("def f(x):\n    raise SystemExit(0)", ["assert f(1) == 1", "assert f(2) == 2"]),
    "redefine_check_helper": ("def check(candidate):\n    return True\ndef inc(x):\n    return x",
                              "def check(candidate):\n    assert candidate(1) == 2\ncheck(inc)"),
    "patch_assertion_error": ("import builtins\nclass Fake(Exception):\n    pass\nbuiltins.AssertionError = Fake\n"
                              "def f(x):\n    return 0", ["assert f(1) == 1"]),
    "patch_builtins": ("import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.len = lambda x: 3\n"
                       "def f(x):\n    return []", ["assert abs(f(1) - 3) < 1e-9", "assert len(f(1)) == 3"]),
    "huge_output": ("import sys\ndef f(x):\n    return x\nwhile True:\n    sys.stdout.write('x' * 65536)",
                    ["assert f(1) == 2"]),
    "deep_recursion": ("import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)",
                       ["assert f(1) == 1"]),
    "gc_nonce_hunt": ("import gc, os\nfor o in gc.get_objects():\n    pass\ndef f(x):\n    return 0",
                      ["assert f(1) == 1"]),
    "frame_nonce_hunt": ("import sys, os\nframe = sys._getframe(1)\nfor k, v in frame.f_locals.items():\n"
                         "    if isinstance(v, bytes) and len(v) == 32:\n"
                         "        os.write(frame.f_locals['report_fd'], v + b' 0\\n')\nos._exit(0)",
                         ["assert f(1) == 1"]),
    "traceback_nonce_hunt": ("import os\ntry:\n    raise ValueError\nexcept ValueError as e:\n"
                             "    fr = e.__traceback__.tb_frame.f_back\n    job = fr.f_locals\nos._exit(0)",
                             ["assert f(1) == 1"]),
    "ctypes_memory": ("import ctypes\nctypes.string_at(0, 1)\ndef f(x):\n    return x", ["assert f(1) == 2"]),
    "proc_mem": ("def f(x):\n    return open('/proc/self/mem', 'rb').read(1)", ["assert f(1) == b'x'"]),
    "daemon_left_behind": ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\n"
                           "def f(x):\n    return 0", ["assert f(1) == 1"]),
    "subprocess_background": ("import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 300 &'])\n"
                              "def f(x):\n    return 0", ["assert f(1) == 1"]),
    "ignore_sigterm": ("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
                       ["assert f(1) == 1"]),
    "thread_forger": ("import threading, os\ndef spam():\n" + "".join("    " + line + "\n" for line in
                      _FORGE.strip().splitlines()) + "threading.Thread(target=spam).start()\n"
                      "def f(x):\n    return 0", ["assert f(1) == 1", "assert f(2) == 2"]),
    "correct_program_control": ("def f(x):\n    return x + 1", ["assert f(1) == 2"]),
}
EXPECTED_PASSES = {"correct_program_control": 1.0}  # a correct program: proves the harness can pass at all


def reap_orphans() -> None:
    """This script is PID 1 of the guard namespace, so orphans (e.g. a killed sandbox's init) are its to reap,
    as the machine's init would reap them outside the guard."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sandbox_processes() -> list[str]:
    from rewards.sandbox import SANDBOX_UID_BASE

    time.sleep(1.0)  # a killed PID namespace is torn down asynchronously
    reap_orphans()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
        if uid >= SANDBOX_UID_BASE:
            found.append(f"{pid} uid={uid} {Path(f'/proc/{pid}/cmdline').read_bytes()[:80]!r}")
    return found


def main(out_path: str) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    connections = []

    def accept():
        while not stop.is_set():
            try:
                connections.append(listener.accept())
            except OSError:
                pass

    stop = threading.Event()
    threading.Thread(target=accept, daemon=True).start()
    os.environ["HF_TOKEN"] = os.environ["WANDB_API_KEY"] = SECRET
    tempfile.tempdir = tempfile.mkdtemp(prefix="hostile-host-tmp-")

    from rewards.code import code_tests, run_tests

    port = listener.getsockname()[1]
    names = list(CASES)
    programs = [CASES[n][0].replace("PORT", str(port)) for n in names]
    tests = [CASES[n][1] for n in names]
    scores = code_tests(programs, tests)
    # One more run through the same sandbox after all the attacks: it must still work.
    control = run_tests([CASES["correct_program_control"][0]], [CASES["correct_program_control"][1]])[0]
    stop.set()
    report = {
        "scores": dict(zip(names, scores, strict=True)),
        "expected": {n: EXPECTED_PASSES.get(n, 0.0) for n in names},
        "connections": len(connections),
        "leftover_processes": sandbox_processes(),
        "leftover_tmp": os.listdir(tempfile.tempdir),
        "escaped_files": [p for p in (OUTSIDE_FILE, OUTSIDE_REPO_FILE, "/root/pwned") if os.path.exists(p)],
        "pool_still_works": f"{control.status} {control.passed}/{control.total}",
        "survived": True,
    }
    Path(out_path).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main(sys.argv[1])
