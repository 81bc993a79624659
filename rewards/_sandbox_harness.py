# Runs inside the sandbox (as `python -I -S -c <this source>`), before and around the untrusted program.
# Trusted part: read the job; in fresh namespaces make the host's tree read-only, hide the user's directories under
# empty read-only tmpfs, mount the private writable tmpfs, drop every capability (and, as root, to the slot's uid):
# all done here with direct syscalls, not by `mount`/`setpriv` processes (fewer execs per program). Then set limits,
# precompile the tests, snapshot builtins and seal introspection.
# Then: setup + program in one namespace; each test in a copy of it with pristine builtins; after each test
# that ran to its end without raising, write "<nonce> <index>" to the report pipe. Nothing the program prints counts.
import builtins
import marshal
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_SET_NO_NEW_PRIVS = 24, 47, 4, 38
# Flags a user namespace locks on mounts it inherits: a remount must repeat them or the kernel refuses it.
LOCKED_OPTIONS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}


def _libc():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result != 0:
            raise OSError(ctypes.get_errno(), f"sandbox setup: {what}")

    return ctypes, libc, check


def make_tree_read_only(method: str) -> None:
    """Every mount of this (private) mount namespace read-only, recursively: mount_setattr (Linux 5.12+), else a
    read-only bind remount of each mount point listed in /proc/self/mountinfo."""
    ctypes, libc, check = _libc()
    if method == "mount_setattr":
        attr = (ctypes.c_uint64 * 4)(MOUNT_ATTR_RDONLY, 0, 0, 0)  # struct mount_attr: set, clear, propagation, userns
        if libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, attr, ctypes.sizeof(attr)) == 0:
            return
        if ctypes.get_errno() != 38:  # ENOSYS: an older kernel; remount one by one below
            check(-1, "mount_setattr(/, MOUNT_ATTR_RDONLY, AT_RECURSIVE)")
    import re

    with open("/proc/self/mountinfo") as fh:
        mounts = [line.split() for line in fh]
    for fields in mounts:
        target = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # mountinfo: space = \040
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        for option in fields[5].split(","):
            flags |= LOCKED_OPTIONS.get(option, 0)
        if os.path.exists(target):  # a mount point hidden under another mount is not reachable by anyone
            check(libc.mount(None, target.encode(), None, flags, None), f"read-only remount of {target}")


def enter_private_filesystem(job: dict) -> None:
    ctypes, libc, check = _libc()
    make_tree_read_only(job["readonly_method"])
    for target in job["hide"]:
        if os.path.isdir(target):  # inside an already hidden directory it no longer exists
            check(
                libc.mount(
                    b"tmpfs",
                    target.encode(),
                    b"tmpfs",
                    MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    b"size=4k,mode=0755",
                ),
                f"hide {target}",
            )
    for target in job["mounts"]:
        check(
            libc.mount(
                b"tmpfs",
                target.encode(),
                b"tmpfs",
                MS_NOSUID | MS_NODEV,
                f"size={job['tmpfs_bytes']},mode=1777".encode(),
            ),
            f"tmpfs on {target}",
        )
    os.chdir(job["mounts"][0])
    drop_privileges(job["uid"])


def drop_privileges(uid: int | None) -> None:
    """No capability left in any set, so nothing can undo the mounts above (as root of a user namespace the
    process would otherwise hold CAP_SYS_ADMIN over them); as real root, also an unprivileged uid of its own."""
    ctypes, libc, check = _libc()
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last_cap = int(fh.read())
    for cap in range(last_cap + 1):
        check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap} from the bounding set")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (x2 words): all empty
    check(libc.capset(header, data), "capset(empty)")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    with open("/proc/self/status") as fh:
        left = [line for line in fh if line.startswith("Cap") and int(line.split()[1], 16)]
    if left:
        raise OSError(f"sandbox setup: capabilities remain: {left}")


def main():
    job = marshal.loads(sys.stdin.buffer.read())  # not json: importing it (and `re`) costs ~7 ms per program
    sys.stdin.close()
    if job["mounts"]:
        enter_private_filesystem(job)
    limits = job["limits"]
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    nonce = job["nonce"].encode()
    write, report_fd = os.write, job["report_fd"]
    tests = job["tests"]
    compiled_tests = [compile(test, f"<test {i}>", "exec") for i, test in enumerate(tests)]
    program = compile(job["program"], "<program>", "exec")
    setup = compile(job["setup"], "<setup>", "exec")
    pristine = dict(vars(builtins))
    run, copy_namespace = exec, dict
    blocked_attributes = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals"})

    def seal(event, args):
        # The nonce lives in this frame only: deny every way of reaching another frame's locals or all objects.
        if event == "sys._getframe":
            raise ValueError("sandbox: frame introspection is not allowed")  # what stdlib callers already catch
        if (
            event == "object.__getattr__"
            and args[1] in blocked_attributes
            or event.startswith(
                (
                    "gc.",
                    "sys._current_frames",
                    "sys.settrace",
                    "sys.setprofile",
                    "ctypes",
                    "sys.addaudithook",
                    "cpython.PyInterpreterState",
                    "sys.monitoring",
                )
            )
            or event == "open"
            and isinstance(args[0], str)
            and args[0].startswith("/proc/")
        ):
            raise RuntimeError(f"sandbox: {event} is not allowed")

    # `types` reads a traceback's tb_frame once, at import; imported after the seal it would fail every program that
    # imports re, enum, subprocess, ... (in the namespace modes ctypes has already imported it).
    import types  # noqa: F401

    sys.addaudithook(seal)
    # No `__name__` of its own, as in HumanEval's harness (`exec(program, {})`): it reads builtins' name, so a
    # completion's `if __name__ == "__main__":` block (its own test runner, a main() that exits) does not run.
    namespace = {"__builtins__": builtins}
    try:
        run(setup, namespace)
        run(program, namespace)
    except BaseException as error:  # noqa: BLE001 - a program that raises or exits while loading passes no test
        write(2, f"program failed to load: {type(error).__name__}: {error}"[:1000].encode(errors="replace"))
        return
    for index, code in enumerate(compiled_tests):
        test_namespace = copy_namespace(namespace)
        test_namespace["__builtins__"] = copy_namespace(pristine)
        try:
            run(code, test_namespace)
        except BaseException:  # noqa: BLE001 - SystemExit from a tested function fails that test
            continue
        write(report_fd, b"%s %d\n" % (nonce, index))


if __name__ == "__main__":
    main()
